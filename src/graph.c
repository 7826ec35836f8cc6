/* weft/graph.h: graph capture and replay on the caller's stream. The
 * backend records and replays (capture_* and graph_* ops); the core keeps
 * the rules: what may run inside a capture, which memory a live graph
 * holds busy, and which graphs are live. */
#include <stdlib.h>
#include <string.h>

#include "checker.h"
#include "dataflow.h"
#include "door.h"
#include "error_internal.h"
#include "event_pool.h"
#include "graph_internal.h"
#include "ptrmap.h"
#include "runtime_state.h"
#include "weft/graph.h"

#define GRAPH_MAGIC 0x47524148u /* "GRAH" */

/* An allocation a graph holds busy: a registered device allocation (its
 * base pointer) or a pinned block (any pointer into it). */
typedef struct graph_ref {
  const void *p;
  int pinned;
} graph_ref;

/* Graph objects come from the runtime's pool (pool.h): their handles carry
 * a generation, so a handle kept past its destroy names no graph made
 * later at that address, and the object's memory outlives the handle. A
 * call using a graph holds it (users, under rt->h.lock), so a destroy racing
 * a launch on another thread frees it only once that launch is done. */
struct weft_graph {
  weft__obj hdr; /* magic GRAPH_MAGIC while live */
  int users;     /* calls using it now, under rt->h.lock */
  int dying;     /* destroyed: freed when the last user is done */
  weft_runtime *rt;
  int dev;    /* captured on: its operations are that device's */
  void *impl; /* the backend's */
  graph_ref *refs;
  size_t nrefs;
  size_t ops, kernels, copies;
  struct weft_graph *next; /* the runtime's live, then retired, graphs */
  /* The stream of the latest replay, under rt->h.lock: replays of one
   * graph run in launch order, so when that one is done all are. */
  weft__stream *last_s;
  /* Retired (destroyed with replays still queued): an event after the
   * last replay; its device memory stays held until it completes. */
  weft__event *end_ev;
  /* weft check: what a replay reads and writes, and the graph's clock. */
  weft__check_span *spans;
  size_t nspans;
  weft__vc *check_vc;
  /* Held across a replay's launch and an update of impl, which the
   * backends do not keep apart (a live graph's only; not a retired
   * shell's, below). */
  pthread_mutex_t impl_lock;
};

/* ---- data-flow steps inside a capture ----
 *
 * A task spawned with declared accesses while its spawner captures is a
 * step of the graph: its function runs at once, inline, and what it
 * issues is recorded. The steps keep a declared-data record of their own
 * (dataflow.c), so a step follows the earlier steps its data depends on.
 * Where the backend lets other streams join a capture (CUDA), each step
 * runs on a branch: the branch of a step it follows if that step is the
 * branch's last (stream order is then the edge), else a new one forked
 * from the capturing stream; the other steps it follows are events
 * recorded after them and waited for on its branch, which CUDA turns into
 * the graph's edges. Every branch is joined back before the capture ends.
 * Without forks (the host backend) the steps run on the capturing stream
 * in program order, which every declared order allows. */

typedef struct branch {
  weft__stream *s;
  uint32_t tail; /* the last step on it */
} branch;

typedef struct weft__steps {
  weft__flow *flow;
  branch *br;
  size_t nbr, cap_br;
  weft__event **ends; /* per step: recorded after it, on its branch */
  uint32_t *on;       /* per step: its branch */
  size_t n, cap;
} weft__steps;

/* A stream from x's pool for a branch; x keeps its own. */
static int branch_lease(weft__exec *x, weft__stream **out) {
  weft__stream *origin = x->stream;
  x->stream = NULL;
  int rc = weft__caller_lease(x, out);
  x->stream = origin;
  return rc ? weft__caller_fail(x, rc) : 0;
}

static void branch_release(weft__exec *x, weft__stream *s) {
  weft__stream *origin = x->stream;
  x->stream = s;
  weft__caller_release_stream(x);
  x->stream = origin;
}

/* An event recorded on s now, or NULL with the error in *rc. The
 * backend's own record and wait: the public calls refuse a capturing
 * stream, and these are the capture's edges, which weft check sees as
 * the graph's spans at each replay instead. */
