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
  return weft__pinned_cache_alloc(&x->rt->pinned, bytes, ptr);
}

int weft_pinned_free(void *ptr) {
  weft__exec *x = weft__exec_get("weft_pinned_free");
  if (!x)
    return WEFT_ESTATE;
  return weft__pinned_cache_free(&x->rt->pinned, ptr);
}

int weft_mem_stats_get(weft_runtime *rt, weft_mem_stats *out) {
  if (!rt || !out)
    return weft__err(WEFT_EINVAL, "weft_mem_stats_get: NULL argument");
  if (out->struct_size < sizeof *out)
    return weft__err(WEFT_EINVAL, "weft_mem_stats_get: set out->struct_size "
                                  "to sizeof(weft_mem_stats)");
  weft__pinned_stats p;
  weft__pinned_cache_stats(&rt->pinned, &p);
  weft__backend_counts c;
  weft__backend_get_counts(rt->bk, &c);
  out->pinned_reserved = p.reserved;
  out->pinned_in_use = p.in_use;
  out->pinned_requested = p.requested;
  out->pinned_pending = p.pending;
  out->pinned_cached = p.reserved - p.in_use - p.pending;
  out->pinned_blocks = p.blocks_in_use;
  out->pinned_hits = p.hits;
  out->pinned_misses = p.misses;
  out->device_allocs = c.device_allocs;
  out->device_bytes = c.device_bytes;
  return 0;
}

int weft_mem_trim(weft_runtime *rt) {
  if (!rt)
    return weft__err(WEFT_EINVAL, "weft_mem_trim: rt is NULL");
  weft__pinned_cache_trim(&rt->pinned);
  return 0;
}
