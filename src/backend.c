/* The core side of the backend ops table: opening backends, handle pools,
 * argument checks and the allocation registry. Every backend call the rest
 * of weft makes goes through here. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "checker.h"
#include "error_internal.h"
#include "mutex.h"
#include "ptrmap.h"

enum {
  MAGIC_STREAM = 0x5354524du, /* "STRM" */
  MAGIC_EVENT = 0x45564e54u,  /* "EVNT" */
  MAGIC_DEAD = WEFT__MAGIC_DEAD,
};

enum { ALLOC_DEVICE = WEFT__ALLOC_DEVICE, ALLOC_PINNED = WEFT__ALLOC_PINNED };

/* ---- opening and closing ---- */

static const struct weft__backend_ops *find_ops(weft_backend_kind kind) {
  for (int i = 0; weft__backends[i]; i++)
    if (weft__backends[i]->kind == kind)
      return weft__backends[i];
  return NULL;
}

static int open_ops(const struct weft__backend_ops *ops,
                    const weft__backend_config *cfg, weft__backend **out) {
  weft__backend *b = calloc(1, ops->backend_size);
  if (!b)
    return weft__err(WEFT_ENOMEM, "weft: cannot allocate the %s backend",
                     ops->name);
  b->ops = ops;
  int rc;
  if (weft__mutex_init(&b->lock) != 0) {
    rc = weft__err(WEFT_ENOMEM, "weft: pthread_mutex_init failed");
    goto fail_lock;
  }
  b->allocs = weft__ptrmap_new();
  if (!b->allocs) {
    rc = weft__err(WEFT_ENOMEM, "weft: cannot allocate the registry");
    goto fail_map;
  }
  rc = ops->open(b, cfg);
  if (rc != 0)
    goto fail_open;
  rc = ops->device_count(b, &b->ndev);
  if (rc != 0)
    goto fail_info;
  if (b->ndev <= 0) {
    rc =
        weft__err(WEFT_ENODEV, "weft: the %s backend has no device", ops->name);
    goto fail_info;
  }
  b->info = calloc((size_t)b->ndev, sizeof *b->info);
  if (!b->info) {
    rc = weft__err(WEFT_ENOMEM, "weft: cannot allocate device info");
    goto fail_info;
  }
  for (int d = 0; d < b->ndev; d++) {
    rc = ops->device_info(b, d, &b->info[d]);
    if (rc != 0)
      goto fail_devinfo;
  }
  *out = b;
  return 0;

fail_devinfo:
  free(b->info);
fail_info:
  ops->close(b);
fail_open:
  weft__ptrmap_free(b->allocs);
fail_map:
  pthread_mutex_destroy(&b->lock);
fail_lock:
  free(b);
  return rc;
}

int weft__backend_open(weft_backend_kind kind, int use_env,
                       const weft__backend_config *cfg, weft__backend **out) {
  static const weft__backend_config defaults = {0};
  if (!out)
    return weft__err(WEFT_EINVAL, "weft: backend_open: out is NULL");
  if (!cfg)
    cfg = &defaults;
  weft__backend_config with_env = *cfg;
  if (use_env) {
    const char *env = getenv("WEFT_BACKEND");
    if (kind == WEFT_BACKEND_AUTO && env && *env &&
        weft_backend_parse(env, &kind) != 0)
      return weft__err(WEFT_EINVAL,
                       "weft: WEFT_BACKEND=%s: expected auto, host or cuda",
                       env);
    /* Read whatever the backend: a bad value must not pass unseen when
     * the automatic choice falls back to the host. It can only turn the
     * flags off: a configuration that did so wins. */
    const char *fl = getenv("WEFT_CUDA_FLAGS");
    if (fl && *fl) {
      if (strcmp(fl, "0") != 0 && strcmp(fl, "1") != 0)
        return weft__err(WEFT_EINVAL,
                         "weft: WEFT_CUDA_FLAGS=%s: expected 0 (off) or 1 "
                         "(on, the default)",
                         fl);
      if (fl[0] == '0')
        with_env.cuda_no_flags = 1;
    }
    /* The host backend reads it when it opens; refused here whatever the
     * backend, for the same reason. */
    const char *pg = getenv("WEFT_HOST_PAGEABLE");
    if (pg && *pg && strcmp(pg, "0") != 0 && strcmp(pg, "1") != 0)
      return weft__err(WEFT_EINVAL,
                       "weft: WEFT_HOST_PAGEABLE=%s: expected 0 (off, the "
                       "default) or 1 (the host backend tells pageable "
                       "memory apart)",
                       pg);
    cfg = &with_env;
  }
  if (kind == WEFT_BACKEND_AUTO) {
    const struct weft__backend_ops *cuda = find_ops(WEFT_BACKEND_CUDA);
    if (cuda && open_ops(cuda, cfg, out) == 0)
      return 0;
    kind = WEFT_BACKEND_HOST;
  }
  const struct weft__backend_ops *ops = find_ops(kind);
  if (!ops)
    return weft__err(WEFT_ENODEV,
                     "weft: the %s backend is not built into this library",
                     weft_backend_name(kind));
  return open_ops(ops, cfg, out);
}

