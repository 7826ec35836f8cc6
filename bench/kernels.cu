// CUDA versions of the benchmarks' kernels (kernels.h). extern "C", so
// that kernels_host.c's weak declarations find them by name; weft launches
// them as weft_kernels, the raw baselines with cudaLaunchKernel, so both run
// the very same functions.
#include "kernels.h"

// kernels_host.c refers to this strongly, which is what brings this object
// out of the weft_bench archive into the program.
extern "C" const char bench_kernels_cu[] = "bench/kernels.cu";

extern "C" __global__ void bench_empty(void) {}

extern "C" __global__ void bench_tick(unsigned *counter) { *counter += 1; }

extern "C" __global__ void bench_affine(const unsigned *in, unsigned *out,
                                        unsigned mul, unsigned add,
                                        unsigned n) {
  unsigned stride = gridDim.x * blockDim.x;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = in[i] * mul + add;
}

extern "C" __global__ void seed_cube(const float *in, float *out,
                                     unsigned long n) {
  unsigned long stride = (unsigned long)gridDim.x * blockDim.x;
  for (unsigned long i = (unsigned long)blockIdx.x * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    float v = in[i];
    out[i] = v * v * v;
  }
}

extern "C" __global__ void seed_sine(float *x, unsigned long n) {
  unsigned long stride = (unsigned long)gridDim.x * blockDim.x;
  for (unsigned long i = (unsigned long)blockIdx.x * blockDim.x + threadIdx.x;
       i < n; i += stride)
    x[i] = sinf(x[i]);
}

extern "C" __global__ void seed_layer(const float *x, const float *w, float *y,
                                      unsigned batch, unsigned width) {
  unsigned long n = (unsigned long)batch * width;
  unsigned long stride = (unsigned long)gridDim.x * blockDim.x;
  for (unsigned long i = (unsigned long)blockIdx.x * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    unsigned long b = i / width, j = i % width;
    const float *xr = x + b * width;
    float acc = 0.0f;
    // Coalesced: the warp's threads read w[k][j], w[k][j+1], ...; the
    // first version read w[j][k] (a stride of width floats between
    // threads) and took ~39 us per layer at batch 1 on the H200.
#pragma unroll 8
    for (unsigned k = 0; k < width; k++)
      acc += w[(unsigned long)k * width + j] * xr[k];
    y[i] = tanhf(acc);
  }
}

// Block-wise sum: each thread adds its grid-stride share, then the block
// reduces the DEMO_THREADS partial sums in shared memory, halving each step.
extern "C" __global__ void demo_partial_reduce(const float *a, float *partial,
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
extern "C" __global__ void demo_single_thread_sum(const float *partial,
                                                  float *sum, unsigned m) {
  double acc = 0.0;
  for (unsigned i = 0; i < m; i++)
    acc += partial[i];
  *sum = (float)acc;
}

extern "C" __global__ void demo_divide_by(float *a, const float *sum,
                                          unsigned long long n) {
  float s = *sum;
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i =
           (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
       i < n; i += stride)
    a[i] /= s;
}
