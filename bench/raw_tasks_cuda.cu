// The `tasks` scenario's raw CUDA baseline (raw_tasks.h): what a careful
// programmer writes with the CUDA runtime and cuBLAS alone. Non-blocking
// streams made at open, one cuBLAS handle made at open and moved to the
// stream of each run with cublasSetStream (cuBLAS's default workspace pool
// copes with one handle on several streams), bench_sgemm and
// cudaLaunchKernel of seed_cuda_sine on that stream, then a
// cudaStreamSynchronize of each stream used. Every CUDA and cuBLAS call is
// checked, with the call, the error's name and text, and the file and line
// kept for the report.
#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "gemm.h"
#include "raw_check_cuda.h"
#include "raw_tasks.h"
#include "seed_kernels.h"

namespace {

struct raw_tasks_cuda {
  bench_raw_tasks base;
  int dev;
  cublasHandle_t blas;   // NULL until made
  cudaStream_t on;       // the stream blas is set to
  cudaStream_t *streams; // nstreams of them
  int nstreams;
};

raw_tasks_cuda *of(bench_raw_tasks *r) {
  return reinterpret_cast<raw_tasks_cuda *>(r);
}

void raw_close(bench_raw_tasks *r) {
  raw_tasks_cuda *x = of(r);
  // Errors here would only repeat one already reported by a checked call.
  cudaSetDevice(x->dev);
  for (int i = 0; i < x->nstreams; i++)
    cudaStreamSynchronize(x->streams[i]);
  if (x->blas) // waits for the whole device, which is idle by now
    cublasDestroy(x->blas);
  for (int i = 0; i < x->nstreams; i++)
    cudaStreamDestroy(x->streams[i]);
  free(x->streams);
  free(x);
}

// Makes the streams and the handle; on failure x->base.err says why.
int make(raw_tasks_cuda *x, int nstreams) {
  CK(cudaSetDevice(x->dev));
  for (; x->nstreams < nstreams; x->nstreams++)
    CK(cudaStreamCreateWithFlags(&x->streams[x->nstreams],
                                 cudaStreamNonBlocking));
  // The handle belongs to the current device, set above. Kept only once
  // made, so that close destroys nothing on failure.
  cublasHandle_t h;
  BK(cublasCreate(&h));
  x->blas = h;
  // A new handle works on the legacy default stream; every run sets its
  // own stream before its first call, so `on` starts as that stream.
  x->on = NULL;
  return 0;
}

int raw_open(weft_runtime *rt, int nstreams, bench_raw_tasks **out, char *err,
             size_t errlen) {
  (void)rt; // weft's device 0 is CUDA device 0
  raw_tasks_cuda *x =
      static_cast<raw_tasks_cuda *>(calloc(1, sizeof(raw_tasks_cuda)));
  cudaStream_t *v = static_cast<cudaStream_t *>(
      calloc(nstreams > 0 ? (size_t)nstreams : 1, sizeof(cudaStream_t)));
  if (!x || !v) {
    free(x);
    free(v);
    snprintf(err, errlen, "raw CUDA: out of memory");
    return -1;
  }
  x->base.ops = &bench_raw_tasks_cuda;
  x->dev = 0;
  x->streams = v;
  if (make(x, nstreams)) {
    snprintf(err, errlen, "%s", x->base.err);
    raw_close(&x->base);
    return -1;
  }
  *out = &x->base;
  return 0;
}

int raw_iteration(bench_raw_tasks *r, const bench_tasks_work *w, int nruns,
                  int nstreams) {
  raw_tasks_cuda *x = of(r);
  if (nstreams < 1 || nstreams > x->nstreams) {
    snprintf(x->base.err, sizeof x->base.err,
             "raw CUDA: %d streams asked for, %d made", nstreams, x->nstreams);
    return -1;
  }
  unsigned n = w->n;
  unsigned long nn = (unsigned long)n * n;
  CK(cudaSetDevice(x->dev));
  for (int k = 0; k < nruns; k++) {
    cudaStream_t s = x->streams[k % nstreams];
    float *c = w->c[k];
    void *sine_args[] = {&c, &nn};
    // cuBLAS queues its kernels on the handle's stream: move it to this
    // run's stream first, so the SGEMM precedes the sine on that stream.
    if (x->on != s) {
      BK(cublasSetStream(x->blas, s));
      x->on = s;
    }
    BK(bench_sgemm(x->blas, n, w->a, w->b, c));
    CK(cudaLaunchKernel(seed_cuda_sine, dim3(seed_blocks(nn)),
                        dim3(SEED_THREADS), sine_args, 0, s));
  }
  for (int i = 0; i < nstreams && i < nruns; i++)
    CK(cudaStreamSynchronize(x->streams[i]));
  return 0;
}

} // namespace

extern "C" const bench_raw_tasks_ops bench_raw_tasks_cuda = {
    raw_open,
    raw_close,
    raw_iteration,
};
