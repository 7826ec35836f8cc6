// Seed 002's two tasks with the C++ face (weft.hpp): each multiplies two
// matrices and takes the sine of the result, the two overlapping on the
// GPU with no stream written by hand. examples/overlap.c is the C version;
// on CUDA the kernels are overlap_kernels.cu's.
//
//   build/examples/overlap_cpp          (WEFT_BACKEND=host to run on the CPU)
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <weft.hpp>

// The CUDA kernels, by name from overlap_kernels.cu; weak, so that a build
// without CUDA links with them NULL.
extern "C" {
void overlap_matmul(const float *a, const float *b, float *c, unsigned n)
    __attribute__((weak));
void overlap_sine(float *x, unsigned n) __attribute__((weak));
}

// The host backend's versions, called once per block.
static void matmul_host(const weft_kernel_ctx &k, const float *a,
                        const float *b, float *c, unsigned n) {
  for (unsigned ty = 0; ty < k.block_dim.y; ty++)
    for (unsigned tx = 0; tx < k.block_dim.x; tx++) {
      unsigned row = k.block_idx.y * k.block_dim.y + ty;
      unsigned col = k.block_idx.x * k.block_dim.x + tx;
      if (row >= n || col >= n)
        continue;
      float acc = 0;
      for (unsigned i = 0; i < n; i++)
        acc += a[row * n + i] * b[i * n + col];
      c[row * n + col] = acc;
    }
}
static void sine_host(const weft_kernel_ctx &k, float *x, unsigned n) {
  for (unsigned t = 0; t < k.block_dim.x; t++) {
    unsigned i = k.block_idx.x * k.block_dim.x + t;
    if (i < n)
      x[i] = std::sin(x[i]);
  }
}

static const weft::kernel matmul(overlap_matmul, weft::host_fn<matmul_host>,
                                 "matmul", WEFT_ARG_READ(0) | WEFT_ARG_READ(1));
static const weft::kernel sine(overlap_sine, weft::host_fn<sine_host>, "sine");

int main() try {
  weft::runtime rt;
  unsigned n = rt.backend() == WEFT_BACKEND_CUDA ? 2048 : 256;
  size_t count = size_t(n) * n;

  weft::pinned_buffer<float> h(count);
  for (float &v : h)
    v = (float)std::rand() / RAND_MAX - 0.5f;
  weft::device_buffer<float> a(count), b(count), c[2];
  c[0] = weft::device_buffer<float>(count);
  c[1] = weft::device_buffer<float>(count);
  weft::copy(a, h, count);
  weft::copy(b, h, count);
  weft::sync();

  // The whole task: two launches and a wait for its own stream.
  auto mul_sin = [n](const float *x, const float *y, float *out) {
    return [=] {
      weft::dim3 tiles((n + 15) / 16, (n + 15) / 16);
      weft::launch(matmul, tiles, weft::dim3(16, 16), 0, x, y, out, n);
      weft::launch(sine, (n * n + 255) / 256, 256, 0, out, n * n);
      weft::sync();
    };
  };
  auto t0 = weft::spawn(rt, mul_sin(a.data(), b.data(), c[0].data()));
  auto t1 = weft::spawn(rt, mul_sin(b.data(), a.data(), c[1].data()));
  t0.join();
  t1.join();

  // One element of each result against the CPU.
  bool ok = true;
  weft::pinned_buffer<float> in(count);
  weft::copy(in, a, count);
  for (int i = 0; i < 2; i++) {
    weft::copy(h, c[i], count);
    weft::sync();
    size_t r = n / 3, col = n / 5;
    double ref = 0;
    for (unsigned k = 0; k < n; k++)
      ref += (double)in[r * n + k] * in[size_t(k) * n + col];
    ok &= std::fabs(std::sin(ref) - h[r * n + col]) < 1e-3;
  }
  std::printf("%s backend, two %ux%u matmul+sin tasks (C++): %s\n",
              weft_backend_name(rt.backend()), n, n, ok ? "passed" : "FAILED");
  return ok ? 0 : 1;
} catch (const weft::error &e) {
  std::fprintf(stderr, "weft: %s\n", e.what());
  return 1;
}
