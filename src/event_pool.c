/* The sync events a runtime lends, pooled per device. */
#include "event_pool.h"

#include <stdlib.h>

#include "error_internal.h"
#include "runtime_head.h"

int weft__event_pool_init(struct weft_runtime *rt) {
  weft__runtime_head *h = weft__head(rt);
  h->events.free = calloc((size_t)h->bk->ndev * 2, sizeof *h->events.free);
  if (!h->events.free)
    return weft__err(WEFT_ENOMEM, "weft_init: out of memory");
  return 0;
}

int weft__event_pool_get(struct weft_runtime *rt, int dev, int blocking,
                         weft__event **out) {
  weft__runtime_head *h = weft__head(rt);
  blocking = blocking != 0;
  pthread_mutex_lock(&h->lock);
  weft__event *e = weft__ptrvec_pop(&h->events.free[dev * 2 + blocking]);
  pthread_mutex_unlock(&h->lock);
  if (!e) {
    /* Polled: tasks wait for it in the wait set. Blocking sync only where
     * a plain thread will wait on it (it sleeps, not spins): pending
     * blocking-sync events slowed the next record on CUDA
     * (docs/decisions/cuda.md, "Streams made while the GPU works"). */
    int rc = weft__event_create(
        h->bk, dev, blocking ? WEFT__EVENT_BLOCKING : WEFT__EVENT_POLLED, &e);
    if (rc)
      return rc;
    pthread_mutex_lock(&h->lock);
    h->events.n++;
    pthread_mutex_unlock(&h->lock);
  }
  *out = e;
  return 0;
}

void weft__event_pool_put(struct weft_runtime *rt, weft__event *e) {
  weft__runtime_head *h = weft__head(rt);
  pthread_mutex_lock(&h->lock);
  if (e->shares) {
    e->shares--;
    pthread_mutex_unlock(&h->lock);
    return;
  }
  int blocking = (e->flags & WEFT__EVENT_BLOCKING) != 0;
  if (weft__ptrvec_push(&h->events.free[e->hdr.dev * 2 + blocking], e) != 0) {
    h->events.n--;
    pthread_mutex_unlock(&h->lock);
    weft__event_destroy(&e);
    return;
  }
  pthread_mutex_unlock(&h->lock);
}

int weft__event_pool_mark(struct weft_runtime *rt, weft__stream *s,
                          weft__event **out) {
  weft__runtime_head *h = weft__head(rt);
  weft__event *e;
  int rc = weft__event_pool_get(rt, s->hdr.dev, 0, &e);
  if (rc)
    return rc;
  /* Recorded under the lock: a capture sets its fence under it before it
   * begins (weft_graph_begin), so s does not start capturing meanwhile. */
  pthread_mutex_lock(&h->lock);
  weft__event *fence = s->fence;
  if (fence)
    fence->shares++;
  else
    rc = weft__event_record(e, s);
  pthread_mutex_unlock(&h->lock);
  if (fence || rc)
    weft__event_pool_put(rt, e);
  *out = fence ? fence : rc ? NULL : e;
  return rc;
}

int weft__event_pool_fence(struct weft_runtime *rt, weft__stream *s) {
  weft__runtime_head *h = weft__head(rt);
  weft__event *e;
  int rc = weft__event_pool_get(rt, s->hdr.dev, 0, &e);
  if (rc)
    return rc;
  /* Under the lock that weft__event_pool_mark records under. */
  pthread_mutex_lock(&h->lock);
  rc = weft__event_record(e, s);
  if (rc == 0)
    s->fence = e;
  pthread_mutex_unlock(&h->lock);
  if (rc)
    weft__event_pool_put(rt, e);
  return rc;
}

void weft__event_pool_unfence(struct weft_runtime *rt, weft__stream *s) {
  weft__runtime_head *h = weft__head(rt);
  pthread_mutex_lock(&h->lock);
  weft__event *old = s->fence;
  s->fence = NULL;
  pthread_mutex_unlock(&h->lock);
  if (old)
    weft__event_pool_put(rt, old);
}

void weft__event_pool_fini(struct weft_runtime *rt) {
  weft__runtime_head *h = weft__head(rt);
  if (!h->events.free)
    return;
  for (int i = 0; i < h->bk->ndev * 2; i++) {
    weft__event *e;
    while ((e = weft__ptrvec_pop(&h->events.free[i])) != NULL)
      weft__event_destroy(&e);
    free(h->events.free[i].v);
  }
  free(h->events.free);
  h->events.free = NULL;
  h->events.n = 0;
}