static weft__event *mark(weft_runtime *rt, weft__stream *s, int *rc) {
  weft__event *e = NULL;
  *rc = weft__event_pool_get(rt, s->hdr.dev, 0, &e);
  if (*rc == 0 && (*rc = s->hdr.bk->ops->event_record(e, s)) != 0) {
    weft__event_pool_put(rt, e);
    e = NULL;
  }
  return e;
}

static int edge(weft__stream *s, weft__event *e) {
  return s->hdr.bk->ops->stream_wait_event(s, e);
}

/* A new branch forked from x's capturing stream, its index in *b. */
static int branch_new(weft__exec *x, weft__steps *st, size_t *b) {
  if (st->nbr == st->cap_br) {
    size_t nc = st->cap_br ? 2 * st->cap_br : 8;
    branch *v = realloc(st->br, nc * sizeof *v);
    if (!v)
      return weft__err(WEFT_ENOMEM, "weft_task_spawn: out of memory");
    st->br = v;
    st->cap_br = nc;
  }
  weft__stream *s = NULL;
  int rc = branch_lease(x, &s);
  if (rc)
    return rc;
  /* The branch's fence, as weft_graph_begin's: the work a leased stream
   * still has queued from before it joins the capture. */
  rc = weft__event_pool_fence(x->rt, s);
  weft__event *fork = rc ? NULL : mark(x->rt, x->stream, &rc);
  if (fork) {
    rc = edge(s, fork);
    weft__event_pool_put(x->rt, fork);
  }
  if (rc) {
    weft__event_pool_unfence(x->rt, s);
    branch_release(x, s);
    return rc;
  }
  s->capture = x->stream->capture;
  st->br[st->nbr] = (branch){s, 0};
  *b = st->nbr++;
  return 0;
}

/* A step's failure: the capture makes no graph. */
static int step_fail(weft__capture *cap, int rc) {
  if (!cap->failed)
    cap->failed = rc;
  return rc;
}

/* Room in st for one more step. */
static int steps_room(weft__steps *st) {
  if (st->n < st->cap)
    return 0;
  size_t nc = st->cap ? 2 * st->cap : 64;
  weft__event **e = realloc(st->ends, nc * sizeof *e);
  if (e)
    st->ends = e;
  uint32_t *on = e ? realloc(st->on, nc * sizeof *on) : NULL;
  if (on)
    st->on = on;
  if (!e || !on)
    return weft__err(WEFT_ENOMEM, "weft_task_spawn: out of memory");
  st->cap = nc;
  return 0;
}

/* Where a step that follows the steps d[0..nd) runs: with forks, on the
 * branch of one whose last step it follows, else on a new branch, waiting
 * there for the others' events; its branch in *b (SIZE_MAX: none, the
 * capturing stream) and its stream in *s. A step with no end event failed
 * (and the capture with it): it is not followed, only stepped over. */
static int step_place(weft__exec *x, weft__steps *st, const void *const *d,
                      uint32_t nd, size_t *b, weft__stream **s) {
  *s = x->stream;
  *b = SIZE_MAX;
  if (!x->stream->hdr.bk->ops->capture_forks)
    return 0;
  for (uint32_t k = 0; k < nd && *b == SIZE_MAX; k++) {
    uint32_t id = (uint32_t)(uintptr_t)d[k];
    if (st->ends[id - 1] && st->br[st->on[id - 1]].tail == id)
      *b = st->on[id - 1];
  }
  int rc = *b == SIZE_MAX ? branch_new(x, st, b) : 0;
  if (rc)
    return rc;
  *s = st->br[*b].s;
  for (uint32_t k = 0; k < nd && rc == 0; k++) {
    uint32_t id = (uint32_t)(uintptr_t)d[k];
    if (st->ends[id - 1] && st->on[id - 1] != *b)
      rc = edge(*s, st->ends[id - 1]);
  }
  return rc;
}

/* Step id, placed on branch b (SIZE_MAX: none) and run: its end event,
 * which the steps after it wait for, and the branch's last step. */
static int step_end(weft_runtime *rt, weft__steps *st, uint32_t id, size_t b,
                    weft__stream *s) {
  int rc = 0;
  st->on[id - 1] = b == SIZE_MAX ? 0 : (uint32_t)b;
  if (b != SIZE_MAX) {
    st->ends[id - 1] = mark(rt, s, &rc);
    st->br[b].tail = id;
  }
  return rc;
}

/* A join step (dataflow.h's joins): a step of no work that follows the
 * steps m[0..n) (an empty node of the graph with their edges), so that a
 * step writing what they read follows it alone. */
