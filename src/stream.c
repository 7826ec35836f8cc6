/* weft/stream.h: the caller's stream, waiting for it, ordering it after
 * another task. */
#include "weft/stream.h"
#include "check.h"
#include "scheduler.h"
#include "trace.h"

weft_stream *weft_stream_current(void) {
  weft__exec *x = weft__exec_get("weft_stream_current");
  weft__stream *s;
  if (!x || weft__exec_stream(x, &s) != 0)
    return NULL;
  return (weft_stream *)s;
}

int weft_sync(void) {
  weft__exec *x = weft__exec_get("weft_sync");
  if (!x)
    return weft__exec_get_failed();
  int rc = weft__refuse_in_capture(x, "weft_sync",
                                   "a capture records work, it cannot wait "
                                   "for it");
  if (rc)
    return rc;
  /* Nothing queued since the last sync saw the stream idle: no wait. */
  if (x->stream && x->unsynced) {
    weft__event *ev = NULL;
    int queued = weft__event_pool_get(x->rt, x->dev, !x->is_task, &ev) == 0 &&
                 weft__event_record(ev, x->stream) == 0;
    if (queued) {
      /* Just recorded behind the task's work: a query now would almost
       * always say "pending" (a CUDA call, ~0.2 us); the poll will ask. */
      rc = weft__exec_wait_recorded(x, ev);
    } else {
      /* No event to wait on (out of memory): wait for the stream the
       * blocking way, the worker with it, rather than return with the
       * work still running. */
      rc = weft__stream_sync(x->stream);
    }
    /* Only this exec queues on its stream, and it was waiting. */
    if (rc == 0)
      x->unsynced = 0;
    if (ev)
      weft__event_pool_put(x->rt, ev);
    if (rc)
      weft__exec_fail(x, rc);
  }
  if (rc == 0 && x->stream && x->rt->bk->check)
    weft__check_synced(x->rt->bk->check, x, x->stream);
  if (x->npending) {
    int jr = weft__exec_join_pending(x);
    if (jr)
      weft__exec_fail(x, jr);
  }
  int pending = x->pending_err;
  x->pending_err = 0;
  return pending ? pending : rc;
}

int weft_device_sync(void) {
  weft__exec *x = weft__exec_get("weft_device_sync");
  if (!x)
    return weft__exec_get_failed();
  int rc = weft__refuse_in_capture(x, "weft_device_sync",
                                   "it waits for the whole device");
  if (rc)
    return rc;
  weft__checker *k = x->rt->bk->check;
  uint64_t t0 = k ? weft__trace_now() : 0;
  rc = weft__device_sync(x->rt->bk, x->dev);
  if (k && rc == 0)
    weft__check_device_synced(k, x, x->dev);
  if (k && x->is_task)
    weft__check_implicit_sync(k, x, "weft_device_sync",
                              "it waits for every stream of the device, "
                              "every task's work; weft_sync waits for this "
                              "task's alone",
                              weft__trace_now() - t0);
  return rc ? weft__exec_fail(x, rc) : 0;
}

int weft__task_live(const weft_task *h, const weft_task *other) {
  return weft__handle_live(h, &other->hdr) && !other->done;
}

int weft_task_after(weft_task *h) {
  if (!h)
    return weft__err(WEFT_EINVAL, "weft_task_after: task is NULL");
  weft__exec *x = weft__exec_get("weft_task_after");
  if (!x)
    return weft__exec_get_failed();
  int rc0 = weft__refuse_in_capture(x, "weft_task_after",
                                    "a graph cannot wait for another task's "
                                    "stream");
  if (rc0)
    return rc0;
  weft_task *other = (weft_task *)weft__handle_obj(h);
  weft_runtime *rt = x->rt;
  pthread_mutex_lock(&rt->lock);
  int live = weft__task_live(h, other);
  /* A stale handle may name this task's own object, recycled: that task
   * completed long ago and is followed like any completed one below. */
  if (live && other == weft__task_self()) {
    pthread_mutex_unlock(&rt->lock);
    return weft__err(WEFT_ESTATE, "weft_task_after: a task cannot follow "
                                  "itself");
  }
  /* Another runtime's, running or completed but not yet joined: the same
   * answer either way (a joined one is gone and cannot be told apart). */
  int foreign = weft__handle_live(h, &other->hdr) && other->x.rt != rt;
  /* Completed: what it did is done, and known from now on (weft check;
   * for a task already joined or detached and gone, what has completed
   * by now stands in for its clock). */
  if (!live && !foreign && rt->bk->check)
    weft__check_joined(rt->bk->check, x,
                       weft__handle_live(h, &other->hdr) && other->x.rt == rt
                           ? &other->x
                           : NULL);
  pthread_mutex_unlock(&rt->lock);
  if (foreign)
    return weft__err(WEFT_EINVAL, "weft_task_after: task of another runtime");
  if (!live) /* completed: already ordered; no stream needed */
    return 0;
  /* A task without a stream yet may continue on other's, once it has
   * returned (weft__task_take_stream). */
  if (x->is_task && !x->stream && !rt->bk->check) {
    pthread_mutex_lock(&rt->lock);
    if (weft__task_live(h, other))
      weft__task_wait_for(rt, other, 0);
    int done = !weft__task_live(h, other) || weft__task_take_stream(x, other);
    pthread_mutex_unlock(&rt->lock);
    if (done)
      return 0;
  }
  /* Leased outside the lock, which the lease takes. */
  weft__stream *s;
  int rc = weft__exec_stream(x, &s);
  if (rc)
    return rc;
  pthread_mutex_lock(&rt->lock);
  if (weft__task_live(h, other)) {
    weft__task_wait_for(rt, other, 0);
    /* end_ev lives until the task is finalized, which takes this lock. */
    if (weft__task_live(h, other) && other->end_ev)
      rc = weft__stream_wait_event(s, other->end_ev);
  }
  /* Followed, or completed meanwhile (while the stream was leased, or
   * while this task waited for it to return): either way what it did is
   * before what this stream does next. */
  if (rc == 0 && rt->bk->check)
    weft__check_after(rt->bk->check, s,
                      weft__handle_live(h, &other->hdr) ? &other->x : NULL);
  pthread_mutex_unlock(&rt->lock);
  return rc;
}