int weft__backend_close(weft__backend *b) {
  if (!b)
    return weft__err(WEFT_EINVAL, "weft: backend_close: NULL backend");
  pthread_mutex_lock(&b->lock);
  size_t ns = b->streams.live, ne = b->events.live;
  size_t na = weft__ptrmap_count(b->allocs, ALLOC_DEVICE) +
              weft__ptrmap_count(b->allocs, ALLOC_PINNED);
  pthread_mutex_unlock(&b->lock);
  if (ns || ne || na)
    return weft__err(WEFT_EBUSY,
                     "weft: %zu streams, %zu events and %zu allocations "
                     "are still live",
                     ns, ne, na);
  b->ops->close(b);
  weft__pool_drain(&b->streams);
  weft__pool_drain(&b->events);
  weft__ptrmap_free(b->allocs);
  free(b->info);
  pthread_mutex_destroy(&b->lock);
  free(b);
  return 0;
}

void weft__backend_get_counts(weft__backend *b, weft__backend_counts *out) {
  pthread_mutex_lock(&b->lock);
  out->streams = b->streams.live;
  out->events = b->events.live;
  out->device_allocs = weft__ptrmap_count(b->allocs, ALLOC_DEVICE);
  out->pinned_allocs = weft__ptrmap_count(b->allocs, ALLOC_PINNED);
  out->device_bytes = weft__ptrmap_bytes(b->allocs, ALLOC_DEVICE);
  pthread_mutex_unlock(&b->lock);
}

static int check_obj(const weft__obj *o, uint32_t magic, const char *what,
                     const char *call) {
  if (!o)
    return weft__err(WEFT_EINVAL, "%s: %s is NULL", call, what);
  /* Read without the lock: another thread may destroy the object (under
   * it) while this call checks its handle. */
  uint32_t m = __atomic_load_n(&o->magic, __ATOMIC_ACQUIRE);
  if (m == magic)
    return 0;
  if (m == MAGIC_DEAD)
    return weft__err(WEFT_EHANDLE, "%s: %s was destroyed", call, what);
  return weft__err(WEFT_EHANDLE, "%s: %s is not a valid handle", call, what);
}

#define CHECK_STREAM(s, call)                                                  \
  do {                                                                         \
    int rc_ = check_obj((const weft__obj *)(s), MAGIC_STREAM, "stream", call); \
    if (rc_)                                                                   \
      return rc_;                                                              \
  } while (0)

#define CHECK_EVENT(e, call)                                                   \
  do {                                                                         \
    int rc_ = check_obj((const weft__obj *)(e), MAGIC_EVENT, "event", call);   \
    if (rc_)                                                                   \
      return rc_;                                                              \
  } while (0)

static int check_dev(weft__backend *b, int dev, const char *call) {
  if (!b)
    return weft__err(WEFT_EINVAL, "%s: backend is NULL", call);
  if (dev < 0 || dev >= b->ndev)
    return weft__err(WEFT_ENODEV, "%s: no device %d (the backend has %d)", call,
                     dev, b->ndev);
  return 0;
}

/* ---- streams ---- */

int weft__stream_create(weft__backend *b, int dev, int priority,
                        weft__stream **out) {
  int rc = check_dev(b, dev, "stream_create");
  if (rc)
    return rc;
  if (!out)
    return weft__err(WEFT_EINVAL, "stream_create: out is NULL");
  const weft_device_info *di = &b->info[dev];
  /* Like CUDA, out-of-range priorities are clamped, not refused. */
  if (priority < di->priority_greatest)
    priority = di->priority_greatest;
  if (priority > di->priority_least)
    priority = di->priority_least;

  pthread_mutex_lock(&b->lock);
  weft__stream *s =
      (weft__stream *)weft__pool_get(&b->streams, b->ops->stream_size);
  uint32_t id = s ? ++b->last_stream_id : 0;
  pthread_mutex_unlock(&b->lock);
  if (!s)
    return weft__err(WEFT_ENOMEM, "stream_create: out of memory");
  s->hdr.dev = dev;
  s->hdr.bk = b;
  s->priority = priority;
  s->id = id;
  rc = b->ops->stream_init(b, s);
  pthread_mutex_lock(&b->lock);
  if (rc == 0)
    s->hdr.magic = MAGIC_STREAM;
  else
    weft__pool_put(&b->streams, &s->hdr);
  pthread_mutex_unlock(&b->lock);
  if (rc == 0)
    *out = s;
  return rc;
}

int weft__stream_destroy(weft__stream **sp) {
  if (!sp)
    return weft__err(WEFT_EINVAL, "stream_destroy: NULL pointer");
  weft__stream *s = *sp;
  CHECK_STREAM(s, "stream_destroy");
  weft__backend *b = s->hdr.bk;
  /* The handle dies first, so a racing second destroy sees it dead. */
  pthread_mutex_lock(&b->lock);
  if (s->hdr.magic != MAGIC_STREAM) {
    pthread_mutex_unlock(&b->lock);
    return weft__err(WEFT_EHANDLE, "stream_destroy: stream was destroyed");
  }
  __atomic_store_n(&s->hdr.magic, 0, __ATOMIC_RELEASE); /* check_obj */
  pthread_mutex_unlock(&b->lock);
  int rc = b->ops->stream_fini(s);
  pthread_mutex_lock(&b->lock);
  weft__pool_put(&b->streams, &s->hdr);
  pthread_mutex_unlock(&b->lock);
  *sp = NULL;
  return rc;
}

