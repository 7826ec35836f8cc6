// The README's first program with the C++ face (weft.hpp): the same two
// tasks as first.c, each a lambda. On CUDA the kernel is first_kernel.cu's.
#include <cstdio>
#include <vector>
#include <weft.hpp>

extern "C" void scale(float *x, unsigned n) __attribute__((weak)); // CUDA
static void scale_host(const weft_kernel_ctx &k, float *x, unsigned n) {
  unsigned lo = k.block_idx.x * k.block_dim.x, hi = lo + k.block_dim.x;
  for (unsigned i = lo; i < hi && i < n; i++)
    x[i] *= 2.0f;
}
static const weft::kernel scale_kernel(scale, weft::host_fn<scale_host>,
                                       "scale");

int main() try {
  const unsigned n = 1 << 18;
  weft::runtime rt; // WEFT_BACKEND=host|cuda|auto
  std::vector<float> a(n), b(n);
  for (unsigned i = 0; i < n; i++)
    a[i] = b[i] = float(i);
  auto work = [n](float *x) {
    return [n, x] { // a task: copy in, scale, copy out, on its own stream
      weft::device_buffer<float> d(n);
      weft::copy(d, x, n);
      weft::launch(scale_kernel, n / 256, 256, 0, d.data(), n);
      weft::copy(x, d, n);
      weft::sync(); // waits for this task's stream only, yielding
    };
  };
  auto ta = weft::spawn(rt, work(a.data())),
       tb = weft::spawn(rt, work(b.data()));
  ta.join(); // rethrows what the task threw
  tb.join();
  bool ok = a[n - 1] == 2.0f * (n - 1) && b[7] == 14.0f;
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
} catch (const weft::error &e) {
  std::fprintf(stderr, "weft: %s\n", e.what());
  return 1;
}
