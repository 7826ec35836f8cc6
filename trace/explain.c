/* `weft trace explain`: the causes of lost GPU time (explain.h). Each
 * device is swept once over the moments its operations are issued, start
 * and end; between two such moments the state is fixed, and a stretch is
 * lost when the device runs nothing, or when issued work waits although
 * the device could run it. The rules, in order, are docs/TRACE.md's. */
#include "explain.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "json_write.h"
#include "keymap.h"
#include "sort.h"

#define TRACE_CAUSE_FIELD(cause, name, what) name,
static const char *const cause_names[] = {TRACE_CAUSES(TRACE_CAUSE_FIELD)};
#undef TRACE_CAUSE_FIELD
#define TRACE_CAUSE_FIELD(cause, name, what) what,
static const char *const cause_whats[] = {TRACE_CAUSES(TRACE_CAUSE_FIELD)};
#undef TRACE_CAUSE_FIELD
static const char *const cause_keys[] = {
    "ordered",  "implicit_sync", "one_stream",  "takeover", "host_slow",
    "gpu_full", "hw_queue",      "copy_engine", "weft"};
_Static_assert(sizeof cause_keys / sizeof *cause_keys == TRACE_NCAUSES,
               "one key per cause");

const char *trace_cause_name(trace_cause c) {
  return (unsigned)c < TRACE_NCAUSES ? cause_names[c] : "?";
}
const char *trace_cause_what(trace_cause c) {
  return (unsigned)c < TRACE_NCAUSES ? cause_whats[c] : "?";
}
const char *trace_cause_key(trace_cause c) {
  return (unsigned)c < TRACE_NCAUSES ? cause_keys[c] : "?";
}

/* ---- host calls that hold the whole device ---- */

/* CUDA calls that wait for every stream of the device, or make every
 * stream wait for them (the CUDA programming guide's "implicit
 * synchronization"), as the runtime and driver APIs name them. */
static int is_sync_call(const char *n) {
  static const char *const calls[] = {"cudaDeviceSynchronize",
                                      "cudaMalloc",
                                      "cudaFree",
                                      "cudaMallocHost",
                                      "cudaFreeHost",
                                      "cudaHostAlloc",
                                      "cudaMemcpy",
                                      "cudaMemset",
                                      "cudaMemcpy2D",
                                      "cudaMemcpyToSymbol",
                                      "cudaMemcpyFromSymbol",
                                      "cudaThreadSynchronize",
                                      "cuCtxSynchronize",
                                      "cuMemAlloc_v2",
                                      "cuMemFree_v2",
                                      "cuMemAllocHost_v2",
                                      "cuMemFreeHost",
                                      "cuMemHostAlloc",
                                      "cuMemcpyHtoD_v2",
                                      "cuMemcpyDtoH_v2",
                                      "cuMemcpy"};
  for (size_t i = 0; i < sizeof calls / sizeof *calls; i++)
    if (strcmp(n, calls[i]) == 0)
      return 1;
  return 0;
}

/* A stretch in which the device was held by host calls: the first call
 * (an op index) or finding (a syncs index) behind it. */
typedef struct held {
  double start, end;
  uint32_t op;
  size_t sync;
} held;

static int cmp_held(const void *a, const void *b, const void *ctx) {
  (void)ctx;
  double x = ((const held *)a)->start, y = ((const held *)b)->start;
  return (x > y) - (x < y);
}

/* The stretches, merged where they overlap, sorted. */
static int holds_of(const trace_model *m, held **out, size_t *nout) {
  held *h = NULL;
  size_t n = 0, cap = 0;
  for (size_t i = 0; i < m->nops; i++) {
    const trace_op *op = &m->ops[i];
    if (op->kind != TRACE_OP_RUNTIME ||
        !is_sync_call(trace_model_str(m, op->name)))
      continue;
    if (trace_grow((void **)&h, &cap, n + 1, sizeof *h))
      goto oom;
    h[n++] = (held){op->ts, op->ts + op->dur, (uint32_t)i, SIZE_MAX};
  }
  for (size_t i = 0; i < m->nsyncs; i++) {
    if (trace_grow((void **)&h, &cap, n + 1, sizeof *h))
      goto oom;
    h[n++] = (held){m->syncs[i].start, m->syncs[i].end, TRACE_NO_OP, i};
  }
  if (trace_sort(h, n, sizeof *h, cmp_held, NULL))
    goto oom;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (k && h[i].start <= h[k - 1].end) {
      if (h[i].end > h[k - 1].end)
        h[k - 1].end = h[i].end;
    } else {
      h[k++] = h[i];
    }
  }
  *out = h;
  *nout = k;
  return 0;
oom:
  free(h);
  return -1;
}

/* The index of the first hold that ends after a (n if none). */
static size_t hold_after(const held *h, size_t n, double a) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (h[mid].end <= a)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* ---- tasks: when the one that issues next was ready, or waiting ---- */

/* Task slices and waits by (task, start), to find the task's state at a
 * moment. */
typedef struct tslice {
  int64_t task;
  double ts;
  uint32_t op;
} tslice;

static int cmp_tslice(const void *a, const void *b, const void *ctx) {
  (void)ctx;
  const tslice *x = a, *y = b;
  if (x->task != y->task)
    return (x->task > y->task) - (x->task < y->task);
  return (x->ts > y->ts) - (x->ts < y->ts);
}

static int slices_of(const trace_model *m, trace_op_kind kind, tslice **out,
                     size_t *nout) {
  tslice *s = NULL;
  size_t n = 0, cap = 0;
  for (size_t i = 0; i < m->nops; i++) {
    const trace_op *op = &m->ops[i];
    if (op->kind != kind || op->task == TRACE_NONE)
      continue;
    if (trace_grow((void **)&s, &cap, n + 1, sizeof *s)) {
      free(s);
      return -1;
    }
    s[n++] = (tslice){op->task, op->ts, (uint32_t)i};
  }
  if (trace_sort(s, n, sizeof *s, cmp_tslice, NULL)) {
    free(s);
    return -1;
  }
  *out = s;
  *nout = n;
  return 0;
}

/* Task's last slice starting at or before t, or NULL. */
static const tslice *slice_at(const tslice *s, size_t n, int64_t task,
                              double t) {
  size_t lo = 0, hi = n; /* the first after (task, t) */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s[mid].task < task || (s[mid].task == task && s[mid].ts <= t))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo > 0 && s[lo - 1].task == task ? &s[lo - 1] : NULL;
}

/* The task an op belongs to: its own, or its launch call's. */
static int64_t task_of(const trace_model *m, const trace_op *op) {
  if (op->task != TRACE_NONE)
    return op->task;
  if (op->launch != TRACE_NO_OP)
    return m->ops[op->launch].task;
  return TRACE_NONE;
}

/* ---- the sweep of one device ---- */

enum { EV_END, EV_ISSUE, EV_START }; /* the order at one moment */

