/* A handle's life (data_internal.h): weft_data_register, the copies
 * started by weft_data_prefetch and at a task's spawn, weft_data_sync's
 * copy back (and weft_data_prefetch's to the host), and weft_data_unregister's
 * write-back and frees. Each is a task of weft's own declaring the handle, so
 * that data flow orders it among the program's, but the fillers of copies at
 * spawn, which follow nothing and fill only from a current host copy
 * (data_get.c). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "caller_declare.h"
#include "data_core.h"
#include "data_internal.h"
#include "stream_internal.h"

/* An internal task's work on a handle, and its result with its message
 * (an error is its task's, which the caller's join does not carry). */
typedef struct job {
  weft_data *d;
  weft_event *after; /* the calling task's work, waited for before a copy */
  int rc;
  char why[256];
} job;

/* j's result: rc, with the calling task's message kept for join_job. */
static void job_fail(job *j, int rc) {
  j->rc = rc;
  if (rc)
    snprintf(j->why, sizeof j->why, "%s", weft_last_error_message());
}

/* An event recorded on the calling task's stream, into *ev (NULL when
 * none is needed), if the task holds an instance of d (it got d, so its
 * work may still write it): data flow orders a task of weft's own after
 * the spawner's earlier tasks, not after the spawner itself, so the job
 * waits for this before it copies. Not in a capture, whose steps the
 * graph orders. */
static int caller_point(weft_data *d, weft_event **ev) {
  *ev = NULL;
  weft_task *self = weft_task_self();
  if (!self || weft__caller_capturing())
    return 0;
  int holds = 0;
  pthread_mutex_lock(&d->lock);
  for (int dev = 0; dev < d->ndev && !holds; dev++)
    for (size_t i = 0; i < d->inst[dev].nusers && !holds; i++)
      holds = d->inst[dev].users[i] == self;
  pthread_mutex_unlock(&d->lock);
  if (!holds)
    return 0;
  int rc = weft_event_create(ev);
  if (rc == 0 && (rc = weft_event_record(*ev)) != 0)
    weft_event_destroy(ev);
  return rc;
}

/* The calling task's stream waits for *ev's work, if any; *ev is then
 * destroyed (the wait stays). */
static int follow_point(weft_event **ev) {
  if (!*ev)
    return 0;
  int rc = weft_event_wait(*ev);
  int e = weft_event_destroy(ev);
  return rc ? rc : e;
}

/* Destroys j's point if the job ended before follow_point took it. */
static void drop_point(job *j) {
  if (j->after)
    weft_event_destroy(&j->after);
}

/* Copies a valid instance back to the host, unless the host's is valid. */
static void sync_host(void *arg) {
  job *j = arg;
  weft_data *d = j->d;
  weft__data_lock_unless_evicting(d);
  while (d->host_filling) {
    pthread_mutex_unlock(&d->lock);
    weft_yield();
    weft__data_lock_unless_evicting(d);
  }
  if (d->host_valid) {
    pthread_mutex_unlock(&d->lock);
    return;
  }
  int src = weft__data_source_of(d, -1);
  if (src < 0) {
    pthread_mutex_unlock(&d->lock);
    job_fail(j, weft_error_set(WEFT_EINVAL, 0,
                               "weft_data_sync: no valid copy (a fill "
                               "failed)"));
    return;
  }
  instance *sin = &d->inst[src];
  int recorded = sin->recorded;
  /* A write-back a task started (weft_data_prefetch to the host) is not
   * ordered before a later writer of another spawner: one published while
   * it copies leaves the host's copy stale, not valid. */
  uint64_t writes = d->writes;
  int rc = weft__data_add_user(d->rt, sin, weft_task_self(),
                               0); /* no eviction meanwhile */
  d->host_filling = rc == 0;
  weft__data_guard(d); /* down while the copy writes the host */
  pthread_mutex_unlock(&d->lock);
  if (rc == 0)
    rc = weft__caller_declares(sin->ptr, d->bytes, WEFT_READ);
  if (rc == 0)
    rc = weft__caller_declares(d->host, d->bytes, WEFT_WRITE);
  if (rc == 0)
    rc = weft__data_after_fill(sin, recorded);
  if (rc == 0)
    rc = weft__data_follow_users(d, sin);
  if (rc == 0)
    rc = follow_point(&j->after);
  if (rc == 0) {
    weft__caller_own_copy(1);
    rc = weft_copy(d->host, sin->ptr, d->bytes);
    weft__caller_own_copy(0);
  }
  /* Lending its stream while it waits: unregister_n runs hundreds of
   * these side by side, each would hold a stream of its own. */
  if (rc == 0)
    rc = weft__sync_lending();
  pthread_mutex_lock(&d->lock);
  if (rc == 0) {
    d->host_valid = d->writes == writes;
    d->st.to_host += d->bytes;
    d->st.copies++;
  }
  d->host_filling = 0;
  weft__data_guard(d);
  pthread_mutex_unlock(&d->lock);
  job_fail(j, rc);
}

