/* Host-backend versions of the benchmark kernels. Each call does the work
 * of all the threads of one block, in the same grid-stride order as on the
 * GPU. */
#include "kernels.h"
#include "weft.h"

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
      .empty = {.cuda = bench_cuda_empty,
                .host = bench_host_empty,
                .name = "bench_empty"},
      .tick = {.cuda = bench_cuda_tick,
               .host = bench_host_tick,
               .name = "bench_tick",
               WEFT_KERNEL_ARGS(unsigned *)},
      .affine = {.cuda = bench_cuda_affine,
                 .host = bench_host_affine,
                 .name = "bench_affine",
                 WEFT_KERNEL_ARGS(const unsigned *, unsigned *, unsigned,
                                  unsigned, unsigned)},
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
