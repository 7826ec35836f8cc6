/* weft check: vector clocks over streams, tracked allocations and their
 * recent accesses, findings (check.h). One lock guards it all: checking
 * is a debugging mode, and a consistent picture matters more than speed. */
#include "checker.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error_internal.h"
#include "task_object.h"
#include "trace.h"

/* Ticks per stream id; c[i] beyond n is 0. */
struct weft__vc {
  uint32_t *c;
  uint32_t n;
};

enum { MAX_ACCESSES = 64, WHO = 48 };

typedef struct access {
  uintptr_t lo, hi; /* [lo, hi) */
  uint32_t stream, tick;
  int write;
  char who[WHO]; /* "task 'name' (id N)" */
  const char *call, *kernel;
} access;

typedef struct tracked {
  uintptr_t base, end;
  int pinned;
  access *acc;
  size_t nacc;
  const weft__exec *maker; /* a task whose own it is, or NULL */
} tracked;

/* A stream passes from task to task (weft's pool), and its own order
 * holds only within one holder's use of it, a lease: the next holder is
 * ordered after the earlier one's work only by what it knows (a join,
 * weft_task_after, an event, a sync), or weft check would miss every race
 * between two tasks that happened to get the same stream one after the
 * other. So each stream keeps the tick its lease began at and how far
 * into its own earlier ticks the holder is ordered. */
typedef struct stream_state {
  weft__vc vc;
  char owner[WHO];
  uint32_t lease_at;  /* its own tick when this lease began */
  uint32_t known_own; /* its own ticks before that the lease is after */
  int dev;            /* its device, for device-wide syncs */
} stream_state;

typedef struct event_vc {
  const weft__event *e;
  weft__vc vc;
} event_vc;

/* A reported pair, so that a loop racing a thousand times says it once. */
typedef struct seen_race {
  uintptr_t base;
  char a[WHO], b[WHO];
} seen_race;

struct weft__checker {
  pthread_mutex_t lock;
  const void *owner; /* the backend: findings go into its trace only */
  /* How to find the calling exec (caller.c's weft__caller_self), given at
   * creation: the checker sits beneath the caller layer it serves. */
  weft__exec *(*self)(void);
  const atomic_long *nlive; /* the runtime's live tasks (task.c) */
  stream_state *streams;    /* by stream id */
  uint32_t nstreams;
  tracked *allocs; /* sorted by base, disjoint */
  size_t nallocs, cap;
  event_vc *events;
  size_t nevents, ecap;
  seen_race *seen;
  size_t nseen, scap;
  size_t findings, races, syncs;
  /* Out of memory once: orderings may have been lost, so races are no
   * longer reported (a lost ordering would be a false one). */
  int broken;
  FILE *out; /* stderr, or what a test set (weft__check_set_output) */
  /* Per stream, the last tick seen completed (a sync that found its work
   * done): work that completed cannot overlap what is queued after, so
   * this stands in for the clock of a task freed before it was followed
   * (weft__check_after, weft__check_joined). */
  weft__vc completed;
  /* Registered data's stale host ranges (weft__check_set_stale): ctx is
   * written before fn is published. */
  _Atomic(weft__check_stale_fn) stale;
  void *stale_ctx;
};

/* ---- vector clocks ---- */

static int vc_reserve(weft__vc *v, uint32_t n) {
  if (n <= v->n)
    return 0;
  uint32_t cap = v->n ? v->n : 8;
  while (cap < n)
    cap *= 2;
  uint32_t *c = realloc(v->c, cap * sizeof *c);
  if (!c)
    return -1;
  memset(c + v->n, 0, (cap - v->n) * sizeof *c);
  v->c = c;
  v->n = cap;
  return 0;
}

static uint32_t vc_get(const weft__vc *v, uint32_t i) {
  return i < v->n ? v->c[i] : 0;
}

