/* The trace metrics. Each formula is stated where it is computed; the same
 * text is in docs/TRACE.md. Times are microseconds. Notation: K = the union
 * of kernel intervals, M = the union of copy and memset intervals, |X| = the
 * total length of a set of disjoint intervals. */
#include "analysis.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sort.h"
#include "trace_format.h"

/* ---- interval sets ---------------------------------------------------------
 */

static int cmp_interval(const void *pa, const void *pb) {
  const trace_interval *a = pa, *b = pb;
  if (a->start != b->start)
    return a->start < b->start ? -1 : 1;
  return a->end < b->end ? -1 : a->end > b->end;
}

size_t trace_intervals_union(trace_interval *iv, size_t n) {
  int sorted = 1;
  for (size_t i = 1; i < n && sorted; i++)
    sorted = iv[i - 1].start <= iv[i].start;
  if (!sorted)
    qsort(iv, n, sizeof *iv, cmp_interval);
  size_t out = 0;
  for (size_t i = 0; i < n; i++) {
    if (!(iv[i].end > iv[i].start))
      continue; /* empty: adds no time */
    /* Touching intervals merge too: [0,10) and [10,20) are one busy run. */
    if (out > 0 && iv[i].start <= iv[out - 1].end) {
      if (iv[i].end > iv[out - 1].end)
        iv[out - 1].end = iv[i].end;
    } else {
      iv[out++] = iv[i];
    }
  }
  return out;
}

double trace_intervals_length(const trace_interval *iv, size_t n) {
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += iv[i].end - iv[i].start;
  return sum;
}

double trace_intervals_intersect(const trace_interval *a, size_t na,
                                 const trace_interval *b, size_t nb,
                                 trace_interval *out, size_t *nout) {
  size_t i = 0, k = 0, n = 0;
  double sum = 0;
  while (i < na && k < nb) {
    double s = a[i].start > b[k].start ? a[i].start : b[k].start;
    double e = a[i].end < b[k].end ? a[i].end : b[k].end;
    if (e > s) {
      sum += e - s;
      if (out)
        out[n++] = (trace_interval){s, e};
    }
    /* Advance the list whose interval ends first. */
    if (a[i].end < b[k].end)
      i++;
    else
      k++;
  }
  if (nout)
    *nout = n;
  return sum;
}

double trace_pct(double part, double whole) {
  return whole > 0 ? 100.0 * part / whole : -1;
}

/* ---- temporal breakdown ----------------------------------------------------
 */

/* Fills b from the GPU ops of one device (device >= 0) or of all (-1). K and
 * M are scratch arrays with room for every GPU op; when overlap is given it
 * receives K ∩ M (room for as many intervals). */
static void breakdown(const trace_model *m, int64_t device, trace_breakdown *b,
                      trace_interval *K, trace_interval *M,
                      trace_interval *overlap, size_t *noverlap) {
  memset(b, 0, sizeof *b);
  b->device = device;
  size_t nk = 0, nm = 0;
  for (size_t i = 0; i < m->nops; i++) {
    const trace_op *op = &m->ops[i];
    if (!trace_op_is_gpu(op))
      continue;
    if (device >= 0 && m->gpu_lanes[op->lane].device != device)
      continue;
    double end = op->ts + op->dur;
    if (b->ops == 0 || op->ts < b->start)
      b->start = op->ts;
    if (b->ops == 0 || end > b->end)
      b->end = end;
    b->ops++;
    trace_interval iv = {op->ts, end};
    if (op->kind == TRACE_OP_KERNEL) {
      K[nk++] = iv;
      b->kernels++;
    } else {
      M[nm++] = iv;
      if (op->kind == TRACE_OP_MEMCPY)
        b->copies++;
      else
        b->memsets++;
    }
  }
  if (b->ops == 0)
    return;
  nk = trace_intervals_union(K, nk);
  nm = trace_intervals_union(M, nm);
  /* span = last GPU op end - first GPU op start
   * compute = |K|, memory = |M|, overlap = |K ∩ M|
   * busy = |K ∪ M| = |K| + |M| - |K ∩ M|
   * non-compute = |M \ K| = |M| - |K ∩ M|
   * idle = span - busy, so compute + non-compute + idle = span. */
  b->span = b->end - b->start;
  b->compute = trace_intervals_length(K, nk);
  b->memory = trace_intervals_length(M, nm);
  b->overlap = trace_intervals_intersect(K, nk, M, nm, overlap, noverlap);
  b->busy = b->compute + b->memory - b->overlap;
  b->non_compute = b->memory - b->overlap;
  b->idle = b->span - b->busy;
  if (b->idle < 0) /* rounding only */
    b->idle = 0;
}

