// CUDA versions of the benchmark kernels. Only their addresses leave this
// file: weft launches them as weft_kernels, the raw baselines with
// cudaLaunchKernel, so both run the very same functions.
#include "kernels.h"

__global__ void bench_empty(void) {}

__global__ void bench_tick(unsigned *counter) { *counter += 1; }

__global__ void bench_affine(const unsigned *in, unsigned *out, unsigned mul,
                             unsigned add, unsigned n) {
  unsigned stride = gridDim.x * blockDim.x;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = in[i] * mul + add;
}

extern "C" const void *const bench_cuda_empty = (const void *)bench_empty;
extern "C" const void *const bench_cuda_tick = (const void *)bench_tick;
extern "C" const void *const bench_cuda_affine = (const void *)bench_affine;
