/* Host-backend versions of the demo kernels. Each call does the work of all
 * the threads of one block, in the same grid-stride order as on the GPU. */
#include "demo_kernels.h"

void weft_demo_host_partial_reduce(const weft_kernel_ctx *ctx, void **args) {
  const float *a = *(const float *const *)args[0];
  float *partial = *(float *const *)args[1];
  unsigned long long n = *(const unsigned long long *)args[2];
  unsigned long long bs = ctx->block_dim.x;
  unsigned long long stride = (unsigned long long)ctx->grid_dim.x * bs;
  /* Double accumulation: the block's share is one long sequential sum here,
   * not a tree, and float would lose digits over it. */
  double acc = 0.0;
  for (unsigned long long base = ctx->block_idx.x * bs; base < n;
       base += stride) {
    unsigned long long end = base + bs < n ? base + bs : n;
    for (unsigned long long i = base; i < end; i++)
      acc += a[i];
  }
  partial[ctx->block_idx.x] = (float)acc;
}

void weft_demo_host_single_thread_sum(const weft_kernel_ctx *ctx, void **args) {
  (void)ctx;
  const float *partial = *(const float *const *)args[0];
  float *sum = *(float *const *)args[1];
  unsigned m = *(const unsigned *)args[2];
  double acc = 0.0;
  for (unsigned i = 0; i < m; i++)
    acc += partial[i];
  *sum = (float)acc;
}

void weft_demo_host_divide_by(const weft_kernel_ctx *ctx, void **args) {
  float *a = *(float *const *)args[0];
  const float *sum = *(const float *const *)args[1];
  unsigned long long n = *(const unsigned long long *)args[2];
  unsigned long long bs = ctx->block_dim.x;
  unsigned long long stride = (unsigned long long)ctx->grid_dim.x * bs;
  float s = *sum;
  for (unsigned long long base = ctx->block_idx.x * bs; base < n;
       base += stride) {
    unsigned long long end = base + bs < n ? base + bs : n;
    for (unsigned long long i = base; i < end; i++)
      a[i] /= s;
  }
}

void demo_kernels_init(demo_kernels *k) {
  *k = (demo_kernels){
      .partial_reduce = {.cuda = weft_demo_cuda_partial_reduce,
                         .host = weft_demo_host_partial_reduce,
                         .name = "partial_reduce",
                         WEFT_KERNEL_ARGS(const float *, float *,
                                          unsigned long long)},
      .single_thread_sum = {.cuda = weft_demo_cuda_single_thread_sum,
                            .host = weft_demo_host_single_thread_sum,
                            .name = "single_thread_sum",
                            WEFT_KERNEL_ARGS(const float *, float *, unsigned)},
      .divide_by = {.cuda = weft_demo_cuda_divide_by,
                    .host = weft_demo_host_divide_by,
                    .name = "divide_by",
                    WEFT_KERNEL_ARGS(float *, const float *,
                                     unsigned long long)},
  };
}

/* xorshift64*: reproducible without depending on the C library. */
static uint64_t rng_next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1DULL;
}

double demo_fill_input(float *a, unsigned long long n, uint64_t *seed) {
  double sum = 0.0;
  for (unsigned long long j = 0; j < n; j++) {
    float v = (float)((rng_next(seed) >> 40) + 1) / 16777216.0f;
    a[j] = v;
    sum += v;
  }
  return sum;
}
