/* Handle pools with quarantine: destroyed objects wait on a FIFO free list
 * before reuse, so a stale handle is recognised as destroyed (its magic
 * reads dead) until at least WEFT__POOL_QUARANTINE later objects of its
 * kind have been destroyed. Objects start with a weft__obj header. The
 * caller serialises access. */
#ifndef WEFT__POOL_H
#define WEFT__POOL_H

#include <stddef.h>
#include <stdint.h>

#define WEFT__POOL_QUARANTINE 64
#define WEFT__MAGIC_DEAD 0xdeaddeadu

typedef struct weft__backend weft__backend;

typedef struct weft__obj {
  uint32_t magic;
  int dev;
  weft__backend *bk;
  struct weft__obj *pool_next; /* free list while dead */
} weft__obj;

typedef struct weft__pool {
  weft__obj *head, *tail;
  size_t nfree;
  size_t live;
} weft__pool;

/* A zeroed object of size bytes (magic 0), or NULL when out of memory. */
weft__obj *weft__pool_get(weft__pool *p, size_t size);
/* Marks o dead and queues it for reuse. */
void weft__pool_put(weft__pool *p, weft__obj *o);
/* Frees every object on the free list. */
void weft__pool_drain(weft__pool *p);

#endif
