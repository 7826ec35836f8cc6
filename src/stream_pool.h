/* The streams a runtime lends (stream_pool.c): a task or thread leases a
 * stream on its first GPU operation and gives it back when it ends. Pooled
 * per device and priority; the sync events are event_pool.h's. */
#ifndef WEFT__STREAM_POOL_H
#define WEFT__STREAM_POOL_H

#include <stddef.h>

#include "backend.h"
#include "ptrvec.h"

typedef struct weft_runtime weft_runtime;

/* The runtime head's streams: written by stream_pool.c alone, under the
 * lifecycle lock. */
typedef struct weft__stream_pool {
  weft__ptrvec *streams; /* [dev * 2 + high] free streams */
  size_t nstreams;       /* leased or free, made by the runtime */
} weft__stream_pool;

/* Allocates the per-device lists; 0 or WEFT_ENOMEM, reported. */
int weft__stream_pool_init(weft_runtime *rt);
/* Makes n streams of normal priority per device into the pool (n from
 * opts.streams), so that tasks lease them without a driver call; on
 * failure drains the pool, as weft__stream_pool_fini. */
int weft__stream_pool_fill(weft_runtime *rt, int n);
/* Destroys what is pooled and frees the lists. */
void weft__stream_pool_fini(weft_runtime *rt);
/* A stream of device dev, greatest priority if high, from the pool or
 * made; a failure is reported. */
int weft__stream_pool_get(weft_runtime *rt, int dev, int high,
                          weft__stream **out);
/* Takes the stream out of *slot (a caller's, which other threads may
 * read under the lifecycle lock) and back into the pool, in one hold of the
 * lock; nothing when *slot is NULL. */
void weft__stream_pool_put(weft_runtime *rt, weft__stream **slot, int high);
/* Streams made by the runtime, leased or free. */
size_t weft__stream_pool_count(weft_runtime *rt);

#endif
