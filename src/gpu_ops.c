/* Public GPU operations on the calling task's (or thread's) stream. */
#include "runtime_internal.h"
#include "weft/kernel.h"
#include "weft/memory.h"
#include "weft/stream.h"

/* Finds the caller's exec and stream; on failure returns the code. */
#define CURRENT(x, s, call)                                                    \
  weft__exec *x = weft__exec_get(call);                                        \
  if (!x)                                                                      \
    return WEFT_ESTATE;                                                        \
  weft__stream *s;                                                             \
  do {                                                                         \
    int rc_ = weft__exec_stream(x, &s);                                        \
    if (rc_)                                                                   \
      return rc_;                                                              \
  } while (0)

weft_stream *weft_stream_current(void) {
  weft__exec *x = weft__exec_get("weft_stream_current");
  weft__stream *s;
  if (!x || weft__exec_stream(x, &s) != 0)
    return NULL;
  return (weft_stream *)s;
}

int weft_launch(const weft_kernel *k, weft_dim3 grid, weft_dim3 block,
                size_t shared_bytes, void **args) {
  CURRENT(x, s, "weft_launch");
  int rc = weft__launch(s, k, grid, block, shared_bytes, args);
  return rc ? weft__exec_fail(x, rc) : 0;
}

int weft_kernel_preload(const weft_kernel *k) {
  weft__exec *x = weft__exec_get("weft_kernel_preload");
  if (!x)
    return WEFT_ESTATE;
  return weft__kernel_preload(x->rt->bk, x->dev, k);
}

int weft_copy(void *dst, const void *src, size_t bytes) {
  CURRENT(x, s, "weft_copy");
  int rc = weft__copy(s, dst, src, bytes, WEFT__COPY_DEFAULT);
  return rc ? weft__exec_fail(x, rc) : 0;
}

int weft_memset(void *dst, int value, size_t bytes) {
  CURRENT(x, s, "weft_memset");
  int rc = weft__memset(s, dst, value, bytes);
  return rc ? weft__exec_fail(x, rc) : 0;
}

int weft_device_alloc(size_t bytes, void **ptr) {
  CURRENT(x, s, "weft_device_alloc");
  int rc = weft__device_alloc(s, bytes, ptr);
  return rc ? weft__exec_fail(x, rc) : 0;
}

int weft_device_free(void *ptr) {
  CURRENT(x, s, "weft_device_free");
  int rc = weft__device_free(s, ptr);
  return rc ? weft__exec_fail(x, rc) : 0;
}

int weft_pinned_alloc(size_t bytes, void **ptr) {
  weft__exec *x = weft__exec_get("weft_pinned_alloc");
  if (!x)
    return WEFT_ESTATE;
  return weft__pinned_alloc(x->rt->bk, bytes, ptr);
}

int weft_pinned_free(void *ptr) {
  weft__exec *x = weft__exec_get("weft_pinned_free");
  if (!x)
    return WEFT_ESTATE;
  return weft__pinned_free(x->rt->bk, ptr);
}
