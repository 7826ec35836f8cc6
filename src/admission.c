/* Priority-aware admission: see admission.h. A task's record is a ring of
 * events, each recorded on its stream at an operation and covering every
 * operation before it; the oldest unfinished ones are what it has in
 * flight. */
#include "admission.h"

#include <stdlib.h>

#include "caller.h"
#include "clock.h"
#include "event_pool.h"
#include "wait.h"
#include "weft/task.h"

struct weft__admission {
  weft__event *ev[WEFT__ADMISSION_MAX + 1];
  unsigned head, n;
  int issued; /* an operation was queued since the last event */
};

static weft__event **slot(weft__admission *a, unsigned i) {
  return &a->ev[(a->head + i) % (WEFT__ADMISSION_MAX + 1)];
}

static void pop(weft_runtime *rt, weft__admission *a) {
  weft__event_pool_put(rt, *slot(a, 0));
  a->head = (a->head + 1) % (WEFT__ADMISSION_MAX + 1);
  a->n--;
}

typedef struct held {
  weft__admission_state *st;
  weft__event *oldest;
  unsigned inflight; /* operations in flight when it was held */
} held;

/* The wait ends when the oldest operation in flight is done, or when no
 * high-priority task is left to make room for, the policy is off or its
 * depth raised above what is in flight, or weft_shutdown began (which
 * would otherwise end the wait as a failure: holding is only ever a
 * matter of speed). */
static int room(void *arg) {
  held *h = arg;
  int depth = atomic_load(&h->st->depth);
  if (atomic_load(&h->st->nhigh_live) == 0 || depth == 0 ||
      (unsigned)depth > h->inflight || atomic_load(h->st->cancel))
    return 0;
  int rc = weft__event_query(h->oldest);
  return rc == WEFT_EAGAIN ? WEFT_EAGAIN : rc;
}

/* The longest a normal task's operation waits for running high-priority
 * tasks: a high task spinning until a normal task's work shows would
 * otherwise never stop running (docs/decisions/scheduler.md). */
#define HOLD_MAX_NS 1000000

typedef struct beside {
  weft__admission_state *st;
  uint64_t until;
} beside;

/* The wait ends when no high-priority task runs, HOLD_MAX_NS passed, the
 * policy is off, or weft_shutdown began. */
static int high_stopped(void *arg) {
  beside *b = arg;
  int go = atomic_load(&b->st->nhigh_running) == 0 ||
           weft__clock_ns() >= b->until || atomic_load(&b->st->depth) == 0 ||
           atomic_load(b->st->cancel);
  return go ? 0 : WEFT_EAGAIN;
}

int weft__admit(weft__admission_state *st, weft__exec *x, weft__stream *s) {
  weft_runtime *rt = x->rt;
  if (s->capture) /* a capture records, it runs nothing now */
    return 0;
  if (atomic_load_explicit(&st->nhigh_running, memory_order_relaxed) > 0) {
    beside b = {st, weft__clock_ns() + HOLD_MAX_NS};
    int rc = weft__wait_for_test(
        x, high_stopped, &b,
        "admission (a normal task held while a high-priority task runs)");
    if (rc)
      return rc;
  }
  weft__admission *a = x->adm;
  /* Without memory for the record the task is admitted unheld: holding
   * less is never wrong, only slower for the high task. */
  if (!a && !(a = x->adm = calloc(1, sizeof *a)))
    return 0;
  while (a->n && weft__event_query(*slot(a, 0)) == 0)
    pop(rt, a);
  if (a->issued && a->n < WEFT__ADMISSION_MAX + 1) {
    weft__event *ev;
    if (weft__event_pool_get(rt, x->dev, 0, &ev) == 0) {
      if (weft__event_record(ev, s) == 0) {
        *slot(a, a->n) = ev;
        a->n++;
        a->issued = 0;
      } else {
        weft__event_pool_put(rt, ev);
      }
    }
  }
  int depth;
  while ((depth = atomic_load(&st->depth)) > 0 && a->n >= (unsigned)depth &&
         atomic_load(&st->nhigh_live) > 0) {
    held h = {st, *slot(a, 0), a->n};
    int rc = weft__wait_for_test(
        x, room, &h,
        "admission (a normal task held while high-priority tasks live, "
        "until its oldest operation in flight ends)");
    if (rc)
      return rc;
    if (weft__event_query(h.oldest) != 0)
      break; /* released: no high task left, the policy off or deeper */
    pop(rt, a);
  }
  a->issued = 1;
  return 0;
}

void weft__admission_free(weft__exec *x) {
  weft__admission *a = x->adm;
  if (!a)
    return;
  while (a->n)
    pop(x->rt, a);
  free(a);
  x->adm = NULL;
}