/* ---- streams: idle gaps and queue length -----------------------------------
 */

typedef struct qevent {
  double t;
  int delta; /* +1 launched, -1 finished */
} qevent;

static int cmp_qevent(const void *pa, const void *pb) {
  const qevent *a = pa, *b = pb;
  if (a->t != b->t)
    return a->t < b->t ? -1 : 1;
  return a->delta - b->delta; /* finishes before launches at one instant */
}

/* The most ops queued at once on a lane, and the time-weighted mean into
 * *mean: queued from the launch call's start to the op's start (HTA), or
 * to the op's end when inflight (weft). q has room for 2n events. */
static long count_queue(const trace_model *m, const uint32_t *ops, size_t n,
                        qevent *q, int inflight, double *mean) {
  double lo = 0, hi = 0, area = 0;
  size_t nq = 0;
  for (size_t i = 0; i < n; i++) {
    const trace_op *op = &m->ops[ops[i]];
    const trace_op *call =
        op->launch != TRACE_NO_OP ? &m->ops[op->launch] : NULL;
    double from = op->ts, to = inflight ? op->ts + op->dur : op->ts;
    if (call && call->ts < op->ts)
      from = call->ts;
    double wfrom = from < op->ts ? from : op->ts;
    if (i == 0 || wfrom < lo)
      lo = wfrom;
    if (i == 0 || op->ts + op->dur > hi)
      hi = op->ts + op->dur;
    if (to <= from)
      continue; /* never queued */
    q[nq++] = (qevent){from, +1};
    q[nq++] = (qevent){to, -1};
    area += to - from;
  }
  qsort(q, nq, sizeof *q, cmp_qevent);
  long depth = 0, most = 0;
  for (size_t i = 0; i < nq; i++) {
    depth += q[i].delta;
    if (depth > most)
      most = depth;
  }
  *mean = hi > lo ? area / (hi - lo) : 0;
  return most;
}

/* ops: the lane's GPU ops in start order. */
static void stream_stats(const trace_model *m, const uint32_t *ops, size_t n,
                         trace_stream_stats *s, qevent *q) {
  const trace_op *first = &m->ops[ops[0]];
  s->ops = n;
  s->start = first->ts;
  double prev_end = first->ts + first->dur; /* latest end so far */
  for (size_t i = 1; i < n; i++) {
    const trace_op *op = &m->ops[ops[i]];
    if (op->ts > prev_end) {
      /* A gap: the stream had nothing running from prev_end to op->ts,
       * split as HTA splits it:
       *   host wait   - op's launch call started after prev_end: the CPU
       *                 had not begun to issue op when the stream ran dry;
       *   kernel wait - otherwise, a gap shorter than TRACE_KERNEL_WAIT_US:
       *                 the cost of launching back to back;
       *   other       - the rest (waits on events, other streams, the
       *                 device), and gaps before ops without a launch call.
       * late_launch, weft's own figure, is the gap time whose op's call
       * ended after prev_end (it started before, but had not returned). */
      double gap = op->ts - prev_end;
      s->gaps++;
      const trace_op *call =
          op->launch != TRACE_NO_OP ? &m->ops[op->launch] : NULL;
      if (call && call->ts > prev_end)
        s->host_wait += gap;
      else if (call && gap < TRACE_KERNEL_WAIT_US)
        s->kernel_wait += gap;
      else
        s->other_wait += gap;
      if (call && call->ts + call->dur > prev_end)
        s->late_launch += gap;
    }
    if (op->ts + op->dur > prev_end)
      prev_end = op->ts + op->dur;
  }
  /* span = last end - first start on this stream; idle = the sum of the
   * gaps; busy = span - idle. */
  s->end = prev_end;
  s->span = s->end - s->start;
  s->idle = s->host_wait + s->kernel_wait + s->other_wait;
  s->busy = s->span - s->idle;

  /* Queue length, as HTA counts it: q(t) = ops launched and not yet
   * started at time t; an op counts from the start of its launch call to
   * its own start (not at all without a call, or when the call began
   * later). weft's in-flight count runs on to the op's end instead (and
   * from the op's start when there is no call).
   *   queue_max  = max q(t); queue_mean = integral of q(t) dt / window,
   *   window = last end - first launch (the same for both counts). */
  s->queue_max = (size_t)count_queue(m, ops, n, q, 0, &s->queue_mean);
  s->inflight_max = (size_t)count_queue(m, ops, n, q, 1, &s->inflight_mean);
  /* Zero-length ops that start as another ends count 0 in flight: any op
   * at all is at least 1 in flight. */
  if (s->inflight_max == 0)
    s->inflight_max = 1;
}

