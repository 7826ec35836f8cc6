/* What a task's fiber runs, from its first instruction to its exit: it
 * follows the tasks its declared data depends on, runs its function, then
 * ends what only its own context may end. The scheduler runs it (given at
 * weft__sched_start); it sits above every public call it makes. */
#include <stdio.h>
#include <stdlib.h>

#include "admission.h"
#include "graph_internal.h"
#include "memory_internal.h"
#include "range.h"
#include "task_object.h"
#include "weft/stream.h"

/* Follows the earlier tasks d[0..n) as weft_task_after follows each
 * (stream.c: the stream waits for a task's end event once it returned),
 * under one hold of the runtime's lock and one stream for them all: the
 * stream of the first that hands its over (weft__task_take_stream), else
 * a lease;
 * weft check's bookkeeping is weft_task_after's own. Where the stream
 * cannot be leased or made to wait (out of memory, a device error), the
 * task waits on the host until that earlier task has completed instead:
 * a task that ran unordered would break the order of every task after
 * it, which follows it alone. It fails only where an earlier task waits
 * for this one (joins it, say): WEFT_EDEADLK, reported, for the wait
 * would never end. */
#define FOLLOWS "a task following another by declared data"

static int follow_all(weft_task *t, const void **d, uint32_t n) {
  weft_runtime *rt = t->x.rt;
  pthread_mutex_t *lock = &weft__head(rt)->lock;
  int rc = 0;
  if (t->x.bk->check) {
    for (uint32_t i = 0; i < n && rc != WEFT_EDEADLK; i++)
      if ((rc = weft_task_after((weft_task *)d[i])) != 0 &&
          rc != WEFT_EDEADLK) {
        const weft_task *h = d[i];
        weft_task *other = (weft_task *)weft__handle_obj(h);
        pthread_mutex_lock(lock);
        rc =
            weft__task_live(h, other)
                ? weft__task_wait_for(rt, other, 1, WEFT__STALL_FOLLOW, FOLLOWS)
                : 0;
        /* Completed: the checker learns the order the wait made, as
         * weft_task_after would have told it. */
        if (rc == 0)
          weft__caller_joined(
              &t->x, weft__handle_live(h, &other->hdr) ? &other->x : NULL);
        pthread_mutex_unlock(lock);
      }
    return rc;
  }
  weft__stream *s = NULL;
  int on_host = 0; /* no stream: wait for completions on the host */
  int taken = -1;  /* the one whose stream this task took over */
  pthread_mutex_lock(lock);
  /* Each must have returned (queued all its work) before this task's
   * stream can wait for it; one whose work is still queued may hand its
   * stream over, which orders this task after it with no wait at all. */
  for (uint32_t i = 0; i < n && rc == 0; i++) {
    const weft_task *h = d[i];
    weft_task *other = (weft_task *)weft__handle_obj(h);
    if (!weft__task_live(h, other))
      continue; /* completed: already ordered */
    rc = weft__task_wait_for(rt, other, 0, WEFT__STALL_FOLLOW, FOLLOWS);
    if (rc == 0 && taken < 0 && weft__task_live(h, other) &&
        weft__task_take_stream(&t->x, other)) {
      s = t->x.stream;
      taken = (int)i;
    }
  }
  for (uint32_t i = 0; i < n && rc == 0; i++) {
    const weft_task *h = d[i];
    weft_task *other = (weft_task *)weft__handle_obj(h);
    if ((int)i == taken || !weft__task_live(h, other))
      continue;
    if (!s && !on_host) {
      /* Leased outside the lock, which the lease takes. */
      pthread_mutex_unlock(lock);
      /* A failed lease is not the task's failure: it waits on the host. */
      t->x.unsynced = 1;
      on_host = weft__caller_lease(&t->x, &s) != 0;
      pthread_mutex_lock(lock);
      if (!weft__task_live(h, other))
        continue;
    }
    /* end_ev lives until the task is finalized, which takes this lock. */
    if (on_host ||
        (other->end_ev && weft__stream_wait_event(s, other->end_ev) != 0))
      rc = weft__task_wait_for(rt, other, 1, WEFT__STALL_FOLLOW, FOLLOWS);
  }
  pthread_mutex_unlock(lock);
  return rc;
}

/* Declared data: follows the earlier tasks first, and waits on the host
 * for their work when the task reads it there. */
static int follow_deps(weft_task *t) {
  const void **d = t->flow_deps;
  uint32_t n = t->nflow_deps;
  t->flow_deps = NULL;
  t->nflow_deps = 0;
  int rc = n ? follow_all(t, d, n) : 0;
  weft__flow_deps_free(d, t->flow_inline);
  if (rc == 0 && t->flow_host)
    rc = weft_sync();
  if (rc)
    weft__caller_fail(&t->x, rc);
  return rc;
}

void weft__task_body(weft_task *t) {
  /* A task that cannot be ordered (out of memory) leaves its function
   * unrun and its join reporting why, rather than running it unordered. */
  if (!(t->flow_deps || t->flow_host) || follow_deps(t) == 0)
    t->fn(t->arg);
  /* Ranges left open end with the function (weft/range.h). */
  if (t->x.nranges || t->x.ranges) {
    char who[48];
    snprintf(who, sizeof who, "task '%s'", t->name);
    weft__range_end_all(&t->x, who, "returned");
  }
  /* Copies into pageable memory the task queued finish before it does. */
  if (t->x.npending) {
    int rc = weft__memory_join_pending(&t->x);
    if (rc)
      weft__caller_fail(&t->x, rc);
  }
  weft__admission_free(&t->x);
  weft__graph_drop_capture(&t->x, "the task returned");
}