/* Spawns fn(arg) in a task of weft's own named name, declaring d with
 * mode, placed on dev (WEFT_DEVICE_INHERIT: the caller's), into *t. */
static int spawn_own(weft_data *d, unsigned mode, int dev, weft_task_fn fn,
                     void *arg, const char *name, weft_task **t) {
  weft_access a = weft_data_access(d, mode);
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.name = name;
  o.device = dev;
  o.accesses = &a;
  o.naccesses = 1;
  weft__data_own_spawn(1);
  int rc = weft_task_spawn(d->rt, t, fn, arg, &o);
  weft__data_own_spawn(0);
  return rc;
}

/* spawn_own of fn on job j. */
static int spawn_job(job *j, unsigned mode, int dev, weft_task_fn fn,
                     const char *name, weft_task **t) {
  int rc = spawn_own(j->d, mode, dev, fn, j, name, t);
  if (rc == 0 && !*t) /* a step of a graph being captured ran at once */
    rc = j->rc ? j->rc
               : weft_error_set(WEFT_ESTATE, 0,
                                "%s: not inside a graph capture", name);
  return rc;
}

/* Joins t, a job's task: 0 or the error, the job's own first, with its
 * message. */
static int join_job(job *j, weft_task *t) {
  int rc = weft_task_join(t);
  if (j->rc)
    return weft_error_set(j->rc, 0, "%s", j->why);
  return rc;
}

/* spawn_job, then join_job; the job follows the calling task's work on d
 * (caller_point). */
static int run_job(weft_data *d, unsigned mode, int dev, weft_task_fn fn,
                   const char *name) {
  job j = {.d = d};
  int rc = caller_point(d, &j.after);
  weft_task *t;
  if (rc == 0)
    rc = spawn_job(&j, mode, dev, fn, name, &t);
  if (rc == 0)
    rc = join_job(&j, t);
  drop_point(&j);
  return rc;
}

int weft_data_register(weft_runtime *rt, void *ptr, size_t bytes,
                       weft_data **out) {
  if (!rt || !ptr || !out)
    return weft_error_set(WEFT_EINVAL, 0, "weft_data_register: %s is NULL",
                          !rt    ? "rt"
                          : !ptr ? "ptr"
                                 : "out");
  if (bytes == 0)
    return weft_error_set(WEFT_EINVAL, 0, "weft_data_register: bytes is 0");
  if ((uintptr_t)ptr + bytes < (uintptr_t)ptr)
    return weft_error_set(WEFT_EINVAL, 0,
                          "weft_data_register: %zu bytes at %p run past the "
                          "end of memory",
                          bytes, ptr);
  int ndev;
  int rc = weft_device_count(rt, &ndev);
  if (rc)
    return weft_error_set(rc, 0,
                          "weft_data_register: rt is not an open "
                          "runtime");
  weft_data *d = calloc(1, sizeof *d + (size_t)ndev * sizeof d->inst[0]);
  if (!d)
    return weft_error_set(WEFT_ENOMEM, 0, "weft_data_register: no memory");
  d->rt = rt;
  d->host = ptr;
  d->bytes = bytes;
  d->host_valid = 1;
  d->guard = -1;
  d->check_fd = weft__data_check_fd(rt);
  d->guard_prot = -2; /* asked at the first guard */
  d->ndev = ndev;
  pthread_mutex_init(&d->lock, NULL);
  if ((rc = weft__data_enter(d)) != 0) {
    pthread_mutex_destroy(&d->lock);
    free(d);
    return rc;
  }
  weft__data_set_check_hook(rt, weft__data_stale_host);
  weft__task_set_data_hooks(
      rt, weft__data_place,
      weft__data_prefetch_on(rt) ? weft__data_prefetch_at_spawn : NULL,
      weft__data_note_uses);
  *out = d;
  return 0;
}

