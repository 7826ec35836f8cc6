/* Host-backend versions of the benchmarks' kernels (kernels.h), and their
 * descriptors. Each call does the work of all the threads of one block, in
 * the same grid-stride order as on the GPU; the arithmetic is the same, so
 * results agree with the GPU's to rounding. */
#include <math.h>

#include "kernels.h"
#include "weft.h"

/* kernels.cu's __global__ functions; NULL in a build without CUDA. */
WEFT_CUDA_KERNEL_DECL(bench_empty);
WEFT_CUDA_KERNEL_DECL(bench_tick);
WEFT_CUDA_KERNEL_DECL(bench_affine);
WEFT_CUDA_KERNEL_DECL(seed_cube);
WEFT_CUDA_KERNEL_DECL(seed_sine);
WEFT_CUDA_KERNEL_DECL(seed_layer);
WEFT_CUDA_KERNEL_DECL(demo_partial_reduce);
WEFT_CUDA_KERNEL_DECL(demo_single_thread_sum);
WEFT_CUDA_KERNEL_DECL(demo_divide_by);

#ifdef WEFT_BENCH_CUDA
/* Those references are weak, and a weak reference does not pull an object
 * out of a static library (weft_bench is one): without this strong one the
 * linker leaves kernels.cu out and every .cuda above is NULL. */
extern const char bench_kernels_cu[];
const char *const bench_kernels_cu_linked = bench_kernels_cu;
#endif

void bench_host_empty(const weft_kernel_ctx *ctx, void **args) {
  (void)ctx;
  (void)args;
}

void bench_host_tick(const weft_kernel_ctx *ctx, void **args) {
  (void)ctx;
  unsigned *counter = *(unsigned *const *)args[0];
  *counter += 1;
}

void bench_host_affine(const weft_kernel_ctx *ctx, void **args) {
  const unsigned *in = *(const unsigned *const *)args[0];
  unsigned *out = *(unsigned *const *)args[1];
  unsigned mul = *(const unsigned *)args[2];
  unsigned add = *(const unsigned *)args[3];
  unsigned n = *(const unsigned *)args[4];
  unsigned bs = ctx->block_dim.x;
  unsigned stride = ctx->grid_dim.x * bs;
  for (unsigned base = ctx->block_idx.x * bs; base < n; base += stride) {
    unsigned end = n - base < bs ? n : base + bs;
    for (unsigned i = base; i < end; i++)
      out[i] = in[i] * mul + add;
  }
}

void bench_kernels_init(bench_kernels *k) {
  *k = (bench_kernels){
      .empty = {.cuda = WEFT_CUDA_KERNEL(bench_empty),
                .host = bench_host_empty,
                .name = "bench_empty"},
      .tick = {.cuda = WEFT_CUDA_KERNEL(bench_tick),
               .host = bench_host_tick,
               .name = "bench_tick",
               WEFT_KERNEL_ARGS(unsigned *)},
      .affine = {.cuda = WEFT_CUDA_KERNEL(bench_affine),
                 .host = bench_host_affine,
                 .name = "bench_affine",
                 WEFT_KERNEL_ARGS(const unsigned *, unsigned *, unsigned,
                                  unsigned, unsigned),
                 .reads = WEFT_ARG_READ(0)},
  };
}

int bench_kernels_preload(const bench_kernels *k) {
  int rc = weft_kernel_preload(&k->empty);
  if (rc == 0)
    rc = weft_kernel_preload(&k->tick);
  if (rc == 0)
    rc = weft_kernel_preload(&k->affine);
  return rc;
}

unsigned bench_affine_blocks(unsigned n) {
  unsigned need = (n + BENCH_THREADS - 1) / BENCH_THREADS;
  return need == 0 ? 1 : need < BENCH_MAX_BLOCKS ? need : BENCH_MAX_BLOCKS;
}

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
  unsigned rows = *(const unsigned *)args[4];
  /* Rows block_idx.x, block_idx.x + grid, ...; i-k-j order keeps the
   * inner loop on contiguous memory. */
  for (unsigned i = ctx->block_idx.x; i < rows; i += ctx->grid_dim.x) {
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
                                  unsigned, unsigned),
                 .reads = WEFT_ARG_READ(0) | WEFT_ARG_READ(1)},
      .cube = {.cuda = WEFT_CUDA_KERNEL(seed_cube),
               .host = seed_host_cube,
               .name = "seed_cube",
               WEFT_KERNEL_ARGS(const float *, float *, unsigned long),
               .reads = WEFT_ARG_READ(0)},
      .sine = {.cuda = WEFT_CUDA_KERNEL(seed_sine),
               .host = seed_host_sine,
               .name = "seed_sine",
               WEFT_KERNEL_ARGS(float *, unsigned long)},
      .layer = {.cuda = WEFT_CUDA_KERNEL(seed_layer),
                .host = seed_host_layer,
                .name = "seed_layer",
                WEFT_KERNEL_ARGS(const float *, const float *, float *,
                                 unsigned, unsigned),
                .reads = WEFT_ARG_READ(0) | WEFT_ARG_READ(1)},
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
      .partial_reduce = {.cuda = WEFT_CUDA_KERNEL(demo_partial_reduce),
                         .host = weft_demo_host_partial_reduce,
                         .name = "partial_reduce",
                         WEFT_KERNEL_ARGS(const float *, float *,
                                          unsigned long long),
                         .reads = WEFT_ARG_READ(0)},
      .single_thread_sum = {.cuda = WEFT_CUDA_KERNEL(demo_single_thread_sum),
                            .host = weft_demo_host_single_thread_sum,
                            .name = "single_thread_sum",
                            WEFT_KERNEL_ARGS(const float *, float *, unsigned),
                            .reads = WEFT_ARG_READ(0)},
      .divide_by = {.cuda = WEFT_CUDA_KERNEL(demo_divide_by),
                    .host = weft_demo_host_divide_by,
                    .name = "divide_by",
                    WEFT_KERNEL_ARGS(float *, const float *,
                                     unsigned long long),
                    .reads = WEFT_ARG_READ(1)},
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