static void broke(weft__checker *k) {
  if (!k->broken)
    fprintf(k->out, "weft check: out of memory; races are no longer "
                    "reported\n");
  k->broken = 1;
}

/* dst = max(dst, src). */
static void vc_join(weft__checker *k, weft__vc *dst, const weft__vc *src) {
  if (!src)
    return;
  if (vc_reserve(dst, src->n) != 0) {
    broke(k);
    return;
  }
  for (uint32_t i = 0; i < src->n; i++)
    if (src->c[i] > dst->c[i])
      dst->c[i] = src->c[i];
}

static void vc_copy(weft__checker *k, weft__vc *dst, const weft__vc *src) {
  if (dst->n)
    memset(dst->c, 0, dst->n * sizeof *dst->c);
  vc_join(k, dst, src);
}

static weft__vc *exec_vc(weft__checker *k, weft__exec *x) {
  if (!x)
    return NULL;
  if (!x->check_vc && !(x->check_vc = calloc(1, sizeof(weft__vc))))
    broke(k);
  return x->check_vc;
}

/* st's clock joins src (st is the stream with id sid): what its lease
 * is ordered after, its own earlier ticks included. */
static void stream_join(weft__checker *k, stream_state *st, uint32_t sid,
                        const weft__vc *src) {
  if (!src)
    return;
  vc_join(k, &st->vc, src);
  uint32_t own = vc_get(src, sid);
  if (own > st->known_own)
    st->known_own = own;
}

static stream_state *stream_of(weft__checker *k, const weft__stream *s) {
  if (s->id >= k->nstreams) {
    uint32_t n = k->nstreams ? k->nstreams : 16;
    while (n <= s->id)
      n *= 2;
    stream_state *v = realloc(k->streams, n * sizeof *v);
    if (!v) {
      broke(k);
      return NULL;
    }
    memset(v + k->nstreams, 0, (n - k->nstreams) * sizeof *v);
    k->streams = v;
    k->nstreams = n;
  }
  k->streams[s->id].dev = s->hdr.dev;
  return &k->streams[s->id];
}

static event_vc *event_of(weft__checker *k, const weft__event *e, int make) {
  for (size_t i = 0; i < k->nevents; i++)
    if (k->events[i].e == e)
      return &k->events[i];
  if (!make)
    return NULL;
  if (k->nevents == k->ecap) {
    size_t cap = k->ecap ? 2 * k->ecap : 32;
    event_vc *v = realloc(k->events, cap * sizeof *v);
    if (!v) {
      broke(k);
      return NULL;
    }
    k->events = v;
    k->ecap = cap;
  }
  event_vc *ev = &k->events[k->nevents++];
  *ev = (event_vc){e, {NULL, 0}};
  return ev;
}

/* ---- naming ---- */

static void who_of(const weft__exec *x, char *out, size_t len) {
  if (!x) {
    snprintf(out, len, "a plain thread");
  } else if (x->is_task) {
    const weft_task *t =
        (const weft_task *)((const char *)x - offsetof(weft_task, x));
    snprintf(out, len, "task '%s' (id %" PRIu64 ")", t->name, t->id);
  } else {
    snprintf(out, len, "a plain thread");
  }
}

/* Counts a finding and puts it into the trace. Lock held. */
static void counted(weft__checker *k, const char *kind, uint64_t ns,
                    const char *msg) {
  k->findings++;
  if (weft__trace_on_for(k->owner)) {
    uint64_t now = weft__clock_ns();
    weft__trace_rec r = {.start = ns && ns < now ? now - ns : now,
                         .end = now,
                         .task = weft__trace_task,
                         .name = weft__trace_intern(kind),
                         .detail = weft__trace_intern(msg),
                         .lane = weft__trace_thread_lane(),
                         .kind = WEFT__TR_CHECK};
    weft__trace_emit(&r);
  }
}

/* Prints a finding (flushed: guarded pages write theirs to the same file
 * unbuffered, weft__check_fd), counts it and traces it. Lock held. */
