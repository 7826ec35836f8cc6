/* The end of a task: it returned (its function, or it could not start),
 * then, once the GPU work it queued has completed, it is done. Waiters
 * are woken at each step; a detached task is recycled when done. Beneath
 * the scheduler and the wait set, which call it. */
#include <stdlib.h>

#include "data_core.h"
#include "event_pool.h"
#include "runtime_state.h"

void weft__task_free(weft_runtime *rt, weft_task *t) {
  if (t->all_prev)
    t->all_prev->all_next = t->all_next;
  else
    rt->tasks.all = t->all_next;
  if (t->all_next)
    t->all_next->all_prev = t->all_prev;
  free(t->x.pending);
  free(t->x.first_msg);
  weft__flow_deps_free(t->flow_deps, t->flow_inline);
  t->flow_deps = NULL;
  weft__flow_free(t->x.flow);
  t->x.flow = NULL;
  free(t->x.decl);
  t->x.decl = NULL;
  t->x.ndecl = 0;
  weft__caller_gone(&t->x);
  weft__pool_put(&rt->tasks.pool, &t->hdr);
}

int weft__task_live(const weft_task *h, const weft_task *other) {
  return weft__handle_live(h, &other->hdr) && !other->done;
}

int weft__task_deps_done(weft_task *t) {
  weft_runtime *rt = t->x.rt;
  int done = 1;
  pthread_mutex_lock(&rt->h.lock);
  for (uint32_t i = 0; i < t->nflow_deps && done; i++) {
    const weft_task *h = t->flow_deps[i];
    done = !weft__task_live(h, (weft_task *)weft__handle_obj(h));
  }
  pthread_mutex_unlock(&rt->h.lock);
  return done;
}

int weft__task_progress(weft_runtime *rt, const weft_task *h) {
  weft_task *t = (weft_task *)weft__handle_obj(h);
  pthread_mutex_lock(&rt->h.lock);
  int p = !weft__task_live(h, t) ? 2 : t->returned ? 1 : 0;
  pthread_mutex_unlock(&rt->h.lock);
  return p;
}

int weft__task_device_if_running(weft_runtime *rt, const weft_task *h) {
  weft_task *t = (weft_task *)weft__handle_obj(h);
  pthread_mutex_lock(&rt->h.lock);
  int dev = weft__task_live(h, t) && !t->returned ? t->x.dev : -1;
  pthread_mutex_unlock(&rt->h.lock);
  return dev;
}

int weft__task_waits_for(weft_runtime *rt, const weft_task *from,
                         const weft_task *to) {
  long left = atomic_load(&rt->tasks.nlive) + 1;
  const weft_task *t = from->waiting_for;
  while (t && t != to && --left > 0)
    t = t->waiting_for;
  return t == to;
}

/* Lock held: parks j, without a stack, in the waiters of the first task
 * of its flow_deps from join_at on that has not returned; 1 if it did. A
 * wait that would close a cycle is not made: the task's own follow then
 * refuses it (WEFT_EDEADLK, task_body.c). */
static int park_on_next(weft_runtime *rt, weft_task *j) {
  for (; j->join_at < j->nflow_deps; j->join_at++) {
    const weft_task *h = j->flow_deps[j->join_at];
    weft_task *other = (weft_task *)weft__handle_obj(h);
    if (!weft__task_live(h, other) || other->returned)
      continue;
    /* Only a task that j's waiters lead back to could close a cycle;
     * with none, no walk (a chain of joins is as long as the readers). */
    if (j->waiters && weft__task_waits_for(rt, other, j))
      return 0;
    j->join_wait = 1;
    j->wait_for_end = 0;
    j->state = TASK_SUSPENDED;
    j->next = other->waiters;
    other->waiters = j;
    j->waiting_for = other; /* cleared by the wake */
    return 1;
  }
  return 0;
}

/* Lock held, every task j follows has returned: leaves out of flow_deps
 * those that also completed, which following would pass over (task_body.c),
 * so that a task whose tasks all completed follows none and takes no lock
 * to do it. Not under weft check, which learns a completed task's work
 * only from following it (weft_task_after). */
static void drop_completed(weft_runtime *rt, weft_task *j) {
  if (rt->h.bk->check || j->join_at < j->nflow_deps)
    return;
  uint32_t k = 0;
  for (uint32_t i = 0; i < j->nflow_deps; i++) {
    const weft_task *h = j->flow_deps[i];
    if (weft__task_live(h, (weft_task *)weft__handle_obj(h)))
      j->flow_deps[k++] = h;
  }
  j->nflow_deps = j->join_at = k;
}

void weft__task_join_advance(weft_runtime *rt, weft_task *j) {
  if (park_on_next(rt, j))
    return;
  drop_completed(rt, j);
  j->join_wait = 0;
  j->state = TASK_READY;
  weft__mark_ready(j, WEFT_TRF_READY_JOIN);
  weft__worker_ready(&rt->sched, j);
}

int weft__task_park_for_deps(weft_task *t) {
  weft_runtime *rt = t->x.rt;
  pthread_mutex_lock(&rt->h.lock);
  int parked = park_on_next(rt, t);
  if (parked) /* the watchdog names whom it follows; joins are weft's */
    weft__task_stall(t, WEFT__STALL_FOLLOW, NULL);
  else
    drop_completed(rt, t);
  pthread_mutex_unlock(&rt->h.lock);
  return parked;
}

