/* The streams a runtime lends (stream_pool.c): a task or thread leases a
 * stream on its first GPU operation and gives it back when it ends. Pooled
 * per device and priority; the sync events are event_pool.h's. Past the
 * streams made ahead, a lease takes over the stream of the task that
 * returned longest ago with work still queued, before it makes one
 * (docs/decisions/cuda.md, "Streams past those made ahead are taken
 * over"). */
#ifndef WEFT__STREAM_POOL_H
#define WEFT__STREAM_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "ptrvec.h"

typedef struct weft_runtime weft_runtime;

/* A holder whose stream a lease may take over: a task that returned with
 * work still queued on *slot, listed from its return to its end, or one
 * waiting in weft__sync_lending (stream_internal.h). */
typedef struct weft__stream_lender {
  struct weft__stream_lender *prev, *next;
  weft__stream **slot;
  uint64_t task; /* the holder's id, which the trace names */
  int key;       /* dev * 2 + high, plus 1; 0 while not listed */
} weft__stream_lender;

/* The runtime head's streams: written by stream_pool.c alone, under the
 * lifecycle lock. Arrays indexed by dev * 2 + high. */
typedef struct weft__stream_pool {
  weft__ptrvec *streams; /* free streams */
  size_t *made;          /* streams made, leased or free */
  /* Lenders, oldest first (none under weft check). */
  weft__stream_lender **lend_first, **lend_last;
  size_t ahead; /* streams made ahead a device (opts.streams) */
  size_t taken; /* leases that took a lender's stream over */
} weft__stream_pool;

/* Allocates the per-device lists; 0 or WEFT_ENOMEM, reported. */
int weft__stream_pool_init(weft_runtime *rt);
/* Makes n streams of normal priority per device into the pool (n from
 * opts.streams), so that tasks lease them without a driver call, and past
 * n of a device and priority takes streams over rather than make them; on
 * failure drains the pool, as weft__stream_pool_fini. */
int weft__stream_pool_fill(weft_runtime *rt, int n);
/* Destroys what is pooled and frees the lists. */
void weft__stream_pool_fini(weft_runtime *rt);
/* A stream of device dev, greatest priority if high: from the pool, else
 * (past the streams made ahead) a lender's, with its work queued, else
 * made; a failure is reported. */
int weft__stream_pool_get(weft_runtime *rt, int dev, int high,
                          weft__stream **out);
/* Lists n, which holds the stream in *slot with work queued by task (its
 * id), as a lender (the lifecycle lock held); nothing under weft check. */
void weft__stream_pool_lend(weft_runtime *rt, weft__stream_lender *n,
                            weft__stream **slot, uint64_t task, int dev,
                            int high);
/* Takes n off the lenders if listed (the lifecycle lock held). */
void weft__stream_pool_unlend(weft_runtime *rt, weft__stream_lender *n);
/* Takes the stream out of *slot (a caller's, which other threads may
 * read under the lifecycle lock) and back into the pool, and n (the
 * slot's lender entry) off the lenders, in one hold of the lock; nothing
 * else when *slot is NULL. */
void weft__stream_pool_put(weft_runtime *rt, weft__stream **slot, int high,
                           weft__stream_lender *n);
/* 1 when s is in the pool (leased to nobody; a task's work is done by
 * then, a plain thread's may still run), after adding 1 to *moves under
 * the pool's lock, so that whoever leases s next sees the new count; else
 * 0. For library.c, which lends an idle stream's handle to another stream
 * and has its cached copies check *moves. */
int weft__stream_pool_claim_idle(weft_runtime *rt, const weft__stream *s,
                                 uint64_t *moves);
/* Streams made by the runtime, leased or free. */
size_t weft__stream_pool_count(weft_runtime *rt);
/* Leases that took a lender's stream over. */
size_t weft__stream_pool_taken(weft_runtime *rt);

#endif