static void finding(weft__checker *k, const char *kind, uint64_t ns,
                    const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(k->out, "weft check: %s: %s\n", kind, msg);
  fflush(k->out);
  counted(k, kind, ns, msg);
}

/* ---- the checker ---- */

weft__checker *weft__check_new(const void *owner, weft__exec *(*self)(void),
                               const atomic_long *nlive) {
  weft__checker *k = calloc(1, sizeof *k);
  if (!k || pthread_mutex_init(&k->lock, NULL) != 0) {
    free(k);
    weft__err(WEFT_ENOMEM, "weft_init: no memory for weft check");
    return NULL;
  }
  k->out = stderr;
  k->owner = owner;
  k->self = self;
  k->nlive = nlive;
  return k;
}

void weft__check_free(weft__checker *k) {
  if (!k)
    return;
  if (k->findings)
    fprintf(k->out,
            "weft check: %zu finding%s (%zu race%s, %zu implicit "
            "synchronisation%s)\n",
            k->findings, k->findings == 1 ? "" : "s", k->races,
            k->races == 1 ? "" : "s", k->syncs, k->syncs == 1 ? "" : "s");
  for (uint32_t i = 0; i < k->nstreams; i++)
    free(k->streams[i].vc.c);
  for (size_t i = 0; i < k->nallocs; i++)
    free(k->allocs[i].acc);
  for (size_t i = 0; i < k->nevents; i++)
    free(k->events[i].vc.c);
  free(k->completed.c);
  free(k->streams);
  free(k->allocs);
  free(k->events);
  free(k->seen);
  pthread_mutex_destroy(&k->lock);
  free(k);
}

void weft__check_set_output(weft__checker *k, FILE *out) {
  pthread_mutex_lock(&k->lock);
  k->out = out ? out : stderr;
  pthread_mutex_unlock(&k->lock);
}

size_t weft__check_findings(const weft__checker *k) {
  return k ? k->findings : 0;
}

int weft__check_fd(weft__checker *k) {
  pthread_mutex_lock(&k->lock);
  int fd = fileno(k->out);
  pthread_mutex_unlock(&k->lock);
  return fd;
}

void weft__check_printed(weft__checker *k, const char *kind, const char *msg) {
  pthread_mutex_lock(&k->lock);
  counted(k, kind, 0, msg);
  pthread_mutex_unlock(&k->lock);
}

void weft__check_lease(weft__checker *k, weft__stream *s) {
  pthread_mutex_lock(&k->lock);
  stream_state *st = stream_of(k, s);
  if (st) {
    /* What the stream knew through its earlier holders is theirs, not
     * this one's; its own ticks go on counting. */
    uint32_t own = vc_get(&st->vc, s->id);
    if (st->vc.n)
      memset(st->vc.c, 0, st->vc.n * sizeof *st->vc.c);
    if (vc_reserve(&st->vc, s->id + 1) != 0)
      broke(k);
    else
      st->vc.c[s->id] = own;
    st->lease_at = own;
    st->known_own = 0;
  }
  pthread_mutex_unlock(&k->lock);
}

void weft__check_issue(weft__checker *k, weft__exec *x, weft__stream *s) {
  pthread_mutex_lock(&k->lock);
  stream_state *st = stream_of(k, s);
  if (st) {
    stream_join(k, st, s->id, exec_vc(k, x));
    who_of(x, st->owner, sizeof st->owner);
  }
  pthread_mutex_unlock(&k->lock);
}

/* The tracked allocation holding p, or NULL. Lock held. */
static tracked *tracked_of(weft__checker *k, uintptr_t p) {
  size_t lo = 0, hi = k->nallocs;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (k->allocs[mid].base <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0)
    return NULL;
  tracked *t = &k->allocs[lo - 1];
  return p < t->end ? t : NULL;
}

