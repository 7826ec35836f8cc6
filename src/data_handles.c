/* Registered data's handles (data_internal.h): the registry, the
 * runtimes' room, register and unregister's last step, and the rules of
 * an instance's state that the other data files follow. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "caller_declare.h"
#include "data_core.h"
#include "data_internal.h"
#include "data_live.h"
#include "host_guard.h"
#include "ptrvec.h"

weft__data_registry weft__data_reg = {.lock = PTHREAD_MUTEX_INITIALIZER};
static atomic_uint_fast64_t use_clock;

/* rt's usage, made on its first handle; NULL for want of memory. Lock
 * held. */
static usage *usage_of(const weft_runtime *rt, int ndev) {
  for (usage *u = weft__data_reg.usages; u; u = u->next)
    if (u->rt == rt)
      return u;
  usage *u = calloc(1, sizeof *u + (size_t)ndev * sizeof u->dev[0]);
  if (u) {
    u->rt = rt;
    u->ndev = ndev;
    u->next = weft__data_reg.usages;
    weft__data_reg.usages = u;
  }
  return u;
}

/* Forgets u once its last handle is gone and no filler of its runtime
 * works: a filler finds its usage by runtime when it ends, and one freed
 * and made again under it had its count taken off (a review: the count
 * went negative, and no filler started again). Lock held. */
static void usage_forget_idle(usage *u) {
  if (u->handles)
    return;
  for (int dev = 0; dev < u->ndev; dev++)
    if (u->dev[dev].fillers)
      return;
  for (usage **pp = &weft__data_reg.usages; *pp; pp = &(*pp)->next)
    if (*pp == u) {
      *pp = u->next;
      free(u);
      return;
    }
}

/* One handle of u fewer. Lock held. */
static void usage_drop(usage *u) {
  u->handles--;
  usage_forget_idle(u);
}

/* Gives back the bytes of d's instance on dev. */
void weft__data_unhold(weft_data *d, int dev) {
  pthread_mutex_lock(&weft__data_reg.lock);
  d->use->dev[dev].held -= d->bytes;
  pthread_mutex_unlock(&weft__data_reg.lock);
}

/* Where d is or would go in the registry. Its lock held. */
static size_t live_at(const weft_data *d) {
  return weft__ptrset_at(weft__data_reg.live, weft__data_reg.n, d);
}

/* by_host's order: by runtime, then host address, so that one runtime's
 * handles are a run of their own that a search for its address never
 * leaves (other runtimes' handles may share its host memory). */
static int before(const weft_data *o, const weft_runtime *rt, const void *p) {
  if (o->rt != rt)
    return (uintptr_t)o->rt < (uintptr_t)rt;
  return (uintptr_t)o->host < (uintptr_t)p;
}