/* ---- graph captures ---- */

/* Calls that wait or allocate cannot be recorded into a graph; the public
 * calls refuse them with their own words first (graph.c), this is what the
 * core's internal paths meet. */
static int refused_in_capture(const weft__stream *s, const char *call) {
  return s->capture ? weft__err(WEFT_ESTATE,
                                "%s: not allowed while the caller captures a "
                                "graph (end it with weft_graph_end first)",
                                call)
                    : 0;
}

/* Remembers a pointer recorded work uses; a full list only loses the
 * reference (the memory is then not held busy), never the capture. */
static void capture_note(weft__capture *c, const void *p) {
  if (c->nptrs == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 16;
    const void **v = realloc(c->ptrs, cap * sizeof *v);
    if (!v)
      return;
    c->ptrs = v;
    c->cap = cap;
  }
  c->ptrs[c->nptrs++] = p;
}

/* Under weft check: the spans an operation on s touches are checked now,
 * or, while s captures a graph, kept for the replays to check. */
static void check_op(weft__stream *s, const char *call, const char *kernel,
                     const weft__check_span *spans, size_t n) {
  weft__checker *k = s->hdr.bk->check;
  if (!k)
    return;
  weft__capture *c = s->capture;
  if (!c) {
    weft__check_op(k, s, call, kernel, spans, n);
    return;
  }
  if (c->nspans + n > c->cap_spans) {
    size_t cap = c->cap_spans ? 2 * c->cap_spans : 16;
    while (cap < c->nspans + n)
      cap *= 2;
    weft__check_span *v = realloc(c->spans, cap * sizeof *v);
    if (!v)
      return;
    c->spans = v;
    c->cap_spans = cap;
  }
  memcpy(c->spans + c->nspans, spans, n * sizeof *spans);
  c->nspans += n;
}

/* The result of a recorded call: a failure spoils the capture. */
static int captured(weft__stream *s, int rc) {
  if (rc && s->capture && !s->capture->failed)
    s->capture->failed = rc;
  return rc;
}

int weft__stream_sync(weft__stream *s) {
  CHECK_STREAM(s, "stream_sync");
  int rc = refused_in_capture(s, "weft_sync");
  if (rc)
    return rc;
  return s->hdr.bk->ops->stream_sync(s);
}

int weft__stream_query(weft__stream *s) {
  CHECK_STREAM(s, "stream_query");
  return s->hdr.bk->ops->stream_query(s);
}

/* The number a trace gives s's operations (trace_order.h). */
static uint32_t trace_stream_id(weft__stream *s) {
  const struct weft__backend_ops *ops = s->hdr.bk->ops;
  return ops->trace_stream_id ? ops->trace_stream_id(s) : s->id;
}

int weft__stream_wait_event(weft__stream *s, weft__event *e) {
  CHECK_STREAM(s, "weft_event_wait");
  int rc0 = refused_in_capture(s, "weft_event_wait");
  if (rc0)
    return rc0;
  CHECK_EVENT(e, "weft_event_wait");
  if (e->hdr.bk != s->hdr.bk)
    return weft__err(WEFT_EINVAL, "weft_event_wait: event and stream belong to "
                                  "different backends");
  int rc = s->hdr.bk->ops->stream_wait_event(s, e);
  if (rc == 0 && s->hdr.bk->check)
    weft__check_wait(s->hdr.bk->check, s, e);
  if (rc == 0 && weft__trace_order_on())
    weft__trace_stream_wait(&e->traced, s->hdr.bk, s->hdr.dev,
                            trace_stream_id(s));
  return rc;
}

void weft__stream_trace_takeover(weft__stream *s, uint64_t from) {
  if (weft__trace_order_on())
    weft__trace_takeover(s->hdr.bk, s->hdr.dev, trace_stream_id(s), from);
}

/* ---- events ---- */

int weft__event_create(weft__backend *b, int dev, unsigned flags,
                       weft__event **out) {
  int rc = check_dev(b, dev, "event_create");
  if (rc)
    return rc;
  if (!out)
    return weft__err(WEFT_EINVAL, "weft_event_create: out is NULL");
  if (flags & ~(unsigned)(WEFT__EVENT_TIMING | WEFT__EVENT_BLOCKING |
                          WEFT__EVENT_POLLED))
    return weft__err(WEFT_EINVAL, "weft_event_create: unknown flags 0x%x",
                     flags);
  pthread_mutex_lock(&b->lock);
  weft__event *e =
      (weft__event *)weft__pool_get(&b->events, b->ops->event_size);
  pthread_mutex_unlock(&b->lock);
  if (!e)
    return weft__err(WEFT_ENOMEM, "weft_event_create: out of memory");
  e->hdr.dev = dev;
  e->hdr.bk = b;
  e->flags = flags;
  rc = b->ops->event_init(b, e);
  pthread_mutex_lock(&b->lock);
  if (rc == 0)
    e->hdr.magic = MAGIC_EVENT;
  else
    weft__pool_put(&b->events, &e->hdr);
  pthread_mutex_unlock(&b->lock);
  if (rc == 0)
    *out = e;
  return rc;
}

/* A destroyed event's end: the backend's part, then back to the pool. */
static int event_finish(weft__backend *b, weft__event *e) {
  int rc = b->ops->event_fini(e);
  pthread_mutex_lock(&b->lock);
  weft__pool_put(&b->events, &e->hdr);
  pthread_mutex_unlock(&b->lock);
  return rc;
}

