/* The pinned host memory cache (mem_pinned.h). */
#include <stdlib.h>
#include <string.h>

#include "error_internal.h"
#include "event_pool.h"
#include "mem_pinned.h"

#define LARGE_ALIGN ((size_t)64 << 10)

static int class_of(size_t n) {
  int c = 0;
  size_t sz = 512;
  while (sz < n) {
    sz <<= 1;
    c++;
  }
  return c;
}

static size_t class_size(int c) { return (size_t)512 << c; }

int weft__pinned_cache_init(weft__pinned_cache *c, weft_runtime *rt,
                            weft__backend *bk) {
  memset(c, 0, sizeof *c);
  c->rt = rt;
  c->bk = bk;
  return pthread_mutex_init(&c->lock, NULL) ? WEFT_ENOMEM : 0;
}

/* ---- chunks: sorted by base address ---- */

static weft__pin_chunk *chunk_find(weft__pinned_cache *c, const void *p) {
  const char *q = p;
  size_t lo = 0, hi = c->nchunks;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    weft__pin_chunk *k = c->chunks[mid];
    if (q < k->base)
      hi = mid;
    else if (q >= k->base + k->size)
      lo = mid + 1;
    else
      return k;
  }
  return NULL;
}

static int chunk_insert(weft__pinned_cache *c, weft__pin_chunk *k) {
  if (c->nchunks == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 32;
    weft__pin_chunk **v = realloc(c->chunks, cap * sizeof *v);
    if (!v)
      return WEFT_ENOMEM;
    c->chunks = v;
    c->cap = cap;
  }
  size_t i = c->nchunks;
  while (i > 0 && c->chunks[i - 1]->base > k->base) {
    c->chunks[i] = c->chunks[i - 1];
    i--;
  }
  c->chunks[i] = k;
  c->nchunks++;
  return 0;
}

static void chunk_remove(weft__pinned_cache *c, weft__pin_chunk *k) {
  size_t i = 0;
  while (i < c->nchunks && c->chunks[i] != k)
    i++;
  memmove(&c->chunks[i], &c->chunks[i + 1],
          (c->nchunks - i - 1) * sizeof *c->chunks);
  c->nchunks--;
  c->st.reserved -= k->size;
  weft__pinned_free(c->bk, k->base);
  for (size_t b = 0; b < k->nblocks; b++) {
    free(k->blocks[b].used);
    free(k->blocks[b].events);
  }
  free(k->blocks);
  free(k);
}

/* A new chunk of size bytes cut into blocks of block bytes. */
static weft__pin_chunk *chunk_new(weft__pinned_cache *c, size_t size,
                                  size_t block, int cls) {
  weft__pin_chunk *k = calloc(1, sizeof *k);
  if (!k)
    return NULL;
  k->nblocks = size / block;
  k->blocks = calloc(k->nblocks, sizeof *k->blocks);
  if (!k->blocks || weft__pinned_alloc(c->bk, size, (void **)&k->base) != 0)
    goto fail;
  if (chunk_insert(c, k) != 0) {
    weft__pinned_free(c->bk, k->base);
    goto fail;
  }
  k->size = size;
  k->cls = cls;
  for (size_t i = 0; i < k->nblocks; i++) {
    k->blocks[i].chunk = k;
    k->blocks[i].ptr = k->base + i * block;
    k->blocks[i].size = block;
  }
  c->st.reserved += size;
  return k;
fail:
  free(k->blocks);
  free(k);
  return NULL;
}

static void trim_locked(weft__pinned_cache *c);

/* ---- free lists ---- */

static void push_free(weft__pinned_cache *c, weft__pin_block *b) {
  weft__pin_chunk *k = b->chunk;
  k->nfree++;
  if (k->cls >= 0) {
    b->next = c->free_small[k->cls];
    c->free_small[k->cls] = b;
    return;
  }
  weft__pin_block **pp = &c->free_large;
  while (*pp && (*pp)->size < b->size)
    pp = &(*pp)->next;
  b->next = *pp;
  *pp = b;
}

