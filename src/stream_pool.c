/* The streams a runtime lends, pooled per device and priority. */
#include <stdlib.h>

#include "error_internal.h"
#include "runtime_head.h"
#include "stream_pool.h"

int weft__stream_pool_init(weft_runtime *rt) {
  weft__runtime_head *h = weft__head(rt);
  weft__stream_pool *p = &h->streams;
  size_t keys = (size_t)h->bk->ndev * 2;
  p->streams = calloc(keys, sizeof *p->streams);
  p->made = calloc(keys, sizeof *p->made);
  p->lend_first = calloc(keys, sizeof *p->lend_first);
  p->lend_last = calloc(keys, sizeof *p->lend_last);
  if (!p->streams || !p->made || !p->lend_first || !p->lend_last) {
    weft__stream_pool_fini(rt);
    return weft__err(WEFT_ENOMEM, "weft_init: out of memory");
  }
  return 0;
}

static void unlend(weft__stream_pool *p, weft__stream_lender *n) {
  if (!n->key)
    return;
  int k = n->key - 1;
  if (n->prev)
    n->prev->next = n->next;
  else
    p->lend_first[k] = n->next;
  if (n->next)
    n->next->prev = n->prev;
  else
    p->lend_last[k] = n->prev;
  n->prev = n->next = NULL;
  n->key = 0;
}

void weft__stream_pool_lend(weft_runtime *rt, weft__stream_lender *n,
                            weft__stream **slot, uint64_t task, int dev,
                            int high) {
  weft__runtime_head *h = weft__head(rt);
  weft__stream_pool *p = &h->streams;
  /* Under weft check a task's clock follows the streams it leased, which
   * a takeover would hand another's work on. */
  if (h->bk->check || n->key)
    return;
  int k = dev * 2 + high;
  n->slot = slot;
  n->task = task;
  n->key = k + 1;
  n->next = NULL;
  n->prev = p->lend_last[k];
  if (n->prev)
    n->prev->next = n;
  else
    p->lend_first[k] = n;
  p->lend_last[k] = n;
}

void weft__stream_pool_unlend(weft_runtime *rt, weft__stream_lender *n) {
  unlend(&weft__head(rt)->streams, n);
}

int weft__stream_pool_get(weft_runtime *rt, int dev, int high,
                          weft__stream **out) {
  weft__runtime_head *h = weft__head(rt);
  weft__stream_pool *p = &h->streams;
  int k = dev * 2 + high;
  pthread_mutex_lock(&h->lock);
  weft__stream *s = weft__ptrvec_pop(&p->streams[k]);
  if (s)
    s->pooled = 0;
  /* Past the streams made ahead, the oldest lender's stream: its work,
   * queued before, comes first, where a stream made now can make this
   * thread, and every thread's CUDA calls, wait for all the device's
   * queued work (docs/decisions/cuda.md). */
  weft__stream_lender *n = p->lend_first[k];
  uint64_t from = 0;
  if (!s && n && p->made[k] >= p->ahead) {
    s = *n->slot; /* the lender's end releases nothing now */
    *n->slot = NULL;
    from = n->task;
    p->taken++;
    unlend(p, n);
  }
  pthread_mutex_unlock(&h->lock);
  if (from)
    weft__stream_trace_takeover(s, from);
  if (!s) {
    const weft_device_info *di = &h->bk->info[dev];
    int prio = high ? di->priority_greatest : di->priority_least;
    int rc = weft__stream_create(h->bk, dev, prio, &s);
    if (rc)
      return rc;
    /* Room in the pool for every stream made, so that giving one back
     * never fails: a stream, once lent, lives until shutdown (a library
     * handle lent on may name it, library.c). */
    pthread_mutex_lock(&h->lock);
    rc = weft__ptrvec_reserve(&p->streams[k], p->made[k] + 1);
    if (rc == 0)
      p->made[k]++;
    pthread_mutex_unlock(&h->lock);
    if (rc) {
      weft__stream_destroy(&s);
      return weft__err(WEFT_ENOMEM, "stream pool: out of memory");
    }
  }
  *out = s;
  return 0;
}

