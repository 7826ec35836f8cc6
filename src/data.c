/* Data that moves itself (weft/data.h): per handle and device, an
 * instance that is allocated, filled, invalidated and evicted as tasks ask
 * for it. Built on the public API and three words to the core beneath it
 * (caller_declare.h, data_core.h): data flow orders the tasks that declare
 * a handle, the instances are weft_device_alloc memory, the fills are
 * weft_copy on the asking task's stream, an event per instance orders a
 * concurrent reader after the fill it did not make, and an eviction
 * follows the instance's users with weft_task_after before it frees it
 * (docs/decisions/data.md). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "caller_declare.h"
#include "clock.h"
#include "data_core.h"
#include "data_live.h"
#include "weft.h"
#include "weft/data.h"

enum { IDLE, FILLING, EVICTING }; /* instance.busy */

typedef struct instance {
  void *ptr;
  int valid;
  int busy;          /* FILLING: a task allocates or fills it; EVICTING */
  int recorded;      /* ready was recorded */
  weft_event *ready; /* recorded after its last fill */
  uint64_t last_use; /* use_clock at its last get: eviction takes the least */
  /* The tasks given it, or filled from it, since its last write (a writer
   * comes after the earlier ones by data flow): an eviction waits for
   * their GPU work. Completed ones are dropped as eviction looks. */
  weft_task **users;
  size_t nusers, capusers;
  /* The last user dropped: following it tells weft check that what has
   * completed comes before the eviction. */
  weft_task *gone;
} instance;

/* The instances of one runtime's handles: bytes held per device (allocated,
 * or being allocated), against weft__data_limit. Under reg_lock. */
typedef struct usage {
  struct usage *next;
  const weft_runtime *rt;
  size_t handles;
  size_t held[]; /* per device */
} usage;

struct weft_data {
  weft_runtime *rt;
  unsigned char *host;
  size_t bytes;
  usage *use;
  pthread_mutex_t lock; /* the fields below; never held across a weft call
                           that may switch */
  int host_valid, host_filling;
  uint64_t writes; /* gets for writing published: an eviction's write-back
                      makes the host valid only if none came meanwhile */
  weft_data_stats st;
  int ndev;
  instance inst[];
};

static atomic_uint_fast64_t use_clock;

/* The registered handles, sorted by address: a call checks its handle
 * here before touching it. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_data **live;
static size_t nlive, cap_live;
static usage *usages;

/* rt's usage, made on its first handle; NULL for want of memory. Lock
 * held. */
static usage *usage_of(const weft_runtime *rt, int ndev) {
  for (usage *u = usages; u; u = u->next)
    if (u->rt == rt)
      return u;
  usage *u = calloc(1, sizeof *u + (size_t)ndev * sizeof u->held[0]);
  if (u) {
    u->rt = rt;
    u->next = usages;
    usages = u;
  }
  return u;
}

/* Forgets u once its last handle is gone. Lock held. */
static void usage_drop(usage *u) {
  if (--u->handles)
    return;
  for (usage **pp = &usages; *pp; pp = &(*pp)->next)
    if (*pp == u) {
      *pp = u->next;
      free(u);
      return;
    }
}

/* Gives back the bytes of d's instance on dev. */
static void unhold(weft_data *d, int dev) {
  pthread_mutex_lock(&reg_lock);
  d->use->held[dev] -= d->bytes;
  pthread_mutex_unlock(&reg_lock);
}

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
  d->use = usage_of(rt, ndev);
  if (d->use)
    d->use->handles++;
  weft_data **nv = live;
  size_t nc = cap_live;
  if (d->use && nlive == cap_live) {
    nc = cap_live ? 2 * cap_live : 16;
    nv = realloc(live, nc * sizeof *nv);
  }
  if (!d->use || !nv) {
    if (d->use)
      usage_drop(d->use);
    pthread_mutex_unlock(&reg_lock);
    pthread_mutex_destroy(&d->lock);
    free(d);
    return weft_error_set(WEFT_ENOMEM, 0, "weft_data_register: no memory");
  }
  live = nv;
  cap_live = nc;
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

/* Takes d's lock once *busy (a fill or an eviction in flight, set under
 * it) is clear, yielding meanwhile: the filler drops the lock while it
 * copies. */
static void lock_unless_busy(weft_data *d, const int *busy) {
  pthread_mutex_lock(&d->lock);
  while (*busy) {
    pthread_mutex_unlock(&d->lock);
    weft_yield();
    pthread_mutex_lock(&d->lock);
  }
}

