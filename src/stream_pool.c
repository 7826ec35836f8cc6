/* The streams a runtime lends, pooled per device and priority. */
#include <stdlib.h>

#include "error_internal.h"
#include "runtime_state.h"
#include "stream_pool.h"

int weft__stream_pool_init(weft_runtime *rt) {
  weft__stream_pool *p = &rt->pools;
  p->streams = calloc((size_t)rt->h.bk->ndev * 2, sizeof *p->streams);
  if (!p->streams)
    return weft__err(WEFT_ENOMEM, "weft_init: out of memory");
  return 0;
}

int weft__stream_pool_get(weft_runtime *rt, int dev, int high,
                          weft__stream **out) {
  weft__ptrvec *v = &rt->pools.streams[dev * 2 + high];
  pthread_mutex_lock(&rt->h.lock);
  weft__stream *s = weft__ptrvec_pop(v);
  pthread_mutex_unlock(&rt->h.lock);
  if (!s) {
    const weft_device_info *di = &rt->h.bk->info[dev];
    int prio = high ? di->priority_greatest : di->priority_least;
    int rc = weft__stream_create(rt->h.bk, dev, prio, &s);
    if (rc)
      return rc;
    pthread_mutex_lock(&rt->h.lock);
    rt->pools.nstreams++;
    pthread_mutex_unlock(&rt->h.lock);
  }
  *out = s;
  return 0;
}

void weft__stream_pool_put(weft_runtime *rt, weft__stream **slot, int high) {
  /* Taken from the slot under the lock that also guards the pool: while a
   * task finishes, one that follows it may take its stream over
   * (weft__task_take_stream). */
  pthread_mutex_lock(&rt->h.lock);
  weft__stream *s = *slot;
  *slot = NULL;
  if (!s) {
    pthread_mutex_unlock(&rt->h.lock);
    return;
  }
  if (weft__ptrvec_push(&rt->pools.streams[s->hdr.dev * 2 + high], s) != 0) {
    rt->pools.nstreams--;
    pthread_mutex_unlock(&rt->h.lock);
    weft__stream_destroy(&s);
    return;
  }
  pthread_mutex_unlock(&rt->h.lock);
}

size_t weft__stream_pool_count(weft_runtime *rt) {
  pthread_mutex_lock(&rt->h.lock);
  size_t n = rt->pools.nstreams;
  pthread_mutex_unlock(&rt->h.lock);
  return n;
}

int weft__stream_pool_fill(weft_runtime *rt, int n) {
  for (int d = 0; d < rt->h.bk->ndev; d++) {
    weft__ptrvec *v = &rt->pools.streams[d * 2];
    int prio = rt->h.bk->info[d].priority_least;
    size_t first = v->n;
    for (int i = 0; i < n; i++) {
      weft__stream *s;
      int rc = weft__stream_create(rt->h.bk, d, prio, &s);
      if (rc == 0 && weft__ptrvec_push(v, s) != 0) {
        weft__stream_destroy(&s);
        rc = weft__err(WEFT_ENOMEM, "weft_init: out of memory");
      }
      if (rc) {
        weft__stream_pool_fini(rt);
        return rc;
      }
      rt->pools.nstreams++;
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
  weft__stream_pool *p = &rt->pools;
  if (!p->streams)
    return;
  for (int d = 0; d < rt->h.bk->ndev; d++) {
    for (int h = 0; h < 2; h++) {
      weft__ptrvec *v = &p->streams[d * 2 + h];
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
