// CUDA versions of the demo kernels (seed 000). Only their addresses leave
// this file; weft launches them through its backend like any weft_kernel,
// and the raw baselines (raw_cuda.cu) with cudaLaunchKernel.
#include "demo_kernels.h"

// Block-wise sum: each thread adds its grid-stride share, then the block
// reduces the DEMO_THREADS partial sums in shared memory, halving each step.
__global__ void demo_partial_reduce(const float *a, float *partial,
                                    unsigned long long n) {
  __shared__ float s[DEMO_THREADS];
  unsigned t = threadIdx.x;
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  float acc = 0.0f;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + t;
       i < n; i += stride)
    acc += a[i];
  s[t] = acc;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (t < half)
      s[t] += s[t + half];
    __syncthreads();
  }
  if (t == 0)
    partial[blockIdx.x] = s[0];
}

// One thread adds the block sums; double keeps the last digits of a sum of
// up to DEMO_MAX_BLOCKS terms, at no cost that matters for one thread.
__global__ void demo_single_thread_sum(const float *partial, float *sum,
                                       unsigned m) {
  double acc = 0.0;
  for (unsigned i = 0; i < m; i++)
    acc += partial[i];
  *sum = (float)acc;
}

__global__ void demo_divide_by(float *a, const float *sum,
                               unsigned long long n) {
  float s = *sum;
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i =
           (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
       i < n; i += stride)
    a[i] /= s;
}

extern "C" const void *const weft_demo_cuda_partial_reduce =
    (const void *)demo_partial_reduce;
extern "C" const void *const weft_demo_cuda_single_thread_sum =
    (const void *)demo_single_thread_sum;
extern "C" const void *const weft_demo_cuda_divide_by =
    (const void *)demo_divide_by;
