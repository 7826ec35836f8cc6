/* weft/graph.h: graph capture and replay on the caller's stream. The
 * backend records and replays (capture_* and graph_* ops); the core keeps
 * the rules: what may run inside a capture, which memory a live graph
 * holds busy, and which graphs are live. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "error_internal.h"
#include "ptrmap.h"
#include "scheduler.h"
#include "weft/graph.h"

#define GRAPH_MAGIC 0x47524148u /* "GRAH" */

/* An allocation a graph holds busy: a registered device allocation (its
 * base pointer) or a pinned block (any pointer into it). */
typedef struct graph_ref {
  const void *p;
  int pinned;
} graph_ref;

struct weft_graph {
  uint32_t magic;
  weft_runtime *rt;
  void *impl; /* the backend's */
  graph_ref *refs;
  size_t nrefs;
  size_t ops, kernels, copies;
  struct weft_graph *next; /* the runtime's live graphs */
  /* weft check: what a replay reads and writes, and the graph's clock. */
  weft__check_span *spans;
  size_t nspans;
  weft__vc *check_vc;
};

int weft__refuse_in_capture(const weft__exec *x, const char *call,
                            const char *why) {
  if (!x || !x->stream || !x->stream->capture)
    return 0;
  return weft__err(WEFT_ESTATE,
                   "%s inside a graph capture: %s; end the capture first "
                   "(weft_graph_end)",
                   call, why);
}

static void capture_free(weft__capture *c) {
  if (c) {
    free(c->ptrs);
    free(c->spans);
    free(c);
  }
}

/* The capture's checked spans become g's (weft check). */
static void take_spans(weft_graph *g, weft__capture *cap) {
  free(g->spans);
  g->spans = cap->spans;
  g->nspans = cap->nspans;
  cap->spans = NULL;
  cap->nspans = cap->cap_spans = 0;
}

/* The capture of x's stream, or NULL after reporting none for call. */
static weft__capture *open_capture(weft__exec *x, const char *call) {
  if (!x->stream || !x->stream->capture) {
    weft__err(WEFT_ESTATE, "%s: no graph capture is open (weft_graph_begin)",
              call);
    return NULL;
  }
  return x->stream->capture;
}

int weft_graph_begin(void) {
  weft__caller c;
  int rc = weft__caller_get("weft_graph_begin", &c);
  if (rc)
    return rc;
  const struct weft__backend_ops *ops = c.s->hdr.bk->ops;
  if (c.s->capture)
    return weft__err(WEFT_ESTATE, "weft_graph_begin: a capture is already "
                                  "open (captures do not nest)");
  if (!ops->capture_begin)
    return weft__err(WEFT_ENOTSUP,
                     "weft_graph_begin: the %s backend has no "
                     "graphs",
                     ops->name);
  weft__capture *cap = calloc(1, sizeof *cap);
  if (!cap)
    return weft__err(WEFT_ENOMEM, "weft_graph_begin: out of memory");
  rc = ops->capture_begin(c.s);
  if (rc) {
    free(cap);
    return rc;
  }
  c.s->capture = cap;
  return 0;
}

/* Holds (delta +1) or releases (-1) the memory behind refs. */
static void hold_refs(weft_runtime *rt, const graph_ref *refs, size_t n,
                      int delta) {
  weft__backend *b = rt->bk;
  for (size_t i = 0; i < n; i++) {
    if (refs[i].pinned) {
      weft__pinned_cache_hold(&rt->pinned, refs[i].p, delta);
      continue;
    }
    pthread_mutex_lock(&b->lock);
    weft__alloc_info *info = weft__ptrmap_find(b->allocs, refs[i].p);
    if (info)
      info->graphs = (unsigned)((int)info->graphs + delta);
    pthread_mutex_unlock(&b->lock);
  }
}

