/* The host backend's cache of "device" blocks: a block freed on a stream
 * is kept for reuse once the stream passes the free (host_exec.c), up to
 * WEFT__HOST_CACHE_MAX bytes, and freed at close. Beneath the executor and
 * the operations, which both release blocks. */
#include <stdlib.h>

#include "host/host_internal.h"

void weft__host_block_release(weft__host_backend *hb, void *p) {
  weft__host_block *b = (weft__host_block *)((char *)p - WEFT__HOST_BLOCK_HDR);
  if (b->size > WEFT__HOST_CACHE_MAX - hb->cached_bytes) { /* no wrap */
    weft__backend_forget(&hb->base, p, b->size);
    free(b);
    return;
  }
  b->next = hb->cached;
  hb->cached = b;
  hb->cached_bytes += b->size;
}

void weft__host_cache_drain(weft__host_backend *hb) {
  while (hb->cached) {
    weft__host_block *b = hb->cached;
    hb->cached = b->next;
    weft__backend_forget(&hb->base, (char *)b + WEFT__HOST_BLOCK_HDR, b->size);
    free(b);
  }
  hb->cached_bytes = 0;
}
