// weft.hpp under nvcc: a typed launch deduced from a __global__ function,
// <<<>>> on the task's stream through weft::stream(), and a library
// handle that follows the task (weft/cuda.hpp). On the host backend the
// CUDA calls throw weft::error with WEFT_ENOTSUP; skips (77) without a
// CUDA device.
#include "cpp_common.hpp"

__global__ void fill(int *x, int v, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] = v;
}

static void fill_host(const weft_kernel_ctx &k, int *x, int v, unsigned n) {
  for (unsigned t = 0; t < k.block_dim.x; t++) {
    unsigned i = k.block_idx.x * k.block_dim.x + t;
    if (i < n)
      x[i] = v;
  }
}

static const weft::kernel fill_kernel(fill, weft::host_fn<fill_host>, "fill");

int main() {
  weft::runtime rt = open_runtime();
  if (rt.backend() != WEFT_BACKEND_CUDA) {
    int code = weft::spawn(rt, [] {
                 try {
                   weft::cublas();
                 } catch (const weft::error &e) {
                   return e.code();
                 }
                 return 0;
               }).join();
    EXPECT_EQ_INT(code, WEFT_ENOTSUP);
    std::printf("SKIP: not the CUDA backend (weft::cublas() refused)\n");
    return 77;
  }
  const unsigned n = 1000;
  auto t = weft::spawn(rt, [n] {
    weft::device_buffer<int> d(n);
    weft::pinned_buffer<int> h(n);
    weft::launch(fill_kernel, (n + 127) / 128, 128, 0, d.data(), 3, n);
    weft::copy(h, d, n);
    weft::sync();
    int first = h[n - 1];
    fill<<<(n + 127) / 128, 128, 0, weft::stream()>>>(d.data(), 4, n);
    weft::copy(h, d, n);
    weft::sync();
    return first * 10 + h[0];
  });
  EXPECT_EQ_INT(t.join(), 34);
  /* cuBLAS on the task's stream: x *= 2, read back in the same task. */
  float got =
      weft::spawn(rt, [] {
        weft::device_buffer<float> x(4);
        weft::pinned_buffer<float> h(4);
        for (int i = 0; i < 4; i++)
          h[i] = 1.5f;
        weft::copy(x, h, 4);
        const float two = 2;
        EXPECT_EQ_INT(cublasSscal(weft::cublas(), 4, &two, x.data(), 1), 0);
        weft::copy(h, x, 4);
        weft::sync();
        return h[3];
      }).join();
  EXPECT(got == 3.0f);
  std::printf("ok\n");
  return 0;
}
