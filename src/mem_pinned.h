/* The pinned (page-locked) host memory cache.
 *
 * cudaMallocHost is slow and can wait for the device, and pinned copies
 * are what keep transfers asynchronous, so freed blocks are kept for reuse
 * (docs/decisions/memory.md, "Pinning synchronises the device").
 * Small requests (up to 1 MiB) round up to a power-of-two class and
 * are carved from 2 MiB chunks; large ones round up to 64 KiB and get a
 * chunk each, reused for any request it fits with at most an eighth wasted.
 * A block that a stream used (a weft_copy touched it) is reused only after
 * that use completes: freeing it records an event on each such stream, and
 * the block waits on a pending list until those events complete. */
#ifndef WEFT__MEM_PINNED_H
#define WEFT__MEM_PINNED_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "weft/runtime.h"

#define WEFT__PIN_CLASSES 12 /* 512 B .. 1 MiB */
#define WEFT__PIN_SMALL_MAX ((size_t)1 << 20)
#define WEFT__PIN_SLAB ((size_t)2 << 20)

typedef struct weft__pin_chunk weft__pin_chunk;

typedef struct weft__pin_block {
  weft__pin_chunk *chunk;
  char *ptr;
  size_t size;      /* usable bytes: class size or large chunk size */
  size_t requested; /* bytes asked for, while in use */
  int in_use;
  unsigned graphs; /* live graphs that use it (graph.c): not freeable */
  struct weft__pin_block *next; /* free or pending list */
  /* Streams that touched it while in use, and once freed the events that
   * must complete before reuse; both arrays have cap entries. */
  int nused, nevents, cap;
  weft__stream **used;
  weft__event **events;
} weft__pin_block;

struct weft__pin_chunk {
  char *base;
  size_t size;
  int cls; /* class index, or -1 for a large block */
  size_t nblocks, nfree;
  weft__pin_block *blocks; /* nblocks entries */
};

typedef struct weft__pinned_stats {
  size_t reserved;  /* bytes of pinned memory held */
  size_t in_use;    /* bytes handed out (class or chunk sizes) */
  size_t requested; /* bytes asked for by the blocks in use */
  size_t pending;   /* bytes freed but waiting for a stream to finish */
  size_t blocks_in_use;
  uint64_t hits, misses;
} weft__pinned_stats;

typedef struct weft__pinned_cache {
  pthread_mutex_t lock;
  weft__backend *bk;
  weft_runtime *rt; /* for the event pool */
  weft__pin_block *free_small[WEFT__PIN_CLASSES];
  weft__pin_block *free_large; /* sorted by size */
  weft__pin_block *pending;
  weft__pin_chunk **chunks; /* sorted by base, for lookups of any address */
  size_t nchunks, cap;
  weft__pinned_stats st;
} weft__pinned_cache;

int weft__pinned_cache_init(weft__pinned_cache *c, weft_runtime *rt,
                            weft__backend *bk);
/* Frees every chunk; the caller checked no block is in use. */
void weft__pinned_cache_fini(weft__pinned_cache *c);
int weft__pinned_cache_alloc(weft__pinned_cache *c, size_t n, void **out);
int weft__pinned_cache_free(weft__pinned_cache *c, void *p);
/* The size of the live block p starts, or 0. */
size_t weft__pinned_cache_size(weft__pinned_cache *c, const void *p);
/* WEFT_EINVAL, reported as call's, if [p, p + n) starts in a block in use
 * and runs past the bytes asked for it (the registry knows only the 2 MiB
 * chunk that blocks share); else 0. what names p ("dst", "src"). */
int weft__pinned_cache_extent(weft__pinned_cache *c, const void *p, size_t n,
                              const char *call, const char *what);
/* Notes that stream s reads or writes [p, p + n) if it lies in a cached
 * block; returns 1 if it does (the memory is pinned), else 0. */
int weft__pinned_cache_use(weft__pinned_cache *c, const void *p, size_t n,
                           weft__stream *s);
/* A copy's checks and notes under one hold of the lock: WEFT_EINVAL as
 * weft__pinned_cache_extent's for dst, then src (nothing noted); else
 * stream s's use of each block noted, *dst_pinned / *src_pinned set to
 * whether each lies in a cached block, and 0. */
int weft__pinned_cache_copy(weft__pinned_cache *c, void *dst, const void *src,
                            size_t n, weft__stream *s, const char *call,
                            int *dst_pinned, int *src_pinned);
/* Returns cached chunks that hold no block in use to the backend. */
void weft__pinned_cache_trim(weft__pinned_cache *c);
void weft__pinned_cache_stats(weft__pinned_cache *c, weft__pinned_stats *out);

/* Adds delta to the count of live graphs holding the in-use block that
 * holds p; while it is above 0, weft__pinned_cache_free refuses the block
 * (WEFT_EBUSY). Returns 1 if p lies in a block in use, else 0. */
int weft__pinned_cache_hold(weft__pinned_cache *c, const void *p, int delta);
/* The start of the in-use block that holds p, or NULL. */
const void *weft__pinned_cache_block(weft__pinned_cache *c, const void *p);

#endif