int weft__event_destroy(weft__event **ep) {
  if (!ep)
    return weft__err(WEFT_EINVAL, "weft_event_destroy: NULL pointer");
  weft__event *e = *ep;
  CHECK_EVENT(e, "weft_event_destroy");
  weft__backend *b = e->hdr.bk;
  pthread_mutex_lock(&b->lock);
  if (e->hdr.magic != MAGIC_EVENT) {
    pthread_mutex_unlock(&b->lock);
    return weft__err(WEFT_EHANDLE, "weft_event_destroy: event was destroyed");
  }
  __atomic_store_n(&e->hdr.magic, 0, __ATOMIC_RELEASE); /* check_obj */
  *ep = NULL;
  int waited = e->waiters != 0;
  e->doomed = waited; /* the last sync waiting on it finishes it */
  pthread_mutex_unlock(&b->lock);
  return waited ? 0 : event_finish(b, e);
}

int weft__event_hold(weft__event *e, const char *call) {
  CHECK_EVENT(e, call);
  weft__backend *b = e->hdr.bk;
  pthread_mutex_lock(&b->lock);
  int live = e->hdr.magic == MAGIC_EVENT;
  if (live)
    e->waiters++;
  pthread_mutex_unlock(&b->lock);
  return live ? 0 : weft__err(WEFT_EHANDLE, "%s: event was destroyed", call);
}

int weft__event_unhold(weft__event *e) {
  weft__backend *b = e->hdr.bk;
  pthread_mutex_lock(&b->lock);
  int last = --e->waiters == 0 && e->doomed;
  pthread_mutex_unlock(&b->lock);
  return last ? event_finish(b, e) : 0;
}

int weft__event_record(weft__event *e, weft__stream *s) {
  CHECK_EVENT(e, "weft_event_record");
  CHECK_STREAM(s, "weft_event_record");
  int rc0 = refused_in_capture(s, "weft_event_record");
  if (rc0)
    return rc0;
  if (e->hdr.bk != s->hdr.bk || e->hdr.dev != s->hdr.dev)
    return weft__err(WEFT_EINVAL,
                     "weft_event_record: event and stream are on different "
                     "devices or backends");
  int rc = s->hdr.bk->ops->event_record(e, s);
  if (rc == 0) /* read by other threads' waits: weft__event_recorded */
    __atomic_store_n(&e->recorded, 1, __ATOMIC_RELEASE);
  if (rc == 0 && s->hdr.bk->check)
    weft__check_record(s->hdr.bk->check, e, s);
  if (rc == 0 && weft__trace_order_on())
    weft__trace_mark_set(&e->traced, s->hdr.bk, s->hdr.dev, trace_stream_id(s));
  return rc;
}

int weft__event_recorded(weft__event *e, const char *call) {
  CHECK_EVENT(e, call);
  if (!__atomic_load_n(&e->recorded, __ATOMIC_ACQUIRE))
    return weft__err(WEFT_ESTATE,
                     "%s: the event was never recorded, so there is nothing "
                     "to wait for (to wait until another task records it, "
                     "join that task or follow it with weft_task_after)",
                     call);
  return 0;
}

int weft__event_query(weft__event *e) {
  CHECK_EVENT(e, "weft_event_query");
  return e->hdr.bk->ops->event_query(e);
}

int weft__event_sync(weft__event *e) {
  CHECK_EVENT(e, "weft_event_sync");
  return e->hdr.bk->ops->event_sync(e);
}

int weft__event_elapsed(weft__event *start, weft__event *end, float *ms) {
  CHECK_EVENT(start, "weft_event_elapsed_ms");
  CHECK_EVENT(end, "weft_event_elapsed_ms");
  if (!ms)
    return weft__err(WEFT_EINVAL, "weft_event_elapsed_ms: ms is NULL");
  if (!(start->flags & WEFT__EVENT_TIMING) ||
      !(end->flags & WEFT__EVENT_TIMING))
    return weft__err(WEFT_EINVAL,
                     "weft_event_elapsed_ms: both events need timing enabled");
  if (!__atomic_load_n(&start->recorded, __ATOMIC_ACQUIRE) ||
      !__atomic_load_n(&end->recorded, __ATOMIC_ACQUIRE))
    return weft__err(
        WEFT_ESTATE,
        "weft_event_elapsed_ms: both events must have been recorded");
  if (start->hdr.bk != end->hdr.bk)
    return weft__err(WEFT_EINVAL,
                     "weft_event_elapsed_ms: events of different backends");
  /* Two devices' clocks are not one timeline. */
  if (start->hdr.dev != end->hdr.dev)
    return weft__err(WEFT_EINVAL,
                     "weft_event_elapsed_ms: events of devices %d and %d",
                     start->hdr.dev, end->hdr.dev);
  int rc = start->hdr.bk->ops->event_elapsed(start, end, ms);
  if (rc == WEFT_EAGAIN) /* a failure like any other (weft/event.h) */
    return weft__err(WEFT_EAGAIN, "weft_event_elapsed_ms: the events' work "
                                  "has not completed yet");
  return rc;
}

/* ---- work on a stream ---- */

/* Lock held: after a free, what the registry remembers of freed device
 * memory. Pinned memory goes back to the system at once, which may hand
 * its addresses to anyone: nothing of it is kept. */