static int seen_before(weft__checker *k, uintptr_t base, const char *a,
                       const char *b) {
  for (size_t i = 0; i < k->nseen; i++)
    if (k->seen[i].base == base &&
        ((!strcmp(k->seen[i].a, a) && !strcmp(k->seen[i].b, b)) ||
         (!strcmp(k->seen[i].a, b) && !strcmp(k->seen[i].b, a))))
      return 1;
  if (k->nseen == k->scap) {
    size_t cap = k->scap ? 2 * k->scap : 16;
    seen_race *v = realloc(k->seen, cap * sizeof *v);
    if (!v)
      return 0;
    k->seen = v;
    k->scap = cap;
  }
  seen_race *r = &k->seen[k->nseen++];
  r->base = base;
  snprintf(r->a, sizeof r->a, "%s", a);
  snprintf(r->b, sizeof r->b, "%s", b);
  return 0;
}

static const char *verb(int write) { return write ? "writes" : "reads"; }

/* Checks access a (on stream st, with its clock and lease) against t's
 * history, then records it, dropping what it supersedes. Lock held. */
static void check_access(weft__checker *k, tracked *t, const access *a,
                         const stream_state *st) {
  size_t keep = 0;
  for (size_t i = 0; i < t->nacc; i++) {
    access *b = &t->acc[i];
    /* On a's own stream: ordered within the lease, and before it as far
     * as the lease is known to follow; on others, by the clock. */
    int before = b->stream == a->stream
                     ? b->tick > st->lease_at || b->tick <= st->known_own
                     : vc_get(&st->vc, b->stream) >= b->tick;
    int overlap = b->lo < a->hi && a->lo < b->hi;
    if (overlap && (a->write || b->write) && !before && !k->broken &&
        !seen_before(k, t->base, a->who, b->who)) {
      k->races++;
      finding(k, "race", 0,
              "%s %s%s%s %s bytes %" PRIuPTR "..%" PRIuPTR
              " of %s memory at %p (%" PRIuPTR
              " bytes), while %s %s%s%s %s bytes %" PRIuPTR "..%" PRIuPTR
              " with nothing ordering the two (streams %" PRIu32 " and %" PRIu32
              "): weft_sync, weft_task_after, an event "
              "waited on, or a join would",
              a->who, a->call, a->kernel ? " " : "", a->kernel ? a->kernel : "",
              verb(a->write), a->lo - t->base, a->hi - t->base,
              t->pinned ? "pinned" : "device", (void *)t->base,
              t->end - t->base, b->who, b->call, b->kernel ? " " : "",
              b->kernel ? b->kernel : "", verb(b->write), b->lo - t->base,
              b->hi - t->base, a->stream, b->stream);
    }
    /* Ordered before a, inside a's range, and no stronger: whatever would
     * race with it races with a too. */
    int superseded =
        before && a->lo <= b->lo && b->hi <= a->hi && (a->write || !b->write);
    if (!superseded)
      t->acc[keep++] = *b;
  }
  t->nacc = keep;
  if (t->nacc == MAX_ACCESSES) { /* the oldest goes */
    memmove(t->acc, t->acc + 1, (MAX_ACCESSES - 1) * sizeof *t->acc);
    t->nacc--;
  }
  if (!t->acc && !(t->acc = malloc(MAX_ACCESSES * sizeof *t->acc))) {
    broke(k);
    return;
  }
  t->acc[t->nacc++] = *a;
}

/* Whether x's declarations cover [lo, hi) with access good enough for a
 * write (or a read). */
static int declared(const weft__exec *x, uintptr_t lo, uintptr_t hi,
                    int write) {
  uintptr_t p = lo;
  while (p < hi) {
    uintptr_t next = p;
    for (uint32_t i = 0; i < x->ndecl; i++) {
      const weft_access *d = &x->decl[i];
      uintptr_t dlo = (uintptr_t)d->ptr, dhi = dlo + d->bytes;
      unsigned need = write ? WEFT_WRITE : WEFT_READ | WEFT_WRITE;
      if ((d->mode & need) && dlo <= p && p < dhi && dhi > next)
        next = dhi;
    }
    if (next == p)
      return 0;
    p = next;
  }
  return 1;
}