typedef struct step_join_ctx {
  weft__exec *x;
  weft__steps *st;
} step_join_ctx;

static int step_join(void *ctx, const void *const *m, uint32_t n,
                     const void **out) {
  step_join_ctx *j = ctx;
  weft__steps *st = j->st;
  int rc = steps_room(st);
  if (rc)
    return rc;
  uint32_t id = (uint32_t)st->n + 1;
  st->ends[id - 1] = NULL;
  st->on[id - 1] = 0;
  st->n = id;
  size_t b;
  weft__stream *s;
  if ((rc = step_place(j->x, st, m, n, &b, &s)) != 0 ||
      (rc = step_end(j->x->rt, st, id, b, s)) != 0)
    return rc;
  *out = (const void *)(uintptr_t)id;
  return 0;
}

int weft__graph_step(weft__exec *x, weft_task_fn fn, void *arg,
                     const weft_access *a, size_t n) {
  weft__stream *origin = x->stream;
  weft__capture *cap = origin->capture;
  weft_runtime *rt = x->rt;
  weft__steps *st = cap->steps;
  if (cap->in_step)
    return step_fail(cap, weft__err(WEFT_ESTATE,
                                    "weft_task_spawn: a step of a graph "
                                    "capture declared accesses of its own "
                                    "(steps do not nest)"));
  for (size_t i = 0; i < n; i++)
    if (a[i].mode & WEFT_ACCESS_HOST)
      return step_fail(
          cap, weft__err(WEFT_ESTATE,
                         "weft_task_spawn: access %zu has WEFT_ACCESS_HOST "
                         "inside a graph capture: a step's host code runs "
                         "while the graph is recorded, before any of its "
                         "work has run",
                         i));
  if (!st && !(st = cap->steps = calloc(1, sizeof *st)))
    return step_fail(cap,
                     weft__err(WEFT_ENOMEM, "weft_task_spawn: out of memory"));
  int rc = steps_room(st);
  if (rc)
    return step_fail(cap, rc);
  /* The step's number first: joins its record makes take the next ones. */
  uint32_t id = (uint32_t)st->n + 1;
  st->ends[id - 1] = NULL;
  st->on[id - 1] = 0;
  st->n = id;
  const void *buf[WEFT__FLOW_INLINE], **deps = NULL;
  uint32_t nd = 0;
  int host = 0;
  step_join_ctx jc = {x, st};
  rc = weft__flow_note(&st->flow, (const void *)(uintptr_t)id, a, n, step_join,
                       &jc, buf, &deps, &nd, &host);
  if (rc)
    return step_fail(
        cap, rc == WEFT_ENOMEM
                 ? weft__err(WEFT_ENOMEM, "weft_task_spawn: out of memory")
                 : rc);
  size_t b;
  weft__stream *s;
  rc = step_place(x, st, deps, nd, &b, &s);
  weft__flow_deps_free(deps, buf);
  if (rc)
    return step_fail(cap, rc);
  /* The function runs as the spawner, on the step's branch, with the
   * step's accesses as the declarations weft check holds it to. */
  weft_access *decl = x->decl;
  uint32_t ndecl = x->ndecl;
  if (rt->h.bk->check) {
    x->decl = (weft_access *)a;
    x->ndecl = (uint32_t)n;
  }
  x->stream = s;
  cap->in_step = 1;
  fn(arg);
  cap->in_step = 0;
  x->stream = origin;
  x->decl = decl;
  x->ndecl = ndecl;
  /* The step ran: a failure to end it is the capture's (weft_graph_end
   * returns it), not the spawn's, whose failure says fn did not run (the
   * C++ face then destroys the callable, which ran and went already). */
  rc = step_end(rt, st, id, b, s);
  if (rc)
    step_fail(cap, rc);
  return 0;
}

/* Joins every branch back into x's capturing stream, which CUDA requires
 * of every stream that joined a capture before it ends. The first error,
 * or 0. */
static int steps_join(weft__exec *x, weft__capture *cap) {
  weft__steps *st = cap->steps;
  int rc = 0;
  for (size_t i = 0; st && i < st->nbr; i++) {
    int r = 0;
    weft__event *e = mark(x->rt, st->br[i].s, &r);
    if (e) {
      r = edge(x->stream, e);
      weft__event_pool_put(x->rt, e);
    }
    if (r && !rc)
      rc = r;
  }
  return rc;
}