static void note_freed(weft__backend *b, const void *p, size_t n, int kind) {
  if (kind != ALLOC_DEVICE)
    weft__ptrmap_forget(b->allocs, p, n);
  weft__backend_registry_changed(b);
}

/* Lock held: registers p, or puts its entry back. */
static int registry_put(weft__backend *b, const void *p,
                        weft__alloc_info info) {
  int rc = weft__ptrmap_put(b->allocs, p, info);
  weft__backend_registry_changed(b); /* it may forget freed ranges too */
  return rc;
}

static const char *kind_name(int kind) {
  return kind == ALLOC_DEVICE ? "device" : "pinned";
}

/* Lock held: what p lies in, for a refusal (WEFT__PTR_*). A remembered
 * freed range that the backend now knows as device memory was handed out
 * again by the driver to someone else: forgotten, and p unknown. */
static int lookup(weft__backend *b, const void *p, weft__alloc_ref *r) {
  int what = weft__ptrmap_lookup(b->allocs, p, r);
  if (what == WEFT__PTR_FREED && b->ops->reused && b->ops->reused(b, p)) {
    weft__ptrmap_forget(b->allocs, r->base, r->info.size);
    weft__backend_registry_changed(b);
    return WEFT__PTR_UNKNOWN;
  }
  return what;
}

static int freed_error(const char *call, const char *what, const void *p,
                       const weft__alloc_ref *r) {
  return weft__err(WEFT_EINVAL,
                   "%s: %s %p lies in device memory freed before (the %zu "
                   "bytes at %p of device %d, weft_device_free)",
                   call, what, p, r->info.size, r->base, r->info.dev);
}

/* Lock held: the extent check of one pointer: [p, p + n) must not lie in
 * freed device memory nor run past the end of the allocation p lies in.
 * Memory weft did not allocate is the backend's to judge. */
static int extent_of(weft__backend *b, const void *p, size_t n,
                     const char *call, const char *what) {
  if (n && n - 1 > UINTPTR_MAX - (uintptr_t)p) /* may end at the top */
    return weft__err(WEFT_EINVAL,
                     "%s: %zu bytes at %s %p run past the end of memory", call,
                     n, what, p);
  weft__alloc_ref r;
  switch (lookup(b, p, &r)) {
  case WEFT__PTR_FREED:
    return freed_error(call, what, p, &r);
  case WEFT__PTR_LIVE: {
    size_t off = (size_t)((const char *)p - (const char *)r.base);
    if (n > r.info.size - off)
      return weft__err(WEFT_EINVAL,
                       "%s: %zu bytes at %s %p run past the end of its %s "
                       "allocation (%zu bytes at %p: %zu left from %s)",
                       call, n, what, p, kind_name(r.info.kind), r.info.size,
                       r.base, r.info.size - off, what);
    return 0;
  }
  default:
    return 0;
  }
}

size_t weft__device_alloc_size(weft__backend *b, const void *p) {
  weft__alloc_info info;
  pthread_mutex_lock(&b->lock);
  int found = weft__ptrmap_get(b->allocs, p, &info);
  pthread_mutex_unlock(&b->lock);
  return found && info.kind == ALLOC_DEVICE ? info.size : 0;
}

int weft__check_extent(weft__backend *b, const void *dst, const void *src,
                       size_t n, const char *call) {
  pthread_mutex_lock(&b->lock); /* one lookup of the registry for both */
  int rc = extent_of(b, dst, n, call, "dst");
  if (rc == 0 && src)
    rc = extent_of(b, src, n, call, "src");
  /* A memset writes through the device: on memory weft did not allocate
   * CUDA's refuses it (pageable memory), and the host backend's, which
   * would write anywhere, refuses it the same way. */
  if (rc == 0 && !src && b->ops->kind == WEFT_BACKEND_HOST) {
    weft__alloc_ref r;
    if (weft__ptrmap_lookup(b->allocs, dst, &r) != WEFT__PTR_LIVE)
      rc = weft__err(WEFT_EINVAL,
                     "%s: dst %p is not memory weft allocated (device or "
                     "pinned); CUDA refuses a memset of pageable memory too",
                     call, dst);
  }
  pthread_mutex_unlock(&b->lock);
  return rc;
}

int weft__copy(weft__stream *s, void *dst, const void *src, size_t n,
               weft__copy_kind kind) {
  CHECK_STREAM(s, "weft_copy");
  if (n == 0)
    return 0;
  if (!dst || !src)
    return weft__err(WEFT_EINVAL, "weft_copy: %s is NULL", dst ? "src" : "dst");
  if ((int)kind < WEFT__COPY_DEFAULT || kind > WEFT__COPY_H2H)
    return weft__err(WEFT_EINVAL, "weft_copy: unknown direction %d", (int)kind);
  int rc = weft__check_extent(s->hdr.bk, dst, src, n, "weft_copy");
  if (rc)
    return rc;
  if (s->capture) {
    capture_note(s->capture, dst);
    capture_note(s->capture, src);
  }
  rc = captured(s, s->hdr.bk->ops->copy(s, dst, src, n, kind));
  if (rc == 0)
    check_op(s, "weft_copy", NULL,
             (weft__check_span[]){{dst, n, 1}, {src, n, 0}}, 2);
  return rc;
}