/* Moves pending blocks whose streams have passed their frees to the free
 * lists. A query error (a lost device) also ends the wait: nothing will
 * use the memory any more. */
static void reclaim(weft__pinned_cache *c) {
  const struct weft__backend_ops *ops = c->bk->ops;
  for (weft__pin_block **pp = &c->pending; *pp;) {
    weft__pin_block *b = *pp;
    int done = 1;
    for (int i = 0; i < b->nevents && done; i++)
      done = ops->event_query(b->events[i]) != WEFT_EAGAIN;
    if (!done) {
      pp = &b->next;
      continue;
    }
    *pp = b->next;
    for (int i = 0; i < b->nevents; i++)
      weft__event_pool_put(c->rt, b->events[i]);
    b->nevents = 0;
    c->st.pending -= b->size;
    push_free(c, b);
  }
}

static weft__pin_block *take_small(weft__pinned_cache *c, int cls) {
  weft__pin_block *b = c->free_small[cls];
  if (b) {
    c->free_small[cls] = b->next;
    b->chunk->nfree--;
    c->st.hits++;
    return b;
  }
  weft__pin_chunk *k = chunk_new(c, WEFT__PIN_SLAB, class_size(cls), cls);
  if (!k)
    return NULL;
  c->st.misses++;
  for (size_t i = 1; i < k->nblocks; i++)
    push_free(c, &k->blocks[i]);
  return &k->blocks[0];
}

/* The smallest cached large block that fits with at most 1/8 waste. */
static weft__pin_block *take_large(weft__pinned_cache *c, size_t n) {
  size_t size = (n + LARGE_ALIGN - 1) & ~(LARGE_ALIGN - 1);
  for (weft__pin_block **pp = &c->free_large; *pp; pp = &(*pp)->next) {
    weft__pin_block *b = *pp;
    if (b->size < size)
      continue;
    if (b->size - n > n / 8 && b->size - size >= LARGE_ALIGN)
      break; /* sorted: every later block wastes more */
    *pp = b->next;
    b->chunk->nfree--;
    c->st.hits++;
    return b;
  }
  weft__pin_chunk *k = chunk_new(c, size, size, -1);
  if (!k)
    return NULL;
  c->st.misses++;
  return &k->blocks[0];
}

int weft__pinned_cache_alloc(weft__pinned_cache *c, size_t n, void **out) {
  if (!out)
    return weft__err(WEFT_EINVAL, "weft_pinned_alloc: ptr is NULL");
  if (n == 0)
    return weft__err(WEFT_EINVAL, "weft_pinned_alloc: size is 0");
  if (n > ((size_t)1 << 48))
    return weft__err(WEFT_ENOMEM, "weft_pinned_alloc: %zu bytes", n);
  pthread_mutex_lock(&c->lock);
  reclaim(c);
  weft__pin_block *b =
      n <= WEFT__PIN_SMALL_MAX ? take_small(c, class_of(n)) : take_large(c, n);
  if (!b) {
    /* Cached blocks may be what stands between us and the memory. */
    trim_locked(c);
    b = n <= WEFT__PIN_SMALL_MAX ? take_small(c, class_of(n))
                                 : take_large(c, n);
  }
  if (!b) {
    pthread_mutex_unlock(&c->lock);
    return weft__err(WEFT_ENOMEM,
                     "weft_pinned_alloc: cannot pin %zu bytes (%s)", n,
                     weft_last_error_message());
  }
  b->in_use = 1;
  b->requested = n;
  b->nused = 0;
  c->st.in_use += b->size;
  c->st.requested += n;
  c->st.blocks_in_use++;
  pthread_mutex_unlock(&c->lock);
  *out = b->ptr;
  return 0;
}

static weft__pin_block *block_of(weft__pinned_cache *c, const void *p) {
  weft__pin_chunk *k = chunk_find(c, p);
  if (!k)
    return NULL;
  size_t bs = k->blocks[0].size;
  return &k->blocks[((const char *)p - k->base) / bs];
}

