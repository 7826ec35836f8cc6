/* Run queues: two priority levels, each a list with two ends.
 *
 * The owning worker pushes and pops at the bottom (newest first: work-first
 * order, so a recursive fork-join keeps O(depth) tasks alive per worker, as
 * in Cilk, TBB and Go); thieves and the injection queue take from the top
 * (oldest first: the biggest pieces of a recursive split, and fairness for
 * tasks spawned from plain threads). A yielding task goes to the top, behind
 * everything queued. One mutex per queue: it is taken by its owner almost
 * always, and an uncontended lock costs tens of nanoseconds, below what
 * anything on the critical path measures. */
#include <string.h>

#include "mutex.h"
#include "worker.h"

int weft__rq_init(weft__rq *q) {
  memset(q, 0, sizeof *q);
  return weft__mutex_init(&q->lock) ? WEFT_ENOMEM : 0;
}

void weft__rq_fini(weft__rq *q) { pthread_mutex_destroy(&q->lock); }

static void count(weft__rq *q, int level, int delta) {
  atomic_fetch_add(&q->n, delta);
  if (level)
    atomic_fetch_add(&q->n_high, delta);
}

void weft__rq_push(weft__rq *q, weft_task *t, int at_top) {
  int l = t->x.high ? 1 : 0;
  pthread_mutex_lock(&q->lock);
  if (at_top) {
    t->prev = NULL;
    t->next = q->top[l];
    if (q->top[l])
      q->top[l]->prev = t;
    else
      q->bottom[l] = t;
    q->top[l] = t;
  } else {
    t->next = NULL;
    t->prev = q->bottom[l];
    if (q->bottom[l])
      q->bottom[l]->next = t;
    else
      q->top[l] = t;
    q->bottom[l] = t;
  }
  atomic_store_explicit(&t->queued_in, q, memory_order_relaxed);
  count(q, l, 1);
  pthread_mutex_unlock(&q->lock);
}

/* Lock held; t is queued at level l. */
static void unlink_task(weft__rq *q, int l, weft_task *t) {
  if (t->prev)
    t->prev->next = t->next;
  else
    q->top[l] = t->next;
  if (t->next)
    t->next->prev = t->prev;
  else
    q->bottom[l] = t->prev;
  t->next = t->prev = NULL;
  atomic_store_explicit(&t->queued_in, NULL, memory_order_relaxed);
  count(q, l, -1);
}

weft_task *weft__rq_pop_level(weft__rq *q, int l, int from_top) {
  atomic_int *n = l ? &q->n_high : &q->n;
  if (atomic_load_explicit(n, memory_order_relaxed) == 0)
    return NULL;
  pthread_mutex_lock(&q->lock);
  weft_task *t = from_top ? q->top[l] : q->bottom[l];
  if (t)
    unlink_task(q, l, t);
  pthread_mutex_unlock(&q->lock);
  return t;
}

weft_task *weft__rq_pop(weft__rq *q, int from_top) {
  weft_task *t = weft__rq_pop_level(q, 1, from_top);
  return t ? t : weft__rq_pop_level(q, 0, from_top);
}

weft_task *weft__rq_take_half(weft__rq *q, int *taken) {
  *taken = 0;
  if (atomic_load_explicit(&q->n, memory_order_relaxed) == 0)
    return NULL;
  weft_task *head = NULL, **tail = &head;
  pthread_mutex_lock(&q->lock);
  int want = (atomic_load(&q->n) + 1) / 2;
  for (int l = 1; l >= 0; l--)
    while (q->top[l] && *taken < want) {
      weft_task *t = q->top[l];
      unlink_task(q, l, t);
      *tail = t;
      tail = &t->next;
      (*taken)++;
    }
  pthread_mutex_unlock(&q->lock);
  return head;
}

int weft__rq_take(weft__rq *q, weft_task *t) {
  pthread_mutex_lock(&q->lock);
  int here = atomic_load_explicit(&t->queued_in, memory_order_relaxed) == q;
  if (here)
    unlink_task(q, t->x.high ? 1 : 0, t);
  pthread_mutex_unlock(&q->lock);
  return here;
}
