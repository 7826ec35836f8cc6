/* weft/stream.h: the caller's stream, waiting for it, ordering it after
 * another task. */
#include "weft/stream.h"
#include "clock.h"
#include "door.h"
#include "event_pool.h"
#include "memory_internal.h"
#include "stream_internal.h"
#include "wait.h"
#include "worker.h"

weft_stream *weft_stream_current(void) {
  weft__caller c;
  weft__stream *s;
  if (weft__door("weft_stream_current", 0, NULL, &c) != 0 ||
      weft__caller_stream(c.x, &s) != 0)
    return NULL;
  return (weft_stream *)s;
}

/* weft_sync; with lend, a task's stream may be taken over while it
 * waits (stream_internal.h). */
static int sync_caller(int lend) {
  weft__caller c;
  int rc = weft__door("weft_sync", WEFT__DOOR_NO_CAPTURE,
                      "a capture records work, it cannot wait for it", &c);
  if (rc)
    return rc;
  weft__exec *x = c.x;
  lend = lend && x->is_task;
  /* Nothing queued since the last sync saw the stream idle: no wait. */
  if (x->stream && x->unsynced) {
    weft__event *ev = NULL;
    int queued = weft__event_pool_get(x->rt, x->dev, !x->is_task, &ev) == 0 &&
                 weft__event_record(ev, x->stream) == 0;
    if (queued) {
      /* Just recorded behind the task's work: a query now would almost
       * always say "pending" and cost a CUDA call; the poll will ask
       * (docs/decisions/scheduler.md, "Wake-ups are the dearest thing on
       * the critical path"). */
      pthread_mutex_t *lock = &weft__head(x->rt)->lock;
      if (lend) {
        pthread_mutex_lock(lock);
        weft__stream_pool_lend(x->rt, &x->lender, &x->stream,
                               weft__worker_task()->id, x->dev, x->high);
        pthread_mutex_unlock(lock);
      }
      rc = weft__wait_for_recorded(x, ev, "weft_sync");
      if (lend) { /* x->stream is NULL if a lease took it over */
        pthread_mutex_lock(lock);
        weft__stream_pool_unlend(x->rt, &x->lender);
        pthread_mutex_unlock(lock);
      }
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
      weft__caller_fail(x, rc);
  }
  if (rc == 0 && x->stream)
    weft__caller_synced(x, x->stream);
  if (x->npending) {
    int jr = weft__memory_join_pending(x);
    if (jr)
      weft__caller_fail(x, jr);
  }
  int pending = x->pending_err;
  x->pending_err = 0;
  return pending ? pending : rc;
}

int weft_sync(void) { return sync_caller(0); }

int weft__sync_lending(void) { return sync_caller(1); }

int weft_device_sync(void) {
  weft__caller c;
  int rc = weft__door("weft_device_sync", WEFT__DOOR_NO_CAPTURE,
                      "it waits for the whole device", &c);
  if (rc)
    return rc;
  weft__exec *x = c.x;
  int checked = x->bk->check != NULL;
  int alive = weft__caller_others_alive(x); /* 0 unless checked */
  uint64_t t0 = checked ? weft__clock_ns() : 0;
  rc = weft__device_sync(x->bk, x->dev);
  if (rc == 0)
    weft__caller_device_synced(x, x->dev);
  if (checked && x->is_task)
    weft__caller_implicit_sync(x, "weft_device_sync",
                               "it waits for every stream of the device, "
                               "every task's work; weft_sync waits for this "
                               "task's alone",
                               weft__clock_ns() - t0, alive);
  return rc ? weft__caller_fail(x, rc) : 0;
}

int weft_task_after(weft_task *h) {
  if (!h)
    return weft__err(WEFT_EINVAL, "weft_task_after: task is NULL");
  weft__caller c;
  int rc0 = weft__door("weft_task_after", WEFT__DOOR_NO_CAPTURE,
                       "a graph cannot wait for another task's stream", &c);
  if (rc0)
    return rc0;
  weft__exec *x = c.x;
  weft_task *other = (weft_task *)weft__handle_obj(h);
  weft_runtime *rt = x->rt;
  pthread_mutex_t *lock = &weft__head(rt)->lock;
  pthread_mutex_lock(lock);
  int live = weft__task_live(h, other);
  /* A stale handle may name this task's own object, recycled: that task
   * completed long ago and is followed like any completed one below. */
  if (live && other == weft__worker_task()) {
    pthread_mutex_unlock(lock);
    return weft__err(WEFT_ESTATE, "weft_task_after: a task cannot follow "
                                  "itself");
  }
  /* Another runtime's, running or completed but not yet joined: the same
   * answer either way (a joined one is gone and cannot be told apart). */
  int foreign = weft__handle_live(h, &other->hdr) && other->x.rt != rt;
  /* Completed: what it did is done, and known from now on (weft check;
   * for a task already joined or detached and gone, what has completed
   * by now stands in for its clock). */
  if (!live && !foreign)
    weft__caller_joined(
        x, weft__handle_live(h, &other->hdr) && other->x.rt == rt ? &other->x
                                                                  : NULL);
  pthread_mutex_unlock(lock);
  if (foreign)
    return weft__err(WEFT_EINVAL, "weft_task_after: task of another runtime");
  if (!live) /* completed: already ordered; no stream needed */
    return 0;
  /* Waits for other to return first, before anything is leased: a wait
   * refused (it would close a cycle of waits) changes nothing. */
  pthread_mutex_lock(lock);
  int rc = weft__task_live(h, other)
               ? weft__task_wait_for(rt, other, 0, WEFT__STALL_AFTER,
                                     "weft_task_after")
               : 0;
  /* Completed meanwhile: as above. A task without a stream yet may
   * continue on other's, now that it has returned
   * (weft__task_take_stream). */
  int completed = rc == 0 && !weft__task_live(h, other);
  if (completed)
    weft__caller_joined(x,
                        weft__handle_live(h, &other->hdr) ? &other->x : NULL);
  int done = rc != 0 || completed ||
             (x->is_task && !x->stream && !x->bk->check &&
              weft__task_take_stream(x, other));
  pthread_mutex_unlock(lock);
  if (done)
    return rc;
  /* Leased outside the lock, which the lease takes. */
  weft__stream *s;
  rc = weft__caller_stream(x, &s);
  if (rc)
    return rc;
  pthread_mutex_lock(lock);
  /* end_ev lives until the task is finalized, which takes this lock. */
  if (weft__task_live(h, other) && other->end_ev)
    rc = weft__stream_wait_event(s, other->end_ev);
  /* Followed, or completed while the stream was leased: either way what
   * it did is before what this stream does next. */
  if (rc == 0)
    weft__caller_follows(s,
                         weft__handle_live(h, &other->hdr) ? &other->x : NULL);
  pthread_mutex_unlock(lock);
  return rc;
}
