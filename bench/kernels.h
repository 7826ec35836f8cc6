/* The benchmarks' kernels, for both backends and for the raw baselines.
 *
 *   empty()                             does nothing
 *   tick(counter)                       *counter += 1; launched as one block
 *                                       of one thread, it costs what an empty
 *                                       kernel costs and proves it ran
 *   affine(in, out, mul, add, n)        out[i] = in[i] * mul + add for i < n,
 *                                       grid-stride, BENCH_THREADS per block;
 *                                       unsigned arithmetic, so both backends
 *                                       give bit-identical results
 *
 * The CUDA versions live in kernels.cu, which exports each __global__
 * function's address; raw_cuda.cu launches the same functions. A build
 * without CUDA links kernels_nocuda.c, where the addresses are NULL. */
#ifndef WEFT_BENCH_KERNELS_H
#define WEFT_BENCH_KERNELS_H

#include "weft/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BENCH_THREADS 256
#define BENCH_MAX_BLOCKS 1024

extern const void *const bench_cuda_empty;
extern const void *const bench_cuda_tick;
extern const void *const bench_cuda_affine;

void bench_host_empty(const weft_kernel_ctx *ctx, void **args);
void bench_host_tick(const weft_kernel_ctx *ctx, void **args);
void bench_host_affine(const weft_kernel_ctx *ctx, void **args);

typedef struct bench_kernels {
  weft_kernel empty, tick, affine;
} bench_kernels;

/* The kernels as weft describes them, ready to launch on either backend. */
void bench_kernels_init(bench_kernels *k);

/* Loads every kernel's code on the current device now (weft_kernel_preload),
 * so that no timed launch pays for CUDA's lazy module loading. Returns 0 or
 * the first weft error. */
int bench_kernels_preload(const bench_kernels *k);

/* Blocks of affine for n elements: enough to give each thread one, at most
 * BENCH_MAX_BLOCKS (the loop strides over the rest). */
unsigned bench_affine_blocks(unsigned n);

#ifdef __cplusplus
}
#endif

#endif