/* Issued ops looked at per stretch: the heap's first, enough for any
 * program's queues (a longer queue is behind these anyway). */
enum { PEND_SCAN = 256 };

typedef struct event {
  double t;
  uint32_t op;
  uint8_t type;
} event;

static int cmp_event(const void *a, const void *b, const void *ctx) {
  (void)ctx;
  const event *x = a, *y = b;
  if (x->t != y->t)
    return (x->t > y->t) - (x->t < y->t);
  return (int)x->type - (int)y->type;
}

/* Pending ops: a min-heap by issue time. */
typedef struct heap {
  struct pend {
    double issue;
    uint32_t op;
  } * v;
  size_t n, cap;
} heap;

static int heap_push(heap *h, double issue, uint32_t op) {
  if (trace_grow((void **)&h->v, &h->cap, h->n + 1, sizeof *h->v))
    return -1;
  size_t i = h->n++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (h->v[p].issue <= issue)
      break;
    h->v[i] = h->v[p];
    i = p;
  }
  h->v[i] = (struct pend){issue, op};
  return 0;
}

static void heap_pop(heap *h) {
  struct pend last = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n)
      break;
    if (c + 1 < h->n && h->v[c + 1].issue < h->v[c].issue)
      c++;
    if (last.issue <= h->v[c].issue)
      break;
    h->v[i] = h->v[c];
    i = c;
  }
  if (h->n)
    h->v[i] = last;
}

typedef struct sweep {
  const trace_model *m;
  trace_explanation *e;
  const held *holds;
  size_t nholds;
  const tslice *slices, *waits;
  size_t nslices, nwaits;
  uint8_t *started;               /* per op of the model */
  uint32_t *lane_run, *lane_last; /* per GPU lane: running count, its op */
  /* Streams run in order: an op's place among its lane's ops by start,
   * and per lane how many have started; an op is its stream's next when
   * the two are equal. */
  uint32_t *pos, *lane_started;
  size_t lost_cap;
  const uint32_t *byend; /* the device's ops by end */
  size_t nbyend;
  /* Per GPU lane, from lane_at[l] to lane_at[l + 1]: its ops in stream
   * order (lane_ops) and the recorded waits made on it, by time (dws). */
  uint32_t *lane_ops;
  size_t *lane_at;
  struct dwait *dws;
  size_t *dw_at;
  /* The takeovers, keyed (GPU lane, taker): a task whose stream was
   * taken over waits there behind others' work undeclared. */
  trace_keymap taken;
  /* The device's launch latency (launch_latency), 0 when unknown. */
  double launch_lat;
} sweep;

/* Whether task took lane's stream over. */
static int took_over(const sweep *w, uint32_t lane, int64_t task) {
  return trace_keymap_get(&w->taken, lane, (uint64_t)task, 0) != UINT32_MAX;
}

/* A recorded stream wait (the model's swaits[wait]) with its streams as
 * GPU lanes. */
typedef struct dwait {
  double ts, recorded;
  uint32_t lane, for_lane;
  size_t wait;
} dwait;

/* When op was issued: the end of the call that launched it, or its start
 * when that came first or the call is not in the trace. */
static double issue_of(const trace_model *m, const trace_op *op) {
  double issue = op->ts;
  if (op->launch != TRACE_NO_OP) {
    const trace_op *c = &m->ops[op->launch];
    if (c->ts + c->dur < issue)
      issue = c->ts + c->dur;
  }
  return issue;
}

/* The GPU lane of (device, stream), or TRACE_NO_OP when it ran nothing. */
static uint32_t lane_of(const trace_model *m, int64_t device, int64_t stream) {
  size_t lo = 0, hi = m->ngpu_lanes;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const trace_gpu_lane *g = &m->gpu_lanes[mid];
    if (g->device < device || (g->device == device && g->stream < stream))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < m->ngpu_lanes && m->gpu_lanes[lo].device == device &&
                 m->gpu_lanes[lo].stream == stream
             ? (uint32_t)lo
             : TRACE_NO_OP;
}

static int cmp_dwait(const void *a, const void *b, const void *ctx) {
  (void)ctx;
  const dwait *x = a, *y = b;
  if (x->lane != y->lane)
    return x->lane < y->lane ? -1 : 1;
  return (x->ts > y->ts) - (x->ts < y->ts);
}

/* Fills w->taken from the model's takeovers of streams that ran work. */
static int index_taken(sweep *w) {
  const trace_model *m = w->m;
  for (size_t i = 0; i < m->ntakeovers; i++) {
    const trace_takeover *t = &m->takeovers[i];
    uint32_t lane = lane_of(m, t->device, t->stream);
    if (lane != TRACE_NO_OP && t->task != TRACE_NONE &&
        trace_keymap_put(&w->taken, lane, (uint64_t)t->task, 0, 0) ==
            UINT32_MAX)
      return -1;
  }
  return 0;
}

/* Fills the lanes' ops in stream order and their recorded waits. */
static int index_lanes(sweep *w) {
  const trace_model *m = w->m;
  size_t nl = m->ngpu_lanes, nw = 0;
  w->lane_at = calloc(nl + 1, sizeof *w->lane_at);
  w->dw_at = calloc(nl + 1, sizeof *w->dw_at);
  w->lane_ops = malloc((m->nops ? m->nops : 1) * sizeof *w->lane_ops);
  w->dws = malloc((m->nswaits ? m->nswaits : 1) * sizeof *w->dws);
  if (!w->lane_at || !w->dw_at || !w->lane_ops || !w->dws)
    return -1;
  for (size_t l = 0; l < nl; l++)
    w->lane_at[l + 1] = w->lane_at[l] + m->gpu_lanes[l].nops;
  size_t *fill = w->dw_at; /* borrowed as a cursor, reset below */
  for (size_t i = 0; i < m->nops; i++) {
    const trace_op *op = &m->ops[i];
    if (trace_op_is_gpu(op)) /* the model's ops are sorted by start */
      w->lane_ops[w->lane_at[op->lane] + fill[op->lane]++] = (uint32_t)i;
  }
  memset(fill, 0, (nl + 1) * sizeof *fill);
  for (size_t i = 0; i < m->nswaits; i++) {
    const trace_stream_wait *sw = &m->swaits[i];
    uint32_t l = lane_of(m, sw->device, sw->stream);
    uint32_t f = lane_of(m, sw->for_device, sw->for_stream);
    /* A stream that ran nothing holds nothing back, nor is held. */
    if (l != TRACE_NO_OP && f != TRACE_NO_OP && f != l)
      w->dws[nw++] = (dwait){sw->ts, sw->recorded, l, f, i};
  }
  if (trace_sort(w->dws, nw, sizeof *w->dws, cmp_dwait, NULL))
    return -1;
  for (size_t k = 0; k < nw; k++)
    w->dw_at[w->dws[k].lane + 1]++;
  for (size_t l = 0; l < nl; l++)
    w->dw_at[l + 1] += w->dw_at[l];
  return 0;
}