int weft__memset(weft__stream *s, void *dst, int value, size_t n) {
  CHECK_STREAM(s, "weft_memset");
  if (n == 0)
    return 0;
  if (!dst)
    return weft__err(WEFT_EINVAL, "weft_memset: dst is NULL");
  int rc = weft__check_extent(s->hdr.bk, dst, NULL, n, "weft_memset");
  if (rc)
    return rc;
  if (s->capture)
    capture_note(s->capture, dst);
  rc = captured(s, s->hdr.bk->ops->memset(s, dst, value, n));
  if (rc == 0)
    check_op(s, "weft_memset", NULL, (weft__check_span[]){{dst, n, 1}}, 1);
  return rc;
}

static int check_dims(weft_dim3 d, const char *what, const char *name) {
  if (d.x == 0 || d.y == 0 || d.z == 0)
    return weft__err(WEFT_EINVAL,
                     "weft_launch %s: %s has a zero dimension (%u,%u,%u)", name,
                     what, d.x, d.y, d.z);
  return 0;
}

static int kernel_runs_on(const weft_kernel *k, const weft__backend *b) {
  return b->ops->kind == WEFT_BACKEND_CUDA ? k->cuda != NULL : k->host != NULL;
}

/* ENOTSUP for a kernel without this backend's function. On CUDA the usual
 * cause is a .cu file that was not linked: WEFT_CUDA_KERNEL_DECL's reference
 * is weak, and a weak reference does not pull an object out of a static
 * library, so the message says so. */
static int no_implementation(const char *call, const weft_kernel *k,
                             const weft__backend *b) {
  const char *name = k->name ? k->name : "(unnamed kernel)";
  if (b->ops->kind == WEFT_BACKEND_CUDA)
    return weft__err(WEFT_ENOTSUP,
                     "%s %s: the kernel has no cuda implementation (.cuda is "
                     "NULL: is its .cu file compiled and linked? A weak "
                     "WEFT_CUDA_KERNEL_DECL reference does not pull an object "
                     "out of a static library)",
                     call, name);
  return weft__err(WEFT_ENOTSUP, "%s %s: the kernel has no %s implementation",
                   call, name, b->ops->name);
}

/* 1 if every pointer-sized argument lies in a range s's checks found
 * good, and the registry has not changed since. */
static int args_seen_good(const weft__stream *s, const weft_kernel *k,
                          void **args, uint64_t gen) {
  if (s->ok_gen != gen)
    return 0;
  for (unsigned i = 0; i < k->nargs; i++) {
    if (k->arg_size[i] != sizeof(void *))
      continue;
    uintptr_t a = (uintptr_t) * (void *const *)args[i];
    int seen = a == 0;
    for (int j = 0; j < WEFT__OK_RANGES && !seen; j++)
      seen = a - s->ok_lo[j] < s->ok_hi[j] - s->ok_lo[j];
    if (!seen)
      return 0;
  }
  return 1;
}

/* Lock held: remembers [lo, hi) as good for s's launches at generation
 * gen, forgetting every range of an older one. */
static void remember_good(weft__stream *s, uint64_t gen, uintptr_t lo,
                          uintptr_t hi) {
  if (s->ok_gen != gen) {
    memset(s->ok_lo, 0, sizeof s->ok_lo);
    memset(s->ok_hi, 0, sizeof s->ok_hi);
    s->ok_gen = gen;
  }
  for (int j = 0; j < WEFT__OK_RANGES; j++)
    if (s->ok_lo[j] <= lo && hi <= s->ok_hi[j])
      return;
  unsigned j = s->ok_next++ % WEFT__OK_RANGES;
  s->ok_lo[j] = lo;
  s->ok_hi[j] = hi;
}

/* WEFT_EINVAL, reported, if a pointer-sized argument lies in device
 * memory freed before, or (with several devices) in a device allocation
 * of another device than s's (weft enables no peer access: on CUDA the
 * kernel would fault, and the host backend refuses it the same way); else
 * 0. Looked up only while some device has freed memory remembered or
 * there are several devices, and not again for a pointer into an
 * allocation (or a pointer weft knows no allocation of) among the last
 * eight the stream's launches passed while the registry is unchanged: a
 * launch pays one relaxed load, or a few compares. */
