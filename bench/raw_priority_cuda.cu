// The `priority` scenario's raw CUDA baseline: what seed 001 does, written
// with the CUDA runtime and cuBLAS by hand. Three non-blocking streams made
// at open: flood and short at the default priority (plain
// cudaStreamCreateWithFlags, as torch.cuda.Stream() makes them), high at
// the device's greatest priority; one cuBLAS handle, created once and set
// to the flood stream, for bench_sgemm (the very call weft's tasks make);
// the short work is cudaLaunchKernel of seed_kernels' cube. Every CUDA and
// cuBLAS call is checked, with the call, the error's name and text, and the
// file and line kept for the report.
#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "bench.h"
#include "gemm.h"
#include "raw_check_cuda.h"
#include "raw_priority.h"
#include "seed_kernels.h"

namespace {

struct prio_cuda {
  bench_prio_raw base;
  int dev;
  cudaStream_t flood, shrt, high;
  cublasHandle_t blas;
  int made; // how many of flood, shrt, high, blas exist, in that order
};

prio_cuda *of(bench_prio_raw *r) { return reinterpret_cast<prio_cuda *>(r); }

// Makes the streams and the handle, counting them in x->made so that
// prio_close frees exactly what exists.
int make(prio_cuda *x) {
  CK(cudaSetDevice(x->dev));
  CK(cudaDeviceGetStreamPriorityRange(&x->base.prio_default,
                                      &x->base.prio_high));
  // cudaStreamCreateWithFlags makes priority 0, which is also the least
  // of the range on current GPUs; report what the stream really has.
  CK(cudaStreamCreateWithFlags(&x->flood, cudaStreamNonBlocking));
  x->made = 1;
  CK(cudaStreamGetPriority(x->flood, &x->base.prio_default));
  CK(cudaStreamCreateWithFlags(&x->shrt, cudaStreamNonBlocking));
  x->made = 2;
  CK(cudaStreamCreateWithPriority(&x->high, cudaStreamNonBlocking,
                                  x->base.prio_high));
  x->made = 3;
  BK(cublasCreate(&x->blas));
  x->made = 4;
  BK(cublasSetStream(x->blas, x->flood));
  // Loads cube's module now: under lazy loading (CUDA 12's default) the
  // first launch would load it, and loading can wait for kernels running
  // on other streams. The warm-up run does the same for cuBLAS's kernels.
  cudaFuncAttributes attr;
  CK(cudaFuncGetAttributes(&attr, seed_cuda_cube));
  return 0;
}

void prio_close(bench_prio_raw *r) {
  prio_cuda *x = of(r);
  // Errors here would only repeat one already reported by a checked call.
  cudaSetDevice(x->dev);
  if (x->made >= 4)
    cublasDestroy(x->blas);
  if (x->made >= 3) {
    cudaStreamSynchronize(x->high);
    cudaStreamDestroy(x->high);
  }
  if (x->made >= 2) {
    cudaStreamSynchronize(x->shrt);
    cudaStreamDestroy(x->shrt);
  }
  if (x->made >= 1) {
    cudaStreamSynchronize(x->flood);
    cudaStreamDestroy(x->flood);
  }
  free(x);
}

int prio_open(weft_runtime *rt, bench_prio_raw **out, char *err,
              size_t errlen) {
  (void)rt; // weft's device 0 is CUDA device 0
  prio_cuda *x = static_cast<prio_cuda *>(calloc(1, sizeof(prio_cuda)));
  if (!x) {
    snprintf(err, errlen, "raw CUDA: out of memory");
    return -1;
  }
  x->base.ops = &bench_prio_raw_cuda;
  x->dev = 0;
  if (make(x)) {
    snprintf(err, errlen, "%s", x->base.err);
    prio_close(&x->base);
    return -1;
  }
  *out = &x->base;
  return 0;
}

// The seed's order from one thread: `with stream(first): matmuls`, then
// `with stream(second): pows`; then the host waits for the short work.
int prio_run(bench_prio_raw *r, const bench_prio_set *s, bench_prio_mode m,
             bench_prio_times *t) {
  prio_cuda *x = of(r);
  unsigned n = s->n;
  unsigned long nn = (unsigned long)n * n;
  cudaStream_t st = m == BENCH_PRIO_HIGH ? x->high : x->shrt;
  CK(cudaSetDevice(x->dev));
  uint64_t t0 = bench_now_ns();
  for (int i = 0; m != BENCH_PRIO_ALONE && i < s->nflood; i++)
    BK(bench_sgemm(x->blas, n, s->in[i % s->ring], s->in[(i + 1) % s->ring],
                   s->flood_out[i % s->ring]));
  for (int j = 0; j < s->nshort; j++) {
    const float *in = s->in[j];
    float *out = s->short_out + (size_t)j * nn;
    void *args[] = {&in, &out, &nn};
    CK(cudaLaunchKernel(seed_cuda_cube, dim3(seed_blocks(nn)),
                        dim3(SEED_THREADS), args, 0, st));
  }
  CK(cudaStreamSynchronize(st));
  t->short_ms = (double)(bench_now_ns() - t0) / 1e6;
  t->flood_ms = 0;
  if (m != BENCH_PRIO_ALONE) {
    CK(cudaStreamSynchronize(x->flood));
    t->flood_ms = (double)(bench_now_ns() - t0) / 1e6;
  }
  return 0;
}

} // namespace

extern "C" const bench_prio_ops bench_prio_raw_cuda = {prio_open, prio_close,
                                                       prio_run};