/* Lock held: whether an instance of d is being evicted. */
static int evicting(const weft_data *d) {
  for (int i = 0; i < d->ndev; i++)
    if (d->inst[i].busy == EVICTING)
      return 1;
  return 0;
}

/* Takes d's lock once no instance of d is being evicted (one may be the
 * only valid copy, on its way to the host). */
static void lock_unless_evicting(weft_data *d) {
  pthread_mutex_lock(&d->lock);
  while (evicting(d)) {
    pthread_mutex_unlock(&d->lock);
    weft_yield();
    pthread_mutex_lock(&d->lock);
  }
}

/* A valid instance other than dev's, not being evicted, to fill from, or
 * -1 for the host. Lock held. */
static int source_of(const weft_data *d, int dev) {
  for (int i = 0; i < d->ndev; i++)
    if (i != dev && d->inst[i].valid && d->inst[i].busy != EVICTING)
      return i;
  return -1;
}

/* Makes the caller's stream wait for in's last fill, if any. */
static int after_fill(const instance *in, int recorded) {
  return recorded ? weft_event_wait(in->ready) : 0;
}

/* Adds t to in's users (for a write, in place of them), and stamps the
 * use. Lock held. */
static int add_user(instance *in, weft_task *t, int write) {
  in->last_use = atomic_fetch_add(&use_clock, 1) + 1;
  if (write)
    in->nusers = 0;
  if (in->nusers && in->users[in->nusers - 1] == t)
    return 0;
  if (in->nusers == in->capusers) {
    size_t nc = in->capusers ? 2 * in->capusers : 4;
    weft_task **nu = realloc(in->users, nc * sizeof *nu);
    if (!nu)
      return weft_error_set(WEFT_ENOMEM, 0, "weft_data_get: no memory");
    in->users = nu;
    in->capusers = nc;
  }
  in->users[in->nusers++] = t;
  return 0;
}

/* Lock held: 1 if no user of in runs (its GPU work may be queued), after
 * dropping the completed ones. */
static int users_returned(weft_runtime *rt, instance *in) {
  size_t k = 0;
  int all = 1;
  for (size_t i = 0; i < in->nusers; i++) {
    int p = weft__task_progress(rt, in->users[i]);
    if (p < 2)
      in->users[k++] = in->users[i];
    else
      in->gone = in->users[i];
    all &= p > 0;
  }
  in->nusers = k;
  return all;
}

/* An instance chosen for eviction, marked EVICTING. */
typedef struct victim {
  weft_data *d;
  int dev;
  int dirty;       /* its only valid copy: written back first */
  uint64_t writes; /* the handle's, when picked */
} victim;

/* Picks the least recently used instance on dev of rt's handles that no
 * running task holds and marks it, into *v; returns 1, or 0 with *in_use
 * set if some were held. reg_lock held (then each handle's in turn). */
static int pick_victim(weft_runtime *rt, int dev, victim *v, int *in_use) {
  weft_data *best = NULL;
  uint64_t best_use = UINT64_MAX;
  *in_use = 0;
  for (size_t i = 0; i < nlive; i++) {
    weft_data *o = live[i];
    if (o->rt != rt)
      continue;
    instance *c = &o->inst[dev];
    pthread_mutex_lock(&o->lock);
    if (c->ptr && c->busy == IDLE) {
      if (!users_returned(rt, c))
        *in_use = 1;
      else if (c->last_use < best_use) {
        best = o;
        best_use = c->last_use;
      }
    }
    pthread_mutex_unlock(&o->lock);
  }
  if (!best)
    return 0;
  instance *c = &best->inst[dev];
  pthread_mutex_lock(&best->lock);
  int ok = c->ptr && c->busy == IDLE && users_returned(rt, c);
  if (ok) {
    /* Dirty unless the host or another instance not itself being evicted
     * is valid: two evictions of the last two copies both write back. */
    c->busy = EVICTING;
    *v = (victim){best, dev,
                  c->valid && !best->host_valid && source_of(best, dev) < 0,
                  best->writes};
  }
  pthread_mutex_unlock(&best->lock);
  return ok;
}

/* Evicts v in the calling task: its stream follows the instance's users
 * and its last fill, writes it back if dirty (waiting for the copy), and
 * frees it; the instance is then unallocated and invalid. */