/* ---- kernels, tasks --------------------------------------------------------
 */

/* Kernels by total time, then count, then name (ctx: the model). */
static int cmp_kernel(const void *pa, const void *pb, const void *ctx) {
  const trace_model *m = ctx;
  const trace_kernel_stats *a = pa, *b = pb;
  if (a->total != b->total)
    return a->total > b->total ? -1 : 1;
  if (a->count != b->count)
    return a->count > b->count ? -1 : 1;
  return strcmp(trace_model_str(m, a->name), trace_model_str(m, b->name));
}

/* Op indices by task (ctx: the model); the sort is stable, so each task's
 * ops stay in time order. */
static int cmp_task_op(const void *pa, const void *pb, const void *ctx) {
  const trace_model *m = ctx;
  int64_t ta = m->ops[*(const uint32_t *)pa].task;
  int64_t tb = m->ops[*(const uint32_t *)pb].task;
  return ta < tb ? -1 : ta > tb;
}

static int cmp_task(const void *pa, const void *pb) {
  const trace_task_stats *a = pa, *b = pb;
  if (a->gpu != b->gpu)
    return a->gpu > b->gpu ? -1 : 1;
  if (a->run != b->run)
    return a->run > b->run ? -1 : 1;
  return a->task < b->task ? -1 : a->task > b->task;
}

/* One task's slices (ops[idx[0, n)] of the task, any kinds): its life,
 * from being made ready for its first slice to the end of its last, and
 * the sum of its slices' ready delays. The longest life is kept. */
static void latency_of_task(const trace_model *m, const uint32_t *idx, size_t n,
                            int64_t task, trace_analysis *a) {
  double begin = 0, end = 0, delay = 0;
  int seen = 0, delayed = 0;
  uint32_t name = 0;
  for (size_t i = 0; i < n; i++) {
    const trace_op *op = &m->ops[idx[i]];
    if (op->kind != TRACE_OP_TASK)
      continue;
    double b = op->ts - (op->ready_by ? op->ready_delay : 0);
    if (!seen || b < begin)
      begin = b;
    if (!seen || op->ts + op->dur > end)
      end = op->ts + op->dur;
    seen = 1;
    if (op->ready_by) {
      delayed = 1;
      delay += op->ready_delay;
    }
    if (!name) /* weft names a task's slices after it */
      name = op->task_name ? op->task_name : op->name;
  }
  if (!delayed)
    return;
  if (a->slowest_task == TRACE_NONE || end - begin > a->slowest_life) {
    a->slowest_task = task;
    a->slowest_name = name;
    a->slowest_life = end - begin;
    a->slowest_delay = delay;
  }
}