/* ---- the Cholesky scenarios' tiles ---- */

/* The four tile kernels over element type T, named tile_host_<op><SFX>;
 * SQRT is T's square root. One definition for FP32 and FP64, so that both
 * precisions run the same arithmetic in the same order. */
#define TILE_HOST_KERNELS(T, SFX, SQRT)                                        \
  void tile_host_potrf##SFX(const weft_kernel_ctx *ctx, void **args) {         \
    (void)ctx;                                                                 \
    T *a = *(T *const *)args[0];                                               \
    unsigned b = *(const unsigned *)args[1];                                   \
    for (unsigned j = 0; j < b; j++) {                                         \
      T d = a[j + j * b];                                                      \
      for (unsigned k = 0; k < j; k++)                                         \
        d -= a[j + k * b] * a[j + k * b];                                      \
      d = SQRT(d);                                                             \
      a[j + j * b] = d;                                                        \
      for (unsigned i = j + 1; i < b; i++) {                                   \
        T s = a[i + j * b];                                                    \
        for (unsigned k = 0; k < j; k++)                                       \
          s -= a[i + k * b] * a[j + k * b];                                    \
        a[i + j * b] = s / d;                                                  \
      }                                                                        \
    }                                                                          \
  }                                                                            \
                                                                               \
  /* Row r of x solves x L^T = a_r:                                            \
   * x[j] = (a[j] - sum x[k] L[j][k]) / L[j][j]. */                            \
  void tile_host_trsm##SFX(const weft_kernel_ctx *ctx, void **args) {          \
    (void)ctx;                                                                 \
    const T *l = *(const T *const *)args[0];                                   \
    T *a = *(T *const *)args[1];                                               \
    unsigned b = *(const unsigned *)args[2];                                   \
    for (unsigned r = 0; r < b; r++)                                           \
      for (unsigned j = 0; j < b; j++) {                                       \
        T s = a[r + j * b];                                                    \
        for (unsigned k = 0; k < j; k++)                                       \
          s -= a[r + k * b] * l[j + k * b];                                    \
        a[r + j * b] = s / l[j + j * b];                                       \
      }                                                                        \
  }                                                                            \
                                                                               \
  void tile_host_syrk##SFX(const weft_kernel_ctx *ctx, void **args) {          \
    (void)ctx;                                                                 \
    const T *a = *(const T *const *)args[0];                                   \
    T *c = *(T *const *)args[1];                                               \
    unsigned b = *(const unsigned *)args[2];                                   \
    for (unsigned j = 0; j < b; j++)                                           \
      for (unsigned k = 0; k < b; k++) {                                       \
        T ajk = a[j + k * b];                                                  \
        for (unsigned i = j; i < b; i++)                                       \
          c[i + j * b] -= a[i + k * b] * ajk;                                  \
      }                                                                        \
  }                                                                            \
                                                                               \
  void tile_host_gemm##SFX(const weft_kernel_ctx *ctx, void **args) {          \
    (void)ctx;                                                                 \
    const T *a = *(const T *const *)args[0];                                   \
    const T *bt = *(const T *const *)args[1];                                  \
    T *c = *(T *const *)args[2];                                               \
    unsigned b = *(const unsigned *)args[3];                                   \
    for (unsigned j = 0; j < b; j++)                                           \
      for (unsigned k = 0; k < b; k++) {                                       \
        T bjk = bt[j + k * b];                                                 \
        for (unsigned i = 0; i < b; i++)                                       \
          c[i + j * b] -= a[i + k * b] * bjk;                                  \
      }                                                                        \
  }

TILE_HOST_KERNELS(float, , sqrtf)
TILE_HOST_KERNELS(double, _f64, sqrt)

/* The descriptors of TILE_HOST_KERNELS(T, SFX, ...), named "tile_<op>"
 * followed by SFX. */
#define TILE_KERNELS(T, SFX)                                                   \
  (tile_kernels) {                                                             \
    .potrf = {.host = tile_host_potrf##SFX,                                    \
              .name = "tile_potrf" #SFX,                                       \
              WEFT_KERNEL_ARGS(T *, unsigned)},                                \
    .trsm = {.host = tile_host_trsm##SFX,                                      \
             .name = "tile_trsm" #SFX,                                         \
             WEFT_KERNEL_ARGS(const T *, T *, unsigned),                       \
             .reads = WEFT_ARG_READ(0)},                                       \
    .syrk = {.host = tile_host_syrk##SFX,                                      \
             .name = "tile_syrk" #SFX,                                         \
             WEFT_KERNEL_ARGS(const T *, T *, unsigned),                       \
             .reads = WEFT_ARG_READ(0)},                                       \
    .gemm = {.host = tile_host_gemm##SFX,                                      \
             .name = "tile_gemm" #SFX,                                         \
             WEFT_KERNEL_ARGS(const T *, const T *, T *, unsigned),            \
             .reads = WEFT_ARG_READ(0) | WEFT_ARG_READ(1)},                    \
  }

void tile_kernels_init(tile_kernels *k, int f64) {
  *k = f64 ? TILE_KERNELS(double, _f64) : TILE_KERNELS(float, );
}