int weft_data_sync(weft_data *d) {
  int urc = weft__data_usable(d, "weft_data_sync");
  if (urc)
    return urc;
  return run_job(d, WEFT_READ, WEFT_DEVICE_INHERIT, sync_host,
                 "weft_data_sync");
}

/* A prefetch's task, detached: the instance of its device made valid for
 * reading (weft_data_get does it) after the spawner's work on it, then the
 * task ends. A failure leaves it to the next get. */
static void prefetch(void *arg) {
  job *j = arg;
  void *p;
  if (follow_point(&j->after) == 0)
    weft_data_get(j->d, WEFT_READ, &p);
  drop_point(j);
  free(j);
}

/* A write-back's task (weft_data_prefetch to the host), detached:
 * sync_host, whose failure is left to the next sync or unregister, which
 * copy again. */
static void write_back(void *arg) {
  job *j = arg;
  sync_host(j);
  drop_point(j);
  free(j);
}

int weft_data_prefetch(weft_data *d, int device) {
  int urc = weft__data_usable(d, "weft_data_prefetch");
  if (urc)
    return urc;
  int host = device == WEFT_DATA_HOST;
  if (!host && (device < 0 || device >= d->ndev))
    return weft_error_set(WEFT_EINVAL, 0,
                          "weft_data_prefetch: device %d is neither one of "
                          "the runtime's %d nor WEFT_DATA_HOST",
                          device, d->ndev);
  job *j = calloc(1, sizeof *j);
  if (!j)
    return weft_error_set(WEFT_ENOMEM, 0, "weft_data_prefetch: no memory");
  j->d = d;
  weft_task *t = NULL;
  int rc = caller_point(d, &j->after);
  if (rc == 0)
    rc = spawn_own(d, WEFT_READ, host ? weft__data_source_device(d) : device,
                   host ? write_back : prefetch, j, "weft_data_prefetch", &t);
  if (rc) {
    drop_point(j);
    free(j);
    return rc;
  }
  if (!t) /* a step of a capture: it ran, and freed j */
    return weft_error_set(WEFT_ESTATE, 0,
                          "weft_data_prefetch: not inside a graph capture");
  /* Started by a task: kept for the next writer, which data flow would
   * not order after it (weft__data_follow_own). */
  if (weft_task_self() && weft__data_keep_own(d, t, weft_task_self()) == 0)
    return 0;
  return weft_task_detach(t);
}

/* A device's filler: a task of weft's own that fills the instances that
 * spawns queued, taking them in the order their readers were spawned, on
 * its own stream, and ends when none is left. */
static void filler(void *arg) {
  weft_runtime *rt = arg;
  int dev = weft_task_device();
  void *p;
  for (weft_data *d = weft__data_next_fill(rt, dev, NULL); d;
       d = weft__data_next_fill(rt, dev, d))
    weft__data_get(d, WEFT_READ, 1, &p); /* failing, it is left to the task */
}

void weft__data_prefetch_at_spawn(weft_runtime *rt, int dev,
                                  const weft_access *a, size_t n) {
  int start = 0;
  for (size_t k = 0; k < n && !weft__data_own_spawning(); k++)
    start += weft__data_queue_fill(rt, dev, a[k].ptr, a[k].mode);
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.name = "weft prefetch";
  o.device = dev;
  for (; start > 0; start--)
    if (weft_task_spawn(rt, NULL, filler, rt, &o) != 0) {
      /* What this filler would have taken is left to the tasks' gets. */
      for (weft_data *d = weft__data_next_fill(rt, dev, NULL); d;
           d = weft__data_next_fill(rt, dev, d))
        ;
    }
}