size_t weft__pinned_cache_size(weft__pinned_cache *c, const void *p) {
  pthread_mutex_lock(&c->lock);
  weft__pin_block *b = block_of(c, p);
  size_t n = b && b->ptr == p && b->in_use ? b->size : 0;
  pthread_mutex_unlock(&c->lock);
  return n;
}

/* Under c->lock: whether [p, p + n) starts in b, a block in use, and runs
 * past the bytes asked for it. */
static int runs_past(const weft__pin_block *b, const void *p, size_t n) {
  if (!b || !b->in_use)
    return 0;
  size_t off = (size_t)((const char *)p - b->ptr);
  return off >= b->requested || n > b->requested - off;
}

/* WEFT_EINVAL for [p, p + n), which runs past the end of the block of
 * asked bytes at base (read under the lock by the caller). */
static int past_error(const char *call, const char *what, const void *p,
                      size_t n, const void *base, size_t asked) {
  size_t off = (size_t)((const char *)p - (const char *)base);
  return weft__err(WEFT_EINVAL,
                   "%s: %zu bytes at %s %p run past the end of its pinned "
                   "allocation (%zu bytes at %p: %zu left from %s)",
                   call, n, what, p, asked, base, off < asked ? asked - off : 0,
                   what);
}

int weft__pinned_cache_extent(weft__pinned_cache *c, const void *p, size_t n,
                              const char *call, const char *what) {
  pthread_mutex_lock(&c->lock);
  weft__pin_block *b = block_of(c, p);
  int past = runs_past(b, p, n);
  const void *base = past ? b->ptr : NULL;
  size_t asked = past ? b->requested : 0;
  pthread_mutex_unlock(&c->lock);
  return past ? past_error(call, what, p, n, base, asked) : 0;
}

int weft__pinned_cache_free(weft__pinned_cache *c, void *p) {
  if (!p)
    return 0;
  pthread_mutex_lock(&c->lock);
  weft__pin_block *b = block_of(c, p);
  if (!b || b->ptr != p || !b->in_use) {
    pthread_mutex_unlock(&c->lock);
    return weft__err(WEFT_EINVAL,
                     "weft_pinned_free: %p is not a live pinned allocation "
                     "(foreign pointer, interior pointer or double free)",
                     p);
  }
  if (b->graphs) {
    unsigned n = b->graphs;
    pthread_mutex_unlock(&c->lock);
    return weft__err(WEFT_EBUSY,
                     "weft_pinned_free: %p is used by %u live graph%s; "
                     "weft_graph_destroy them first",
                     p, n, n == 1 ? "" : "s");
  }
  b->in_use = 0;
  c->st.in_use -= b->size;
  c->st.requested -= b->requested;
  c->st.blocks_in_use--;
  /* An event on each stream that used the block marks when its last use
   * completes; if one cannot be recorded, wait for that stream instead. */
  b->nevents = 0;
  for (int i = 0; i < b->nused; i++) {
    weft__stream *s = b->used[i];
    weft__event *e;
    if (weft__event_pool_mark(c->rt, s, &e) != 0) {
      weft__stream_sync(s);
      continue;
    }
    b->events[b->nevents++] = e;
  }
  b->nused = 0;
  if (b->nevents) {
    b->next = c->pending;
    c->pending = b;
    c->st.pending += b->size;
  } else {
    push_free(c, b);
  }
  pthread_mutex_unlock(&c->lock);
  return 0;
}

int weft__pinned_cache_hold(weft__pinned_cache *c, const void *p, int delta) {
  pthread_mutex_lock(&c->lock);
  weft__pin_block *b = block_of(c, p);
  int held = b && b->in_use;
  if (held)
    b->graphs = (unsigned)((int)b->graphs + delta);
  pthread_mutex_unlock(&c->lock);
  return held;
}

const void *weft__pinned_cache_block(weft__pinned_cache *c, const void *p) {
  pthread_mutex_lock(&c->lock);
  weft__pin_block *b = block_of(c, p);
  const void *start = b && b->in_use ? b->ptr : NULL;
  pthread_mutex_unlock(&c->lock);
  return start;
}

