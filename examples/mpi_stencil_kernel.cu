// The CUDA version of mpi_stencil.c's row update (the same arithmetic as
// its CPU version, so that every rank count gives the same grid).
extern "C" __global__ void stencil_rows(const float *top, const float *mid,
                                        const float *bot, float *out,
                                        unsigned cols, unsigned n, unsigned r0,
                                        unsigned r1) {
  unsigned long long i =
      (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned r = r0 + (unsigned)(i / cols), c = (unsigned)(i % cols);
  if (r >= r1)
    return;
  if (c == 0 || c == cols - 1) {
    out[(size_t)(r - r0) * cols + c] = 0;
    return;
  }
  const float *up = r == 0 ? top : mid + (size_t)(r - 1) * cols;
  const float *down = r == n - 1 ? bot : mid + (size_t)(r + 1) * cols;
  const float *me = mid + (size_t)r * cols;
  out[(size_t)(r - r0) * cols + c] = __fmul_rn(
      0.25f,
      __fadd_rn(__fadd_rn(__fadd_rn(up[c], down[c]), me[c - 1]), me[c + 1]));
}