/* Recorded waits looked at per op: the latest made before it was issued. */
enum { DECL_SCAN = 16 };

/* The op a recorded wait held p for: of the waits made on p's stream
 * before p was issued, the op each awaited (the last of its stream issued
 * by the record) that ended last; TRACE_NO_OP when none. The wait's index
 * in the model goes to *wait. */
static uint32_t declared_for(const sweep *w, uint32_t p, size_t *wait) {
  const trace_model *m = w->m;
  const trace_op *op = &m->ops[p];
  double issue = issue_of(m, op);
  size_t lo = w->dw_at[op->lane], hi = w->dw_at[op->lane + 1];
  while (lo < hi) { /* past the last wait made by p's issue */
    size_t mid = lo + (hi - lo) / 2;
    if (w->dws[mid].ts <= issue)
      lo = mid + 1;
    else
      hi = mid;
  }
  uint32_t best = TRACE_NO_OP;
  double best_end = 0;
  for (size_t k = 0; lo > w->dw_at[op->lane] && k < DECL_SCAN; k++, lo--) {
    const dwait *d = &w->dws[lo - 1];
    size_t a = w->lane_at[d->for_lane], b = w->lane_at[d->for_lane + 1];
    while (a < b) { /* past the last op issued by the record */
      size_t mid = a + (b - a) / 2;
      if (issue_of(m, &m->ops[w->lane_ops[mid]]) <= d->recorded)
        a = mid + 1;
      else
        b = mid;
    }
    if (a == w->lane_at[d->for_lane])
      continue;
    uint32_t o = w->lane_ops[a - 1];
    double end = m->ops[o].ts + m->ops[o].dur;
    if (best == TRACE_NO_OP || end > best_end) {
      best = o;
      best_end = end;
      *wait = d->wait;
    }
  }
  return best;
}

/* Ops that started on an idle device needed to judge its launch latency. */
enum { LAT_MIN = 16 };

/* The device's launch latency into *out: the median time from issue to
 * start of the ops (n of them by start, byts) that started with nothing
 * run on the device since their launch call ended; 0 when fewer than
 * LAT_MIN did. 0, or -1 when out of memory. */
static int launch_latency(const trace_model *m, const uint32_t *byts, size_t n,
                          double *out) {
  *out = 0;
  double *v = malloc(n * sizeof *v);
  if (!v)
    return -1;
  size_t k = 0;
  double ends = -1e300; /* the latest end of the ops started before */
  for (size_t i = 0; i < n; i++) {
    const trace_op *op = &m->ops[byts[i]];
    double issue = issue_of(m, op);
    if (op->launch != TRACE_NO_OP && ends <= issue && op->ts >= issue)
      v[k++] = op->ts - issue;
    if (op->ts + op->dur > ends)
      ends = op->ts + op->dur;
  }
  if (k >= LAT_MIN) {
    qsort(v, k, sizeof *v, trace_cmp_double);
    *out = trace_quantile(v, k, 0.5);
  }
  free(v);
  return 0;
}

/* Whether op o (TRACE_NO_OP: none) is still running at t. */
static int runs_at(const trace_model *m, uint32_t o, double t) {
  return o != TRACE_NO_OP && m->ops[o].ts + m->ops[o].dur > t;
}

/* The op a recorded wait still holds p behind at t (its wait's index in
 * *wait), or TRACE_NO_OP. */
static uint32_t held_by_wait(const sweep *w, uint32_t p, double t,
                             size_t *wait) {
  size_t sw = SIZE_MAX;
  uint32_t by = declared_for(w, p, &sw);
  if (!runs_at(w->m, by, t))
    return TRACE_NO_OP;
  *wait = sw;
  return by;
}

/* What op p most likely waited for: the op of another stream that ended
 * last at or before p started (a dependence ends when its work does). */
static uint32_t waited_for(const sweep *w, uint32_t p) {
  const trace_model *m = w->m;
  const trace_op *op = &m->ops[p];
  size_t lo = 0, hi = w->nbyend; /* the first ending after p's start */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const trace_op *x = &m->ops[w->byend[mid]];
    if (x->ts + x->dur <= op->ts)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (size_t k = 0; lo > 0 && k < 64; k++, lo--)
    if (m->ops[w->byend[lo - 1]].lane != op->lane)
      return w->byend[lo - 1];
  return TRACE_NO_OP;
}

static int cmp_end(const void *a, const void *b, const void *ctx) {
  const trace_model *m = ctx;
  const trace_op *x = &m->ops[*(const uint32_t *)a];
  const trace_op *y = &m->ops[*(const uint32_t *)b];
  double ex = x->ts + x->dur, ey = y->ts + y->dur;
  return (ex > ey) - (ex < ey);
}

static int kernel_class(const trace_op *op) {
  return op->kind != TRACE_OP_MEMCPY;
}

static int add_lost(sweep *w, const trace_lost *l) {
  trace_explanation *e = w->e;
  e->cause[l->cause] += l->end - l->start;
  if (l->idle)
    e->lost_idle += l->end - l->start;
  if (e->nlost) { /* one stretch, cut by moments that changed nothing */
    trace_lost *p = &e->lost_at[e->nlost - 1];
    if (p->cause == l->cause && p->op == l->op && p->device == l->device &&
        p->end == l->start) {
      p->end = l->end;
      p->idle &= l->idle;
      return 0;
    }
  }
  if (trace_grow((void **)&e->lost_at, &w->lost_cap, e->nlost + 1,
                 sizeof *e->lost_at))
    return -1;
  e->lost_at[e->nlost++] = *l;
  e->count[l->cause]++;
  return 0;
}

/* Adds [a, b) of l's device and op with cause c and culprit by, when not
 * empty. */
static int add_piece(sweep *w, const trace_lost *l, double a, double b,
                     trace_cause c, uint32_t by) {
  if (!(b > a))
    return 0;
  trace_lost p = *l;
  p.start = a;
  p.end = b;
  p.cause = (uint8_t)c;
  p.by = by;
  return add_lost(w, &p);
}

/* Idle [a, b) with no host call holding the device, l->op the op that
 * started next: the task that issued l->op splits it: until that task was
 * ready, the host's (or weft's, when the task was waiting for the GPU,
 * which had nothing left); from ready to running, weft's; from then to
 * the call, the host's. */