/* After the capture ended (until then a branch is still capturing, and
 * another task must not lease it): the branches go back to the pool, the
 * steps' events and record are freed. */
static void steps_free(weft__exec *x, weft__capture *cap) {
  weft__steps *st = cap->steps;
  if (!st)
    return;
  for (size_t i = 0; i < st->nbr; i++) {
    st->br[i].s->capture = NULL;
    weft__event_pool_unfence(x->rt, st->br[i].s);
    branch_release(x, st->br[i].s);
  }
  for (size_t i = 0; i < st->n; i++)
    if (st->ends[i])
      weft__event_pool_put(x->rt, st->ends[i]);
  weft__flow_free(st->flow);
  free(st->br);
  free(st->ends);
  free(st->on);
  free(st);
  cap->steps = NULL;
}

/* 0, or WEFT_ESTATE reported for call when a step's function is running
 * (the capture cannot end from inside one of its steps). */
/* Inside a step the refusal is the step's failure, as any refusal there
 * (weft__caller_refuse_in_capture): the capture then makes no graph. */
static int refuse_in_step(weft__capture *cap, const char *call) {
  if (cap->in_step && !cap->failed)
    cap->failed = WEFT_ESTATE;
  if (cap->in_step)
    return weft__err(WEFT_ESTATE,
                     "%s inside a data-flow step of the capture: the step "
                     "must return first",
                     call);
  return 0;
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
  int rc = weft__door("weft_graph_begin", WEFT__DOOR_ISSUE, NULL, &c);
  if (rc)
    return rc;
  const struct weft__backend_ops *ops = c.s->hdr.bk->ops;
  if (c.s->capture) {
    if (c.s->capture->in_step && !c.s->capture->failed)
      c.s->capture->failed = WEFT_ESTATE;
    return weft__err(WEFT_ESTATE, "weft_graph_begin: a capture is already "
                                  "open (captures do not nest)");
  }
  if (!ops->capture_begin)
    return weft__err(WEFT_ENOTSUP,
                     "weft_graph_begin: the %s backend has no "
                     "graphs",
                     ops->name);
  weft__capture *cap = calloc(1, sizeof *cap);
  if (!cap)
    return weft__err(WEFT_ENOMEM, "weft_graph_begin: out of memory");
  /* The fence: what frees memory the stream used, or retires a graph
   * replayed on it, waits for while it captures (event_pool.h). */
  weft_runtime *rt = c.x->rt;
  if ((rc = weft__event_pool_fence(rt, c.s)) != 0) {
    free(cap);
    return rc;
  }
  rc = ops->capture_begin(c.s);
  if (rc) {
    weft__event_pool_unfence(rt, c.s);
    free(cap);
    return rc;
  }
  c.s->capture = cap;
  /* How caller.c drops it if the thread or runtime ends first. */
  c.x->drop_capture = weft__graph_drop_capture;
  return 0;
}

/* Holds (delta +1) or releases (-1) the memory behind refs. */
static void hold_refs(weft_runtime *rt, const graph_ref *refs, size_t n,
                      int delta) {
  weft__backend *b = rt->h.bk;
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
  weft__backend *b = rt->h.bk;
  for (size_t i = 0; i < cap->nptrs; i++) {
    const void *p = cap->ptrs[i];
    if (!p)
      continue;
    /* A pointer into an allocation holds the whole allocation, named by
     * its start (a memset at an offset still writes it). */
    weft__alloc_ref r;
    pthread_mutex_lock(&b->lock);
    int dev = weft__ptrmap_lookup(b->allocs, p, &r) == WEFT__PTR_LIVE &&
              r.info.kind == WEFT__ALLOC_DEVICE;
    pthread_mutex_unlock(&b->lock);
    graph_ref ref;
    const void *block = dev ? NULL : weft__pinned_cache_block(&rt->pinned, p);
    if (dev)
      ref = (graph_ref){r.base, 0};
    else if (block)
      ref = (graph_ref){block, 1};
    else
      continue;
    int dup = 0;
    for (size_t j = 0; j < n && !dup; j++)
      dup = refs[j].p == ref.p;
    if (!dup)
      refs[n++] = ref;
  }
  hold_refs(rt, refs, n, +1);
  *out = refs;
  *nout = n;
  return 0;
}