/* A task with declarations (weft/dataflow.h) touching tracked memory
 * beyond them: the ordering weft made from them does not cover it. Lock
 * held. */
static void check_declared(weft__checker *k, const weft__exec *x,
                           const tracked *t, const access *a) {
  /* Registered data's own copies (a fill, a write-back) are weft's, made
   * for what the task declared of the handle, not the task's accesses. */
  if (!x || !x->ndecl || x->data_own_copy || t->maker == x ||
      declared(x, a->lo, a->hi, a->write))
    return;
  finding(k, "undeclared", 0,
          "%s %s%s%s %s bytes %" PRIuPTR "..%" PRIuPTR " of %s memory at %p "
          "(%" PRIuPTR " bytes), which its declared accesses do not cover%s; "
          "declare it (weft_task_opts.accesses), or weft orders nothing for "
          "it",
          a->who, a->call, a->kernel ? " " : "", a->kernel ? a->kernel : "",
          verb(a->write), a->lo - t->base, a->hi - t->base,
          t->pinned ? "pinned" : "device", (void *)t->base, t->end - t->base,
          a->write ? " for writing" : "");
}

void weft__check_data_get(weft__checker *k, const weft__exec *x, const void *p,
                          size_t bytes, unsigned mode) {
  uintptr_t lo = (uintptr_t)p;
  int write = (mode & WEFT_WRITE) != 0;
  if (!x || !x->is_task || x->decl_lost || declared(x, lo, lo + bytes, write))
    return;
  char who[WHO];
  who_of(x, who, sizeof who);
  pthread_mutex_lock(&k->lock);
  if (!seen_before(k, lo, who, "weft_data_get")) /* once a task and handle */
    finding(k, "undeclared", 0,
            "%s weft_data_get of the %zu bytes of registered data at %p for "
            "%s, which its declared accesses do not cover; declare the "
            "handle (weft_data_access), or data flow orders nothing for it",
            who, bytes, p, write ? "writing" : "reading");
  pthread_mutex_unlock(&k->lock);
}

/* Lock held. */
static void op_locked(weft__checker *k, weft__stream *s, stream_state *st,
                      const char *call, const char *kernel,
                      const weft__check_span *spans, size_t n) {
  if (vc_reserve(&st->vc, s->id + 1) != 0) {
    broke(k);
    return;
  }
  uint32_t tick = ++st->vc.c[s->id];
  for (size_t i = 0; i < n; i++) {
    uintptr_t p = (uintptr_t)spans[i].p;
    tracked *t = tracked_of(k, p);
    if (!t)
      continue;
    /* A kernel's pointer (n 0) stands for the element it points at: how
     * far the kernel goes from there is its secret, and taking the rest of
     * the allocation made every chunked pipeline (weft_map_chunks, the
     * demo) a race. Two tasks' kernels given one buffer meet at its start,
     * and a copy or memset covering that start meets either. */
    uintptr_t hi = !spans[i].n                ? p + 1
                   : spans[i].n <= t->end - p ? p + spans[i].n
                                              : t->end;
    access a = {.lo = p,
                .hi = hi,
                .stream = s->id,
                .tick = tick,
                .write = spans[i].write,
                .call = call,
                .kernel = kernel};
    snprintf(a.who, sizeof a.who, "%s",
             st->owner[0] ? st->owner : "a plain thread");
    check_declared(k, k->self(), t, &a);
    check_access(k, t, &a, st);
  }
}

void weft__check_set_stale(weft__checker *k, weft__check_stale_fn fn,
                           void *ctx) {
  k->stale_ctx = ctx;
  atomic_store(&k->stale, fn);
}