static int idle_split(sweep *w, const trace_lost *l, double a, double b) {
  if (!(b > a))
    return 0;
  const trace_model *m = w->m;
  const trace_op *n = l->op != TRACE_NO_OP ? &m->ops[l->op] : NULL;
  uint32_t call = n ? n->launch : TRACE_NO_OP;
  int64_t task = n ? task_of(m, n) : TRACE_NONE;
  const tslice *s =
      task == TRACE_NONE
          ? NULL
          : slice_at(w->slices, w->nslices, task,
                     call != TRACE_NO_OP ? m->ops[call].ts : n->ts);
  if (!s)
    return add_piece(w, l, a, b, TRACE_CAUSE_HOST_SLOW, call);
  const trace_op *sl = &m->ops[s->op];
  double run = sl->ts < a ? a : sl->ts > b ? b : sl->ts;
  double ready =
      sl->ready_by != TRACE_READY_NONE ? sl->ts - sl->ready_delay : sl->ts;
  ready = ready < a ? a : ready > run ? run : ready;
  /* Before it was ready: suspended waiting for the GPU, with the device
   * idle, is weft not noticing the completion yet. */
  double waited = a;
  const tslice *wt = slice_at(w->waits, w->nwaits, task, a);
  if (wt) {
    const trace_op *wo = &m->ops[wt->op];
    if (wo->ts + wo->dur > a &&
        strcmp(trace_model_str(m, wo->name), WEFT_TRF_WAIT_GPU) == 0)
      waited = wo->ts + wo->dur < ready ? wo->ts + wo->dur : ready;
  }
  if (add_piece(w, l, a, waited, TRACE_CAUSE_WEFT, wt ? wt->op : TRACE_NO_OP) ||
      add_piece(w, l, waited, ready, TRACE_CAUSE_HOST_SLOW, call) ||
      add_piece(w, l, ready, run, TRACE_CAUSE_WEFT, s->op) ||
      add_piece(w, l, run, b, TRACE_CAUSE_HOST_SLOW, call))
    return -1;
  return 0;
}

/* The device sat idle over [a, b) with nothing issued, l->op the op that
 * started next: implicit synchronisation while a host call held the
 * device, the rest split by idle_split (a short cudaMalloc in a long gap
 * is blamed for its own time only: docs/decisions/tracing.md). */
static int idle_lost(sweep *w, const trace_lost *l, double a, double b) {
  double at = a;
  for (size_t i = hold_after(w->holds, w->nholds, a);
       i < w->nholds && w->holds[i].start < b; i++) {
    const held *h = &w->holds[i];
    double hs = h->start > at ? h->start : at;
    double he = h->end < b ? h->end : b;
    trace_lost p = *l;
    p.sync = h->sync;
    if (idle_split(w, l, at, hs) ||
        add_piece(w, &p, hs, he, TRACE_CAUSE_IMPLICIT_SYNC, h->op))
      return -1;
    at = he;
  }
  return idle_split(w, l, at, b);
}

/* The kernels running on each hardware channel (trace_op.channel) of one
 * device: how many, and the last to start. */
typedef struct channels {
  trace_keymap map; /* channel -> index */
  uint32_t *run, *last;
  size_t n, cap_run, cap_last;
} channels;

static void channels_free(channels *c) {
  trace_keymap_free(&c->map);
  free(c->run);
  free(c->last);
}

/* Counts kernel o (op) starting (delta 1) or ending (-1) on its channel,
 * if the trace names one. 0, or -1 when out of memory. */
static int channel_note(channels *c, const trace_op *op, uint32_t o,
                        int delta) {
  if (!op->channel)
    return 0;
  uint32_t i = trace_keymap_put(&c->map, op->channel, 0, 0, (uint32_t)c->n);
  if (i == UINT32_MAX)
    return -1;
  if (i == c->n) {
    if (trace_grow((void **)&c->run, &c->cap_run, c->n + 1, sizeof *c->run) ||
        trace_grow((void **)&c->last, &c->cap_last, c->n + 1, sizeof *c->last))
      return -1;
    c->run[c->n] = 0;
    c->last[c->n++] = TRACE_NO_OP;
  }
  c->run[i] += (uint32_t)delta;
  if (delta > 0)
    c->last[i] = o;
  return 0;
}

/* A kernel still running on channel ch (the last to start), or
 * TRACE_NO_OP. */
static uint32_t channel_busy(const channels *c, uint32_t ch) {
  uint32_t i = trace_keymap_get(&c->map, ch, 0, 0);
  return i != UINT32_MAX && c->run[i] ? c->last[i] : TRACE_NO_OP;
}

/* Kernels' fills summed past this: the device was full. */
#define FULL 0.999

/* A running kernel's share of the device: its fill, at most all of it. */
static double share(const trace_op *op) { return op->fill < 1 ? op->fill : 1; }