/* The allocations among the pointers a capture saw, each once, held. */
static int take_refs(weft_runtime *rt, const weft__capture *cap,
                     graph_ref **out, size_t *nout) {
  graph_ref *refs = NULL;
  size_t n = 0;
  if (cap->nptrs && !(refs = malloc(cap->nptrs * sizeof *refs)))
    return weft__err(WEFT_ENOMEM, "weft_graph_end: out of memory");
  weft__backend *b = rt->bk;
  for (size_t i = 0; i < cap->nptrs; i++) {
    const void *p = cap->ptrs[i];
    int dup = 0;
    for (size_t j = 0; j < n && !dup; j++)
      dup = refs[j].p == p;
    if (dup || !p)
      continue;
    weft__alloc_info info;
    pthread_mutex_lock(&b->lock);
    int dev = weft__ptrmap_get(b->allocs, p, &info) &&
              info.kind == WEFT__ALLOC_DEVICE;
    pthread_mutex_unlock(&b->lock);
    if (dev) {
      refs[n++] = (graph_ref){p, 0};
    } else if (weft__pinned_cache_hold(&rt->pinned, p, 0)) {
      refs[n++] = (graph_ref){p, 1};
    }
  }
  hold_refs(rt, refs, n, +1);
  *out = refs;
  *nout = n;
  return 0;
}

/* Ends x's capture into *impl (NULL: a new graph). */
static int end_capture(weft__exec *x, weft__capture *cap, void **impl,
                       const char *call) {
  weft__stream *s = x->stream;
  s->capture = NULL;
  int rc = s->hdr.bk->ops->capture_end(s, impl);
  if (rc == 0 && cap->failed)
    rc = weft__err(cap->failed,
                   "%s: a call inside the capture failed (%s), so no graph "
                   "was made",
                   call, weft_err_name(cap->failed));
  return rc;
}

int weft_graph_end(weft_graph **out) {
  if (out)
    *out = NULL;
  weft__exec *x = weft__exec_get("weft_graph_end");
  if (!x)
    return weft__exec_get_failed();
  weft__capture *cap = open_capture(x, "weft_graph_end");
  if (!cap)
    return WEFT_ESTATE;
  weft_runtime *rt = x->rt;
  const struct weft__backend_ops *ops = rt->bk->ops;
  void *impl = NULL;
  int rc = end_capture(x, cap, &impl, "weft_graph_end");
  weft_graph *g = NULL;
  if (rc == 0 && !out)
    rc = weft__err(WEFT_EINVAL, "weft_graph_end: out is NULL (the capture "
                                "is ended and dropped)");
  if (rc == 0 && !(g = calloc(1, sizeof *g)))
    rc = weft__err(WEFT_ENOMEM, "weft_graph_end: out of memory");
  if (rc == 0)
    rc = take_refs(rt, cap, &g->refs, &g->nrefs);
  if (rc == 0)
    take_spans(g, cap);
  capture_free(cap);
  if (rc) {
    free(g);
    if (impl)
      ops->graph_destroy(rt->bk, impl);
    return rc;
  }
  g->magic = GRAPH_MAGIC;
  g->rt = rt;
  g->impl = impl;
  ops->graph_counts(impl, &g->ops, &g->kernels, &g->copies);
  pthread_mutex_lock(&rt->lock);
  g->next = rt->graphs;
  rt->graphs = g;
  rt->ngraphs++;
  pthread_mutex_unlock(&rt->lock);
  *out = g;
  return 0;
}

/* 0 if g is a live graph of x's runtime, else the error, reported. */
static int check_graph(const weft_graph *g, weft_runtime *rt,
                       const char *call) {
  if (!g)
    return weft__err(WEFT_EINVAL, "%s: graph is NULL", call);
  int live = 0;
  pthread_mutex_lock(&rt->lock);
  for (const weft_graph *h = rt->graphs; h && !live; h = h->next)
    live = h == g;
  pthread_mutex_unlock(&rt->lock);
  if (!live || g->magic != GRAPH_MAGIC)
    return weft__err(WEFT_EHANDLE,
                     "%s: not a live graph of this runtime (destroyed, or "
                     "made by another runtime)",
                     call);
  return 0;
}