void weft__stream_pool_put(weft_runtime *rt, weft__stream **slot, int high,
                           weft__stream_lender *n) {
  weft__runtime_head *h = weft__head(rt);
  /* Taken from the slot under the lock that also guards the pool: while a
   * task finishes, one that follows it or a lease may take its stream
   * over (weft__task_take_stream, weft__stream_pool_get). */
  pthread_mutex_lock(&h->lock);
  unlend(&h->streams, n);
  weft__stream *s = *slot;
  *slot = NULL;
  if (!s) {
    pthread_mutex_unlock(&h->lock);
    return;
  }
  int k = s->hdr.dev * 2 + high;
  s->pooled = 1;
  (void)weft__ptrvec_push(&h->streams.streams[k], s); /* room reserved */
  pthread_mutex_unlock(&h->lock);
}

int weft__stream_pool_claim_idle(weft_runtime *rt, const weft__stream *s,
                                 uint64_t *moves) {
  weft__runtime_head *h = weft__head(rt);
  pthread_mutex_lock(&h->lock);
  int idle = s->pooled;
  if (idle)
    __atomic_fetch_add(moves, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&h->lock);
  return idle;
}

size_t weft__stream_pool_count(weft_runtime *rt) {
  weft__runtime_head *h = weft__head(rt);
  size_t n = 0;
  pthread_mutex_lock(&h->lock);
  for (int k = 0; k < h->bk->ndev * 2; k++)
    n += h->streams.made[k];
  pthread_mutex_unlock(&h->lock);
  return n;
}

size_t weft__stream_pool_taken(weft_runtime *rt) {
  weft__runtime_head *h = weft__head(rt);
  pthread_mutex_lock(&h->lock);
  size_t n = h->streams.taken;
  pthread_mutex_unlock(&h->lock);
  return n;
}

int weft__stream_pool_fill(weft_runtime *rt, int n) {
  weft__runtime_head *h = weft__head(rt);
  h->streams.ahead = (size_t)n;
  for (int d = 0; d < h->bk->ndev; d++) {
    weft__ptrvec *v = &h->streams.streams[d * 2];
    int prio = h->bk->info[d].priority_least;
    size_t first = v->n;
    for (int i = 0; i < n; i++) {
      weft__stream *s;
      int rc = weft__stream_create(h->bk, d, prio, &s);
      if (rc == 0)
        s->pooled = 1;
      if (rc == 0 && weft__ptrvec_push(v, s) != 0) {
        weft__stream_destroy(&s);
        rc = weft__err(WEFT_ENOMEM, "weft_init: out of memory");
      }
      if (rc) {
        weft__stream_pool_fini(rt);
        return rc;
      }
      h->streams.made[d * 2]++;
    }
    /* Leased newest first: reversed, the first lease gets the lowest id
     * (weft check's clocks and the trace's stream numbers stay small). */
    for (size_t i = first, j = v->n - 1; i < j; i++, j--) {
      void *t = v->v[i];
      v->v[i] = v->v[j];
      v->v[j] = t;
    }
  }
  return 0;
}

void weft__stream_pool_fini(weft_runtime *rt) {
  weft__runtime_head *h = weft__head(rt);
  weft__stream_pool *p = &h->streams;
  for (int d = 0; p->streams && d < h->bk->ndev; d++) {
    for (int high = 0; high < 2; high++) {
      weft__ptrvec *v = &p->streams[d * 2 + high];
      weft__stream *s;
      while ((s = weft__ptrvec_pop(v)) != NULL)
        weft__stream_destroy(&s);
      free(v->v);
    }
  }
  free(p->streams);
  free(p->made);
  free(p->lend_first);
  free(p->lend_last);
  p->streams = NULL;
  p->made = NULL;
  p->lend_first = p->lend_last = NULL;
}