static int sweep_device(sweep *w, int64_t device) {
  const trace_model *m = w->m;
  event *ev = NULL;
  size_t nev = 0, cap = 0;
  uint32_t *byts = NULL, *byend = NULL; /* the device's ops by start */
  size_t nops = 0, ocap = 0;
  heap pend = {0};
  channels ch = {0};
  int rc = -1;
  for (size_t i = 0; i < m->nops; i++) {
    const trace_op *op = &m->ops[i];
    if (!trace_op_is_gpu(op) || m->gpu_lanes[op->lane].device != device)
      continue;
    double issue = issue_of(m, op);
    if (trace_grow((void **)&ev, &cap, nev + 3, sizeof *ev) ||
        trace_grow((void **)&byts, &ocap, nops + 1, sizeof *byts))
      goto out;
    ev[nev++] = (event){issue, (uint32_t)i, EV_ISSUE};
    ev[nev++] = (event){op->ts, (uint32_t)i, EV_START};
    ev[nev++] = (event){op->ts + op->dur, (uint32_t)i, EV_END};
    byts[nops++] = (uint32_t)i; /* the model's ops are sorted by start */
    w->pos[i] = w->lane_started[op->lane]++;
  }
  if (!nops) {
    rc = 0;
    goto out;
  }
  if (trace_sort(ev, nev, sizeof *ev, cmp_event, NULL))
    goto out;
  for (size_t i = 0; i < nops; i++) /* counted places; now count starts */
    w->lane_started[m->ops[byts[i]].lane] = 0;
  byend = malloc(nops * sizeof *byend);
  if (!byend)
    goto out;
  memcpy(byend, byts, nops * sizeof *byend);
  if (trace_sort(byend, nops, sizeof *byend, cmp_end, m))
    goto out;
  w->byend = byend;
  w->nbyend = nops;
  if (launch_latency(m, byts, nops, &w->launch_lat))
    goto out;
  if (w->launch_lat > w->e->launch_latency)
    w->e->launch_latency = w->launch_lat;
  double first = m->ops[byts[0]].ts, last = first;
  for (size_t i = 0; i < nops; i++) {
    const trace_op *op = &m->ops[byts[i]];
    if (op->ts + op->dur > last)
      last = op->ts + op->dur;
  }
  size_t nkern = 0, ncopy[TRACE_COPY_NDIRS] = {0};
  uint32_t kern_by = TRACE_NO_OP, copy_by[TRACE_COPY_NDIRS];
  /* The running kernels' fills (each at most 1), how many run whose fill
   * the trace does not give, and the last to start that filled the
   * device alone. */
  double fill = 0;
  size_t unfilled = 0;
  uint32_t full_by = TRACE_NO_OP;
  uint32_t last_start = TRACE_NO_OP;
  for (int d = 0; d < TRACE_COPY_NDIRS; d++)
    copy_by[d] = TRACE_NO_OP;
  size_t nx = 0; /* byts[nx]: the next op to start */
  /* The host backend runs any ops on its executor threads, as many at
   * once as it has; a GPU, a kernel beside copies, one copy a direction. */
  size_t slots = m->host_backend && m->executors > 0 ? (size_t)m->executors : 0;
  double busy = 0;
  for (size_t i = 0; i < nev;) {
    double t = ev[i].t;
    for (; i < nev && ev[i].t == t; i++) {
      uint32_t o = ev[i].op;
      const trace_op *op = &m->ops[o];
      if (ev[i].type == EV_ISSUE) {
        if (heap_push(&pend, t, o))
          goto out;
      } else if (ev[i].type == EV_START) {
        w->started[o] = 1;
        w->lane_started[op->lane]++;
        last_start = o;
        w->lane_run[op->lane]++;
        w->lane_last[op->lane] = o;
        if (kernel_class(op)) {
          nkern++;
          kern_by = o;
          if (op->fill > 0)
            fill += share(op);
          else
            unfilled++;
          if (op->fill >= FULL)
            full_by = o;
          if (channel_note(&ch, op, o, 1))
            goto out;
        } else {
          ncopy[op->copy]++;
          copy_by[op->copy] = o;
        }
      } else {
        w->lane_run[op->lane]--;
        if (kernel_class(op)) {
          nkern--;
          if (op->fill > 0)
            fill -= share(op);
          else
            unfilled--;
          if (channel_note(&ch, op, o, -1))
            goto out;
        } else {
          ncopy[op->copy]--;
        }
      }
    }
    while (pend.n && w->started[pend.v[0].op])
      heap_pop(&pend);
    while (nx < nops && m->ops[byts[nx]].ts < t)
      nx++;
    if (i == nev || t < first || t >= last)
      continue;
    double b = ev[i].t < last ? ev[i].t : last;
    if (b <= t)
      continue;
    size_t running = nkern;
    for (int d = 0; d < TRACE_COPY_NDIRS; d++)
      running += ncopy[d];
    if (running)
      busy += b - t;
    trace_lost l = {t,           b,           device,   0,       running == 0,
                    TRACE_NO_OP, TRACE_NO_OP, SIZE_MAX, SIZE_MAX};
    int guessed = 0;   /* GPU_FULL below is inferred, not measured */
    double pissue = 0; /* when the op held back was issued */
    if (!pend.n) {
      if (running)
        continue; /* it runs all that was issued */
      l.op = nx < nops ? byts[nx] : TRACE_NO_OP;
      if (idle_lost(w, &l, t, b))
        goto out;
      continue;
    } else {
      /* The issued op most held back: free to run (its stream and an
       * engine free), else behind its own stream with an engine free,
       * else on a free stream with its engine full, else the same but
       * held by a recorded wait too (the order, not the engine, is then
       * what holds it); earliest issued first. Behind its own stream
       * with its engine full is no loss. */
      int best = 5;
      uint32_t p = TRACE_NO_OP, porder = TRACE_NO_OP; /* what a wait holds */
      size_t pwait = SIZE_MAX;
      for (size_t k = 0; k < pend.n && k < PEND_SCAN; k++) {
        const struct pend *q = &pend.v[k];
        const trace_op *op = &m->ops[q->op];
        /* Behind an earlier op of its stream still waiting: that one's
         * cause is this one's. */
        if (w->started[q->op] || w->pos[q->op] != w->lane_started[op->lane])
          continue;
        int room = slots > 0          ? running < slots
                   : kernel_class(op) ? nkern == 0
                                      : ncopy[op->copy] == 0;
        int rank = room ? (w->lane_run[op->lane] ? 1 : 0)
                        : (w->lane_run[op->lane] ? 4 : 2);
        uint32_t order = TRACE_NO_OP;
        size_t wait = SIZE_MAX;
        if (rank == 2 && best >= 2 &&
            (order = held_by_wait(w, q->op, t, &wait)) != TRACE_NO_OP)
          rank = 3;
        if (rank < best || (rank == best && q->issue < pissue)) {
          best = rank;
          p = q->op;
          pissue = q->issue;
          porder = order;
          pwait = wait;
        }
      }
      if (best == 4 || p == TRACE_NO_OP)
        continue;
      const trace_op *op = &m->ops[p];
      int kern = kernel_class(op);
      l.op = p;
      /* Free to run, or held only by the engine's work (found in the
       * scan), but for a recorded wait on work still running: the order
       * holds it. */
      if (best == 0)
        porder = held_by_wait(w, p, t, &pwait);
      if (porder != TRACE_NO_OP) {
        l.cause = TRACE_CAUSE_ORDERED;
        l.by = porder;
        l.swait = pwait;
      } else if (best == 1) {
        /* Behind another task's work: weft handed a finished task's
         * stream to the task following it, so the order is declared;
         * unless it took the stream over past those made ahead. */
        l.by = w->lane_last[op->lane];
        int64_t mine = task_of(m, op), theirs = task_of(m, &m->ops[l.by]);
        l.cause = mine == TRACE_NONE || theirs == TRACE_NONE || mine == theirs
                      ? TRACE_CAUSE_ONE_STREAM
                  : took_over(w, op->lane, mine) ? TRACE_CAUSE_TAKEOVER
                                                 : TRACE_CAUSE_ORDERED;
      } else if (best == 2 && (slots || !kern)) {
        l.cause = slots ? TRACE_CAUSE_GPU_FULL : TRACE_CAUSE_COPY_ENGINE;
        l.by = slots ? last_start : copy_by[op->copy];
      } else if (best == 2) {
        /* A kernel on a free stream beside running kernels: full when
         * their fills say so; else, with a kernel of its hardware channel
         * running, held in that queue; else its blocks did not fit beside
         * theirs (or the trace cannot tell). */
        uint32_t q = op->channel ? channel_busy(&ch, op->channel) : TRACE_NO_OP;
        if (!unfilled && fill >= FULL) {
          l.cause = TRACE_CAUSE_GPU_FULL;
          l.by = runs_at(m, full_by, t) ? full_by : kern_by;
        } else if (q != TRACE_NO_OP) {
          l.cause = TRACE_CAUSE_HW_QUEUE;
          l.by = q;
        } else {
          l.cause = TRACE_CAUSE_GPU_FULL;
          l.by = kern_by;
          guessed = 1;
        }
      } else {
        /* Its stream free, room for it, no recorded wait holding it
         * (above): held by another stream's work that ended as it
         * started (a wait the trace does not show, inferred); or, once
         * that had ended, by the launch path. */
        uint32_t by = waited_for(w, p);
        if (runs_at(m, by, t)) {
          /* In a weft trace (which records every wait weft makes) the
           * device ran the two streams' work one after the other. */
          l.cause =
              !m->weft_header ? TRACE_CAUSE_ORDERED : TRACE_CAUSE_GPU_FULL;
          l.by = by;
          guessed = m->weft_header;
        } else if (running) {
          /* Held while the device ran other work: past the launch path's
           * time (below), by the device (an engine or an executor the
           * counts above do not see), not by the host. */
          uint32_t r = last_start;
          if (!runs_at(m, r, t))
            r = kern_by;
          for (int d = 0; d < TRACE_COPY_NDIRS && !runs_at(m, r, t); d++)
            r = copy_by[d];
          /* An earlier start still running: its lane's last started. */
          for (size_t ln = 0; ln < m->ngpu_lanes && !runs_at(m, r, t); ln++)
            if (w->lane_run[ln])
              r = w->lane_last[ln];
          l.cause = TRACE_CAUSE_GPU_FULL;
          l.by = runs_at(m, r, t) ? r : TRACE_NO_OP;
          guessed = 1;
        } else {
          l.cause = TRACE_CAUSE_HOST_SLOW;
          l.by = op->launch;
        }
      }
    }
    /* A device taken as full without the launch records to prove it:
     * until the op is as old as the device's launch latency, it is on
     * the launch path, as on an idle device (docs/decisions/tracing.md,
     * "Launch latency on a busy device"). */
    double launched = guessed ? pissue + w->launch_lat : t;
    if (launched > t) {
      trace_lost h = l;
      h.end = launched < b ? launched : b;
      h.cause = TRACE_CAUSE_HOST_SLOW;
      h.by = m->ops[l.op].launch;
      if (add_lost(w, &h))
        goto out;
      l.start = h.end;
    }
    if (l.end > l.start && add_lost(w, &l))
      goto out;
  }
  if (!w->e->ndevices || first < w->e->t0)
    w->e->t0 = first;
  w->e->span += last - first;
  w->e->busy += busy;
  w->e->ndevices++;
  rc = 0;
out:
  free(ev);
  free(byts);
  free(byend);
  free(pend.v);
  channels_free(&ch);
  return rc;
}

