// How the raw CUDA baselines (raw_cuda.cu, raw_*_cuda.cu) record a failed
// CUDA or cuBLAS call: the call, the error's name and text, and the file
// and line, into the raw context's err buffer. CK (CUDA runtime) and BK
// (cuBLAS) return -1 from the enclosing function on failure and expect the
// context in a variable `x` whose base.err is that buffer.
#ifndef WEFT_BENCH_RAW_CHECK_CUDA_H
#define WEFT_BENCH_RAW_CHECK_CUDA_H

#include <stdio.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

static inline int raw_record(char *err, size_t len, cudaError_t e,
                             const char *call, const char *file, int line) {
  snprintf(err, len, "%s: %s: %s (%s:%d)", call, cudaGetErrorName(e),
           cudaGetErrorString(e), file, line);
  return -1;
}

static inline int raw_record_blas(char *err, size_t len, cublasStatus_t st,
                                  const char *call, const char *file,
                                  int line) {
  snprintf(err, len, "%s: %s: %s (%s:%d)", call, cublasGetStatusName(st),
           cublasGetStatusString(st), file, line);
  return -1;
}

#define CK(call)                                                               \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess)                                                     \
      return raw_record(x->base.err, sizeof x->base.err, e_, #call, __FILE__,  \
                        __LINE__);                                             \
  } while (0)

#define BK(call)                                                               \
  do {                                                                         \
    cublasStatus_t st_ = (call);                                               \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                          \
      return raw_record_blas(x->base.err, sizeof x->base.err, st_, #call,      \
                             __FILE__, __LINE__);                              \
  } while (0)

#endif