/* Registered host memory touched through its host address: a read whose
 * valid copy is on a device reads what a task's writes left behind; a
 * write goes behind weft's back (a sync or eviction copies over it, a
 * device copy stays as it was). Asked before the lock (the answer takes
 * registered data's locks); once a handle, caller, call, direction and
 * place of the valid copy. */
static void check_stale(weft__checker *k, const char *call, const char *kernel,
                        const weft__check_span *spans, size_t n) {
  weft__check_stale_fn fn = atomic_load(&k->stale);
  for (size_t i = 0; fn && i < n; i++) {
    const void *base;
    size_t bytes;
    int dev, w = spans[i].write;
    if (!fn(k->stale_ctx, spans[i].p, spans[i].n ? spans[i].n : 1, w, &base,
            &bytes, &dev))
      continue;
    char who[WHO], where[48];
    who_of(k->self(), who, sizeof who);
    if (dev >= 0)
      snprintf(where, sizeof where, "device %d holds a valid copy", dev);
    else
      snprintf(where, sizeof where, "its host copy is the valid one");
    char key[64];
    snprintf(key, sizeof key, "%s %s %d", call, verb(w), dev);
    pthread_mutex_lock(&k->lock);
    if (!seen_before(k, (uintptr_t)base, who, key)) {
      if (w)
        finding(k, "stale", 0,
                "%s %s%s%s writes registered data at %p (%zu bytes) through "
                "its host memory, which is weft's until weft_data_unregister "
                "(%s, which the write leaves stale, and a later sync copies "
                "over it); write it in a task through weft_data_get, or "
                "unregister first",
                who, call, kernel ? " " : "", kernel ? kernel : "", base, bytes,
                where);
      else
        finding(k, "stale", 0,
                "%s %s%s%s reads registered data at %p (%zu bytes) through "
                "its host memory, whose copy there is stale: the valid copy "
                "is on device %d; call weft_data_sync first, or read it in a "
                "task through weft_data_get",
                who, call, kernel ? " " : "", kernel ? kernel : "", base, bytes,
                dev);
    }
    pthread_mutex_unlock(&k->lock);
  }
}

void weft__check_host(weft__checker *k, const char *call,
                      const weft__check_span *spans, size_t n) {
  check_stale(k, call, NULL, spans, n);
}

void weft__check_op(weft__checker *k, weft__stream *s, const char *call,
                    const char *kernel, const weft__check_span *spans,
                    size_t n) {
  check_stale(k, call, kernel, spans, n);
  pthread_mutex_lock(&k->lock);
  stream_state *st = stream_of(k, s);
  if (st)
    op_locked(k, s, st, call, kernel, spans, n);
  pthread_mutex_unlock(&k->lock);
}

void weft__check_replay(weft__checker *k, weft__stream *s,
                        const weft__check_span *spans, size_t n,
                        weft__vc **gvc) {
  pthread_mutex_lock(&k->lock);
  stream_state *st = stream_of(k, s);
  if (!*gvc && !(*gvc = calloc(1, sizeof **gvc)))
    broke(k);
  if (st) {
    if (*gvc) /* after the graph's previous replay */
      stream_join(k, st, s->id, *gvc);
    op_locked(k, s, st, "weft_graph_launch", NULL, spans, n);
    if (*gvc)
      vc_copy(k, *gvc, &st->vc);
  }
  pthread_mutex_unlock(&k->lock);
}

void weft__check_vc_free(weft__vc *v) {
  if (v) {
    free(v->c);
    free(v);
  }
}

void weft__check_record(weft__checker *k, weft__event *e, weft__stream *s) {
  pthread_mutex_lock(&k->lock);
  stream_state *st = stream_of(k, s);
  event_vc *ev = event_of(k, e, 1);
  if (st && ev)
    vc_copy(k, &ev->vc, &st->vc);
  pthread_mutex_unlock(&k->lock);
}

