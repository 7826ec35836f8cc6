/* Calling CUDA from weft: the one translation of its errors. For the
 * files of src/cuda/ only; the current device is cuda_device.h's. */
#ifndef WEFT__CUDA_ERROR_H
#define WEFT__CUDA_ERROR_H

#include <cuda_runtime_api.h>

/* Translates a failed CUDA call into a WEFT_E* code, records the CUDA name
 * and message with file and line, and returns the code. The one place CUDA
 * errors are translated. cudaErrorNotReady from a query is an answer, not a
 * failure: callers test for it before coming here. */
int weft__cuda_error(cudaError_t e, const char *call, const char *file,
                     int line) __attribute__((cold));

/* The same with the code chosen by the caller, for calls whose every
 * failure means one thing (cudaGetDeviceCount failing means no device). */
int weft__cuda_error_as(int code, cudaError_t e, const char *call,
                        const char *file, int line) __attribute__((cold));

/* 1 for the errors that destroy the context: every later CUDA call in the
 * process fails with the same error. */
int weft__cuda_is_sticky(cudaError_t e);

/* Runs fn(...) and returns the translated error from the calling function
 * when it fails; fn's name goes into the message as written. */
#define WEFT__CUDA_CHECK(fn, ...)                                              \
  do {                                                                         \
    cudaError_t e_ = fn(__VA_ARGS__);                                          \
    if (__builtin_expect(e_ != cudaSuccess, 0))                                \
      return weft__cuda_error(e_, #fn, __FILE__, __LINE__);                    \
  } while (0)

#endif
