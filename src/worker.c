/* What every layer above the scheduler may ask of it: which worker and
 * task are running, making a task ready, suspending the running one, and
 * waking a parked worker. The workers' own loop is sched.c. */
#include "worker.h"
#include "trace.h"
#include "trace_format.h"

_Thread_local weft__worker *weft__worker_tls;
_Thread_local weft_task *weft__task_tls;

__attribute__((noinline)) weft__worker *weft__worker_self(void) {
  return weft__worker_tls;
}

__attribute__((noinline)) weft_task *weft__worker_task(void) {
  return weft__task_tls;
}

/* ---- wake-ups ----
 *
 * Waking a parked worker is the dearest thing the scheduler does
 * (docs/decisions/scheduler.md, "Wake-ups are the dearest thing on the
 * critical path"). So work made ready on a worker
 * stays on its queue, where that worker runs it next, and a parked worker
 * is woken only when the work would otherwise wait: when a worker starts a
 * task while others remain queued behind it, when work arrives from a
 * plain thread, and only while no other worker is awake and searching
 * (Go's rule). */

/* Takes w, found at *link on the parked stack, off it and wakes it as a
 * searcher. park_lock held. */
void weft__worker_unpark(weft__sched *sc, weft__worker **link,
                         weft__worker *w) {
  *link = w->park_next;
  w->parked = 0;
  w->woken = 1;
  w->searching = 1;
  atomic_fetch_add(&sc->nsearching, 1);
  atomic_fetch_sub(&sc->nparked, 1);
  pthread_cond_signal(&w->park_cv);
}

/* Wakes one parked worker, the most recently parked. */
static void wake_one(weft__sched *sc) {
  if (atomic_load(&sc->nparked) == 0)
    return;
  pthread_mutex_lock(&sc->park_lock);
  if (sc->parked)
    weft__worker_unpark(sc, &sc->parked, sc->parked);
  pthread_mutex_unlock(&sc->park_lock);
}

/* Wakes a worker unless one is already searching. */
void weft__worker_wake(weft__sched *sc) {
  if (atomic_load(&sc->nsearching) == 0 && atomic_load(&sc->nparked) > 0)
    wake_one(sc);
}

void weft__worker_ready(weft__sched *sc, weft_task *t) {
  t->state = TASK_READY;
  weft__worker *w = weft__worker_tls;
  if (w && w->home == sc) {
    weft__rq_push(&w->rq, t, 0);
  } else {
    weft__rq_push(&sc->inject, t, 0);
    weft__worker_wake(sc);
  }
}

void weft__worker_call_on_stack(void (*fn)(void *), void *arg) {
  weft_task *t = weft__worker_task();
  if (!t) {
    fn(arg);
    return;
  }
  weft__worker *w = weft__worker_self();
  w->call = fn;
  w->call_arg = arg;
  weft__worker_suspend(t, AFTER_CALL);
}

/* A wait in the wait set is a slice of the trace's task lane, from the
 * suspension to the resumption. */
void weft__worker_suspend(weft_task *t, after_switch after) {
  uint64_t t0 =
      after == AFTER_WAIT && weft__trace_on_for(t->x.bk) ? weft__clock_ns() : 0;
  const char *what = t->wait_test ? WEFT_TRF_WAIT_EXTERNAL : WEFT_TRF_WAIT_GPU;
  weft__worker *w = weft__worker_self();
  w->after = after;
  weft__fiber_switch(&t->fiber, &w->sched, after == AFTER_EXIT);
  if (t0) {
    weft__trace_rec r = {.start = t0,
                         .end = weft__clock_ns(),
                         .task = t->id,
                         .lane = weft__trace_thread_lane(),
                         .kind = WEFT__TR_WAIT,
                         .name = what};
    weft__trace_emit(&r);
  }
}

void weft__mark_ready(weft_task *t, int why) {
  weft__task_stall(t, WEFT__STALL_READY, NULL);
  if (weft__trace_on_for(t->x.bk)) {
    t->ready_ns = weft__clock_ns();
    t->ready_why = (uint8_t)why;
  }
}