void weft__check_wait(weft__checker *k, weft__stream *s, weft__event *e) {
  pthread_mutex_lock(&k->lock);
  stream_state *st = stream_of(k, s);
  event_vc *ev = event_of(k, e, 0);
  if (st && ev)
    stream_join(k, st, s->id, &ev->vc);
  pthread_mutex_unlock(&k->lock);
}

void weft__check_synced(weft__checker *k, weft__exec *x, weft__stream *s) {
  pthread_mutex_lock(&k->lock);
  stream_state *st = stream_of(k, s);
  weft__vc *v = exec_vc(k, x);
  if (st && v)
    vc_join(k, v, &st->vc);
  /* The stream's work has completed, and with it all it waited for. */
  if (st)
    vc_join(k, &k->completed, &st->vc);
  pthread_mutex_unlock(&k->lock);
}

void weft__check_device_synced(weft__checker *k, weft__exec *x, int dev) {
  pthread_mutex_lock(&k->lock);
  weft__vc *v = exec_vc(k, x);
  if (v && vc_reserve(v, k->nstreams) == 0 &&
      vc_reserve(&k->completed, k->nstreams) == 0) {
    for (uint32_t i = 0; i < k->nstreams; i++) {
      if (k->streams[i].dev != dev)
        continue;
      uint32_t t = vc_get(&k->streams[i].vc, i);
      if (t > v->c[i])
        v->c[i] = t;
      if (t > k->completed.c[i])
        k->completed.c[i] = t;
    }
  } else if (v) {
    broke(k);
  }
  pthread_mutex_unlock(&k->lock);
}

void weft__check_event_synced(weft__checker *k, weft__exec *x, weft__event *e) {
  pthread_mutex_lock(&k->lock);
  event_vc *ev = event_of(k, e, 0);
  weft__vc *v = exec_vc(k, x);
  if (ev && v)
    vc_join(k, v, &ev->vc);
  pthread_mutex_unlock(&k->lock);
}

void weft__check_thread_start(weft__checker *k, weft__exec *x) {
  pthread_mutex_lock(&k->lock);
  weft__vc *v = exec_vc(k, x);
  if (v)
    vc_join(k, v, &k->completed);
  pthread_mutex_unlock(&k->lock);
}

void weft__check_spawn(weft__checker *k, weft__exec *parent,
                       weft__exec *child) {
  pthread_mutex_lock(&k->lock);
  weft__vc *c = exec_vc(k, child);
  if (c)
    vc_copy(k, c, parent ? parent->check_vc : NULL);
  pthread_mutex_unlock(&k->lock);
}

/* What x learns from done's completion: its clock, or, once its task was
 * freed (joined by someone else) and the clock with it, what has
 * completed on every stream by now. */
static const weft__vc *completion_of(weft__checker *k, const weft__exec *done) {
  return done && done->check_vc ? done->check_vc : &k->completed;
}

void weft__check_joined(weft__checker *k, weft__exec *x, weft__exec *done) {
  pthread_mutex_lock(&k->lock);
  weft__vc *v = exec_vc(k, x);
  if (v)
    vc_join(k, v, completion_of(k, done));
  pthread_mutex_unlock(&k->lock);
}

void weft__check_after(weft__checker *k, weft__stream *s, weft__exec *done) {
  pthread_mutex_lock(&k->lock);
  stream_state *st = stream_of(k, s);
  if (st)
    stream_join(k, st, s->id, completion_of(k, done));
  pthread_mutex_unlock(&k->lock);
}

void weft__check_exec_gone(weft__checker *k, weft__exec *x) {
  (void)k;
  weft__check_vc_free(x->check_vc);
  x->check_vc = NULL;
}