static int cmp_lost(const void *a, const void *b, const void *ctx) {
  (void)ctx;
  const trace_lost *x = a, *y = b;
  if (x->cause != y->cause)
    return (int)x->cause - (int)y->cause;
  double dx = x->end - x->start, dy = y->end - y->start;
  if (dx != dy)
    return (dx < dy) - (dx > dy);
  return (x->start > y->start) - (x->start < y->start);
}

/* How many host threads (tracks) made the launch calls of the GPU ops
 * into *out. 0, or -1 when out of memory. */
static int issuers_of(const trace_model *m, int *out) {
  *out = 0;
  uint32_t *v = malloc((m->nops ? m->nops : 1) * sizeof *v);
  if (!v)
    return -1;
  size_t n = 0;
  for (size_t i = 0; i < m->nops; i++) {
    const trace_op *op = &m->ops[i];
    if (trace_op_is_gpu(op) && op->launch != TRACE_NO_OP)
      v[n++] = m->ops[op->launch].track;
  }
  qsort(v, n, sizeof *v, trace_cmp_u32);
  int k = 0;
  for (size_t i = 0; i < n; i++)
    k += !i || v[i] != v[i - 1];
  free(v);
  *out = k;
  return 0;
}

int trace_explain(const trace_model *m, trace_explanation *e) {
  memset(e, 0, sizeof *e);
  e->top = -1;
  sweep w = {.m = m, .e = e};
  int rc = -1;
  w.started = calloc(m->nops ? m->nops : 1, 1);
  w.lane_run = calloc(m->ngpu_lanes ? m->ngpu_lanes : 1, sizeof *w.lane_run);
  w.lane_last = calloc(m->ngpu_lanes ? m->ngpu_lanes : 1, sizeof *w.lane_last);
  w.lane_started =
      calloc(m->ngpu_lanes ? m->ngpu_lanes : 1, sizeof *w.lane_started);
  w.pos = calloc(m->nops ? m->nops : 1, sizeof *w.pos);
  held *holds = NULL;
  tslice *slices = NULL, *waits = NULL;
  if (!w.started || !w.lane_run || !w.lane_last || !w.lane_started || !w.pos ||
      holds_of(m, &holds, &w.nholds) ||
      slices_of(m, TRACE_OP_TASK, &slices, &w.nslices) ||
      slices_of(m, TRACE_OP_WAIT, &waits, &w.nwaits) || index_lanes(&w) ||
      index_taken(&w))
    goto out;
  w.holds = holds;
  w.slices = slices;
  w.waits = waits;
  /* The devices, in the lanes' order (sorted by device). */
  for (size_t i = 0; i < m->ngpu_lanes; i++) {
    if (i && m->gpu_lanes[i].device == m->gpu_lanes[i - 1].device)
      continue;
    if (sweep_device(&w, m->gpu_lanes[i].device))
      goto out;
  }
  if (trace_sort(e->lost_at, e->nlost, sizeof *e->lost_at, cmp_lost, NULL))
    goto out;
  e->idle = e->span - e->busy;
  for (int c = 0; c < TRACE_NCAUSES; c++) {
    e->lost += e->cause[c];
    if (e->cause[c] > 0 && (e->top < 0 || e->cause[c] > e->cause[e->top]))
      e->top = c;
  }
  /* Bounded: a hostile trace's ratio must not overflow the int. */
  double fill = e->busy > 0 ? ceil(e->span / e->busy - 1e-9) : 0;
  e->tasks_to_fill = fill < 1e6 ? (int)fill : 1000000;
  if (issuers_of(m, &e->issuers))
    goto out;
  rc = 0;
out:
  free(w.started);
  free(w.lane_run);
  free(w.lane_last);
  free(w.lane_started);
  free(w.pos);
  free(w.lane_ops);
  free(w.lane_at);
  free(w.dws);
  free(w.dw_at);
  trace_keymap_free(&w.taken);
  free(holds);
  free(slices);
  free(waits);
  return rc;
}

void trace_explanation_free(trace_explanation *e) {
  free(e->lost_at);
  memset(e, 0, sizeof *e);
}

/* ---- printing ---- */

static double pct(double part, double whole) {
  return whole > 0 ? 100.0 * part / whole : 0;
}

/* "'name' of task 'T' (id N)" for an op, into out. */
static void describe(const trace_model *m, uint32_t o, char *out, size_t n) {
  if (o == TRACE_NO_OP) {
    snprintf(out, n, "nothing the trace shows");
    return;
  }
  const trace_op *op = &m->ops[o];
  int64_t task = task_of(m, op);
  uint32_t tn = op->task_name;
  if (!tn && op->launch != TRACE_NO_OP)
    tn = m->ops[op->launch].task_name;
  const char *name = trace_model_str(m, op->name);
  if (task == TRACE_NONE)
    snprintf(out, n, "%s '%s'", trace_op_kind_name(op->kind), name);
  else
    snprintf(out, n, "%s '%s' of task '%s' (id %lld)",
             trace_op_kind_name(op->kind), name,
             tn ? trace_model_str(m, tn) : "?", (long long)task);
}