/* Under c->lock: notes that stream s uses b, a block in use. */
static void note_use(weft__pin_block *b, weft__stream *s) {
  for (int i = 0; i < b->nused; i++)
    if (b->used[i] == s)
      return;
  if (b->nused == b->cap) {
    int cap = b->cap ? b->cap * 2 : 4;
    weft__stream **u = realloc(b->used, (size_t)cap * sizeof *u);
    weft__event **e = realloc(b->events, (size_t)cap * sizeof *e);
    if (u)
      b->used = u;
    if (e)
      b->events = e;
    if (u && e)
      b->cap = cap;
  }
  if (b->nused < b->cap)
    b->used[b->nused++] = s;
  else /* out of memory: fall back to waiting for the stream */
    weft__stream_sync(s);
}

int weft__pinned_cache_use(weft__pinned_cache *c, const void *p, size_t n,
                           weft__stream *s) {
  pthread_mutex_lock(&c->lock);
  weft__pin_block *b = block_of(c, p);
  if (b && b->in_use)
    note_use(b, s);
  pthread_mutex_unlock(&c->lock);
  (void)n;
  return b != NULL;
}

int weft__pinned_cache_copy(weft__pinned_cache *c, void *dst, const void *src,
                            size_t n, weft__stream *s, const char *call,
                            int *dst_pinned, int *src_pinned) {
  pthread_mutex_lock(&c->lock);
  weft__pin_block *bd = block_of(c, dst), *bs = block_of(c, src);
  int dst_past = runs_past(bd, dst, n);
  if (dst_past || runs_past(bs, src, n)) {
    const weft__pin_block *b = dst_past ? bd : bs;
    const void *p = dst_past ? (const void *)dst : src, *base = b->ptr;
    size_t asked = b->requested;
    pthread_mutex_unlock(&c->lock);
    return past_error(call, dst_past ? "dst" : "src", p, n, base, asked);
  }
  if (bs && bs->in_use)
    note_use(bs, s);
  if (bd && bd->in_use)
    note_use(bd, s);
  pthread_mutex_unlock(&c->lock);
  *dst_pinned = bd != NULL;
  *src_pinned = bs != NULL;
  return 0;
}

static void trim_locked(weft__pinned_cache *c) {
  reclaim(c);
  /* Unlink every free block of a chunk that is entirely free, then drop
   * the chunk. */
  for (size_t i = c->nchunks; i-- > 0;) {
    weft__pin_chunk *k = c->chunks[i];
    if (k->nfree != k->nblocks)
      continue;
    weft__pin_block **list =
        k->cls >= 0 ? &c->free_small[k->cls] : &c->free_large;
    for (weft__pin_block **pp = list; *pp;) {
      if ((*pp)->chunk == k)
        *pp = (*pp)->next;
      else
        pp = &(*pp)->next;
    }
    chunk_remove(c, k);
  }
}

void weft__pinned_cache_trim(weft__pinned_cache *c) {
  pthread_mutex_lock(&c->lock);
  trim_locked(c);
  pthread_mutex_unlock(&c->lock);
}

void weft__pinned_cache_stats(weft__pinned_cache *c, weft__pinned_stats *out) {
  pthread_mutex_lock(&c->lock);
  reclaim(c); /* so "pending" counts only what still waits */
  *out = c->st;
  pthread_mutex_unlock(&c->lock);
}

void weft__pinned_cache_fini(weft__pinned_cache *c) {
  /* Every task has ended, but a plain thread's stream may still be using a
   * freed block: wait for the pending ones before unpinning. */
  for (weft__pin_block *b = c->pending; b; b = b->next)
    for (int i = 0; i < b->nevents; i++)
      weft__event_sync(b->events[i]);
  reclaim(c);
  while (c->nchunks)
    chunk_remove(c, c->chunks[c->nchunks - 1]);
  free(c->chunks);
  pthread_mutex_destroy(&c->lock);
}