static int bad_args(weft__stream *s, const weft_kernel *k, void **args,
                    const char *name) {
  weft__backend *b = s->hdr.bk;
  if (b->ndev == 1 &&
      atomic_load_explicit(&b->nfreed, memory_order_relaxed) == 0)
    return 0;
  if (args_seen_good(s, k, args,
                     atomic_load_explicit(&b->gen, memory_order_acquire)))
    return 0;
  unsigned bad = k->nargs;
  int what = WEFT__PTR_UNKNOWN;
  weft__alloc_ref r;
  const void *p = NULL;
  uintptr_t lo[WEFT_KERNEL_MAX_ARGS], hi[WEFT_KERNEL_MAX_ARGS];
  unsigned ngood = 0;
  pthread_mutex_lock(&b->lock); /* once for all the arguments */
  for (unsigned i = 0; i < k->nargs && bad == k->nargs; i++) {
    if (k->arg_size[i] != sizeof(void *))
      continue;
    p = *(void *const *)args[i];
    what = p ? lookup(b, p, &r) : WEFT__PTR_UNKNOWN;
    if (what == WEFT__PTR_FREED ||
        (what == WEFT__PTR_LIVE && r.info.kind == WEFT__ALLOC_DEVICE &&
         r.info.dev != s->hdr.dev))
      bad = i;
    else if (what == WEFT__PTR_LIVE) {
      lo[ngood] = (uintptr_t)r.base;
      hi[ngood++] = (uintptr_t)r.base + r.info.size;
    } else if (p) {
      lo[ngood] = (uintptr_t)p;
      hi[ngood++] = (uintptr_t)p + 1;
    }
  }
  if (bad == k->nargs) {
    uint64_t gen = atomic_load_explicit(&b->gen, memory_order_relaxed);
    for (unsigned i = 0; i < ngood; i++)
      remember_good(s, gen, lo[i], hi[i]);
  }
  pthread_mutex_unlock(&b->lock);
  if (bad == k->nargs)
    return 0;
  if (what == WEFT__PTR_FREED) {
    char call[64];
    snprintf(call, sizeof call, "weft_launch %s", name);
    char arg[32];
    snprintf(arg, sizeof arg, "parameter %u", bad);
    return freed_error(call, arg, p, &r);
  }
  return weft__err(WEFT_EINVAL,
                   "weft_launch %s: parameter %u (%p) is memory of device %d "
                   "(the %zu bytes at %p), and the kernel runs on device %d "
                   "(weft enables no peer access: weft_copy it to device %d "
                   "first, or run the task there)",
                   name, bad, p, r.info.dev, r.info.size, r.base, s->hdr.dev,
                   s->hdr.dev);
}

int weft__launch(weft__stream *s, const weft_kernel *k, weft_dim3 grid,
                 weft_dim3 block, size_t shmem, void **args) {
  CHECK_STREAM(s, "weft_launch");
  if (!k)
    return weft__err(WEFT_EINVAL, "weft_launch: kernel is NULL");
  const char *name = k->name ? k->name : "(unnamed kernel)";
  weft__backend *b = s->hdr.bk;
  if (!kernel_runs_on(k, b))
    return no_implementation("weft_launch", k, b);
  if (k->nargs > WEFT_KERNEL_MAX_ARGS)
    return weft__err(WEFT_EINVAL, "weft_launch %s: %u parameters (at most %d)",
                     name, k->nargs, WEFT_KERNEL_MAX_ARGS);
  if (k->nargs > 0 && !args)
    return weft__err(WEFT_EINVAL,
                     "weft_launch %s: %u parameters but args is NULL", name,
                     k->nargs);
  /* Sizes are how the host backend copies the values at launch; without
   * them a kernel given arguments would read what it was never given.
   * Refused on both backends, so that a descriptor that works on one works
   * on the other. */
  if (k->nargs == 0 && args)
    return weft__err(
        WEFT_EINVAL,
        "weft_launch %s: arguments given, but the kernel declares no "
        "parameters: describe them with WEFT_KERNEL_ARGS(type, "
        "...), or pass NULL args to a kernel without any",
        name);
  for (unsigned i = 0; i < k->nargs; i++)
    if (!args[i] || k->arg_size[i] == 0)
      return weft__err(WEFT_EINVAL,
                       "weft_launch %s: parameter %u has no value or no size",
                       name, i);
  int rc = check_dims(grid, "grid", name);
  if (!rc)
    rc = check_dims(block, "block", name);
  if (rc)
    return rc;
  const weft_device_info *di = &b->info[s->hdr.dev];
  uint64_t threads = (uint64_t)block.x * block.y * block.z;
  if (threads > (uint64_t)di->max_threads_per_block)
    return weft__err(
        WEFT_EINVAL, "weft_launch %s: %llu threads per block (at most %d)",
        name, (unsigned long long)threads, di->max_threads_per_block);
  if (grid.y > 65535 || grid.z > 65535)
    return weft__err(WEFT_EINVAL,
                     "weft_launch %s: grid y and z must be at most 65535",
                     name);
  if ((rc = bad_args(s, k, args, name)) != 0)
    return rc;
  if (s->capture) /* pointer-sized arguments may be buffers */
    for (unsigned i = 0; i < k->nargs; i++)
      if (k->arg_size[i] == sizeof(void *))
        capture_note(s->capture, *(void *const *)args[i]);
  int lrc = captured(s, b->ops->launch(s, k, grid, block, shmem, args));
  if (lrc == 0 && b->check) {
    /* A pointer argument may be a buffer the kernel writes, unless the
     * descriptor says it only reads it. */
    weft__check_span spans[WEFT_KERNEL_MAX_ARGS];
    size_t n = 0;
    for (unsigned i = 0; i < k->nargs; i++)
      if (k->arg_size[i] == sizeof(void *))
        spans[n++] = (weft__check_span){*(void *const *)args[i], 0,
                                        !(k->reads & (1u << i))};
    check_op(s, "weft_launch", name, spans, n);
  }
  return lrc;
}

int weft__kernel_preload(weft__backend *b, int dev, const weft_kernel *k) {
  int rc = check_dev(b, dev, "kernel_preload");
  if (rc)
    return rc;
  if (!k)
    return weft__err(WEFT_EINVAL, "weft_kernel_preload: kernel is NULL");
  if (!kernel_runs_on(k, b))
    return no_implementation("weft_kernel_preload", k, b);
  return b->ops->kernel_preload ? b->ops->kernel_preload(b, dev, k) : 0;
}