/* One line on what held l, into out. */
static void evidence(const trace_model *m, const trace_lost *l, double t0,
                     char *out, size_t n) {
  char a[256], b[256];
  describe(m, l->op, a, sizeof a);
  describe(m, l->by, b, sizeof b);
  const trace_op *by = l->by != TRACE_NO_OP ? &m->ops[l->by] : NULL;
  switch ((trace_cause)l->cause) {
  case TRACE_CAUSE_ORDERED:
    if (by && l->swait != SIZE_MAX) {
      const trace_stream_wait *sw = &m->swaits[l->swait];
      char who[64] = "";
      if (sw->task != TRACE_NONE)
        snprintf(who, sizeof who, " by task %lld", (long long)sw->task);
      snprintf(out, n,
               "%s, issued, waited for %s, which ended at %.3f ms (a stream "
               "wait made%s at %.3f ms)",
               a, b, (by->ts + by->dur - t0) / 1e3, who, (sw->ts - t0) / 1e3);
    } else if (by)
      snprintf(out, n, "%s, issued, waited for %s, which ended at %.3f ms", a,
               b, (by->ts + by->dur - t0) / 1e3);
    else
      snprintf(out, n, "%s, issued, waited for another stream", a);
    break;
  case TRACE_CAUSE_IMPLICIT_SYNC:
    if (l->sync != SIZE_MAX)
      snprintf(out, n, "%.200s", trace_model_str(m, m->syncs[l->sync].message));
    else
      snprintf(out, n, "%s held every stream for %.3f ms%s", b,
               by ? by->dur / 1e3 : 0,
               by && l->end - l->start > by->dur * 1.001
                   ? ", other such calls overlapping it"
                   : "");
    break;
  case TRACE_CAUSE_ONE_STREAM:
    snprintf(out, n, "%s waited behind %s on its stream", a, b);
    break;
  case TRACE_CAUSE_TAKEOVER:
    snprintf(out, n,
             "%s waited behind %s on a stream weft took over (past the "
             "streams made ahead, WEFT_STREAMS)",
             a, b);
    break;
  case TRACE_CAUSE_HOST_SLOW:
    if (!l->idle || (by && by->ts + by->dur <= l->start))
      snprintf(out, n,
               "%s, issued by %.3f ms, had nothing to wait for and "
               "had not started (launch latency)",
               a, by ? (by->ts + by->dur - t0) / 1e3 : (l->start - t0) / 1e3);
    else if (by)
      snprintf(out, n,
               "nothing issued until %s (called at %.3f ms, returned at "
               "%.3f ms), for %s",
               b, (by->ts - t0) / 1e3, (by->ts + by->dur - t0) / 1e3, a);
    else
      snprintf(out, n, "nothing issued until %s started", a);
    break;
  case TRACE_CAUSE_GPU_FULL:
    if (by && by->fill >= FULL)
      snprintf(out, n,
               "%s waited while %s filled every SM (%.1f times the blocks "
               "the device holds at once)",
               a, b, by->fill);
    else
      snprintf(out, n, "%s waited while %s ran", a, b);
    break;
  case TRACE_CAUSE_HW_QUEUE:
    if (by)
      snprintf(out, n,
               "%s waited behind %s in hardware channel %u, the device not "
               "full",
               a, b, by->channel - 1);
    else
      snprintf(out, n, "%s waited in its hardware channel", a);
    break;
  case TRACE_CAUSE_COPY_ENGINE:
    snprintf(out, n, "%s waited behind %s", a, b);
    break;
  case TRACE_CAUSE_WEFT:
    if (by && by->kind == TRACE_OP_WAIT)
      snprintf(out, n,
               "the task that issued %s waited for the GPU until %.3f ms "
               "with nothing running",
               a, (by->ts + by->dur - t0) / 1e3);
    else if (by)
      snprintf(out, n,
               "the task that issued %s was ready (%s) %.3f ms "
               "before it ran",
               a, trace_ready_kind_name((trace_ready_kind)by->ready_by),
               by->ready_delay / 1e3);
    else
      snprintf(out, n, "%s", a);
    break;
  default:
    snprintf(out, n, "%s", a);
  }
}

/* The verdict in one line, into out. */
static void verdict(const trace_explanation *e, char *out, size_t n) {
  if (e->top < 0) {
    snprintf(out, n, "%s",
             e->busy > 0 ? "nothing lost: the GPU ran whenever it had work "
                           "it could run"
                         : "nothing to explain: the GPU ran no work here");
    return;
  }
  double share = pct(e->cause[e->top], e->lost);
  const char *remedy = "";
  char buf[160];
  switch ((trace_cause)e->top) {
  case TRACE_CAUSE_HOST_SLOW:
    if (e->issuers >= 2 && e->issuers >= e->tasks_to_fill)
      snprintf(buf, sizeof buf,
               "; %d threads issued the work already: a graph "
               "(weft_graph_begin/end, then weft_graph_launch) issues it in "
               "one call",
               e->issuers);
    else
      snprintf(buf, sizeof buf,
               "; about %d tasks issuing side by side, or a graph, would "
               "fill it",
               e->tasks_to_fill > 1 ? e->tasks_to_fill : 2);
    remedy = buf;
    break;
  case TRACE_CAUSE_ONE_STREAM:
    remedy = "; work that does not need what runs before it on its "
             "stream would overlap in a task of its own (a stream each)";
    break;
  case TRACE_CAUSE_IMPLICIT_SYNC:
    remedy = "; allocate and free outside the loop, copy from pinned "
             "memory, sync the task's stream only";
    break;
  case TRACE_CAUSE_ORDERED:
    remedy = "; only fewer dependences would overlap more";
    break;
  case TRACE_CAUSE_TAKEOVER:
    remedy = "; more streams made ahead (weft_runtime_opts.streams, "
             "WEFT_STREAMS) for the tasks that hold one at once";
    break;
  case TRACE_CAUSE_GPU_FULL:
    remedy = "; the device ran all it could at once, nothing more could "
             "run beside it";
    break;
  case TRACE_CAUSE_HW_QUEUE:
    remedy = "; more streams than the device has hardware queues "
             "(CUDA_DEVICE_MAX_CONNECTIONS: 8 by default, 32 under weft) "
             "share them: fewer streams at once";
    break;
  case TRACE_CAUSE_COPY_ENGINE:
    remedy = "; copies in one direction share one engine: fewer, larger "
             "copies, or copies in the other direction beside them";
    break;
  case TRACE_CAUSE_WEFT:
    remedy = "; more workers (weft_runtime_opts.workers) or fewer, "
             "longer tasks";
    break;
  default:
    break;
  }
  snprintf(out, n, "%.0f %% of the lost time: %s%s", share,
           trace_cause_name((trace_cause)e->top), remedy);
}

