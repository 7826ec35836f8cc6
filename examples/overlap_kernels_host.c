/* CPU versions of the example's kernels: called once per block, each does
 * the work of the block's threads. */
#include <math.h>

#include "overlap_kernels.h"

/* The CUDA versions, in overlap_kernels.cu (absent without CUDA). */
WEFT_CUDA_KERNEL_DECL(overlap_matmul);
WEFT_CUDA_KERNEL_DECL(overlap_sine);

static void matmul_host(const weft_kernel_ctx *k, void **args) {
  const float *a = *(const float **)args[0], *b = *(const float **)args[1];
  float *c = *(float **)args[2];
  unsigned n = *(unsigned *)args[3];
  for (unsigned ty = 0; ty < k->block_dim.y; ty++)
    for (unsigned tx = 0; tx < k->block_dim.x; tx++) {
      unsigned row = k->block_idx.y * k->block_dim.y + ty;
      unsigned col = k->block_idx.x * k->block_dim.x + tx;
      if (row >= n || col >= n)
        continue;
      float acc = 0;
      for (unsigned i = 0; i < n; i++)
        acc += a[row * n + i] * b[i * n + col];
      c[row * n + col] = acc;
    }
}

static void sine_host(const weft_kernel_ctx *k, void **args) {
  float *x = *(float **)args[0];
  unsigned n = *(unsigned *)args[1];
  for (unsigned t = 0; t < k->block_dim.x; t++) {
    unsigned i = k->block_idx.x * k->block_dim.x + t;
    if (i < n)
      x[i] = sinf(x[i]);
  }
}

const weft_kernel matmul_kernel = {
    .cuda = WEFT_CUDA_KERNEL(overlap_matmul),
    .host = matmul_host,
    .name = "matmul",
    WEFT_KERNEL_ARGS(const float *, const float *, float *, unsigned),
    .reads = WEFT_ARG_READ(0) | WEFT_ARG_READ(1)};
const weft_kernel sine_kernel = {.cuda = WEFT_CUDA_KERNEL(overlap_sine),
                                 .host = sine_host,
                                 .name = "sine",
                                 WEFT_KERNEL_ARGS(float *, unsigned)};
