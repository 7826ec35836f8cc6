// The `copies` scenario's raw baseline on CUDA: what a careful programmer
// writes with the CUDA runtime and cuBLAS alone (see raw_copies.h). Three
// cudaStreamNonBlocking streams and a cuBLAS handle set to the first, made
// at open so that no timed run pays for them; the matmuls through
// bench_sgemm, the very call weft's variant makes; every CUDA and cuBLAS
// call checked, with the call, the error's name and text, and the file and
// line kept for the report.
#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "gemm.h"
#include "raw_check_cuda.h"
#include "raw_copies.h"

namespace {

enum { S_MM, S_D2H, S_H2D, NSTREAMS };

struct raw_copies_cuda {
  bench_raw_copies base;
  int dev;
  cudaStream_t s[NSTREAMS];
  int made;            // streams created so far
  cublasHandle_t blas; // NULL until created
};

raw_copies_cuda *of(bench_raw_copies *r) {
  return reinterpret_cast<raw_copies_cuda *>(r);
}

// Waits for the streams and frees what exists of the context. Errors here
// would only repeat one that a checked call already reported.
void teardown(raw_copies_cuda *x) {
  cudaSetDevice(x->dev);
  for (int i = 0; i < x->made; i++)
    cudaStreamSynchronize(x->s[i]);
  if (x->blas)
    cublasDestroy(x->blas);
  for (int i = 0; i < x->made; i++)
    cudaStreamDestroy(x->s[i]);
  free(x);
}

int make(raw_copies_cuda *x) {
  CK(cudaSetDevice(x->dev));
  for (; x->made < NSTREAMS; x->made++)
    CK(cudaStreamCreateWithFlags(&x->s[x->made], cudaStreamNonBlocking));
  // cublasCreate loads cuBLAS on first use and is slow (16 ms on the H200):
  // once, here, as any program would; the warm-up run then loads the SGEMM
  // kernel.
  BK(cublasCreate(&x->blas));
  BK(cublasSetStream(x->blas, x->s[S_MM]));
  return 0;
}

int raw_open(weft_runtime *rt, bench_raw_copies **out, char *err,
             size_t errlen) {
  (void)rt; // weft's device 0 is CUDA device 0
  raw_copies_cuda *x =
      static_cast<raw_copies_cuda *>(calloc(1, sizeof(raw_copies_cuda)));
  if (!x) {
    snprintf(err, errlen, "raw CUDA: out of memory");
    return -1;
  }
  x->base.ops = &bench_raw_copies_cuda;
  x->dev = 0;
  if (make(x)) {
    snprintf(err, errlen, "%s", x->base.err);
    teardown(x);
    return -1;
  }
  *out = &x->base;
  return 0;
}

void raw_close(bench_raw_copies *r) { teardown(of(r)); }

int raw_run(bench_raw_copies *r, const bench_copies_set *s, int blocking) {
  raw_copies_cuda *x = of(r);
  CK(cudaSetDevice(x->dev));
  for (int i = 0; i < s->nmat; i++) {
    const float *a = s->a[i % s->nin];
    BK(bench_sgemm(x->blas, s->n, a, a, s->c[i]));
  }
  for (int i = 0; i < s->nmat; i++) {
    CK(cudaMemcpyAsync(s->d2h_dst[i], s->d2h_src[i], s->bytes,
                       cudaMemcpyDeviceToHost, x->s[S_D2H]));
    if (blocking)
      CK(cudaStreamSynchronize(x->s[S_D2H]));
  }
  for (int i = 0; i < s->nmat; i++) {
    CK(cudaMemcpyAsync(s->h2d_dst[i], s->h2d_src[i], s->bytes,
                       cudaMemcpyHostToDevice, x->s[S_H2D]));
    if (blocking)
      CK(cudaStreamSynchronize(x->s[S_H2D]));
  }
  // Blocking: the copy streams are already drained and their syncs return
  // at once, so one loop serves both cases. The syncs also report any
  // error of the work queued (an SGEMM kernel's, a copy's).
  for (int i = 0; i < NSTREAMS; i++)
    CK(cudaStreamSynchronize(x->s[i]));
  return 0;
}

} // namespace

extern "C" const bench_raw_copies_ops bench_raw_copies_cuda = {
    raw_open,
    raw_close,
    raw_run,
};
