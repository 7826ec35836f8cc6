/* The kernels of the seeds' experiments (copies, priority, tasks,
 * saturation), for both backends. float data, row-major.
 *
 *   matmul(a, b, c, n)        c = a · b for n x n matrices; host backend
 *                             only: on CUDA the scenarios call cuBLAS
 *                             (bench_gemm), as the seeds' torch.matmul and
 *                             CUDA.jl's mul! do. Launch with grid n (one
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
 * block; seed_blocks(n) sizes their grid. The CUDA versions live in
 * seed_kernels.cu (exported by address, so the raw baselines launch the
 * very same functions); a build without CUDA links seed_kernels_nocuda.c,
 * where the addresses are NULL. */
#ifndef WEFT_BENCH_SEED_KERNELS_H
#define WEFT_BENCH_SEED_KERNELS_H

#include "weft/device.h"
#include "weft/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SEED_THREADS 256
#define SEED_MAX_BLOCKS 4096

extern const void *const seed_cuda_cube;
extern const void *const seed_cuda_sine;
extern const void *const seed_cuda_layer;

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

#ifdef __cplusplus
}
#endif

#endif