/* weft_wait_until's test: no filler works on the handle. */
static int unqueued(void *arg) {
  return weft__data_unqueue_fills(arg) ? WEFT_EAGAIN : 0;
}

/* Frees the instance of the task's device (each has a task there), once
 * no fill or eviction of it is in flight. */
static void free_instance(void *arg) {
  job *j = arg;
  weft_data *d = j->d;
  int dev = weft_task_device();
  instance *in = &d->inst[dev];
  int frc = weft__data_follow_users(d, in);
  if (frc) {
    job_fail(j, frc);
    return;
  }
  weft__data_lock_unless_busy(d, &in->busy);
  void *p = in->ptr;
  in->busy = FILLING; /* no eviction of it meanwhile */
  pthread_mutex_unlock(&d->lock);
  if (p)
    job_fail(j, weft_device_free(p));
  if (p && j->rc == 0)
    weft__data_unhold(d, dev);
  pthread_mutex_lock(&d->lock);
  /* Gone, not valid: if a later device's free fails, the handle stays
   * registered, and a get here must allocate and fill anew. */
  if (p && j->rc == 0) {
    in->ptr = NULL;
    in->valid = 0;
  }
  if (j->rc == 0)
    in->recorded = 0;
  in->busy = IDLE;
  pthread_mutex_unlock(&d->lock);
  /* Taken under the lock, which weft__data_guard reads it under. */
  pthread_mutex_lock(&d->lock);
  weft_event *ready = j->rc == 0 ? in->ready : NULL;
  if (ready)
    in->ready = NULL;
  pthread_mutex_unlock(&d->lock);
  int e = ready ? weft_event_destroy(&ready) : 0;
  if (e) {
    job_fail(j, e);
    pthread_mutex_lock(&d->lock);
    in->ready = ready;
    pthread_mutex_unlock(&d->lock);
  }
}

/* sync_host, then the instance of the task's device freed; not when a
 * writer the unregister was not ordered after (another spawner's task)
 * published meanwhile, leaving the host's copy stale. */
static void sync_and_free(void *arg) {
  job *j = arg;
  sync_host(arg);
  if (j->rc)
    return;
  pthread_mutex_lock(&j->d->lock);
  int stale = !j->d->host_valid;
  pthread_mutex_unlock(&j->d->lock);
  if (stale)
    job_fail(j, weft_error_set(WEFT_EBUSY, 0,
                               "weft_data_unregister: %p (%zu bytes) was "
                               "written meanwhile by a task the unregister "
                               "does not follow (another spawner's); "
                               "unregister it after that task",
                               j->d->host, j->d->bytes));
  else
    free_instance(arg);
}

/* After d's write-back: frees its instances on other devices (a task
 * placed on each), then d. */
static int finish(weft_data *d) {
  int rc = 0;
  for (int dev = 0; rc == 0 && dev < d->ndev; dev++) {
    pthread_mutex_lock(&d->lock);
    int any = d->inst[dev].ptr || d->inst[dev].ready;
    pthread_mutex_unlock(&d->lock);
    if (any)
      rc = run_job(d, WEFT_RW, dev, free_instance, "weft_data_unregister");
  }
  if (rc)
    return rc;
  weft__data_forget(d);
  return 0;
}

/* A handle and where it was given, for given_twice's sort. */
typedef struct given {
  uintptr_t d;
  size_t at;
} given;

static int by_handle(const void *a, const void *b) {
  const given *x = a, *y = b;
  return x->d != y->d ? (x->d < y->d ? -1 : 1) : (x->at < y->at ? -1 : 1);
}

/* 0 when d[0..n) are n handles; else WEFT_EINVAL reported naming the
 * earliest place that repeats one and that handle's first place (or
 * WEFT_ENOMEM). Sorted, so that tens of thousands (blocks) stay quick. */
