// CUDA versions of the example's kernels.
#include <math.h>

extern "C" __global__ void overlap_matmul(const float *a, const float *b,
                                          float *c, unsigned n) {
  __shared__ float ta[16][16], tb[16][16];
  unsigned row = blockIdx.y * 16 + threadIdx.y;
  unsigned col = blockIdx.x * 16 + threadIdx.x;
  float acc = 0;
  for (unsigned t = 0; t < n; t += 16) {
    ta[threadIdx.y][threadIdx.x] =
        row < n && t + threadIdx.x < n ? a[row * n + t + threadIdx.x] : 0;
    tb[threadIdx.y][threadIdx.x] =
        col < n && t + threadIdx.y < n ? b[(t + threadIdx.y) * n + col] : 0;
    __syncthreads();
    for (int k = 0; k < 16; k++)
      acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  if (row < n && col < n)
    c[row * n + col] = acc;
}

extern "C" __global__ void overlap_sine(float *x, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] = sinf(x[i]);
}