/* Ends x's capture into *impl (NULL: a new graph; else an update of it,
 * under impl_lock). With refs, the memory the capture used is held first
 * (take_refs), so that an update never takes effect without it. A capture
 * in which a call failed, or whose memory could not be held, ends into a
 * graph of its own that is dropped: *impl stays as it was. */
static int end_capture(weft__exec *x, weft__capture *cap, void **impl,
                       pthread_mutex_t *impl_lock, graph_ref **refs,
                       size_t *nrefs, const char *call) {
  weft__stream *s = x->stream;
  weft__backend *b = s->hdr.bk;
  int joined = steps_join(x, cap);
  s->capture = NULL;
  x->drop_capture = NULL;
  if (joined && !cap->failed)
    cap->failed = joined;
  int rc = 0;
  if (!cap->failed && refs)
    rc = take_refs(x->rt, cap, refs, nrefs);
  if (cap->failed || rc) {
    weft__errinfo why = *weft__err_slot();
    void *dropped = NULL;
    if (b->ops->capture_end(s, &dropped) == 0 && dropped)
      b->ops->graph_destroy(b, dropped);
    *weft__err_slot() = why;
  } else {
    if (impl_lock)
      pthread_mutex_lock(impl_lock);
    rc = b->ops->capture_end(s, impl);
    if (impl_lock)
      pthread_mutex_unlock(impl_lock);
    if (rc && refs) {
      hold_refs(x->rt, *refs, *nrefs, -1);
      free(*refs);
      *refs = NULL;
      *nrefs = 0;
    }
  }
  weft__event_pool_unfence(x->rt, s);
  steps_free(x, cap);
  if (rc == 0 && cap->failed)
    rc = weft__err(cap->failed,
                   "%s: a call inside the capture failed (%s), so no graph "
                   "was made",
                   call, weft_err_name(cap->failed));
  return rc;
}

int weft_graph_end(weft_graph **out) {
  weft__caller c;
  int entered = weft__door("weft_graph_end", 0, NULL, &c);
  if (entered)
    return entered;
  weft__exec *x = c.x;
  weft__capture *cap = open_capture(x, "weft_graph_end");
  if (!cap)
    return WEFT_ESTATE;
  int rs = refuse_in_step(cap, "weft_graph_end");
  if (rs)
    return rs;
  weft_runtime *rt = x->rt;
  const struct weft__backend_ops *ops = rt->h.bk->ops;
  void *impl = NULL;
  int rc = end_capture(x, cap, &impl, NULL, NULL, NULL, "weft_graph_end");
  weft_graph *g = NULL;
  if (rc == 0 && !out)
    rc = weft__err(WEFT_EINVAL, "weft_graph_end: out is NULL (the capture "
                                "is ended and dropped)");
  if (rc == 0) {
    pthread_mutex_lock(&rt->h.lock);
    g = (weft_graph *)weft__pool_get(&rt->graph_pool, sizeof *g);
    pthread_mutex_unlock(&rt->h.lock);
    if (!g)
      rc = weft__err(WEFT_ENOMEM, "weft_graph_end: out of memory");
  }
  if (rc == 0)
    rc = take_refs(rt, cap, &g->refs, &g->nrefs);
  if (rc == 0)
    take_spans(g, cap);
  capture_free(cap);
  if (rc) {
    if (g) {
      free(g->refs);
      pthread_mutex_lock(&rt->h.lock);
      weft__pool_put(&rt->graph_pool, &g->hdr);
      pthread_mutex_unlock(&rt->h.lock);
    }
    if (impl)
      ops->graph_destroy(rt->h.bk, impl);
    return rc;
  }
  g->hdr.magic = GRAPH_MAGIC;
  g->rt = rt;
  g->dev = x->dev;
  g->impl = impl;
  pthread_mutex_init(&g->impl_lock, NULL);
  ops->graph_counts(impl, &g->ops, &g->kernels, &g->copies);
  pthread_mutex_lock(&rt->h.lock);
  g->next = rt->graphs;
  rt->graphs = g;
  rt->ngraphs++;
  pthread_mutex_unlock(&rt->h.lock);
  *out = (weft_graph *)weft__handle_of(&g->hdr);
  return 0;
}

/* The live graph of rt that handle h names, held for the caller until
 * graph_put; NULL with the error, reported, when there is none. */
