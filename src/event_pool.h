/* The sync events a runtime lends (event_pool.c): taken for one wait and
 * put back, pooled per device and wait kind. */
#ifndef WEFT__EVENT_POOL_H
#define WEFT__EVENT_POOL_H

#include <stddef.h>

#include "backend.h"
#include "ptrvec.h"

struct weft_runtime;

/* The runtime head's events (runtime_head.h): written by event_pool.c
 * alone, under the lifecycle lock. */
typedef struct weft__event_pool {
  weft__ptrvec *free; /* [dev * 2 + blocking] */
  size_t n;           /* pooled or taken, made by the runtime */
} weft__event_pool;

/* Allocates the per-device lists; 0 or WEFT_ENOMEM, reported. */
int weft__event_pool_init(struct weft_runtime *rt);
/* Destroys what is pooled and frees the lists. */
void weft__event_pool_fini(struct weft_runtime *rt);
/* A pooled event of device dev; blocking: one a plain thread will wait on
 * with weft__event_sync (it sleeps there), else one polled by tasks (or
 * queried; the pinned cache's, synced at shutdown, spin there briefly). */
int weft__event_pool_get(struct weft_runtime *rt, int dev, int blocking,
                         weft__event **out);
/* Puts e back, or lets go of one share of it (weft__event_pool_mark). */
void weft__event_pool_put(struct weft_runtime *rt, weft__event *e);
/* A pooled event, put back by the caller, that completes once the work
 * queued on s so far has: one recorded on s now or, while s captures a
 * graph (where a record would be captured, not run), a share of s's
 * fence, recorded before the capture. 0, or the error of getting or
 * recording one. */
int weft__event_pool_mark(struct weft_runtime *rt, weft__stream *s,
                          weft__event **out);
/* s's fence, for while it captures: recorded on s now, just before s
 * begins capturing (0, or the error of getting or recording it); then
 * taken back and put back once the capture is over (unfence). */
int weft__event_pool_fence(struct weft_runtime *rt, weft__stream *s);
void weft__event_pool_unfence(struct weft_runtime *rt, weft__stream *s);

#endif