static int evict(weft_runtime *rt, const victim *v) {
  weft_data *o = v->d;
  instance *in = &o->inst[v->dev];
  /* EVICTING keeps gets and fills away: users and ptr stay as they are. */
  int ranged = weft_range_push("weft_data evict") == 0;
  int rc = in->gone ? weft_task_after(in->gone) : 0;
  for (size_t i = 0; rc == 0 && i < in->nusers; i++)
    rc = weft_task_after(in->users[i]);
  if (rc == 0)
    rc = after_fill(in, in->recorded);
  /* weft check: the evicting task reads and frees the instance, and
   * writes the host copy, for the handle's tasks. */
  if (rc == 0)
    rc = weft__caller_declares(in->ptr, o->bytes, WEFT_RW);
  if (rc == 0 && v->dirty)
    rc = weft__caller_declares(o->host, o->bytes, WEFT_WRITE);
  if (rc == 0 && v->dirty)
    rc = weft_copy(o->host, in->ptr, o->bytes);
  if (rc == 0 && v->dirty)
    rc = weft_sync();
  if (rc == 0)
    rc = weft_device_free(in->ptr);
  if (ranged)
    weft_range_pop();
  size_t bytes = o->bytes;
  if (rc == 0) /* while EVICTING still keeps an unregister of o waiting */
    unhold(o, v->dev);
  pthread_mutex_lock(&o->lock);
  if (rc == 0) {
    in->ptr = NULL;
    in->valid = 0;
    in->recorded = 0;
    in->nusers = 0;
    o->st.evictions++;
    if (v->dirty) {
      /* A get for writing that began before the pick and published after
       * it made its own instance the only valid copy. */
      o->host_valid = o->writes == v->writes;
      o->st.to_host += bytes;
      o->st.copies++;
    }
  }
  in->busy = IDLE;
  pthread_mutex_unlock(&o->lock);
  if (rc == 0)
    weft__data_evicted(rt, bytes, v->dirty ? bytes : 0);
  return rc;
}

/* How long a task that needs room waits for instances held by running
 * tasks before it goes past the limit instead: never for ever, since the
 * holders may be waiting for room too (docs/decisions/data.md, "Eviction
 * under a limit"). */
#define ROOM_WAIT_NS 100000u

/* Holds room for d's instance on dev within the runtime's limit, evicting
 * what it must; past the limit when nothing can go. */
static int make_room(weft_data *d, int dev) {
  size_t limit = weft__data_limit(d->rt);
  uint64_t since = 0;
  for (;;) {
    pthread_mutex_lock(&reg_lock);
    size_t *held = &d->use->held[dev];
    victim v;
    int in_use = 0;
    if (limit && *held && *held + d->bytes > limit) {
      if (pick_victim(d->rt, dev, &v, &in_use)) {
        pthread_mutex_unlock(&reg_lock);
        int rc = evict(d->rt, &v);
        if (rc)
          return rc;
        continue;
      }
      if (in_use && !since)
        since = weft__clock_ns();
      if (in_use && weft__clock_ns() - since < ROOM_WAIT_NS) {
        pthread_mutex_unlock(&reg_lock);
        weft_yield();
        continue;
      }
    }
    *held += d->bytes; /* within the limit, or past it: nothing can go */
    pthread_mutex_unlock(&reg_lock);
    return 0;
  }
}

/* Allocates d's instance on dev into *p, within the limit; when the device
 * itself runs out, evicts and tries again while anything can go. */
