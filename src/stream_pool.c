/* The streams a runtime lends, pooled per device and priority. */
#include <stdlib.h>

#include "error_internal.h"
#include "runtime_head.h"
#include "stream_pool.h"

int weft__stream_pool_init(weft_runtime *rt) {
  weft__runtime_head *h = weft__head(rt);
  weft__stream_pool *p = &h->streams;
  p->streams = calloc((size_t)h->bk->ndev * 2, sizeof *p->streams);
  if (!p->streams)
    return weft__err(WEFT_ENOMEM, "weft_init: out of memory");
  return 0;
}

int weft__stream_pool_get(weft_runtime *rt, int dev, int high,
                          weft__stream **out) {
  weft__runtime_head *h = weft__head(rt);
  weft__ptrvec *v = &h->streams.streams[dev * 2 + high];
  pthread_mutex_lock(&h->lock);
  weft__stream *s = weft__ptrvec_pop(v);
  pthread_mutex_unlock(&h->lock);
  if (!s) {
    const weft_device_info *di = &h->bk->info[dev];
    int prio = high ? di->priority_greatest : di->priority_least;
    int rc = weft__stream_create(h->bk, dev, prio, &s);
    if (rc)
      return rc;
    pthread_mutex_lock(&h->lock);
    h->streams.nstreams++;
    pthread_mutex_unlock(&h->lock);
  }
  *out = s;
  return 0;
}

void weft__stream_pool_put(weft_runtime *rt, weft__stream **slot, int high) {
  weft__runtime_head *h = weft__head(rt);
  /* Taken from the slot under the lock that also guards the pool: while a
   * task finishes, one that follows it may take its stream over
   * (weft__task_take_stream). */
  pthread_mutex_lock(&h->lock);
  weft__stream *s = *slot;
  *slot = NULL;
  if (!s) {
    pthread_mutex_unlock(&h->lock);
    return;
  }
  if (weft__ptrvec_push(&h->streams.streams[s->hdr.dev * 2 + high], s) != 0) {
    h->streams.nstreams--;
    pthread_mutex_unlock(&h->lock);
    weft__stream_destroy(&s);
    return;
  }
  pthread_mutex_unlock(&h->lock);
}

size_t weft__stream_pool_count(weft_runtime *rt) {
  weft__runtime_head *h = weft__head(rt);
  pthread_mutex_lock(&h->lock);
  size_t n = h->streams.nstreams;
  pthread_mutex_unlock(&h->lock);
  return n;
}

int weft__stream_pool_fill(weft_runtime *rt, int n) {
  weft__runtime_head *h = weft__head(rt);
  for (int d = 0; d < h->bk->ndev; d++) {
    weft__ptrvec *v = &h->streams.streams[d * 2];
    int prio = h->bk->info[d].priority_least;
    size_t first = v->n;
    for (int i = 0; i < n; i++) {
      weft__stream *s;
      int rc = weft__stream_create(h->bk, d, prio, &s);
      if (rc == 0 && weft__ptrvec_push(v, s) != 0) {
        weft__stream_destroy(&s);
        rc = weft__err(WEFT_ENOMEM, "weft_init: out of memory");
      }
      if (rc) {
        weft__stream_pool_fini(rt);
        return rc;
      }
      h->streams.nstreams++;
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
  if (!p->streams)
    return;
  for (int d = 0; d < h->bk->ndev; d++) {
    for (int high = 0; high < 2; high++) {
      weft__ptrvec *v = &p->streams[d * 2 + high];
      weft__stream *s;
      while ((s = weft__ptrvec_pop(v)) != NULL)
        weft__stream_destroy(&s);
      free(v->v);
    }
  }
  free(p->streams);
  p->streams = NULL;
  p->nstreams = 0;
}
