/* weft/host.h: the host backend's streams and events, straight to the
 * backend (backend.h's entry points), no tasks or pools. The public types
 * are the backend's own objects. */
#include "weft/host.h"
#include "backend.h"
#include "caller.h"
#include "error_internal.h"
#include "registry.h"

#define S(s) ((weft__stream *)(s))
#define E(e) ((weft__event *)(e))

static int host_backend(weft_runtime *rt, const char *call,
                        weft__backend **out) {
  int rc = weft__registry_check(rt, call);
  if (rc)
    return rc;
  weft__backend *bk = weft__registry_backend(rt);
  if (bk->ops->kind != WEFT_BACKEND_HOST)
    return weft__err(WEFT_ENOTSUP, "%s: the runtime uses the %s backend", call,
                     bk->ops->name);
  *out = bk;
  return 0;
}

/* The backend of rt, which must be the host backend, with device in range
 * and out not NULL. */
static int host_maker(weft_runtime *rt, int device, const void *out,
                      const char *call, weft__backend **b) {
  int rc = host_backend(rt, call, b);
  if (rc)
    return rc;
  if (!out)
    return weft__err(WEFT_EINVAL, "%s: out is NULL", call);
  if (device < 0 || device >= (*b)->ndev)
    return weft__err(WEFT_ENODEV, "%s: no device %d (the runtime has %d)", call,
                     device, (*b)->ndev);
  return 0;
}

int weft_host_stream_create(weft_runtime *rt, int device, int priority,
                            weft_host_stream **out) {
  weft__backend *b = NULL;
  int rc = host_maker(rt, device, out, "weft_host_stream_create", &b);
  return rc ? rc
            : weft__stream_create(b, device, priority, (weft__stream **)out);
}

int weft_host_stream_destroy(weft_host_stream **s) {
  if (!s || !*s)
    return weft__err(WEFT_EINVAL, "weft_host_stream_destroy: NULL stream");
  int rc = weft__stream_sync(S(*s));
  int drc = weft__stream_destroy((weft__stream **)s);
  return rc ? rc : drc;
}

/* Under weft check the caller now knows what s (or ev) had done: these
 * streams are outside weft's tasks, but their work touches weft's memory
 * all the same. */
static void seen_stream(weft__stream *s) {
  weft__exec *x =
      s->hdr.bk->check ? weft__caller_get("weft_host_stream_sync") : NULL;
  if (x)
    weft__caller_synced(x, s);
}

static void seen_event(weft__event *e) {
  weft__exec *x =
      e->hdr.bk->check ? weft__caller_get("weft_host_event_sync") : NULL;
  if (x)
    weft__caller_event_synced(x, e);
}

int weft_host_stream_sync(weft_host_stream *s) {
  int rc = weft__stream_sync(S(s));
  if (rc == 0)
    seen_stream(S(s));
  return rc;
}

int weft_host_stream_wait_event(weft_host_stream *s, weft_host_event *ev) {
  return weft__stream_wait_event(S(s), E(ev));
}

/* Under weft check: work queued now comes after what the caller has
 * seen. */
static void issue(weft__stream *s) {
  weft__exec *x = s && s->hdr.bk && s->hdr.bk->check
                      ? weft__caller_get("weft_host_launch")
                      : NULL;
  if (x)
    weft__caller_issues(x, s);
}

int weft_host_launch(weft_host_stream *s, const weft_kernel *k, weft_dim3 grid,
                     weft_dim3 block, void **args) {
  issue(S(s));
  return weft__launch(S(s), k, grid, block, 0, args);
}

int weft_host_copy(weft_host_stream *s, void *dst, const void *src, size_t n) {
  issue(S(s));
  return weft__copy(S(s), dst, src, n, WEFT__COPY_DEFAULT);
}

int weft_host_event_create(weft_runtime *rt, int device, int timing,
                           weft_host_event **out) {
  weft__backend *b = NULL;
  int rc = host_maker(rt, device, out, "weft_host_event_create", &b);
  return rc ? rc
            : weft__event_create(b, device, timing ? WEFT__EVENT_TIMING : 0,
                                 (weft__event **)out);
}

int weft_host_event_destroy(weft_host_event **ev) {
  return weft__event_destroy((weft__event **)ev);
}

int weft_host_event_record(weft_host_event *ev, weft_host_stream *s) {
  return weft__event_record(E(ev), S(s));
}

int weft_host_event_query(weft_host_event *ev) {
  int rc = weft__event_query(E(ev));
  if (rc == 0)
    seen_event(E(ev));
  return rc;
}

int weft_host_event_sync(weft_host_event *ev) {
  int rc = weft__event_sync(E(ev));
  if (rc == 0)
    seen_event(E(ev));
  return rc;
}

int weft_host_event_elapsed_ms(weft_host_event *start, weft_host_event *end,
                               float *ms) {
  return weft__event_elapsed(E(start), E(end), ms);
}

int weft_host_pinned_alloc(weft_runtime *rt, size_t n, void **out) {
  weft__backend *b = NULL;
  int rc = host_backend(rt, "weft_host_pinned_alloc", &b);
  return rc ? rc : weft__pinned_alloc(b, n, out);
}

int weft_host_pinned_free(weft_runtime *rt, void *p) {
  weft__backend *b = NULL;
  int rc = host_backend(rt, "weft_host_pinned_free", &b);
  return rc ? rc : weft__pinned_free(b, p);
}
