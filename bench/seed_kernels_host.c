/* Host-backend versions of the seeds' kernels. Each call does the work of
 * all the threads of one block, in the same grid-stride order as on the
 * GPU; the arithmetic is the same float arithmetic, so results agree with
 * the GPU's to rounding. */
#include <math.h>

#include "seed_kernels.h"
#include "weft.h"

/* Calls body(i) for the indices block ctx->block_idx.x owns in a grid-stride
 * loop over n. */
#define SEED_GRID_STRIDE(ctx, n, i, body)                                      \
  do {                                                                         \
    unsigned long bs_ = (ctx)->block_dim.x;                                    \
    unsigned long stride_ = (unsigned long)(ctx)->grid_dim.x * bs_;            \
    for (unsigned long base_ = (ctx)->block_idx.x * bs_; base_ < (n);          \
         base_ += stride_) {                                                   \
      unsigned long end_ = (n)-base_ < bs_ ? (n) : base_ + bs_;                \
      for (unsigned long i = base_; i < end_; i++)                             \
        body;                                                                  \
    }                                                                          \
  } while (0)

void seed_host_matmul(const weft_kernel_ctx *ctx, void **args) {
  const float *a = *(const float *const *)args[0];
  const float *b = *(const float *const *)args[1];
  float *c = *(float *const *)args[2];
  unsigned n = *(const unsigned *)args[3];
  /* Rows block_idx.x, block_idx.x + grid, ...; i-k-j order keeps the
   * inner loop on contiguous memory. */
  for (unsigned i = ctx->block_idx.x; i < n; i += ctx->grid_dim.x) {
    float *ci = c + (unsigned long)i * n;
    for (unsigned j = 0; j < n; j++)
      ci[j] = 0.0f;
    for (unsigned k = 0; k < n; k++) {
      float aik = a[(unsigned long)i * n + k];
      const float *bk = b + (unsigned long)k * n;
      for (unsigned j = 0; j < n; j++)
        ci[j] += aik * bk[j];
    }
  }
}

void seed_host_cube(const weft_kernel_ctx *ctx, void **args) {
  const float *in = *(const float *const *)args[0];
  float *out = *(float *const *)args[1];
  unsigned long n = *(const unsigned long *)args[2];
  SEED_GRID_STRIDE(ctx, n, i, out[i] = in[i] * in[i] * in[i]);
}

void seed_host_sine(const weft_kernel_ctx *ctx, void **args) {
  float *x = *(float *const *)args[0];
  unsigned long n = *(const unsigned long *)args[1];
  SEED_GRID_STRIDE(ctx, n, i, x[i] = sinf(x[i]));
}

/* sum_k w[k][j] * x[k], in the GPU's order. */
static float dot(const float *w, unsigned long j, const float *x,
                 unsigned width) {
  float acc = 0.0f;
  for (unsigned k = 0; k < width; k++)
    acc += w[(unsigned long)k * width + j] * x[k];
  return acc;
}

void seed_host_layer(const weft_kernel_ctx *ctx, void **args) {
  const float *x = *(const float *const *)args[0];
  const float *w = *(const float *const *)args[1];
  float *y = *(float *const *)args[2];
  unsigned batch = *(const unsigned *)args[3];
  unsigned width = *(const unsigned *)args[4];
  unsigned long n = (unsigned long)batch * width;
  SEED_GRID_STRIDE(
      ctx, n, i,
      y[i] = tanhf(dot(w, i % width, x + (i / width) * width, width)));
}

void seed_kernels_init(seed_kernels *k) {
  *k = (seed_kernels){
      .matmul = {.host = seed_host_matmul,
                 .name = "seed_matmul",
                 WEFT_KERNEL_ARGS(const float *, const float *, float *,
                                  unsigned)},
      .cube = {.cuda = seed_cuda_cube,
               .host = seed_host_cube,
               .name = "seed_cube",
               WEFT_KERNEL_ARGS(const float *, float *, unsigned long)},
      .sine = {.cuda = seed_cuda_sine,
               .host = seed_host_sine,
               .name = "seed_sine",
               WEFT_KERNEL_ARGS(float *, unsigned long)},
      .layer = {.cuda = seed_cuda_layer,
                .host = seed_host_layer,
                .name = "seed_layer",
                WEFT_KERNEL_ARGS(const float *, const float *, float *,
                                 unsigned, unsigned)},
  };
}

int seed_kernels_preload(const seed_kernels *k, weft_backend_kind backend) {
  int rc = 0;
  if (backend != WEFT_BACKEND_CUDA)
    rc = weft_kernel_preload(&k->matmul);
  if (rc == 0)
    rc = weft_kernel_preload(&k->cube);
  if (rc == 0)
    rc = weft_kernel_preload(&k->sine);
  if (rc == 0)
    rc = weft_kernel_preload(&k->layer);
  return rc;
}

unsigned seed_blocks(unsigned long n) {
  unsigned long need = (n + SEED_THREADS - 1) / SEED_THREADS;
  return need == 0                ? 1
         : need < SEED_MAX_BLOCKS ? (unsigned)need
                                  : SEED_MAX_BLOCKS;
}