int trace_explain_verdict(const trace_explanation *e, char *out, size_t n) {
  verdict(e, out, n);
  return strlen(out) + 1 < n ? 0 : -1;
}

static int print_text(FILE *f, const trace_model *m, const trace_explanation *e,
                      const trace_explain_opts *o, int top) {
  fprintf(f, "weft trace explain: %s\n", o->source ? o->source : "-");
  fprintf(f,
          "GPU span %.3f ms on %d device%s: busy %.3f ms (%.1f %%), idle "
          "%.3f ms\nlost %.3f ms: %.3f ms with the GPU idle, %.3f ms of "
          "issued work waiting while other work ran\n\n",
          e->span / 1e3, e->ndevices, e->ndevices == 1 ? "" : "s",
          e->busy / 1e3, pct(e->busy, e->span), e->idle / 1e3, e->lost / 1e3,
          e->lost_idle / 1e3, (e->lost - e->lost_idle) / 1e3);
  if (e->launch_latency > 0)
    fprintf(f,
            "launch latency on an idle device %.1f us (median): a kernel's "
            "wait beside others up to it is counted as the host's\n\n",
            e->launch_latency);
  fprintf(f, "times in ms from the first GPU operation\n");
  fprintf(f, "%-28s %10s %8s %9s\n", "cause", "lost ms", "% span", "stretches");
  for (int c = 0; c < TRACE_NCAUSES; c++)
    fprintf(f, "%-28s %10.3f %8.1f %9zu\n", trace_cause_name((trace_cause)c),
            e->cause[c] / 1e3, pct(e->cause[c], e->span), e->count[c]);
  size_t i = 0;
  for (int c = 0; c < TRACE_NCAUSES; c++) {
    int shown = 0;
    for (; i < e->nlost && e->lost_at[i].cause == c; i++) {
      const trace_lost *l = &e->lost_at[i];
      if (shown == top)
        continue;
      if (!shown)
        fprintf(f, "\n%s (%s):\n", trace_cause_name((trace_cause)c),
                trace_cause_what((trace_cause)c));
      char line[640];
      evidence(m, l, e->t0, line, sizeof line);
      /* Under a microsecond in ns, else "+0.000 ms" reads as nothing. */
      double d = l->end - l->start;
      char len[32];
      if (d < 1.0)
        snprintf(len, sizeof len, "+%.0f ns", d * 1e3);
      else
        snprintf(len, sizeof len, "+%.3f ms", d / 1e3);
      fprintf(f, "  %.3f ms %s, device %lld%s: %s\n", (l->start - e->t0) / 1e3,
              len, (long long)l->device, l->idle ? ", GPU idle" : "", line);
      shown++;
    }
  }
  char v[400];
  verdict(e, v, sizeof v);
  fprintf(f, "\nverdict: %s\n", v);
  return 0;
}

static int print_json(FILE *f, const trace_model *m, const trace_explanation *e,
                      const trace_explain_opts *o, int top) {
  fprintf(f, "{\n  \"schema\": \"weft-trace-explain/1\",\n  \"source\": ");
  json_write_string(f, o->source ? o->source : "-");
  fprintf(f, ",\n  \"devices\": %d,\n  \"t0_us\": ", e->ndevices);
  json_write_fixed(f, e->t0, 3);
  fprintf(f, ",\n  \"span_us\": ");
  json_write_fixed(f, e->span, 3);
  fprintf(f, ",\n  \"busy_us\": ");
  json_write_fixed(f, e->busy, 3);
  fprintf(f, ",\n  \"idle_us\": ");
  json_write_fixed(f, e->idle, 3);
  fprintf(f, ",\n  \"lost_us\": ");
  json_write_fixed(f, e->lost, 3);
  fprintf(f, ",\n  \"lost_idle_us\": ");
  json_write_fixed(f, e->lost_idle, 3);
  fprintf(f, ",\n  \"launch_latency_us\": ");
  json_write_fixed(f, e->launch_latency, 3);
  fprintf(f, ",\n  \"causes\": [");
  size_t i = 0;
  for (int c = 0; c < TRACE_NCAUSES; c++) {
    fprintf(f, "%s\n    {\"cause\": \"%s\", \"name\": ", c ? "," : "",
            trace_cause_key((trace_cause)c));
    json_write_string(f, trace_cause_name((trace_cause)c));
    fprintf(f, ", \"lost_us\": ");
    json_write_fixed(f, e->cause[c], 3);
    fprintf(f, ", \"pct_span\": ");
    json_write_fixed(f, pct(e->cause[c], e->span), 2);
    fprintf(f, ", \"stretches\": %zu, \"top\": [", e->count[c]);
    int shown = 0;
    for (; i < e->nlost && e->lost_at[i].cause == c; i++) {
      const trace_lost *l = &e->lost_at[i];
      if (shown == top)
        continue;
      const trace_op *op = l->op != TRACE_NO_OP ? &m->ops[l->op] : NULL;
      int64_t task = op ? task_of(m, op) : TRACE_NONE;
      char line[640];
      evidence(m, l, e->t0, line, sizeof line);
      fprintf(f, "%s\n      {\"start_us\": ", shown ? "," : "");
      json_write_fixed(f, l->start - e->t0, 3);
      fprintf(f, ", \"dur_us\": ");
      json_write_fixed(f, l->end - l->start, 3);
      fprintf(f, ", \"device\": %lld, \"gpu_idle\": %s, \"task\": ",
              (long long)l->device, l->idle ? "true" : "false");
      if (task == TRACE_NONE)
        fprintf(f, "null");
      else
        fprintf(f, "%lld", (long long)task);
      fprintf(f, ", \"op\": ");
      json_write_string(f, op ? trace_model_str(m, op->name) : "");
      fprintf(f, ", \"evidence\": ");
      json_write_string(f, line);
      fprintf(f, "}");
      shown++;
    }
    fprintf(f, "%s]}", shown ? "\n    " : "");
  }
  char v[400];
  verdict(e, v, sizeof v);
  fprintf(f, "\n  ],\n  \"verdict\": {\"cause\": ");
  if (e->top < 0)
    fprintf(f, "null");
  else
    fprintf(f, "\"%s\"", trace_cause_key((trace_cause)e->top));
  fprintf(f, ", \"pct_lost\": ");
  json_write_fixed(f, e->top < 0 ? 0 : pct(e->cause[e->top], e->lost), 2);
  fprintf(f, ", \"tasks_to_fill\": %d, \"issuing_threads\": %d, \"text\": ",
          e->tasks_to_fill, e->issuers);
  json_write_string(f, v);
  fprintf(f, "}\n}\n");
  return 0;
}

int trace_explain_print(FILE *f, const trace_model *m,
                        const trace_explanation *e,
                        const trace_explain_opts *o) {
  int top = o->top > 0 ? o->top : 3;
  int rc = o->json ? print_json(f, m, e, o, top) : print_text(f, m, e, o, top);
  return rc || ferror(f) ? -1 : 0;
}