static weft_graph *graph_take(const weft_graph *h, weft_runtime *rt,
                              const char *call, int *rc) {
  if (!h) {
    *rc = weft__err(WEFT_EINVAL, "%s: graph is NULL", call);
    return NULL;
  }
  /* Found among rt's live graphs before its header is read: a handle of
   * another runtime, or no handle at all, is never dereferenced. */
  const weft__obj *o = weft__handle_obj(h);
  weft_graph *g = NULL;
  pthread_mutex_lock(&rt->h.lock);
  for (weft_graph *it = rt->graphs; it && !g; it = it->next)
    if (&it->hdr == o && weft__handle_live(h, &it->hdr))
      g = it;
  if (g)
    g->users++;
  pthread_mutex_unlock(&rt->h.lock);
  *rc = g ? 0
          : weft__err(WEFT_EHANDLE,
                      "%s: not a live graph of this runtime (destroyed, or "
                      "made by another runtime)",
                      call);
  return g;
}

/* Releases what a retired or destroyed graph still holds, and its object. */
static void graph_release(weft_runtime *rt, weft_graph *g) {
  hold_refs(rt, g->refs, g->nrefs, -1);
  if (g->end_ev)
    weft__event_pool_put(rt, g->end_ev);
  free(g->refs);
  pthread_mutex_lock(&rt->h.lock);
  weft__pool_put(&rt->graph_pool, &g->hdr);
  pthread_mutex_unlock(&rt->h.lock);
}

/* Lets go of what g holds (refs, nrefs) once the replays queued on
 * g->last_s are done: g is a destroyed graph nobody uses any longer, or a
 * shell holding an updated graph's old buffers. A pinned block is marked
 * used by the last replay's stream (its free then waits for it,
 * mem_pinned.c); device memory stays held, g retired behind an event
 * after that replay, until the event completes or a free is ordered
 * after it (weft__graph_before_free). docs/decisions/memory.md, "A
 * graph's memory outlives its queued replays". */
static void retire(weft_runtime *rt, weft_graph *g) {
  weft__stream *s = g->last_s;
  weft__event *e = NULL;
  if (s) {
    for (size_t i = 0; i < g->nrefs; i++)
      if (g->refs[i].pinned && g->refs[i].p) { /* free waits for s now */
        weft__pinned_cache_use(&rt->pinned, g->refs[i].p, 1, s);
        hold_refs(rt, &g->refs[i], 1, -1);
        g->refs[i].p = NULL;
      }
    if (weft__event_pool_mark(rt, s, &e) != 0) {
      e = NULL;
      weft__stream_sync(s); /* out of memory: wait instead */
    } else if (weft__event_query(e) != WEFT_EAGAIN) { /* done already */
      weft__event_pool_put(rt, e);
      e = NULL;
    }
  }
  if (!e) {
    graph_release(rt, g);
    return;
  }
  g->end_ev = e;
  pthread_mutex_lock(&rt->h.lock);
  g->next = rt->retired;
  rt->retired = g;
  pthread_mutex_unlock(&rt->h.lock);
}

/* Frees a destroyed graph nobody uses any longer (retire keeps its memory
 * held while its replays are queued). */
static void graph_free(weft_runtime *rt, weft_graph *g) {
  rt->h.bk->ops->graph_destroy(rt->h.bk, g->impl);
  pthread_mutex_destroy(&g->impl_lock);
  free(g->spans);
  g->spans = NULL;
  weft__check_vc_free(g->check_vc);
  g->check_vc = NULL;
  retire(rt, g);
}

/* The caller is done with g (graph_take). */
static void graph_put(weft_runtime *rt, weft_graph *g) {
  pthread_mutex_lock(&rt->h.lock);
  int last = --g->users == 0 && g->dying;
  pthread_mutex_unlock(&rt->h.lock);
  if (last)
    graph_free(rt, g);
}

/* Takes the retired graphs whose replays are done (all of them, waiting
 * for each, when wait) off rt's list and releases them. A done graph's
 * memory is let go before the lock is: a free racing the sweep (which no
 * longer finds the graph on the list) must not find it still held.
 * Retired graphs hold device memory only (graph_free). */