/* Median, p90, max and total of each kind of ready delay. */
static int latency(const trace_model *m, trace_analysis *a) {
  for (int k = TRACE_READY_SPAWN; k < TRACE_READY_NKINDS; k++) {
    size_t n = 0;
    for (size_t i = 0; i < m->nops; i++)
      n += m->ops[i].kind == TRACE_OP_TASK && m->ops[i].ready_by == k;
    trace_latency_stats *l = &a->latency[k];
    l->count = n;
    a->latency_slices += n;
    if (n == 0)
      continue;
    double *d = malloc(n * sizeof *d);
    if (!d)
      return -1;
    size_t j = 0;
    for (size_t i = 0; i < m->nops; i++)
      if (m->ops[i].kind == TRACE_OP_TASK && m->ops[i].ready_by == k) {
        d[j++] = m->ops[i].ready_delay;
        l->total += m->ops[i].ready_delay;
      }
    qsort(d, n, sizeof *d, trace_cmp_double);
    l->median = trace_quantile(d, n, 0.5);
    l->p90 = trace_quantile(d, n, 0.9);
    l->max = d[n - 1];
    free(d);
  }
  return 0;
}

static int tasks(const trace_model *m, trace_analysis *a) {
  size_t n = 0;
  for (size_t i = 0; i < m->nops; i++)
    n += m->ops[i].task != TRACE_NONE;
  if (n == 0)
    return 0;
  uint32_t *idx = malloc(n * sizeof *idx);
  if (!idx)
    return -1;
  n = 0;
  for (size_t i = 0; i < m->nops; i++)
    if (m->ops[i].task != TRACE_NONE)
      idx[n++] = (uint32_t)i;
  if (trace_sort(idx, n, sizeof *idx, cmp_task_op, m)) {
    free(idx);
    return -1;
  }
  size_t ntasks = 1;
  for (size_t i = 1; i < n; i++)
    ntasks += m->ops[idx[i]].task != m->ops[idx[i - 1]].task;
  a->tasks = calloc(ntasks, sizeof *a->tasks);
  a->task_streams = malloc(n * sizeof *a->task_streams);
  if (!a->tasks || !a->task_streams) {
    free(idx);
    return -1;
  }
  size_t nstreams = 0;
  for (size_t i = 0; i < n;) {
    trace_task_stats *t = &a->tasks[a->ntasks++];
    size_t first = i;
    t->task = m->ops[idx[i]].task;
    t->streams_at = nstreams;
    uint32_t other_name = 0;
    for (; i < n && m->ops[idx[i]].task == t->task; i++) {
      const trace_op *op = &m->ops[idx[i]];
      /* Per task: run = sum of its "task" span durations, wait = sum of its
       * "weft_wait" span durations, GPU = sum of its GPU ops' durations. */
      if (op->kind == TRACE_OP_TASK) {
        t->slices++;
        t->run += op->dur;
        if (!t->name && op->task_name)
          t->name = op->task_name;
      } else if (op->kind == TRACE_OP_WAIT) {
        t->waits++;
        t->wait += op->dur;
        if (!strcmp(trace_model_str(m, op->name), WEFT_TRF_WAIT_EXTERNAL))
          t->ext_wait += op->dur;
      } else if (trace_op_is_gpu(op)) {
        t->gpu_ops++;
        t->gpu += op->dur;
        a->task_streams[nstreams++] = op->lane;
      }
      if (!other_name && op->task_name)
        other_name = op->task_name;
    }
    if (!t->name)
      t->name = other_name;
    latency_of_task(m, idx + first, i - first, t->task, a);
    /* The distinct lanes it used. */
    size_t k = nstreams - t->streams_at;
    uint32_t *s = a->task_streams + t->streams_at;
    qsort(s, k, sizeof *s, trace_cmp_u32);
    size_t u = 0;
    for (size_t j = 0; j < k; j++)
      if (u == 0 || s[j] != s[u - 1])
        s[u++] = s[j];
    t->nstreams = u;
    nstreams = t->streams_at + u;
  }
  free(idx);
  qsort(a->tasks, a->ntasks, sizeof *a->tasks, cmp_task);
  return 0;
}