/* The first handle in by_host not before (rt, p). Lock held. */
static size_t host_at(const weft_runtime *rt, const void *p) {
  size_t lo = 0, hi = weft__data_reg.n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (before(weft__data_reg.by_host[mid], rt, p))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

size_t weft__data_first_of(const weft_runtime *rt) { return host_at(rt, NULL); }

weft_data *weft__data_holding(const weft_runtime *rt, const void *p) {
  /* rt's own never overlap: the nearest at or below p is the one. */
  size_t i = host_at(rt, (const char *)p + 1);
  weft_data *o = i > 0 ? weft__data_reg.by_host[i - 1] : NULL;
  return o && o->rt == rt && (uintptr_t)p < (uintptr_t)o->host + o->bytes
             ? o
             : NULL;
}

int weft__data_stale_host(void *ctx, const void *p, size_t n, int write,
                          const void **base, size_t *bytes, int *dev) {
  if (weft__caller_own_copying())
    return 0;
  const weft_runtime *rt = ctx;
  uintptr_t lo = (uintptr_t)p, hi = lo + n;
  int found = 0;
  pthread_mutex_lock(&weft__data_reg.lock);
  /* From the handle at or below p (rt's never overlap), while they start
   * below hi. */
  size_t i = host_at(rt, p);
  if (i > 0 && weft__data_reg.by_host[i - 1]->rt == rt)
    i--;
  for (; !found && i < weft__data_reg.n; i++) {
    weft_data *d = weft__data_reg.by_host[i];
    if (d->rt != rt || (uintptr_t)d->host >= hi)
      break;
    if ((uintptr_t)d->host + d->bytes <= lo)
      continue;
    pthread_mutex_lock(&d->lock);
    /* A write is never the program's to make; a read only once the host
     * copy is stale. An instance being evicted is the copy on its way
     * back: device 0 stands for it. */
    if (write || !d->host_valid) {
      found = 1;
      *dev = weft__data_source_of(d, -1);
      if (*dev < 0 && !d->host_valid)
        *dev = 0;
      *base = d->host;
      *bytes = d->bytes;
    }
    pthread_mutex_unlock(&d->lock);
  }
  pthread_mutex_unlock(&weft__data_reg.lock);
  return found;
}

int weft__data_place(weft_runtime *rt, const weft_access *a, size_t n) {
  uint64_t bytes[64] = {0};
  pthread_mutex_lock(&weft__data_reg.lock);
  for (size_t k = 0; k < n; k++) {
    weft_data *h = a[k].ptr ? weft__data_holding(rt, a[k].ptr) : NULL;
    if (!h)
      continue;
    pthread_mutex_lock(&h->lock);
    for (int dev = 0; dev < h->ndev && dev < 64; dev++)
      bytes[dev] += h->inst[dev].valid ? h->bytes : 0;
    pthread_mutex_unlock(&h->lock);
  }
  pthread_mutex_unlock(&weft__data_reg.lock);
  int best = -1;
  for (int dev = 0; dev < 64; dev++)
    if (bytes[dev] && (best < 0 || bytes[dev] > bytes[best]))
      best = dev;
  return best;
}

int weft__data_queue_fill(weft_runtime *rt, int dev, const void *p,
                          unsigned mode) {
  int start = 0;
  pthread_mutex_lock(&weft__data_reg.lock);
  weft_data *d = weft__data_holding(rt, p);
  if (d && dev < d->ndev) {
    size_t limit = weft__data_limit(rt);
    room *r = &d->use->dev[dev];
    instance *in = &d->inst[dev];
    pthread_mutex_lock(&d->lock);
    /* A read, from the host's copy alone, which no writer has got since
     * it was valid and none spawned before this task is yet to get; never
     * at the cost of an eviction (docs/decisions/data.md, "Copies start at
     * spawn"). A host access reads the host copy. */
    int go = (mode & WEFT_READ) && !(mode & WEFT_ACCESS_HOST) &&
             d->host_valid && d->writes >= d->writers && !in->valid &&
             in->busy == IDLE && !in->prefetching && !weft__data_evicting(d) &&
             (in->ptr || !limit || r->held + d->bytes <= limit);
    if (go)
      in->prefetching = 1;
    if (mode & WEFT_WRITE)
      d->writers++;
    pthread_mutex_unlock(&d->lock);
    if (go) {
      in->fill_next = NULL;
      if (r->fill_tail)
        r->fill_tail->inst[dev].fill_next = d;
      else
        r->fill_head = d;
      r->fill_tail = d;
      /* Up to WEFT__DATA_FILLERS, one more while more wait than work. */
      r->queued++;
      start = r->fillers < WEFT__DATA_FILLERS && r->queued > (size_t)r->fillers;
      r->fillers += start;
    }
  }
  pthread_mutex_unlock(&weft__data_reg.lock);
  return start;
}

weft_data *weft__data_next_fill(weft_runtime *rt, int dev, weft_data *done) {
  pthread_mutex_lock(&weft__data_reg.lock);
  if (done) {
    pthread_mutex_lock(&done->lock);
    done->inst[dev].prefetching = 0;
    pthread_mutex_unlock(&done->lock);
  }
  usage *u = NULL;
  for (usage *o = weft__data_reg.usages; o && !u; o = o->next)
    u = o->rt == rt ? o : NULL;
  weft_data *d = u ? u->dev[dev].fill_head : NULL;
  if (d) {
    room *r = &u->dev[dev];
    r->fill_head = d->inst[dev].fill_next;
    if (!r->fill_head)
      r->fill_tail = NULL;
    r->queued--;
  } else if (u) {
    u->dev[dev].fillers--;
    usage_forget_idle(u);
  }
  pthread_mutex_unlock(&weft__data_reg.lock);
  return d;
}

int weft__data_unqueue_fills(weft_data *d) {
  int busy = 0;
  pthread_mutex_lock(&weft__data_reg.lock);
  for (int dev = 0; dev < d->ndev; dev++) {
    room *r = &d->use->dev[dev];
    weft_data *prev = NULL, *o = r->fill_head;
    while (o && o != d) {
      prev = o;
      o = o->inst[dev].fill_next;
    }
    pthread_mutex_lock(&d->lock);
    if (o) { /* queued: out of the queue, asked for no more */
      if (prev)
        prev->inst[dev].fill_next = d->inst[dev].fill_next;
      else
        r->fill_head = d->inst[dev].fill_next;
      if (r->fill_tail == d)
        r->fill_tail = prev;
      r->queued--;
      d->inst[dev].prefetching = 0;
    }
    busy |= d->inst[dev].prefetching; /* else a filler works on it now */
    pthread_mutex_unlock(&d->lock);
  }
  pthread_mutex_unlock(&weft__data_reg.lock);
  return busy;
}

int weft__data_is_live(const weft_data *d) {
  pthread_mutex_lock(&weft__data_reg.lock);
  size_t i = live_at(d);
  int ok = d && i < weft__data_reg.n && weft__data_reg.live[i] == d;
  pthread_mutex_unlock(&weft__data_reg.lock);
  return ok;
}

int weft__data_not_live(const char *call) {
  return weft_error_set(WEFT_EINVAL, 0,
                        "%s: not a registered handle (never registered, or "
                        "unregistered)",
                        call);
}

int weft__data_usable(const weft_data *d, const char *call) {
  if (!weft__data_is_live(d))
    return weft__data_not_live(call);
  if (weft_runtime_current() != d->rt)
    return weft_error_set(WEFT_EINVAL, 0,
                          "%s: the handle is another runtime's than the "
                          "calling thread's",
                          call);
  return 0;
}

void weft__data_live(const weft_runtime *rt, weft__data_left *out) {
  *out = (weft__data_left){0};
  pthread_mutex_lock(&weft__data_reg.lock);
  for (size_t i = 0; i < weft__data_reg.n; i++) {
    weft_data *d = weft__data_reg.live[i];
    if (d->rt != rt)
      continue;
    if (out->handles++ == 0) {
      out->host = d->host;
      out->bytes = d->bytes;
    }
    out->blocks += d->block;
    pthread_mutex_lock(&d->lock);
    for (int dev = 0; dev < d->ndev; dev++) {
      out->allocs += d->inst[dev].ptr != NULL;
      out->events += d->inst[dev].ready != NULL;
    }
    pthread_mutex_unlock(&d->lock);
  }
  pthread_mutex_unlock(&weft__data_reg.lock);
}

int weft__data_enter(weft_data *d) {
  weft_runtime *rt = d->rt;
  uintptr_t hi = (uintptr_t)d->host + d->bytes;
  pthread_mutex_lock(&weft__data_reg.lock);
  /* rt's regions never overlap one another: the one holding d's first
   * byte, else one starting inside d's range, is the overlap (a search,
   * not a scan: a region registered as thousands of blocks stays quick). */
  const weft_data *o = weft__data_holding(rt, d->host);
  size_t i = host_at(rt, d->host);
  if (!o && i < weft__data_reg.n && weft__data_reg.by_host[i]->rt == rt &&
      (uintptr_t)weft__data_reg.by_host[i]->host < hi)
    o = weft__data_reg.by_host[i];
  if (o) {
    pthread_mutex_unlock(&weft__data_reg.lock);
    return weft_error_set(WEFT_EINVAL, 0,
                          "weft_data_register: %zu bytes at %p overlap "
                          "the registered %zu bytes at %p",
                          d->bytes, (void *)d->host, o->bytes, (void *)o->host);
  }
  d->use = usage_of(rt, d->ndev);
  if (d->use)
    d->use->handles++;
  void **nv = weft__data_reg.live;
  weft_data **nh = weft__data_reg.by_host;
  size_t nc = weft__data_reg.cap;
  if (d->use && weft__data_reg.n == weft__data_reg.cap) {
    nc = weft__data_reg.cap ? 2 * weft__data_reg.cap : 16;
    nv = realloc(weft__data_reg.live, nc * sizeof *nv);
    if (nv)
      weft__data_reg.live = nv;
    nh = nv ? realloc(weft__data_reg.by_host, nc * sizeof *nh) : NULL;
    if (nh)
      weft__data_reg.by_host = nh;
  }
  if (!d->use || !nv || !nh) {
    if (d->use)
      usage_drop(d->use);
    pthread_mutex_unlock(&weft__data_reg.lock);
    return weft_error_set(WEFT_ENOMEM, 0, "weft_data_register: no memory");
  }
  weft__data_reg.cap = nc;
  size_t at = live_at(d), ah = host_at(rt, d->host);
  memmove(&weft__data_reg.live[at + 1], &weft__data_reg.live[at],
          (weft__data_reg.n - at) * sizeof *weft__data_reg.live);
  weft__data_reg.live[at] = d;
  memmove(&weft__data_reg.by_host[ah + 1], &weft__data_reg.by_host[ah],
          (weft__data_reg.n - ah) * sizeof *weft__data_reg.by_host);
  weft__data_reg.by_host[ah] = d;
  weft__data_reg.n++;
  pthread_mutex_unlock(&weft__data_reg.lock);
  return 0;
}

weft_access weft_data_access(const weft_data *d, unsigned mode) {
  weft_access a = {NULL, 0, mode};
  if (!d)
    return a;
  /* Checked, not read blindly: an unregistered handle is freed memory. */
  pthread_mutex_lock(&weft__data_reg.lock);
  size_t i = live_at(d);
  if (i < weft__data_reg.n && weft__data_reg.live[i] == d) {
    a.ptr = d->host;
    a.bytes = d->bytes;
  }
  pthread_mutex_unlock(&weft__data_reg.lock);
  return a;
}

/* Takes d's guard down, counting the CPU access its fault reported. */
static void unguard(weft_data *d) {
  if (d->guard >= 0 && weft__guard_off(d->guard))
    weft__data_check_cpu_access(d->rt, d->host, d->bytes, d->guard_dev);
  d->guard = -1;
}

void weft__data_guard(weft_data *d) {
  if (d->check_fd < 0)
    return;
  int dev = -1;
  for (int i = 0; i < d->ndev && dev < 0; i++)
    if (d->inst[i].valid)
      dev = i;
  /* 0: open; 1: read-only (the host's copy is valid, a device's too);
   * 2: no access (a device holds the only valid copy). */
  int want = dev < 0 || d->host_filling || weft__data_evicting(d) ? 0
             : d->host_valid                                      ? 1
                                                                  : 2;
  /* Reads still, while a fill may read the host: a load then would fault
   * on weft's own (fewer findings, never a false one). */
  for (int i = 0; i < d->ndev && want == 2; i++) {
    instance *in = &d->inst[i];
    if (in->from_host && in->ready && !weft__data_event_done(in->ready))
      want = 1;
    else
      in->from_host = 0;
  }
  int have = d->guard < 0 ? 0 : d->guard_reads ? 1 : 2;
  if (want == have && (want == 0 || d->guard_dev == dev))
    return;
  unguard(d);
  if (want) {
    if (d->guard_prot == -2)
      d->guard_prot = weft__guard_prot(d->host, d->bytes);
    d->guard = weft__guard_on(d->host, d->bytes, d->guard_prot, dev,
                              d->check_fd, want == 1);
    d->guard_dev = dev;
    d->guard_reads = want == 1;
  }
}

void weft__data_forget(weft_data *d) {
  unguard(d);
  pthread_mutex_lock(&weft__data_reg.lock);
  size_t at = live_at(d);
  if (at < weft__data_reg.n && weft__data_reg.live[at] == d) {
    memmove(&weft__data_reg.live[at], &weft__data_reg.live[at + 1],
            (weft__data_reg.n - at - 1) * sizeof *weft__data_reg.live);
    weft__data_reg.n--;
    size_t ah = host_at(d->rt, d->host);
    memmove(&weft__data_reg.by_host[ah], &weft__data_reg.by_host[ah + 1],
            (weft__data_reg.n - ah) * sizeof *weft__data_reg.by_host);
  }
  usage_drop(d->use);
  pthread_mutex_unlock(&weft__data_reg.lock);
  for (int dev = 0; dev < d->ndev; dev++)
    free(d->inst[dev].users);
  free(d->ahead);
  free(d->own);
  pthread_mutex_destroy(&d->lock);
  free(d);
}

/* Takes d's lock once *busy (a fill or an eviction in flight, set under
 * it) is clear, yielding meanwhile: the filler drops the lock while it
 * copies. */
void weft__data_lock_unless_busy(weft_data *d, const int *busy) {
  pthread_mutex_lock(&d->lock);
  while (*busy) {
    pthread_mutex_unlock(&d->lock);
    weft_yield();
    pthread_mutex_lock(&d->lock);
  }
}

/* Lock held: whether an instance of d is being evicted. */
int weft__data_evicting(const weft_data *d) {
  for (int i = 0; i < d->ndev; i++)
    if (d->inst[i].busy == EVICTING)
      return 1;
  return 0;
}

/* Takes d's lock once no instance of d is being evicted (one may be the
 * only valid copy, on its way to the host). */
void weft__data_lock_unless_evicting(weft_data *d) {
  pthread_mutex_lock(&d->lock);
  while (weft__data_evicting(d)) {
    pthread_mutex_unlock(&d->lock);
    weft_yield();
    pthread_mutex_lock(&d->lock);
  }
}

/* A valid instance other than dev's, not being evicted, to fill from, or
 * -1 for the host. Lock held. */
int weft__data_source_of(const weft_data *d, int dev) {
  for (int i = 0; i < d->ndev; i++)
    if (i != dev && d->inst[i].valid && d->inst[i].busy != EVICTING)
      return i;
  return -1;
}

/* Makes the caller's stream wait for in's last fill, if any. */
int weft__data_after_fill(const instance *in, int recorded) {
  return recorded ? weft_event_wait(in->ready) : 0;
}

/* Adds t to in's users (for a write, in place of them), and stamps the
 * use. Lock held. A full list drops its completed users before it grows:
 * without a limit nothing else would (eviction does), and a list of every
 * reader since the last write grew without bound (a review's 100 000
 * readers, 100 096 entries). Grown only past half full, so each drop's
 * walk is paid for by the adds before it. */
int weft__data_add_user(weft_runtime *rt, instance *in, weft_task *t,
                        int write) {
  in->last_use = atomic_fetch_add(&use_clock, 1) + 1;
  if (write)
    in->nusers = 0;
  if (in->nusers && in->users[in->nusers - 1] == t)
    return 0;
  if (in->nusers == in->capusers) {
    if (in->capusers >= 16)
      weft__data_users_returned(rt, in);
    if (in->capusers < 16 || in->nusers > in->capusers / 2) {
      size_t nc = in->capusers ? 2 * in->capusers : 4;
      weft_task **nu = realloc(in->users, nc * sizeof *nu);
      if (!nu)
        return weft_error_set(WEFT_ENOMEM, 0, "weft_data_get: no memory");
      in->users = nu;
      in->capusers = nc;
    }
  }
  in->users[in->nusers++] = t;
  return 0;
}

/* Lock held: 1 if no user of in runs (its GPU work may be queued), after
 * dropping the completed ones. */
int weft__data_users_returned(weft_runtime *rt, instance *in) {
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

int weft__data_follow_users(weft_data *d, instance *in) {
  weft_task *self = weft_task_self();
  if (weft__caller_capturing()) /* a capture's steps: the graph orders them */
    return 0;
  pthread_mutex_lock(&d->lock);
  weft_task **t = malloc((in->nusers + 1) * sizeof *t);
  size_t n = 0;
  if (t && in->gone)
    t[n++] = in->gone;
  for (size_t i = 0; t && i < in->nusers; i++)
    if (in->users[i] != self && weft__task_progress(d->rt, in->users[i]) != 0)
      t[n++] = in->users[i];
  pthread_mutex_unlock(&d->lock);
  if (!t)
    return weft_error_set(WEFT_ENOMEM, 0, "weft_data: no memory");
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < n; i++)
    rc = weft_task_after(t[i]);
  free(t);
  return rc;
}

int weft_data_stats_get(const weft_data *d, weft_data_stats *out) {
  if (!out)
    return weft_error_set(WEFT_EINVAL, 0, "weft_data_stats_get: out is NULL");
  if (!weft__data_is_live(d))
    return weft__data_not_live("weft_data_stats_get");
  weft_data *m = (weft_data *)d;
  pthread_mutex_lock(&m->lock);
  *out = d->st;
  pthread_mutex_unlock(&m->lock);
  return 0;
}
