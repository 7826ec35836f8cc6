/* What weft/cuda.h offers code that calls CUDA itself. */
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
