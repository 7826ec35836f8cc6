/* The three kernels of the normalisation demo (seed 000), for both backends.
 *
 *   partial_reduce(a, partial, n)      block b writes the sum of its share of
 *                                      a[0..n) to partial[b]; grid-stride, so
 *                                      any grid size covers all n elements
 *   single_thread_sum(partial, sum, m) *sum = partial[0] + ... + partial[m-1];
 *                                      launched as one block of one thread
 *   divide_by(a, sum, n)               a[i] /= *sum, grid-stride
 *
 * partial_reduce and divide_by run DEMO_THREADS threads per block. `weft
 * demo` and the benchmarks' normalize scenario launch them. The CUDA
 * versions live in demo_kernels.cu, which exports each __global__ function's
 * address (the raw CUDA baselines launch the same functions); a build
 * without CUDA links demo_kernels_nocuda.c instead, where the addresses are
 * NULL. */
#ifndef WEFT_DEMO_KERNELS_H
#define WEFT_DEMO_KERNELS_H

#include <stdint.h>

#include "weft/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Threads per block of partial_reduce and divide_by; a power of two, since
 * the CUDA tree reduction halves it. */
#define DEMO_THREADS 256
/* Grid-stride loops let the grid stay this small for any array size. */
#define DEMO_MAX_BLOCKS 1024

extern const void *const weft_demo_cuda_partial_reduce;
extern const void *const weft_demo_cuda_single_thread_sum;
extern const void *const weft_demo_cuda_divide_by;

void weft_demo_host_partial_reduce(const weft_kernel_ctx *ctx, void **args);
void weft_demo_host_single_thread_sum(const weft_kernel_ctx *ctx, void **args);
void weft_demo_host_divide_by(const weft_kernel_ctx *ctx, void **args);

/* The kernels as weft describes them, ready to launch on either backend. */
typedef struct demo_kernels {
  weft_kernel partial_reduce, single_thread_sum, divide_by;
} demo_kernels;

void demo_kernels_init(demo_kernels *k);

#ifdef __cplusplus
}
#endif

/* Fills a[0..n) with reproducible random floats in (0, 1] (positive, so
 * the sum is far from zero), continuing from *seed, and returns their sum
 * in double: the demo's and the normalize benchmark's input. */
double demo_fill_input(float *a, unsigned long long n, uint64_t *seed);

#endif