static void retired_sweep(weft_runtime *rt, int wait) {
  weft_graph *done = NULL;
  pthread_mutex_lock(&rt->h.lock);
  for (weft_graph **pp = &rt->retired; *pp;) {
    weft_graph *g = *pp;
    if (wait || weft__event_query(g->end_ev) != WEFT_EAGAIN) {
      *pp = g->next;
      g->next = done;
      done = g;
      if (!wait)
        for (size_t i = 0; i < g->nrefs; i++)
          if (g->refs[i].p && !g->refs[i].pinned) {
            hold_refs(rt, &g->refs[i], 1, -1);
            g->refs[i].p = NULL;
          }
    } else {
      pp = &g->next;
    }
  }
  pthread_mutex_unlock(&rt->h.lock);
  while (done) {
    weft_graph *g = done;
    done = g->next;
    if (wait)
      weft__event_sync(g->end_ev);
    graph_release(rt, g);
  }
}

int weft__graph_before_free(weft__exec *x, weft__stream *s, const void *p) {
  weft_runtime *rt = x->rt;
  retired_sweep(rt, 0);
  int rc = 0;
  pthread_mutex_lock(&rt->h.lock);
  for (weft_graph *g = rt->retired; g && rc == 0; g = g->next)
    for (size_t i = 0; i < g->nrefs; i++) {
      if (g->refs[i].p != p || g->refs[i].pinned)
        continue;
      rc = weft__stream_wait_event(s, g->end_ev);
      if (rc == 0) { /* the free is ordered after the replays */
        hold_refs(rt, &g->refs[i], 1, -1);
        g->refs[i].p = NULL;
      }
    }
  pthread_mutex_unlock(&rt->h.lock);
  return rc;
}

void weft__graph_retired_release(weft_runtime *rt) { retired_sweep(rt, 1); }

static int graph_update(weft__exec *x, weft_graph *g);

/* 0 if x runs on the device g was captured on; else g given back and
 * WEFT_EINVAL reported for call: g's kernels and copies name that
 * device's memory. */
static int other_device(weft__exec *x, weft_graph *g, const char *call) {
  int dev = g->dev;
  if (dev == x->dev)
    return 0;
  graph_put(x->rt, g);
  return weft__err(WEFT_EINVAL,
                   "%s: the graph was captured on device %d, and the caller "
                   "runs on device %d",
                   call, dev, x->dev);
}

/* A weft_graph_update refused for its handle still ends the caller's open
 * capture, as every failed end does (weft/graph.h): what it recorded is
 * dropped. The refusal's message is kept. */
static void end_unkept(weft__exec *x) {
  weft__capture *cap = x->stream ? x->stream->capture : NULL;
  if (!cap || cap->in_step)
    return;
  weft__errinfo refusal = *weft__err_slot();
  void *impl = NULL;
  if (end_capture(x, cap, &impl, NULL, NULL, NULL, "weft_graph_update") == 0 &&
      impl)
    x->rt->h.bk->ops->graph_destroy(x->rt->h.bk, impl);
  capture_free(cap);
  *weft__err_slot() = refusal;
}

int weft_graph_update(weft_graph *h) {
  weft__caller c;
  int entered = weft__door("weft_graph_update", 0, NULL, &c);
  if (entered)
    return entered;
  weft__exec *x = c.x;
  weft_runtime *rt = x->rt;
  int rc;
  weft_graph *g = graph_take(h, rt, "weft_graph_update", &rc);
  if (!g) {
    end_unkept(x);
    return rc;
  }
  if ((rc = other_device(x, g, "weft_graph_update")) != 0) {
    end_unkept(x);
    return rc;
  }
  rc = graph_update(x, g);
  graph_put(rt, g);
  return rc;
}

/* weft_graph_update's work on g, held. */
static int graph_update(weft__exec *x, weft_graph *g) {
  weft_runtime *rt = x->rt;
  int rc;
  weft__capture *cap = open_capture(x, "weft_graph_update");
  if (!cap)
    return WEFT_ESTATE;
  if ((rc = refuse_in_step(cap, "weft_graph_update")) != 0)
    return rc;
  void *impl = g->impl;
  graph_ref *refs = NULL;
  size_t nrefs = 0;
  rc = end_capture(x, cap, &impl, &g->impl_lock, &refs, &nrefs,
                   "weft_graph_update");
  if (rc) {
    capture_free(cap);
    return rc;
  }
  take_spans(g, cap);
  capture_free(cap);
  /* The new buffers are held; the old ones only until the replays queued
   * before the update are done, in a shell retired as a destroyed graph
   * is (without memory for it, once the last replay's stream is). A
   * launch of the old impl noted its stream under impl_lock, before the
   * update took it. */
  pthread_mutex_lock(&g->impl_lock);
  pthread_mutex_lock(&rt->h.lock);
  weft__stream *last = g->last_s;
  weft_graph *old =
      last && g->nrefs
          ? (weft_graph *)weft__pool_get(&rt->graph_pool, sizeof *old)
          : NULL;
  pthread_mutex_unlock(&rt->h.lock);
  pthread_mutex_unlock(&g->impl_lock);
  if (old) {
    old->refs = g->refs;
    old->nrefs = g->nrefs;
    old->last_s = last;
    old->end_ev = NULL;
    retire(rt, old);
  } else {
    if (last && g->nrefs)
      weft__stream_sync(last);
    hold_refs(rt, g->refs, g->nrefs, -1);
    free(g->refs);
  }
  g->refs = refs;
  g->nrefs = nrefs;
  rt->h.bk->ops->graph_counts(g->impl, &g->ops, &g->kernels, &g->copies);
  return 0;
}