/* ---- memory ---- */

int weft__device_alloc(weft__stream *s, size_t n, void **out) {
  CHECK_STREAM(s, "weft_device_alloc");
  int rc0 = refused_in_capture(s, "weft_device_alloc");
  if (rc0)
    return rc0;
  if (!out)
    return weft__err(WEFT_EINVAL, "weft_device_alloc: out is NULL");
  if (n == 0)
    return weft__err(WEFT_EINVAL, "weft_device_alloc: size is 0");
  weft__backend *b = s->hdr.bk;
  void *p = NULL;
  int rc = b->ops->device_alloc(s, n, &p);
  if (rc)
    return rc;
  pthread_mutex_lock(&b->lock);
  rc = registry_put(b, p, (weft__alloc_info){n, ALLOC_DEVICE, s->hdr.dev, 0});
  pthread_mutex_unlock(&b->lock);
  if (rc) {
    b->ops->device_free(s, p);
    return weft__err(rc, "weft_device_alloc: registry out of memory");
  }
  if (b->check)
    weft__check_alloc(b->check, p, n, 0);
  *out = p;
  return 0;
}

int weft__device_free(weft__stream *s, void *p) {
  CHECK_STREAM(s, "weft_device_free");
  if (!p)
    return 0; /* like free(NULL) */
  int rc0 = refused_in_capture(s, "weft_device_free");
  if (rc0)
    return rc0;
  weft__backend *b = s->hdr.bk;
  weft__alloc_info info;
  pthread_mutex_lock(&b->lock);
  int known =
      weft__ptrmap_get(b->allocs, p, &info) && info.kind == ALLOC_DEVICE;
  if (known && info.graphs) {
    pthread_mutex_unlock(&b->lock);
    return weft__err(WEFT_EBUSY,
                     "weft_device_free: %p is used by %u live graph%s; "
                     "weft_graph_destroy them first",
                     p, info.graphs, info.graphs == 1 ? "" : "s");
  }
  if (known) {
    weft__ptrmap_del(b->allocs, p);
    note_freed(b, p, info.size, ALLOC_DEVICE);
  }
  weft__alloc_ref r;
  int what = known ? WEFT__PTR_LIVE : weft__ptrmap_lookup(b->allocs, p, &r);
  pthread_mutex_unlock(&b->lock);
  if (what == WEFT__PTR_FREED)
    return weft__err(WEFT_EINVAL,
                     "weft_device_free: %p was freed before (double free: "
                     "the %zu bytes at %p of device %d)",
                     p, r.info.size, r.base, r.info.dev);
  if (!known)
    return weft__err(WEFT_EINVAL,
                     "weft_device_free: %p is not a live device allocation "
                     "(foreign pointer, or not the start of one)",
                     p);
  /* Before the free: once freed, the block may be handed out again (on
   * another thread) before this call returns. */
  if (b->check)
    weft__check_dealloc(b->check, p);
  int rc = b->ops->device_free(s, p);
  if (rc) { /* the backend kept it: keep it registered too */
    pthread_mutex_lock(&b->lock);
    registry_put(b, p, info);
    pthread_mutex_unlock(&b->lock);
  }
  return rc;
}

int weft__pinned_alloc(weft__backend *b, size_t n, void **out) {
  if (!b || !out)
    return weft__err(WEFT_EINVAL, "weft_pinned_alloc: %s is NULL",
                     b ? "out" : "backend");
  if (n == 0)
    return weft__err(WEFT_EINVAL, "weft_pinned_alloc: size is 0");
  void *p = NULL;
  int rc = b->ops->pinned_alloc(b, n, &p);
  if (rc)
    return rc;
  pthread_mutex_lock(&b->lock);
  rc = registry_put(b, p, (weft__alloc_info){n, ALLOC_PINNED, 0, 0});
  pthread_mutex_unlock(&b->lock);
  if (rc) {
    b->ops->pinned_free(b, p);
    return weft__err(rc, "weft_pinned_alloc: registry out of memory");
  }
  *out = p;
  return 0;
}

int weft__pinned_free(weft__backend *b, void *p) {
  if (!b)
    return weft__err(WEFT_EINVAL, "weft_pinned_free: backend is NULL");
  if (!p)
    return 0;
  weft__alloc_info info;
  pthread_mutex_lock(&b->lock);
  int known =
      weft__ptrmap_get(b->allocs, p, &info) && info.kind == ALLOC_PINNED;
  if (known) {
    weft__ptrmap_del(b->allocs, p);
    note_freed(b, p, info.size, ALLOC_PINNED);
  }
  pthread_mutex_unlock(&b->lock);
  if (!known)
    return weft__err(WEFT_EINVAL,
                     "weft_pinned_free: %p is not a live pinned allocation "
                     "(foreign pointer or double free)",
                     p);
  int rc = b->ops->pinned_free(b, p);
  if (rc) {
    pthread_mutex_lock(&b->lock);
    registry_put(b, p, info);
    pthread_mutex_unlock(&b->lock);
  }
  return rc;
}

int weft__device_sync(weft__backend *b, int dev) {
  int rc = check_dev(b, dev, "device_sync");
  if (rc)
    return rc;
  return b->ops->device_sync(b, dev);
}
