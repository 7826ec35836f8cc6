/* What registered data knows of the future (data_internal.h): each
 * handle keeps the tasks spawned declaring it that have yet to return, in
 * spawn order. Eviction spares longest the instance whose next user comes
 * latest, first evicting those no spawned task will use (Belady's rule on
 * the tasks already spawned; docs/decisions/data.md, "Eviction spares the
 * data spawned tasks will use soonest"); a write-back started ahead runs
 * where the last of them does; an unregister refuses while one it would
 * not follow has yet to return. And the prefetches a task started, which
 * a writer of another spawner follows (docs/decisions/data.md, "Found in
 * review: a second eviction..."). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "caller_declare.h"
#include "data_core.h"
#include "data_internal.h"

/* d's lock held: room for one more user ahead, after dropping the
 * returned ones (all of them, which keeps the list as long as the tasks
 * still to return); 0, or -1 without memory. */
static int room_for_one(weft_runtime *rt, weft_data *d) {
  if (d->nahead < d->capahead)
    return 0;
  size_t k = 0;
  for (size_t i = d->ahead_at; i < d->nahead; i++)
    if (weft__task_progress(rt, d->ahead[i].t) == 0)
      d->ahead[k++] = d->ahead[i];
  d->ahead_at = 0;
  d->nahead = k;
  if (k < d->capahead / 2)
    return 0;
  size_t cap = d->capahead ? 2 * d->capahead : 8;
  use_ahead *grown = realloc(d->ahead, cap * sizeof *grown);
  if (!grown)
    return k < d->capahead ? 0 : -1;
  d->ahead = grown;
  d->capahead = cap;
  return 0;
}

const void *weft__data_spawner(void) {
  weft_task *self = weft_task_self();
  return self ? (const void *)self : weft__caller_thread();
}

void weft__data_note_uses(weft_runtime *rt, const weft_task *t, uint64_t id,
                          const weft_access *a, size_t n) {
  const void *by = weft__data_spawner(); /* a spawn runs in its spawner */
  int own = weft__data_own_spawning();
  pthread_mutex_lock(&weft__data_reg.lock);
  for (size_t k = 0; k < n; k++) {
    weft_data *d = a[k].ptr ? weft__data_holding(rt, a[k].ptr) : NULL;
    if (!d)
      continue;
    pthread_mutex_lock(&d->lock);
    if (room_for_one(rt, d) == 0)
      d->ahead[d->nahead++] = (use_ahead){t, by, id, own};
    pthread_mutex_unlock(&d->lock);
  }
  pthread_mutex_unlock(&weft__data_reg.lock);
}

uint64_t weft__data_next_use(weft_runtime *rt, weft_data *d) {
  while (d->ahead_at < d->nahead &&
         weft__task_progress(rt, d->ahead[d->ahead_at].t) != 0)
    d->ahead_at++;
  if (d->ahead_at == d->nahead) {
    d->ahead_at = d->nahead = 0;
    return UINT64_MAX;
  }
  return d->ahead[d->ahead_at].id;
}

int weft__data_source_device(weft_data *d) {
  pthread_mutex_lock(&d->lock);
  int dev = -1;
  for (size_t i = d->nahead; dev < 0 && i > d->ahead_at; i--)
    dev = weft__task_device_if_running(d->rt, d->ahead[i - 1].t);
  if (dev < 0)
    dev = weft__data_source_of(d, -1);
  pthread_mutex_unlock(&d->lock);
  return dev < 0 ? WEFT_DEVICE_INHERIT : dev;
}

const weft_task *weft__data_unfollowed(weft_data *d) {
  const weft_task *self = weft_task_self(), *found = NULL;
  const void *spawner = weft__data_spawner();
  pthread_mutex_lock(&d->lock);
  for (size_t i = d->ahead_at; !found && i < d->nahead; i++) {
    const use_ahead *u = &d->ahead[i];
    if (!u->own && (u->t == self || u->by != spawner) &&
        weft__task_progress(d->rt, u->t) == 0)
      found = u->t;
  }
  pthread_mutex_unlock(&d->lock);
  return found;
}

int weft__data_spawner_of(weft_data *d, const weft_task *t, const void **by) {
  int found = 0;
  pthread_mutex_lock(&d->lock);
  for (size_t i = d->ahead_at; t && !found && i < d->nahead; i++)
    if (d->ahead[i].t == t && weft__task_progress(d->rt, t) == 0) {
      *by = d->ahead[i].by;
      found = 1;
    }
  pthread_mutex_unlock(&d->lock);
  return found;
}

/* Set while this thread spawns a task of weft's own on a handle (a spawn
 * never switches): its declarations start no copies at spawn, which would
 * fill an instance that the task is about to free or does not read, and
 * it does not count as the program's user ahead. */
static _Thread_local int own_spawn;

void weft__data_own_spawn(int on) { own_spawn = on; }

int weft__data_own_spawning(void) { return own_spawn; }

int weft__data_keep_own(weft_data *d, weft_task *t, const void *by) {
  pthread_mutex_lock(&d->lock);
  int rc = 0;
  if (d->nown == d->capown) {
    size_t cap = d->capown ? 2 * d->capown : 8;
    own_task *grown = realloc(d->own, cap * sizeof *grown);
    if (grown) {
      d->own = grown;
      d->capown = cap;
    } else {
      rc = -1;
    }
  }
  if (rc == 0)
    d->own[d->nown++] = (own_task){t, by};
  pthread_mutex_unlock(&d->lock);
  return rc;
}

int weft__data_follow_own(weft_data *d, int join) {
  pthread_mutex_lock(&d->lock);
  own_task *own = d->own;
  size_t n = d->nown, kept = 0;
  d->own = NULL;
  d->nown = d->capown = 0;
  pthread_mutex_unlock(&d->lock);
  if (n == 0) { /* every get for writing asks: most find none */
    free(own);
    return 0;
  }
  const weft_task *self = weft_task_self();
  const void *spawner = NULL;
  int known = !join && weft__data_spawner_of(d, self, &spawner);
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    int e;
    if (join) {
      e = weft_task_join(own[i].t);
    } else if (known && own[i].by == spawner) {
      own[kept++] = own[i]; /* ordered by data flow, before or after */
      continue;
    } else {
      e = weft_task_after(own[i].t);
      e = e ? weft_task_join(own[i].t) : weft_task_detach(own[i].t);
    }
    if (e && rc == 0)
      rc = e;
  }
  /* Without memory to keep one, it goes untracked (detached): joining it
   * here could wait for the caller itself. */
  for (size_t i = 0; i < kept; i++)
    if (weft__data_keep_own(d, own[i].t, own[i].by) != 0)
      weft_task_detach(own[i].t);
  free(own);
  return rc;
}
