/* The benchmarks' kernels, for both backends, the raw baselines and the
 * demo: one set. The CUDA versions are kernels.cu's extern "C" __global__
 * functions, the host versions kernels_host.c's; the descriptors name the
 * CUDA ones through weft's weak WEFT_CUDA_KERNEL_DECL, so a build without
 * CUDA needs no stubs.
 *
 * The benchmarks' own:
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
 * The kernels of the seeds' experiments (copies, priority, tasks,
 * saturation), for both backends. float data, row-major.
 *
 *   matmul(a, b, c, n, rows)  c = a · b for a rows x n, b n x n (so c is
 *                             rows x n; rows = n: square); host backend
 *                             only: on CUDA the scenarios call cuBLAS
 *                             (bench_gemm), as the seeds' torch.matmul and
 *                             CUDA.jl's mul! do. Launch with grid rows (one
 *                             block per row of c), any block size.
 *   cube(in, out, n)          out[i] = in[i]^3: seed 001's torch.pow(m, 3)
 *   sine(x, n)                x[i] = sin(x[i]) in place: seed 002's
 *                             broadcast!(sin, c, c)
 *   layer(x, w, y, batch, width)
 *                             y[b][j] = tanh(sum_k w[k][j] * x[b][k]): one
 *                             dense layer of seed 004's small model, one
 *                             thread per output element; w is stored
 *                             input-major so that a warp's threads (j,
 *                             j+1, ...) read consecutive weights
 *
 * cube, sine and layer are grid-stride loops of SEED_THREADS threads per
 * block; seed_blocks(n) sizes their grid.
 *
 * The three kernels of the normalisation demo (seed 000), for both backends.
 *
 *   partial_reduce(a, partial, n)      block b writes the sum of its share of
 *                                      a[0..n) to partial[b]; grid-stride, so
 *                                      any grid size covers all n elements
 *   single_thread_sum(partial, sum, m) *sum = partial[0] + ... + partial[m-1];
 *                                      launched as one block of one thread
 *   divide_by(a, sum, n)               a[i] /= *sum, grid-stride
 *
 * partial_reduce and divide_by run DEMO_THREADS threads per block. `weft
 * demo` and the benchmarks' normalize scenario launch them.
 */
#ifndef WEFT_BENCH_KERNELS_H
#define WEFT_BENCH_KERNELS_H

#include <stdint.h>

#include "weft/device.h"
#include "weft/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BENCH_THREADS 256
#define BENCH_MAX_BLOCKS 1024

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

#define SEED_THREADS 256
#define SEED_MAX_BLOCKS 4096

void seed_host_matmul(const weft_kernel_ctx *ctx, void **args);
void seed_host_cube(const weft_kernel_ctx *ctx, void **args);
void seed_host_sine(const weft_kernel_ctx *ctx, void **args);
void seed_host_layer(const weft_kernel_ctx *ctx, void **args);

typedef struct seed_kernels {
  weft_kernel matmul, cube, sine, layer;
} seed_kernels;

/* The kernels as weft describes them. matmul has no CUDA version. */
void seed_kernels_init(seed_kernels *k);

/* Loads the kernels this backend runs now (weft_kernel_preload), so that no
 * timed launch pays for CUDA's lazy module loading. Returns 0 or the first
 * weft error. */
int seed_kernels_preload(const seed_kernels *k, weft_backend_kind backend);

/* Blocks for n elements: one per SEED_THREADS, at most SEED_MAX_BLOCKS. */
unsigned seed_blocks(unsigned long n);

/* The tile operations of the Cholesky scenarios' factorisation (dataflow,
 * cholesky and their -fp64 twins), host backend only (on CUDA the
 * scenarios call cuSOLVER and cuBLAS, as StarPU's and CUDASTF's
 * demonstrations do). Tiles are b x b, column-major, lower triangle, of
 * float, or of double for the _f64 versions; launch each with one block of
 * one thread.
 *
 *   tile_potrf(a, b)          a = its Cholesky factor L (a = L L^T)
 *   tile_trsm(l, a, b)        a = a L^-T
 *   tile_syrk(a, c, b)        c -= a a^T
 *   tile_gemm(a, bt, c, b)    c -= a bt^T */
void tile_host_potrf(const weft_kernel_ctx *ctx, void **args);
void tile_host_trsm(const weft_kernel_ctx *ctx, void **args);
void tile_host_syrk(const weft_kernel_ctx *ctx, void **args);
void tile_host_gemm(const weft_kernel_ctx *ctx, void **args);
void tile_host_potrf_f64(const weft_kernel_ctx *ctx, void **args);
void tile_host_trsm_f64(const weft_kernel_ctx *ctx, void **args);
void tile_host_syrk_f64(const weft_kernel_ctx *ctx, void **args);
void tile_host_gemm_f64(const weft_kernel_ctx *ctx, void **args);

typedef struct tile_kernels {
  weft_kernel potrf, trsm, syrk, gemm;
} tile_kernels;

/* The float kernels ("tile_potrf", ...), or with f64 the double ones
 * ("tile_potrf_f64", ...). */
void tile_kernels_init(tile_kernels *k, int f64);

/* Threads per block of partial_reduce and divide_by; a power of two, since
 * the CUDA tree reduction halves it. */
#define DEMO_THREADS 256
/* Grid-stride loops let the grid stay this small for any array size. */
#define DEMO_MAX_BLOCKS 1024

void weft_demo_host_partial_reduce(const weft_kernel_ctx *ctx, void **args);
void weft_demo_host_single_thread_sum(const weft_kernel_ctx *ctx, void **args);
void weft_demo_host_divide_by(const weft_kernel_ctx *ctx, void **args);

/* The kernels as weft describes them, ready to launch on either backend. */
typedef struct demo_kernels {
  weft_kernel partial_reduce, single_thread_sum, divide_by;
} demo_kernels;

void demo_kernels_init(demo_kernels *k);

/* Fills a[0..n) with reproducible random floats in (0, 1] (positive, so
 * the sum is far from zero), continuing from *seed, and returns their sum
 * in double: the demo's and the normalize benchmark's input. */
double demo_fill_input(float *a, unsigned long long n, uint64_t *seed);

#ifdef __cplusplus
}
#endif

#endif