void weft__check_alloc(weft__checker *k, const void *p, size_t n, int pinned) {
  uintptr_t base = (uintptr_t)p;
  pthread_mutex_lock(&k->lock);
  tracked *old = tracked_of(k, base);
  if (old && old->base == base) { /* reused before its free was seen */
    free(old->acc);
    *old = (tracked){base, base + n, pinned, NULL, 0, NULL};
    pthread_mutex_unlock(&k->lock);
    return;
  }
  if (k->nallocs == k->cap) {
    size_t cap = k->cap ? 2 * k->cap : 64;
    tracked *v = realloc(k->allocs, cap * sizeof *v);
    if (!v) {
      pthread_mutex_unlock(&k->lock);
      return; /* untracked: fewer findings, never a false one */
    }
    k->allocs = v;
    k->cap = cap;
  }
  size_t i = k->nallocs;
  while (i > 0 && k->allocs[i - 1].base > base)
    i--;
  memmove(k->allocs + i + 1, k->allocs + i,
          (k->nallocs - i) * sizeof *k->allocs);
  k->allocs[i] = (tracked){base, base + n, pinned, NULL, 0, NULL};
  k->nallocs++;
  pthread_mutex_unlock(&k->lock);
}

void weft__check_made_by(weft__checker *k, const void *p, const weft__exec *x) {
  pthread_mutex_lock(&k->lock);
  tracked *t = tracked_of(k, (uintptr_t)p);
  if (t && t->base == (uintptr_t)p)
    t->maker = x;
  pthread_mutex_unlock(&k->lock);
}

void weft__check_dealloc(weft__checker *k, const void *p) {
  pthread_mutex_lock(&k->lock);
  tracked *t = tracked_of(k, (uintptr_t)p);
  if (t && t->base == (uintptr_t)p) {
    free(t->acc);
    size_t i = (size_t)(t - k->allocs);
    memmove(k->allocs + i, k->allocs + i + 1,
            (k->nallocs - i - 1) * sizeof *k->allocs);
    k->nallocs--;
  }
  pthread_mutex_unlock(&k->lock);
}

/* Declared in backend.h, for the backends' watchers of raw calls. */
_Thread_local int weft__check_quiet;

void weft__check_cuda_call(weft__checker *k, const char *name, const char *what,
                           uint64_t ns, int default_stream) {
  weft__exec *x = k ? k->self() : NULL;
  /* CUPTI watches the whole process for the one runtime subscribed: a
   * task of another runtime (one with weft check off) is not k's. */
  if (!k || !x || !x->is_task || x->bk->check != k)
    return;
  if (!default_stream) {
    weft__check_implicit_sync(k, x, name, what, ns, 0); /* seen at its end */
    return;
  }
  char who[WHO];
  who_of(x, who, sizeof who);
  pthread_mutex_lock(&k->lock);
  finding(k, "default stream", 0, "%s from %s: %s", name, who, what);
  pthread_mutex_unlock(&k->lock);
}

int weft__check_others_alive(const weft__checker *k) {
  return atomic_load(k->nlive) > 1;
}

void weft__check_implicit_sync(weft__checker *k, weft__exec *x,
                               const char *call, const char *what, uint64_t ns,
                               int alive) {
  /* It costs overlap only while another task is alive to be stalled (one
   * finishing counts: its stream's work may still run), at the call's
   * start (the one it waited for may have ended by its return) or end.
   * The lone task that sets up its buffers, a root task before it spawns,
   * waits for nothing but its own stream; reporting it would bury the
   * findings that matter. */
  if (!alive && !weft__check_others_alive(k))
    return;
  char who[WHO];
  who_of(x, who, sizeof who);
  pthread_mutex_lock(&k->lock);
  k->syncs++;
  if (ns)
    finding(k, "implicit sync", ns,
            "%s from %s took %.1f us: %s; every stream of the device "
            "waits meanwhile, so no other task's work overlaps it",
            call, who, (double)ns / 1e3, what);
  else
    finding(k, "implicit sync", 0, "%s from %s: %s", call, who, what);
  pthread_mutex_unlock(&k->lock);
}