int weft_graph_launch(weft_graph *h) {
  weft__caller c;
  int rc =
      weft__door("weft_graph_launch", WEFT__DOOR_ISSUE | WEFT__DOOR_NO_CAPTURE,
                 "graphs do not nest", &c);
  if (rc)
    return rc;
  weft__exec *x = c.x;
  weft_graph *g = graph_take(h, x->rt, "weft_graph_launch", &rc);
  if (!g)
    return rc;
  if ((rc = other_device(x, g, "weft_graph_launch")) != 0)
    return rc;
  /* The replay's stream is noted before an update can follow it, which
   * then finds it (graph_update). */
  pthread_mutex_lock(&g->impl_lock);
  rc = x->rt->h.bk->ops->graph_launch(c.s, g->impl);
  if (rc == 0) {
    pthread_mutex_lock(&x->rt->h.lock);
    g->last_s = c.s;
    pthread_mutex_unlock(&x->rt->h.lock);
  }
  pthread_mutex_unlock(&g->impl_lock);
  if (rc == 0 && x->rt->h.bk->check)
    weft__check_replay(x->rt->h.bk->check, c.s, g->spans, g->nspans,
                       &g->check_vc);
  graph_put(x->rt, g);
  return rc;
}

int weft_graph_destroy(weft_graph *h) {
  weft__caller c;
  int rc = weft__door("weft_graph_destroy", 0, NULL, &c);
  if (rc)
    return rc;
  weft_runtime *rt = c.x->rt;
  weft_graph *g = graph_take(h, rt, "weft_graph_destroy", &rc);
  if (!g)
    return rc;
  /* Out of the live list at once: from now on its handle is refused. */
  pthread_mutex_lock(&rt->h.lock);
  for (weft_graph **pp = &rt->graphs; *pp; pp = &(*pp)->next)
    if (*pp == g) {
      *pp = g->next;
      break;
    }
  rt->ngraphs--;
  g->dying = 1;
  pthread_mutex_unlock(&rt->h.lock);
  graph_put(rt, g);
  retired_sweep(rt, 0);
  return 0;
}

int weft_graph_get_info(const weft_graph *h, weft_graph_info *info) {
  weft__caller c;
  int entered = weft__door("weft_graph_get_info", 0, NULL, &c);
  if (entered)
    return entered;
  weft__exec *x = c.x;
  int rc;
  weft_graph *g = graph_take(h, x->rt, "weft_graph_get_info", &rc);
  if (!g)
    return rc;
  if (info)
    *info = (weft_graph_info){.ops = g->ops,
                              .kernels = g->kernels,
                              .copies = g->copies,
                              .refs = g->nrefs};
  graph_put(x->rt, g);
  return info ? 0 : weft__err(WEFT_EINVAL, "weft_graph_get_info: info is NULL");
}

void weft__graph_drop_capture(weft__exec *x, const char *why) {
  weft__stream *s = x->stream;
  if (!s || !s->capture)
    return;
  weft__capture *cap = s->capture;
  void *impl = NULL;
  steps_join(x, cap);
  s->capture = NULL;
  x->drop_capture = NULL;
  if (s->hdr.bk->ops->capture_end(s, &impl) == 0 && impl)
    s->hdr.bk->ops->graph_destroy(s->hdr.bk, impl);
  weft__event_pool_unfence(x->rt, s);
  steps_free(x, cap);
  capture_free(cap);
  weft__caller_fail(x,
                    weft__err(WEFT_ESTATE,
                              "weft_graph_begin: the capture was never ended "
                              "(%s); it was dropped",
                              why));
}