/* ---- everything ------------------------------------------------------------
 */

static int cmp_i64(const void *pa, const void *pb) {
  int64_t x = *(const int64_t *)pa, y = *(const int64_t *)pb;
  return (x > y) - (x < y);
}

static int graphs(const trace_model *m, trace_analysis *a) {
  trace_graph_stats *g = &a->graph;
  int64_t *ids = NULL;
  for (size_t i = 0; i < m->nops; i++) {
    const trace_op *op = &m->ops[i];
    if (op->kind == TRACE_OP_RUNTIME &&
        strcmp(trace_model_str(m, op->name), "cudaGraphLaunch") == 0)
      g->launches++;
    if (trace_op_is_gpu(op) && op->graph != TRACE_NONE) {
      if (!ids && !(ids = malloc(m->nops * sizeof *ids)))
        return -1;
      ids[g->ops++] = op->graph;
      g->kernels += op->kind == TRACE_OP_KERNEL;
    }
  }
  if (g->ops) {
    qsort(ids, g->ops, sizeof *ids, cmp_i64);
    for (size_t i = 0; i < g->ops; i++)
      g->graphs += i == 0 || ids[i] != ids[i - 1];
  }
  free(ids);
  return 0;
}

int trace_analyze(const trace_model *m, trace_analysis *a) {
  memset(a, 0, sizeof *a);
  int rc = -1;
  size_t ngpu = 0;
  for (size_t i = 0; i < m->nops; i++)
    ngpu += trace_op_is_gpu(&m->ops[i]);
  a->gpu_ops = ngpu;
  a->all.device = -1;
  a->slowest_task = TRACE_NONE;
  if (tasks(m, a) || latency(m, a) || graphs(m, a))
    return -1;
  if (ngpu == 0)
    return 0;

  trace_interval *K = malloc(ngpu * sizeof *K);
  trace_interval *M = malloc(ngpu * sizeof *M);
  uint32_t *lane_at = calloc(m->ngpu_lanes + 1, sizeof *lane_at);
  uint32_t *lane_ops = malloc(ngpu * sizeof *lane_ops);
  uint32_t *kernel_of = NULL, *fill = NULL;
  double *delays = malloc(ngpu * sizeof *delays);
  qevent *q = NULL;
  a->overlap = malloc(ngpu * sizeof *a->overlap);
  a->streams = calloc(m->ngpu_lanes, sizeof *a->streams);
  if (!K || !M || !lane_at || !lane_ops || !delays || !a->overlap ||
      !a->streams)
    goto out;

  /* Breakdown: all devices, then each device (lanes are sorted by device). */
  breakdown(m, -1, &a->all, K, M, a->overlap, &a->noverlap);
  size_t ndev = 0;
  for (size_t l = 0; l < m->ngpu_lanes; l++)
    ndev += l == 0 || m->gpu_lanes[l].device != m->gpu_lanes[l - 1].device;
  a->devices = calloc(ndev, sizeof *a->devices);
  if (!a->devices)
    goto out;
  for (size_t l = 0; l < m->ngpu_lanes; l++)
    if (l == 0 || m->gpu_lanes[l].device != m->gpu_lanes[l - 1].device)
      breakdown(m, m->gpu_lanes[l].device, &a->devices[a->ndevices++], K, M,
                NULL, NULL);

  /* Streams: each lane's ops, in start order, by counting sort. */
  for (size_t i = 0; i < m->nops; i++)
    if (trace_op_is_gpu(&m->ops[i]))
      lane_at[m->ops[i].lane + 1]++;
  size_t most = 0;
  for (size_t l = 0; l < m->ngpu_lanes; l++) {
    if (lane_at[l + 1] > most)
      most = lane_at[l + 1];
    lane_at[l + 1] += lane_at[l];
  }
  fill = malloc(m->ngpu_lanes * sizeof *fill);
  if (!fill)
    goto out;
  memcpy(fill, lane_at, m->ngpu_lanes * sizeof *fill);
  for (size_t i = 0; i < m->nops; i++)
    if (trace_op_is_gpu(&m->ops[i]))
      lane_ops[fill[m->ops[i].lane]++] = (uint32_t)i;
  q = malloc(2 * most * sizeof *q);
  if (!q)
    goto out;
  a->nstreams = m->ngpu_lanes;
  for (size_t l = 0; l < m->ngpu_lanes; l++) {
    trace_stream_stats *s = &a->streams[l];
    s->lane = (uint32_t)l;
    size_t n = lane_at[l + 1] - lane_at[l];
    if (n == 0)
      continue;
    stream_stats(m, lane_ops + lane_at[l], n, s, q);
    a->host_wait += s->host_wait;
    a->kernel_wait += s->kernel_wait;
    a->other_wait += s->other_wait;
    a->stream_idle += s->idle;
  }

  /* Kernels by name; copies by direction; launch delays. */
  kernel_of = malloc(m->nstrings * sizeof *kernel_of);
  a->kernels = malloc((m->count[TRACE_OP_KERNEL] + 1) * sizeof *a->kernels);
  if (!kernel_of || !a->kernels)
    goto out;
  memset(kernel_of, 0xFF, m->nstrings * sizeof *kernel_of);
  size_t ndelays = 0;
  for (size_t i = 0; i < m->nops; i++) {
    const trace_op *op = &m->ops[i];
    if (!trace_op_is_gpu(op))
      continue;
    if (op->kind == TRACE_OP_KERNEL) {
      uint32_t k = kernel_of[op->name];
      if (k == UINT32_MAX) {
        k = kernel_of[op->name] = (uint32_t)a->nkernels++;
        a->kernels[k] = (trace_kernel_stats){
            .name = op->name, .min = op->dur, .max = op->dur};
      }
      trace_kernel_stats *ks = &a->kernels[k];
      ks->count++;
      ks->total += op->dur;
      if (op->dur < ks->min)
        ks->min = op->dur;
      if (op->dur > ks->max)
        ks->max = op->dur;
    } else {
      /* Achieved bandwidth per row = sum(bytes) / sum(dur) over the ops
       * that gave bytes: GB/s = bytes / (us * 1e3). */
      trace_copy_stats *c =
          &a->copies[op->kind == TRACE_OP_MEMSET ? TRACE_COPY_ROW_MEMSET
                                                 : op->copy];
      c->count++;
      c->total += op->dur;
      if (op->bytes >= 0) {
        c->with_bytes++;
        c->bytes += (double)op->bytes;
        c->total_with_bytes += op->dur;
      }
      c->pageable += op->host_mem == TRACE_MEM_PAGEABLE;
    }
    /* Launch delay = GPU op start - end of its launch call. Negative when
     * the op started before the call returned. */
    if (op->launch != TRACE_NO_OP) {
      const trace_op *call = &m->ops[op->launch];
      double d = op->ts - (call->ts + call->dur);
      a->launch.early += d < 0;
      delays[ndelays++] = d > 0 ? d : 0; /* clipped, as HTA */
    }
  }
  if (trace_sort(a->kernels, a->nkernels, sizeof *a->kernels, cmp_kernel, m))
    goto out;
  a->launch.matched = ndelays;
  a->launch.unmatched = ngpu - ndelays;
  if (ndelays) {
    qsort(delays, ndelays, sizeof *delays, trace_cmp_double);
    a->launch.min = delays[0];
    a->launch.median = trace_quantile(delays, ndelays, 0.5);
    a->launch.p90 = trace_quantile(delays, ndelays, 0.9);
    a->launch.max = delays[ndelays - 1];
  }
  rc = 0;
out:
  free(K);
  free(M);
  free(lane_at);
  free(lane_ops);
  free(kernel_of);
  free(fill);
  free(delays);
  free(q);
  return rc;
}

void trace_analysis_free(trace_analysis *a) {
  free(a->devices);
  free(a->overlap);
  free(a->streams);
  free(a->kernels);
  free(a->tasks);
  free(a->task_streams);
  memset(a, 0, sizeof *a);
}