int weft_graph_update(weft_graph *g) {
  weft__exec *x = weft__exec_get("weft_graph_update");
  if (!x)
    return weft__exec_get_failed();
  weft_runtime *rt = x->rt;
  int rc = check_graph(g, rt, "weft_graph_update");
  if (rc)
    return rc;
  weft__capture *cap = open_capture(x, "weft_graph_update");
  if (!cap)
    return WEFT_ESTATE;
  void *impl = g->impl;
  rc = end_capture(x, cap, &impl, "weft_graph_update");
  graph_ref *refs = NULL;
  size_t nrefs = 0;
  if (rc == 0)
    rc = take_refs(rt, cap, &refs, &nrefs);
  if (rc) {
    capture_free(cap);
    return rc;
  }
  take_spans(g, cap);
  capture_free(cap);
  /* The new buffers are held; the old ones no longer are. */
  hold_refs(rt, g->refs, g->nrefs, -1);
  free(g->refs);
  g->refs = refs;
  g->nrefs = nrefs;
  rt->bk->ops->graph_counts(g->impl, &g->ops, &g->kernels, &g->copies);
  return 0;
}

int weft_graph_launch(weft_graph *g) {
  weft__caller c;
  int rc = weft__caller_get("weft_graph_launch", &c);
  if (rc)
    return rc;
  weft__exec *x = c.x;
  if ((rc = check_graph(g, x->rt, "weft_graph_launch")) != 0)
    return rc;
  if ((rc = weft__refuse_in_capture(x, "weft_graph_launch",
                                    "graphs do not nest")) != 0)
    return rc;
  rc = x->rt->bk->ops->graph_launch(c.s, g->impl);
  if (rc == 0 && x->rt->bk->check)
    weft__check_replay(x->rt->bk->check, c.s, g->spans, g->nspans,
                       &g->check_vc);
  return rc;
}

int weft_graph_destroy(weft_graph *g) {
  weft__exec *x = weft__exec_get("weft_graph_destroy");
  if (!x)
    return weft__exec_get_failed();
  weft_runtime *rt = x->rt;
  int rc = check_graph(g, rt, "weft_graph_destroy");
  if (rc)
    return rc;
  pthread_mutex_lock(&rt->lock);
  for (weft_graph **pp = &rt->graphs; *pp; pp = &(*pp)->next)
    if (*pp == g) {
      *pp = g->next;
      break;
    }
  rt->ngraphs--;
  pthread_mutex_unlock(&rt->lock);
  g->magic = 0;
  rt->bk->ops->graph_destroy(rt->bk, g->impl);
  hold_refs(rt, g->refs, g->nrefs, -1);
  free(g->refs);
  free(g->spans);
  weft__check_vc_free(g->check_vc);
  free(g);
  return 0;
}

int weft_graph_get_info(const weft_graph *g, weft_graph_info *info) {
  weft__exec *x = weft__exec_get("weft_graph_get_info");
  if (!x)
    return weft__exec_get_failed();
  int rc = check_graph(g, x->rt, "weft_graph_get_info");
  if (rc)
    return rc;
  if (!info)
    return weft__err(WEFT_EINVAL, "weft_graph_get_info: info is NULL");
  *info = (weft_graph_info){.ops = g->ops,
                            .kernels = g->kernels,
                            .copies = g->copies,
                            .refs = g->nrefs};
  return 0;
}

void weft__graph_drop_capture(weft__exec *x, const char *why) {
  weft__stream *s = x->stream;
  if (!s || !s->capture)
    return;
  weft__capture *cap = s->capture;
  void *impl = NULL;
  s->capture = NULL;
  if (s->hdr.bk->ops->capture_end(s, &impl) == 0 && impl)
    s->hdr.bk->ops->graph_destroy(s->hdr.bk, impl);
  capture_free(cap);
  weft__exec_fail(x, weft__err(WEFT_ESTATE,
                               "weft_graph_begin: the capture was never ended "
                               "(%s); it was dropped",
                               why));
}
