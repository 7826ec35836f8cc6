/* weft/cuda.h: what weft offers code that calls CUDA and its libraries
 * itself. The cuBLAS handle cache is cuda_cublas.c's. */
#include "cuda_cublas.h"
#include "cuda_device.h"
#include "cuda_internal.h"
#include "error_internal.h"
#include "weft/cuda.h"
#include "weft/stream.h"

cudaStream_t weft_cuda_stream(void) {
  weft__stream *s = (weft__stream *)weft_stream_current();
  if (!s)
    return NULL;
  if (s->hdr.bk->ops->kind != WEFT_BACKEND_CUDA) {
    weft__err(WEFT_ENOTSUP,
              "weft_cuda_stream: the runtime uses the %s "
              "backend, not CUDA",
              s->hdr.bk->ops->name);
    return NULL;
  }
  return ((weft__cuda_stream *)s)->cs;
}

/* Raw codes are recorded only by the CUDA backend (weft__cuda_error). */
cudaError_t weft_cuda_last_error(void) {
  return (cudaError_t)weft_last_error_raw();
}

cublasHandle_t weft_cublas(void) { return weft__cuda_cublas(); }

int weft_cublas_warm(weft_runtime *rt) { return weft__cuda_cublas_warm(rt); }

int weft_cublas_workspace(void **ptr, size_t *bytes) {
  return weft__cuda_cublas_workspace(ptr, bytes);
}
