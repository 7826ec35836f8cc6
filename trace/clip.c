/* Restricting a trace to the time inside ranges (clip.h). */
#include "clip.h"

#include <stdlib.h>
#include <string.h>

#include "analysis.h"

/* The union of the spans, with the time inside before each (cum[k]: the
 * inside time before u[k]). */
typedef struct inside {
  trace_interval *u;
  double *cum;
  size_t n;
} inside;

/* The last interval starting at or before t, or n when none does. */
static size_t interval_at(const inside *in, double t) {
  size_t lo = 0, hi = in->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (in->u[mid].start <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo ? lo - 1 : in->n;
}

/* t with the time outside the ranges taken out. */
static double closed_up(const inside *in, double t) {
  size_t k = interval_at(in, t);
  double base = in->u[0].start;
  if (k == in->n)
    return base;
  if (t <= in->u[k].end)
    return base + in->cum[k] + (t - in->u[k].start);
  return base + in->cum[k + 1];
}

static int in_range(const inside *in, double t) {
  size_t k = interval_at(in, t);
  return k < in->n && t <= in->u[k].end;
}

/* Renumbers the lanes (GPU: gpu, else threads) that kept ops, dropping the
 * others; map has room for every old lane. */
static void drop_empty_lanes(trace_model *m, uint32_t *map, int gpu) {
  size_t n = gpu ? m->ngpu_lanes : m->nthreads, k = 0;
  for (size_t i = 0; i < n; i++) {
    size_t nops = gpu ? m->gpu_lanes[i].nops : m->threads[i].nops;
    map[i] = nops ? (uint32_t)k : TRACE_NO_OP;
    if (!nops)
      continue;
    if (gpu)
      m->gpu_lanes[k++] = m->gpu_lanes[i];
    else
      m->threads[k++] = m->threads[i];
  }
  if (gpu)
    m->ngpu_lanes = k;
  else
    m->nthreads = k;
  for (size_t i = 0; i < m->nops; i++) {
    trace_op *op = &m->ops[i];
    if (trace_op_is_gpu(op) == gpu && op->lane != TRACE_NO_OP)
      op->lane = map[op->lane];
  }
}

int trace_model_clip(trace_model *m, const char *name, trace_clip_info *info) {
  size_t n = 0;
  for (size_t i = 0; i < m->nops; i++)
    n += m->ops[i].kind == TRACE_OP_RANGE &&
         strcmp(trace_model_str(m, m->ops[i].name), name) == 0;
  if (n == 0)
    return 1;
  size_t lanes = m->ngpu_lanes > m->nthreads ? m->ngpu_lanes : m->nthreads;
  inside in = {malloc(n * sizeof *in.u), malloc((n + 1) * sizeof *in.cum), 0};
  uint32_t *map = malloc((m->nops + lanes + 1) * sizeof *map);
  if (!in.u || !in.cum || !map) {
    free(in.u);
    free(in.cum);
    free(map);
    return -1;
  }
  for (size_t i = 0; i < m->nops; i++) {
    const trace_op *op = &m->ops[i];
    if (op->kind == TRACE_OP_RANGE &&
        strcmp(trace_model_str(m, op->name), name) == 0)
      in.u[in.n++] = (trace_interval){op->ts, op->ts + op->dur};
  }
  info->ranges = n;
  info->start = in.u[0].start; /* ops are in time order */
  in.n = trace_intervals_union(in.u, in.n);
  in.cum[0] = 0;
  for (size_t k = 0; k < in.n; k++)
    in.cum[k + 1] = in.cum[k] + (in.u[k].end - in.u[k].start);
  info->inside = in.cum[in.n];
  if (in.n == 0) { /* ranges of no duration: nothing is inside them */
    in.u[0] = (trace_interval){info->start, info->start};
    in.cum[1] = 0;
    in.n = 1;
  }

  /* Keep the ops inside, mapped; map: old index -> new. Mapping keeps
   * the time order. */
  size_t k = 0;
  for (size_t i = 0; i < m->nops; i++) {
    trace_op op = m->ops[i];
    double s = closed_up(&in, op.ts), e = closed_up(&in, op.ts + op.dur);
    int keep = op.dur > 0 ? e > s : in_range(&in, op.ts);
    map[i] = keep ? (uint32_t)k : TRACE_NO_OP;
    if (!keep)
      continue;
    op.ts = s;
    op.dur = e > s ? e - s : 0;
    m->ops[k++] = op;
  }
  m->nops = k;
  /* The implicit syncs and stream waits, on the same closed-up times. */
  for (size_t i = 0; i < m->nsyncs; i++) {
    m->syncs[i].start = closed_up(&in, m->syncs[i].start);
    m->syncs[i].end = closed_up(&in, m->syncs[i].end);
  }
  for (size_t i = 0; i < m->nswaits; i++) {
    m->swaits[i].ts = closed_up(&in, m->swaits[i].ts);
    m->swaits[i].recorded = closed_up(&in, m->swaits[i].recorded);
  }
  memset(m->count, 0, sizeof m->count);
  for (size_t i = 0; i < m->ngpu_lanes; i++)
    m->gpu_lanes[i].nops = 0;
  for (size_t i = 0; i < m->nthreads; i++)
    m->threads[i].nops = 0;
  for (size_t i = 0; i < m->nops; i++) {
    trace_op *op = &m->ops[i];
    m->count[op->kind]++;
    if (trace_op_is_gpu(op)) {
      m->gpu_lanes[op->lane].nops++;
      if (op->launch != TRACE_NO_OP)
        op->launch = map[op->launch];
    } else if (op->lane != TRACE_NO_OP) {
      m->threads[op->lane].nops++;
    }
  }
  drop_empty_lanes(m, map, 1);
  drop_empty_lanes(m, map, 0);
  free(in.u);
  free(in.cum);
  free(map);
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

size_t trace_range_names(const trace_model *m, char *out, size_t size) {
  size_t n = m->count[TRACE_OP_RANGE], k = 0, distinct = 0, o = 0;
  const char **v = n ? malloc(n * sizeof *v) : NULL;
  if (size)
    out[0] = '\0';
  if (!v)
    return 0;
  for (size_t i = 0; i < m->nops; i++)
    if (m->ops[i].kind == TRACE_OP_RANGE && k < n)
      v[k++] = trace_model_str(m, m->ops[i].name);
  qsort(v, k, sizeof *v, cmp_str);
  for (size_t i = 0; i < k; i++) {
    if (i && strcmp(v[i], v[i - 1]) == 0)
      continue;
    distinct++;
    size_t len = strlen(v[i]) + 4; /* quotes and ", " */
    if (o + len + 4 >= size) {
      if (o + 4 < size)
        memcpy(out + o, "...", 4);
      o = size;
      continue;
    }
    if (o < size)
      o += (size_t)snprintf(out + o, size - o, "%s'%s'", o ? ", " : "", v[i]);
  }
  free(v);
  return distinct;
}