static int given_twice(weft_data *const *d, size_t n) {
  if (n < 2)
    return 0;
  given *g = malloc(n * sizeof *g);
  if (!g)
    return weft_error_set(WEFT_ENOMEM, 0, "weft_data_unregister: no memory");
  for (size_t i = 0; i < n; i++)
    g[i] = (given){(uintptr_t)d[i], i};
  qsort(g, n, sizeof *g, by_handle);
  size_t first = 0, again = SIZE_MAX; /* a handle's first place, its second */
  for (size_t i = 1; i < n; i++)
    if (g[i].d == g[i - 1].d && (i < 2 || g[i - 2].d != g[i].d) &&
        g[i].at < again)
      first = g[i - 1].at, again = g[i].at;
  free(g);
  return again == SIZE_MAX ? 0
                           : weft_error_set(WEFT_EINVAL, 0,
                                            "weft_data_unregister_n: handle "
                                            "%zu is also handle %zu",
                                            again, first);
}

int weft_data_unregister(weft_data *d) {
  return weft__data_unregister_n(&d, 1, 0);
}

int weft_data_unregister_n(weft_data *const *d, size_t n) {
  return weft__data_unregister_n(d, n, 0);
}

int weft__data_unregister_n(weft_data *const *d, size_t n, int blocks) {
  const char *call = blocks        ? "weft_data_unregister_blocks"
                     : n == 1 && d ? "weft_data_unregister"
                                   : "weft_data_unregister_n";
  if (n && !d)
    return weft_error_set(WEFT_EINVAL, 0, "%s: d is NULL", call);
  for (size_t i = 0; i < n; i++) {
    int urc = weft__data_usable(d[i], call);
    if (urc)
      return urc;
    if (d[i]->block && !blocks)
      return weft_error_set(WEFT_EINVAL, 0,
                            "%s: handle %zu (%p, %zu bytes) is a block of "
                            "weft_data_register_blocks: "
                            "weft_data_unregister_blocks gives back all its "
                            "blocks",
                            call, i, d[i]->host, d[i]->bytes);
  }
  int twice = given_twice(d, n);
  if (twice)
    return twice;
  /* No filler may touch a handle being freed, nor a prefetch a task
   * started. */
  for (size_t i = 0; i < n; i++) {
    int rc = weft_wait_until(unqueued, d[i]);
    if (rc == 0)
      rc = weft__data_follow_own(d[i], 1);
    if (rc)
      return rc;
  }
  /* The unregister follows the caller's earlier tasks by data flow, not
   * the caller itself nor another task's: it would free what they hold.
   * (Prefetches tasks started are joined above, and no longer count.) */
  weft_task *self = weft_task_self();
  for (size_t i = 0; i < n; i++) {
    const weft_task *t = weft__data_unfollowed(d[i]);
    if (t)
      return weft_error_set(
          WEFT_EBUSY, 0,
          "%s: handle %zu (%p, %zu bytes) is declared by %s, which has yet "
          "to return; unregister it after that task, from its spawner",
          call, i, d[i]->host, d[i]->bytes,
          t == self ? "the calling task"
                    : "a task another task or thread spawned (the "
                      "unregister follows only its caller's)");
  }
  job *j = calloc(n ? n : 1, sizeof *j);
  weft_task **t = calloc(n ? n : 1, sizeof *t);
  if (!j || !t) {
    free(j);
    free(t);
    return weft_error_set(WEFT_ENOMEM, 0, "%s: no memory", call);
  }
  /* Every write-back first, side by side; then the joins. */
  int rc = 0;
  size_t spawned = 0;
  for (; spawned < n; spawned++) {
    j[spawned] = (job){.d = d[spawned]};
    rc = spawn_job(&j[spawned], WEFT_RW, WEFT_DEVICE_INHERIT, sync_and_free,
                   "weft_data_unregister", &t[spawned]);
    if (rc)
      break;
  }
  /* The last first: the registry keeps its handles in sorted arrays, and
   * handles registered in a row (blocks, tiles) sit at their ends there,
   * so that each leaves without moving the rest. */
  for (size_t i = spawned; i-- > 0;) {
    int e = join_job(&j[i], t[i]);
    if (e == 0)
      e = finish(d[i]);
    if (e && rc == 0)
      rc = e;
  }
  free(j);
  free(t);
  return rc;
}