/* Lock held: makes ready the waiters that asked for this much. */
static void wake_waiters(weft_runtime *rt, weft_task *t, int ended) {
  weft_task **pp = &t->waiters;
  while (*pp) {
    weft_task *w = *pp;
    if (ended || !w->wait_for_end) {
      *pp = w->next;
      w->waiting_for = NULL;
      if (w->join_wait) { /* on to its next task, or ready */
        weft__task_join_advance(rt, w);
        continue;
      }
      if (w->blocked) { /* switched out: make it ready */
        w->blocked = 0;
        weft__mark_ready(w, WEFT_TRF_READY_JOIN);
        weft__worker_ready(&rt->sched, w);
      } else { /* still switching out: its scheduler will */
        w->wake_pending = 1;
      }
    } else {
      pp = &w->next;
    }
  }
  /* done_cv's sleepers: plain threads joining this task, and a shutdown
   * waiting for the last task (both look under this lock). */
  if (t->thread_waiters || rt->closing)
    pthread_cond_broadcast(&rt->done_cv);
}

/* Done, and returned too when returning (a task with no work queued). */
static void task_end(weft_task *t, int returning) {
  weft_runtime *rt = t->x.rt;
  /* Done, its stream's work included: a joiner sees all of it. */
  /* Read only under weft check, which never lets a follower take the
   * stream over (weft__task_take_stream writes it under the lock). */
  if (rt->h.bk->check && t->x.stream)
    weft__caller_synced(&t->x, t->x.stream);
  /* Only a task that finished behind an end event can have had its stream
   * taken over (weft__task_take_stream), so without one the stream is this
   * thread's to look at: a task that never had one takes no lock here. */
  if (t->end_ev || t->x.stream)
    weft__caller_release_stream(&t->x);
  pthread_mutex_lock(&rt->h.lock);
  if (returning)
    __atomic_store_n(&t->returned, 1, __ATOMIC_RELEASE);
  weft__event *ev = t->end_ev;
  t->end_ev = NULL;
  t->state = TASK_DONE;
  __atomic_store_n(&t->done, 1, __ATOMIC_RELEASE); /* see task.c's spin_for */
  wake_waiters(rt, t, 1);
  atomic_fetch_sub(&rt->tasks.nlive, 1);
  atomic_fetch_sub(&rt->tasks.dev_live[t->x.dev], 1);
  if (t->x.high)
    atomic_fetch_sub(&rt->h.adm.nhigh_live, 1);
  if (t->detached)
    weft__task_free(rt, t);
  pthread_mutex_unlock(&rt->h.lock);
  if (ev)
    weft__event_pool_put(rt, ev);
}

int weft__task_returned(weft_task *t) {
  weft_runtime *rt = t->x.rt;
  weft__event *ev = NULL;
  /* Work still queued on the stream: the task completes when it does. */
  int q = t->x.stream && t->x.unsynced ? weft__stream_query(t->x.stream) : 0;
  /* Its stream's work is done: what it did is known to whoever sees it
   * return (weft_task_after), before anyone can. */
  if (q == 0 && t->x.stream)
    weft__caller_synced(&t->x, t->x.stream);
  if (q == WEFT_EAGAIN) {
    int rc = weft__event_pool_get(rt, t->x.dev, 0, &ev);
    if (rc == 0) {
      rc = weft__event_record(ev, t->x.stream);
      if (rc) {
        weft__event_pool_put(rt, ev);
        ev = NULL;
      }
    }
    if (rc) {
      /* No event to be told by (out of memory): wait for the stream here,
       * the worker with it, so that the task is not seen done while its
       * work runs (a task ordered after it would race that work). Its
       * work is done then: nothing failed that the join should report. */
      int s = weft__stream_sync(t->x.stream);
      if (s)
        weft__caller_fail(&t->x, s);
      weft__caller_synced(&t->x, t->x.stream);
    }
  } else if (q < 0) {
    weft__caller_fail(&t->x, q);
  }
  if (!ev) { /* returned and done under one hold of the lock */
    task_end(t, 1);
    return 0;
  }
  pthread_mutex_lock(&rt->h.lock);
  __atomic_store_n(&t->returned, 1,
                   __ATOMIC_RELEASE); /* see task.c's spin_for */
  t->end_ev = ev;
  weft__stream_pool_lend(rt, &t->x.lender, &t->x.stream, t->id, t->x.dev,
                         t->x.high);
  wake_waiters(rt, t, 0);
  t->state = TASK_FINISHING;
  t->wait_ev = ev;
  weft__task_stall(t, WEFT__STALL_FINISHING, NULL);
  pthread_mutex_unlock(&rt->h.lock);
  return 1;
}

int weft__task_take_stream(weft__exec *x, weft_task *other) {
  weft__stream *s = other->x.stream;
  if (x->stream || !other->returned || !other->end_ev || !s ||
      other->x.dev != x->dev || other->x.high != x->high)
    return 0;
  other->x.stream = NULL; /* its finalize releases nothing now */
  weft__stream_pool_unlend(other->x.rt, &other->x.lender);
  x->stream = s;
  x->unsynced = 1; /* other's work is queued on it */
  return 1;
}

void weft__task_finalize(weft_task *t) { task_end(t, 0); }