static int alloc_instance(weft_data *d, int dev, void **p) {
  int rc = make_room(d, dev);
  if (rc)
    return rc;
  while ((rc = weft_device_alloc(d->bytes, p)) == WEFT_ENOMEM) {
    victim v;
    int in_use;
    pthread_mutex_lock(&reg_lock);
    int found = pick_victim(d->rt, dev, &v, &in_use);
    pthread_mutex_unlock(&reg_lock);
    if (!found || evict(d->rt, &v) != 0)
      break;
  }
  if (rc) {
    *p = NULL;
    unhold(d, dev);
  }
  return rc;
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
  weft_task *self = weft_task_self();
  if (!self)
    return weft_error_set(WEFT_ESTATE, 0,
                          "weft_data_get: not in a task (a task that "
                          "declared the handle gets its instance)");
  if (weft_runtime_current() != d->rt)
    return weft_error_set(WEFT_EINVAL, 0,
                          "weft_data_get: the handle is another runtime's");
  int dev = weft_task_device();
  if (dev < 0)
    return dev;
  weft__caller_gets(d->host, d->bytes, mode); /* weft check: declared? */
  instance *in = &d->inst[dev];
  int fill, src;
  /* Another task's fill or eviction of this instance ends soon; so does
   * one of another instance that a write would invalidate before the
   * eviction settles, or that is the only copy to read, on its way back. */
  for (;;) {
    lock_unless_busy(d, &in->busy);
    fill = (mode & WEFT_READ) && !in->valid;
    src = fill ? source_of(d, dev) : -1;
    if (!evicting(d) ||
        (!(mode & WEFT_WRITE) && (!fill || src >= 0 || d->host_valid)))
      break;
    pthread_mutex_unlock(&d->lock);
    weft_yield();
  }
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
  int rc = add_user(in, self, (mode & WEFT_WRITE) != 0);
  if (rc == 0 && sin)
    rc = add_user(sin, self, 0);
  if (rc) {
    pthread_mutex_unlock(&d->lock);
    return rc;
  }
  in->busy = alloc || fill ? FILLING : IDLE;
  pthread_mutex_unlock(&d->lock);

  void *p = in->ptr;
  if (alloc)
    rc = alloc_instance(d, dev, &p);
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

  int unheld = 0;
  pthread_mutex_lock(&d->lock);
  if (alloc && rc == 0) {
    in->ptr = p;
    d->st.instances++;
  } else if (alloc && p) {
    weft_device_free(p);
    unheld = 1;
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
    d->writes++;
  }
  in->busy = IDLE;
  pthread_mutex_unlock(&d->lock);
  if (unheld)
    unhold(d, dev);
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
  lock_unless_evicting(d);
  while (d->host_filling) {
    pthread_mutex_unlock(&d->lock);
    weft_yield();
    lock_unless_evicting(d);
  }
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
  int rc = add_user(sin, weft_task_self(), 0); /* no eviction meanwhile */
  d->host_filling = rc == 0;
  pthread_mutex_unlock(&d->lock);
  if (rc == 0)
    rc = weft__caller_declares(sin->ptr, d->bytes, WEFT_READ);
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

/* A prefetch's task: the instance of its device made valid for reading
 * (weft_data_get does it), then the task ends. */
static void prefetch(void *arg) {
  weft_data *d = arg;
  void *p;
  weft_data_get(d, WEFT_READ, &p); /* a failure leaves it to the next get */
}

int weft_data_prefetch(weft_data *d, int device) {
  if (!is_live(d))
    return not_live("weft_data_prefetch");
  if (device < 0 || device >= d->ndev)
    return weft_error_set(WEFT_EINVAL, 0,
                          "weft_data_prefetch: device %d is not one of the "
                          "runtime's %d",
                          device, d->ndev);
  weft_access a = weft_data_access(d, WEFT_READ);
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.name = "weft_data_prefetch";
  o.device = device;
  o.accesses = &a;
  o.naccesses = 1;
  weft_task *t;
  int rc = weft_task_spawn(d->rt, &t, prefetch, d, &o);
  if (rc == 0 && !t)
    return weft_error_set(WEFT_ESTATE, 0,
                          "weft_data_prefetch: not inside a graph capture");
  return rc ? rc : weft_task_detach(t);
}

/* Frees the instance of the task's device (each has a task there), once
 * no fill or eviction of it is in flight. */
static void free_instance(void *arg) {
  job *j = arg;
  weft_data *d = j->d;
  int dev = weft_task_device();
  instance *in = &d->inst[dev];
  lock_unless_busy(d, &in->busy);
  void *p = in->ptr;
  in->busy = FILLING; /* no eviction of it meanwhile */
  pthread_mutex_unlock(&d->lock);
  if (p && (j->rc = weft_device_free(p)) == 0)
    unhold(d, dev);
  pthread_mutex_lock(&d->lock);
  if (p && j->rc == 0)
    in->ptr = NULL;
  in->busy = IDLE;
  pthread_mutex_unlock(&d->lock);
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
  for (int dev = 0; rc == 0 && dev < d->ndev; dev++) {
    pthread_mutex_lock(&d->lock);
    int any = d->inst[dev].ptr || d->inst[dev].ready;
    pthread_mutex_unlock(&d->lock);
    if (any)
      rc = run_job(d, WEFT_RW, dev, free_instance, "weft_data_unregister");
  }
  if (rc)
    return rc;
  pthread_mutex_lock(&reg_lock);
  size_t at = live_at(d);
  if (at < nlive && live[at] == d) {
    memmove(&live[at], &live[at + 1], (nlive - at - 1) * sizeof *live);
    nlive--;
  }
  usage_drop(d->use);
  pthread_mutex_unlock(&reg_lock);
  for (int dev = 0; dev < d->ndev; dev++)
    free(d->inst[dev].users);
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
