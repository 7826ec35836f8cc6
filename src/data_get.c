/* weft_data_get (data_internal.h): the calling task's instance of a
 * handle on its device, allocated, filled and ordered as its mode needs. */
#include <pthread.h>

#include "caller_declare.h"
#include "data_core.h"
#include "data_internal.h"

int weft_data_get(weft_data *d, unsigned mode, void **ptr) {
  return weft__data_get(d, mode, 0, ptr);
}

int weft__data_get(weft_data *d, unsigned mode, int prefetch, void **ptr) {
  if (!ptr)
    return weft_error_set(WEFT_EINVAL, 0, "weft_data_get: ptr is NULL");
  *ptr = NULL;
  if (!(mode & WEFT_RW) || (mode & ~(unsigned)WEFT_RW))
    return weft_error_set(WEFT_EINVAL, 0,
                          "weft_data_get: mode 0x%x is not WEFT_READ, "
                          "WEFT_WRITE or WEFT_RW",
                          mode);
  if (!weft__data_is_live(d))
    return weft__data_not_live("weft_data_get");
  weft_task *self = weft_task_self();
  if (!self)
    return weft_error_set(WEFT_ESTATE, 0,
                          "weft_data_get: not in a task (a task that "
                          "declared the handle gets its instance)");
  if (weft_runtime_current() != d->rt)
    return weft_error_set(WEFT_EINVAL, 0,
                          "weft_data_get: the handle is another runtime's");
  /* A get publishes the task's write, which a captured kernel never
   * makes (a review found one that fills nothing passing). */
  int crc = weft__caller_capture_refused(
      "weft_data_get",
      "a get may wait, allocate and copy, and records the write as done");
  if (crc)
    return crc;
  int dev = weft_task_device();
  if (dev < 0)
    return dev;
  weft__caller_gets(d->host, d->bytes, mode); /* weft check: declared? */
  /* A write waits for what prefetches a task started still read. */
  if ((mode & WEFT_WRITE) && !prefetch) {
    int frc = weft__data_follow_own(d, 0);
    if (frc)
      return frc;
  }
  instance *in = &d->inst[dev];
  int fill, src;
  /* Another task's fill or eviction of this instance ends soon; so does
   * one of another instance that a write would invalidate before the
   * eviction settles, or that is the only copy to read, on its way back. */
  for (;;) {
    weft__data_lock_unless_busy(d, &in->busy);
    fill = (mode & WEFT_READ) && !in->valid;
    src = fill ? weft__data_source_of(d, dev) : -1;
    if (!weft__data_evicting(d) ||
        (!(mode & WEFT_WRITE) && (!fill || src >= 0 || d->host_valid)))
      break;
    pthread_mutex_unlock(&d->lock);
    weft_yield();
  }
  /* A filler's get: whether the host's copy is valid is known only now,
   * under the lock; while it is, every valid copy is current. */
  if (prefetch && (!fill || !d->host_valid)) {
    pthread_mutex_unlock(&d->lock);
    return WEFT_EAGAIN;
  }
  /* Nothing orders a filler, or a prefetch a task started, before a later
   * writer's get: one published while it copies leaves its fill stale, not
   * valid. */
  uint64_t writes = d->writes;
  if (fill && src < 0 && !d->host_valid) {
    pthread_mutex_unlock(&d->lock);
    return weft_error_set(WEFT_EINVAL, 0,
                          "weft_data_get: no valid copy to read (a host "
                          "copy being synced meanwhile?)");
  }
  int alloc = !in->ptr;
  const void *from = src >= 0 ? d->inst[src].ptr : d->host;
  instance *sin = src >= 0 ? &d->inst[src] : NULL;
  int src_recorded = sin ? sin->recorded : 0;
  int recorded = in->recorded;
  int rc = weft__data_add_user(d->rt, in, self, (mode & WEFT_WRITE) != 0);
  if (rc == 0 && sin)
    rc = weft__data_add_user(d->rt, sin, self, 0);
  if (rc) {
    pthread_mutex_unlock(&d->lock);
    return rc;
  }
  in->busy = alloc || fill ? FILLING : IDLE;
  pthread_mutex_unlock(&d->lock);

  void *p = in->ptr;
  if (alloc)
    rc = weft__data_alloc_instance(d, dev, !prefetch, &p);
  /* Published under the lock: weft__data_guard reads it there. */
  if (rc == 0 && fill && !in->ready) {
    weft_event *ready = NULL;
    rc = weft__data_event_create(&ready);
    pthread_mutex_lock(&d->lock);
    in->ready = ready;
    pthread_mutex_unlock(&d->lock);
  }
  /* weft check: the instance stands for the handle the task declared, in
   * the get's mode; the fill, weft's own copy, is held to no declaration
   * (weft__caller_own_copy). */
  if (rc == 0)
    rc = weft__caller_declares(p, d->bytes, mode);
  if (rc == 0 && fill) {
    rc = sin ? weft__data_after_fill(sin, src_recorded) : 0;
    /* After the instance's last fill, a filler's left stale perhaps. */
    if (rc == 0)
      rc = weft__data_after_fill(in, recorded);
    if (rc == 0) { /* from a host copy valid when the fill was decided */
      weft__caller_own_copy(1);
      rc = weft_copy(p, from, d->bytes);
      weft__caller_own_copy(0);
    }
    if (rc == 0)
      rc = weft_event_record(in->ready);
    /* Under weft check a write's fill from the host ends before its get
     * does, so that the write guards the host pages (weft__data_guard),
     * which the copy (the host backend's, a staged one) must not read
     * after. */
    if (rc == 0 && !sin && (mode & WEFT_WRITE) && d->check_fd >= 0)
      rc = weft_sync();
  } else if (rc == 0) {
    rc =
        weft__data_after_fill(in, recorded); /* a fill this task did not make */
  }

  int unheld = 0;
  pthread_mutex_lock(&d->lock);
  if (alloc && rc == 0) {
    in->ptr = p;
    d->st.instances++;
  } else if (alloc && p) {
    unheld = 1; /* p, never published, is freed after the lock */
  }
  if (fill && rc == 0) {
    in->valid = d->writes == writes;
    in->recorded = 1;
    /* Cleared once ready, recorded after this fill and any later one (a
     * fill waits for the one before), has completed (weft__data_guard). */
    if (!sin)
      in->from_host = 1;
    d->st.copies++;
    if (sin)
      d->st.device_to_device += d->bytes;
    else
      d->st.to_device += d->bytes;
  }
  if ((mode & WEFT_WRITE) && rc == 0) {
    for (int i = 0; i < d->ndev; i++)
      d->inst[i].valid = i == dev;
    d->host_valid = 0;
    d->writes++;
  }
  weft__data_guard(d);
  in->busy = IDLE;
  pthread_mutex_unlock(&d->lock);
  if (unheld) {
    weft_device_free(p);
    weft__data_unhold(d, dev);
  }
  if (rc == 0)
    *ptr = in->ptr;
  return rc;
}
