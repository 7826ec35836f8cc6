// The README's first program's kernel on CUDA: extern "C", so that
// first.c's WEFT_CUDA_KERNEL_DECL(scale) finds it by name.
extern "C" __global__ void scale(float *x, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] *= 2.0f;
}
