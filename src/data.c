/* Data that moves itself (weft/data.h): per handle and device, an
 * instance that is allocated, filled and invalidated as tasks ask for it.
 * Built on the public API (and one word to weft check, caller_declare.h): data
 * flow orders the tasks that declare a handle, the instances are
 * weft_device_alloc memory, the fills are weft_copy on the asking task's
 * stream, and an event per instance orders a concurrent reader after the fill
 * it did not make (docs/decisions/data.md). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "caller_declare.h"
#include "data_live.h"
#include "weft.h"
#include "weft/data.h"

typedef struct instance {
  void *ptr;
  int valid;
  int filling;       /* a task is allocating or filling it now */
  int recorded;      /* ready was recorded */
  weft_event *ready; /* recorded after its last fill */
} instance;

struct weft_data {
  weft_runtime *rt;
  unsigned char *host;
  size_t bytes;
  pthread_mutex_t lock; /* the fields below; never held across a weft call
                           that may switch */
  int host_valid, host_filling;
  weft_data_stats st;
  int ndev;
  instance inst[];
};

/* The registered handles, sorted by address: a call checks its handle
 * here before touching it. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_data **live;
static size_t nlive, cap_live;

/* Where d is or would go in live. Lock held. */
static size_t live_at(const weft_data *d) {
  size_t lo = 0, hi = nlive;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if ((uintptr_t)live[mid] < (uintptr_t)d)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int is_live(const weft_data *d) {
  pthread_mutex_lock(&reg_lock);
  size_t i = live_at(d);
  int ok = d && i < nlive && live[i] == d;
  pthread_mutex_unlock(&reg_lock);
  return ok;
}

static int not_live(const char *call) {
  return weft_error_set(WEFT_EINVAL, 0,
                        "%s: not a registered handle (never registered, or "
                        "unregistered)",
                        call);
}

size_t weft__data_live(const weft_runtime *rt) {
  size_t n = 0;
  pthread_mutex_lock(&reg_lock);
  for (size_t i = 0; i < nlive; i++)
    n += live[i]->rt == rt;
  pthread_mutex_unlock(&reg_lock);
  return n;
}

int weft_data_register(weft_runtime *rt, void *ptr, size_t bytes,
                       weft_data **out) {
  if (!rt || !ptr || !out)
    return weft_error_set(WEFT_EINVAL, 0,
                          "weft_data_register: rt, ptr and out are needed");
  *out = NULL;
  if (bytes == 0 || (uintptr_t)ptr + bytes < (uintptr_t)ptr)
    return weft_error_set(WEFT_EINVAL, 0,
                          "weft_data_register: %zu bytes at %p: none, or "
                          "past the end of memory",
                          bytes, ptr);
  int ndev;
  int rc = weft_device_count(rt, &ndev);
  if (rc)
    return rc;
  weft_data *d = calloc(1, sizeof *d + (size_t)ndev * sizeof d->inst[0]);
  if (!d)
    return weft_error_set(WEFT_ENOMEM, 0, "weft_data_register: no memory");
  d->rt = rt;
  d->host = ptr;
  d->bytes = bytes;
  d->host_valid = 1;
  d->ndev = ndev;
  pthread_mutex_init(&d->lock, NULL);
  uintptr_t lo = (uintptr_t)ptr, hi = lo + bytes;
  pthread_mutex_lock(&reg_lock);
  for (size_t i = 0; i < nlive; i++) {
    const weft_data *o = live[i];
    uintptr_t olo = (uintptr_t)o->host, ohi = olo + o->bytes;
    if (o->rt == rt && lo < ohi && olo < hi) {
      pthread_mutex_unlock(&reg_lock);
      pthread_mutex_destroy(&d->lock);
      free(d);
      return weft_error_set(WEFT_EINVAL, 0,
                            "weft_data_register: %zu bytes at %p overlap "
                            "the registered %zu bytes at %p",
                            bytes, ptr, o->bytes, (void *)o->host);
    }
  }
  if (nlive == cap_live) {
    size_t nc = cap_live ? 2 * cap_live : 16;
    weft_data **nv = realloc(live, nc * sizeof *nv);
    if (!nv) {
      pthread_mutex_unlock(&reg_lock);
      pthread_mutex_destroy(&d->lock);
      free(d);
      return weft_error_set(WEFT_ENOMEM, 0, "weft_data_register: no memory");
    }
    live = nv;
    cap_live = nc;
  }
  size_t at = live_at(d);
  memmove(&live[at + 1], &live[at], (nlive - at) * sizeof *live);
  live[at] = d;
  nlive++;
  pthread_mutex_unlock(&reg_lock);
  *out = d;
  return 0;
}

weft_access weft_data_access(const weft_data *d, unsigned mode) {
  weft_access a = {NULL, 0, mode};
  if (d) {
    a.ptr = d->host;
    a.bytes = d->bytes;
  }
  return a;
}

/* Takes d's lock once *busy (a fill in flight, set under it) is clear,
 * yielding meanwhile: the filler drops the lock while it copies. */
static void lock_unless_busy(weft_data *d, const int *busy) {
  pthread_mutex_lock(&d->lock);
  while (*busy) {
    pthread_mutex_unlock(&d->lock);
    weft_yield();
    pthread_mutex_lock(&d->lock);
  }
}

/* A valid instance other than dev's to fill from, or -1 for the host.
 * Lock held. */
static int source_of(const weft_data *d, int dev) {
  for (int i = 0; i < d->ndev; i++)
    if (i != dev && d->inst[i].valid)
      return i;
  return -1;
}

/* Makes the caller's stream wait for in's last fill, if any. */
static int after_fill(const instance *in, int recorded) {
  return recorded ? weft_event_wait(in->ready) : 0;
}

int weft_data_get(weft_data *d, unsigned mode, void **ptr) {
  if (!ptr)
    return weft_error_set(WEFT_EINVAL, 0, "weft_data_get: ptr is NULL");
  *ptr = NULL;
  if (!(mode & WEFT_RW) || (mode & ~(unsigned)WEFT_RW))
    return weft_error_set(WEFT_EINVAL, 0,
                          "weft_data_get: mode 0x%x is not WEFT_READ, "
                          "WEFT_WRITE or WEFT_RW",
                          mode);
  if (!is_live(d))
    return not_live("weft_data_get");
  if (!weft_task_self())
    return weft_error_set(WEFT_ESTATE, 0,
                          "weft_data_get: not in a task (a task that "
                          "declared the handle gets its instance)");
  if (weft_runtime_current() != d->rt)
    return weft_error_set(WEFT_EINVAL, 0,
                          "weft_data_get: the handle is another runtime's");
  int dev = weft_task_device();
  if (dev < 0)
    return dev;
  instance *in = &d->inst[dev];
  lock_unless_busy(d, &in->filling); /* another task's fill ends soon */
  int fill = (mode & WEFT_READ) && !in->valid;
  int alloc = !in->ptr;
  int src = fill ? source_of(d, dev) : -1;
  if (fill && src < 0 && !d->host_valid) {
    pthread_mutex_unlock(&d->lock);
    return weft_error_set(WEFT_EINVAL, 0,
                          "weft_data_get: no valid copy to read (a host "
                          "copy being synced meanwhile?)");
  }
  const void *from = src >= 0 ? d->inst[src].ptr : d->host;
  instance *sin = src >= 0 ? &d->inst[src] : NULL;
  int src_recorded = sin ? sin->recorded : 0;
  int recorded = in->recorded;
  in->filling = alloc || fill;
  pthread_mutex_unlock(&d->lock);

  int rc = 0;
  void *p = in->ptr;
  if (alloc)
    rc = weft_device_alloc(d->bytes, &p);
  if (rc == 0 && fill && !in->ready)
    rc = weft_event_create(&in->ready);
  /* weft check: the instance stands for the handle the task declared;
   * the fill writes it and reads its source. */
  if (rc == 0)
    rc = weft__caller_declares(p, d->bytes, fill ? mode | WEFT_WRITE : mode);
  if (rc == 0 && fill)
    rc = weft__caller_declares(from, d->bytes, WEFT_READ);
  if (rc == 0 && fill) {
    rc = sin ? after_fill(sin, src_recorded) : 0;
    if (rc == 0)
      rc = weft_copy(p, from, d->bytes);
    if (rc == 0)
      rc = weft_event_record(in->ready);
  } else if (rc == 0) {
    rc = after_fill(in, recorded); /* a fill this task did not make */
  }

  pthread_mutex_lock(&d->lock);
  if (alloc && rc == 0) {
    in->ptr = p;
    d->st.instances++;
  } else if (alloc && p) {
    weft_device_free(p);
  }
  if (fill && rc == 0) {
    in->valid = 1;
    in->recorded = 1;
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
  }
  in->filling = 0;
  pthread_mutex_unlock(&d->lock);
  if (rc == 0)
    *ptr = in->ptr;
  return rc;
}

/* An internal task's work on a handle, and its result. */
typedef struct job {
  weft_data *d;
  int rc;
} job;

/* Copies a valid instance back to the host, unless the host's is valid. */
static void sync_host(void *arg) {
  job *j = arg;
  weft_data *d = j->d;
  lock_unless_busy(d, &d->host_filling);
  if (d->host_valid) {
    pthread_mutex_unlock(&d->lock);
    return;
  }
  int src = source_of(d, -1);
  if (src < 0) {
    pthread_mutex_unlock(&d->lock);
    j->rc = weft_error_set(WEFT_EINVAL, 0,
                           "weft_data_sync: no valid copy (a fill failed)");
    return;
  }
  instance *sin = &d->inst[src];
  int recorded = sin->recorded;
  d->host_filling = 1;
  pthread_mutex_unlock(&d->lock);
  int rc = weft__caller_declares(sin->ptr, d->bytes, WEFT_READ);
  if (rc == 0)
    rc = weft__caller_declares(d->host, d->bytes, WEFT_WRITE);
  if (rc == 0)
    rc = after_fill(sin, recorded);
  if (rc == 0)
    rc = weft_copy(d->host, sin->ptr, d->bytes);
  if (rc == 0)
    rc = weft_sync();
  pthread_mutex_lock(&d->lock);
  if (rc == 0) {
    d->host_valid = 1;
    d->st.to_host += d->bytes;
    d->st.copies++;
  }
  d->host_filling = 0;
  pthread_mutex_unlock(&d->lock);
  j->rc = rc;
}

/* Spawns fn on j->d in an internal task declaring it with mode, placed on
 * dev (WEFT_DEVICE_INHERIT: the caller's), into *t. */
static int spawn_job(job *j, unsigned mode, int dev, weft_task_fn fn,
                     const char *name, weft_task **t) {
  weft_access a = weft_data_access(j->d, mode);
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.name = name;
  o.device = dev;
  o.accesses = &a;
  o.naccesses = 1;
  int rc = weft_task_spawn(j->d->rt, t, fn, j, &o);
  if (rc == 0 && !*t) /* a step of a graph being captured ran at once */
    rc = j->rc ? j->rc
               : weft_error_set(WEFT_ESTATE, 0,
                                "%s: not inside a graph capture", name);
  return rc;
}

/* Joins t, a job's task: 0 or the error, the job's own first. */
static int join_job(job *j, weft_task *t) {
  int rc = weft_task_join(t);
  return j->rc ? j->rc : rc;
}

/* spawn_job, then join_job. */
static int run_job(weft_data *d, unsigned mode, int dev, weft_task_fn fn,
                   const char *name) {
  job j = {d, 0};
  weft_task *t;
  int rc = spawn_job(&j, mode, dev, fn, name, &t);
  return rc ? rc : join_job(&j, t);
}

int weft_data_sync(weft_data *d) {
  if (!is_live(d))
    return not_live("weft_data_sync");
  return run_job(d, WEFT_READ, WEFT_DEVICE_INHERIT, sync_host,
                 "weft_data_sync");
}

/* Frees the instance of the task's device (each has a task there). */
static void free_instance(void *arg) {
  job *j = arg;
  instance *in = &j->d->inst[weft_task_device()];
  if (in->ptr && (j->rc = weft_device_free(in->ptr)) == 0)
    in->ptr = NULL;
  if (in->ready && j->rc == 0)
    j->rc = weft_event_destroy(&in->ready);
}

/* sync_host, then the instance of the task's device freed. */
static void sync_and_free(void *arg) {
  job *j = arg;
  sync_host(arg);
  if (j->rc == 0)
    free_instance(arg);
}

/* After d's write-back: frees its instances on other devices (a task
 * placed on each), then d. */
static int finish(weft_data *d) {
  int rc = 0;
  for (int dev = 0; rc == 0 && dev < d->ndev; dev++)
    if (d->inst[dev].ptr || d->inst[dev].ready)
      rc = run_job(d, WEFT_RW, dev, free_instance, "weft_data_unregister");
  if (rc)
    return rc;
  pthread_mutex_lock(&reg_lock);
  size_t at = live_at(d);
  if (at < nlive && live[at] == d) {
    memmove(&live[at], &live[at + 1], (nlive - at - 1) * sizeof *live);
    nlive--;
  }
  pthread_mutex_unlock(&reg_lock);
  pthread_mutex_destroy(&d->lock);
  free(d);
  return 0;
}

int weft_data_unregister(weft_data *d) { return weft_data_unregister_n(&d, 1); }

int weft_data_unregister_n(weft_data *const *d, size_t n) {
  if (n && !d)
    return weft_error_set(WEFT_EINVAL, 0, "weft_data_unregister_n: d is NULL");
  for (size_t i = 0; i < n; i++) {
    if (!is_live(d[i]))
      return not_live("weft_data_unregister");
    for (size_t k = 0; k < i; k++)
      if (d[k] == d[i])
        return weft_error_set(WEFT_EINVAL, 0,
                              "weft_data_unregister_n: handle %zu is also "
                              "handle %zu",
                              i, k);
  }
  job *j = calloc(n ? n : 1, sizeof *j);
  weft_task **t = calloc(n ? n : 1, sizeof *t);
  if (!j || !t) {
    free(j);
    free(t);
    return weft_error_set(WEFT_ENOMEM, 0, "weft_data_unregister: no memory");
  }
  /* Every write-back first, side by side; then the joins. */
  int rc = 0;
  size_t spawned = 0;
  for (; spawned < n; spawned++) {
    j[spawned] = (job){d[spawned], 0};
    rc = spawn_job(&j[spawned], WEFT_RW, WEFT_DEVICE_INHERIT, sync_and_free,
                   "weft_data_unregister", &t[spawned]);
    if (rc)
      break;
  }
  for (size_t i = 0; i < spawned; i++) {
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

int weft_data_stats_get(const weft_data *d, weft_data_stats *out) {
  if (!out)
    return weft_error_set(WEFT_EINVAL, 0, "weft_data_stats_get: out is NULL");
  if (!is_live(d))
    return not_live("weft_data_stats_get");
  weft_data *m = (weft_data *)d;
  pthread_mutex_lock(&m->lock);
  *out = d->st;
  pthread_mutex_unlock(&m->lock);
  return 0;
}
