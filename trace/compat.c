/* `weft trace check`'s compatibility test (compat.h). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "sort.h"

typedef struct finder {
  FILE *out;
  long found, max;
} finder;

static void problem(finder *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void problem(finder *c, const char *fmt, ...) {
  if (c->found++ >= c->max)
    return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(c->out, fmt, ap);
  va_end(ap);
  fputc('\n', c->out);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static int has(const int64_t *v, size_t n, int64_t id) {
  return bsearch(&id, v, n, sizeof id, cmp_i64) != NULL;
}

/* A runtime call named with CUPTI's version suffix: "_v" and digits. */
static int versioned(const char *name) {
  const char *v = strrchr(name, '_');
  if (!v || v[1] != 'v' || !v[2])
    return 0;
  for (const char *d = v + 2; *d; d++)
    if (*d < '0' || *d > '9')
      return 0;
  return 1;
}

/* "pid P tid T", with the thread's name when the file gives one. */
static void track_label(const trace_model *m, const trace_track *k, char *out,
                        size_t size) {
  char pid[64], tid[64];
  const trace_id *ids[2] = {&k->pid, &k->tid};
  char *bufs[2] = {pid, tid};
  for (int i = 0; i < 2; i++) {
    if (ids[i]->is_str)
      snprintf(bufs[i], 64, "\"%s\"", trace_model_str(m, ids[i]->str));
    else
      snprintf(bufs[i], 64, "%lld", (long long)ids[i]->num);
  }
  const char *name = NULL;
  for (size_t t = 0; t < m->nthreads && !name; t++) {
    const trace_thread *th = &m->threads[t];
    if (th->name && th->pid.is_str == k->pid.is_str &&
        th->tid.is_str == k->tid.is_str &&
        (k->pid.is_str ? th->pid.str == k->pid.str
                       : th->pid.num == k->pid.num) &&
        (k->tid.is_str ? th->tid.str == k->tid.str : th->tid.num == k->tid.num))
      name = trace_model_str(m, th->name);
  }
  if (name)
    snprintf(out, size, "pid %s tid %s (%s)", pid, tid, name);
  else
    snprintf(out, size, "pid %s tid %s", pid, tid);
}

/* Ops by start, then the longer first (Perfetto's order for "X" events
 * of one start: the enclosing one first), then as in the file. */
static int cmp_nesting(const void *pa, const void *pb, const void *ctx) {
  const trace_op *a = &((const trace_model *)ctx)->ops[*(const uint32_t *)pa];
  const trace_op *b = &((const trace_model *)ctx)->ops[*(const uint32_t *)pb];
  if (a->ts != b->ts)
    return a->ts < b->ts ? -1 : 1;
  return (a->dur < b->dur) - (a->dur > b->dur);
}

/* Slices of one (pid, tid) track that overlap without nesting: Perfetto
 * keeps the first and drops the other, so a trace that has them is not
 * drawn whole. A dropped slice is left off the stack, as Perfetto leaves
 * it off the track. */
static int nesting_problems(finder *c, const trace_model *m) {
  size_t n = m->ntracks ? m->ntracks : 1;
  size_t *open = calloc(n, sizeof *open), *caps = calloc(n, sizeof *caps);
  uint32_t **stack = calloc(n, sizeof *stack);
  uint32_t *order = malloc((m->nops ? m->nops : 1) * sizeof *order);
  int rc = open && caps && stack && order ? 0 : -1;
  for (size_t i = 0; rc == 0 && i < m->nops; i++)
    order[i] = (uint32_t)i;
  if (rc == 0 && m->nops)
    rc = trace_sort(order, m->nops, sizeof *order, cmp_nesting, m);
  for (size_t k = 0; rc == 0 && k < m->nops; k++) {
    size_t i = order[k];
    const trace_op *op = &m->ops[i];
    if (op->track >= m->ntracks)
      continue;
    size_t t = op->track;
    double end = op->ts + op->dur;
    while (open[t] && m->ops[stack[t][open[t] - 1]].ts +
                              m->ops[stack[t][open[t] - 1]].dur <=
                          op->ts + 1e-3)
      open[t]--;
    if (open[t]) {
      const trace_op *in = &m->ops[stack[t][open[t] - 1]];
      double in_end = in->ts + in->dur;
      if (end > in_end + 1e-3) {
        char label[256];
        track_label(m, &m->tracks[t], label, sizeof label);
        problem(c,
                "overlap: on track %s, '%s' at %.3f us ends %.3f us after "
                "'%s' (%.3f to %.3f us), which it starts in: Perfetto drops "
                "it",
                label, trace_model_str(m, op->name), op->ts, end - in_end,
                trace_model_str(m, in->name), in->ts, in_end);
        continue;
      }
    }
    if (open[t] == caps[t]) {
      size_t cap = caps[t] ? caps[t] * 2 : 16;
      uint32_t *v = realloc(stack[t], cap * sizeof *v);
      if (!v) {
        rc = -1;
        break;
      }
      stack[t] = v;
      caps[t] = cap;
    }
    stack[t][open[t]++] = (uint32_t)i;
  }
  for (size_t t = 0; stack && t < m->ntracks; t++)
    free(stack[t]);
  free(stack);
  free(caps);
  free(open);
  free(order);
  return rc;
}

int trace_compat_notes(FILE *out, const trace_model *m) {
  if (m->rank >= 0)
    return 0;
  fprintf(out, "note: rank: no \"distributedInfo\": {\"rank\": N} in the "
               "header; HTA reads the file as rank 0 (files read together "
               "need a rank each)\n");
  return 1;
}

long trace_compat_problems(FILE *out, const trace_model *m, long max) {
  finder c = {out, 0, max};
  if (m->bare_array)
    problem(&c, "format: a bare array of events (HTA reads the events of a "
                "top-level object's \"traceEvents\")");
  if (m->wide.count) {
    const trace_wide_id *w = &m->wide;
    char at[64] = "";
    if (w->has_ts)
      snprintf(at, sizeof at, " at %.3f us", w->ts);
    problem(&c,
            "tids: %zu event%s with a pid or tid beyond 32 bits, the first "
            "'%s'%s on pid %lld tid %lld (Perfetto keeps 32 bits: tracks "
            "merge and their slices are dropped)",
            w->count, w->count == 1 ? "" : "s", trace_model_str(m, w->name), at,
            (long long)w->pid, (long long)w->tid);
  }
  if (nesting_problems(&c, m))
    return -1;
  size_t ns = m->nflow_starts, ne = m->nflow_ends;
  int64_t *starts = malloc((ns ? ns : 1) * sizeof *starts);
  int64_t *ends = malloc((ne ? ne : 1) * sizeof *ends);
  if (!starts || !ends) {
    free(starts);
    free(ends);
    return -1;
  }
  if (ns)
    memcpy(starts, m->flow_starts, ns * sizeof *starts);
  if (ne)
    memcpy(ends, m->flow_ends, ne * sizeof *ends);
  qsort(starts, ns, sizeof *starts, cmp_i64);
  qsort(ends, ne, sizeof *ends, cmp_i64);
  for (size_t i = 0; i < m->nops; i++) {
    const trace_op *op = &m->ops[i];
    const char *name = trace_model_str(m, op->name);
    if (op->kind == TRACE_OP_RUNTIME && versioned(name))
      problem(&c,
              "names: API call '%s' at %.3f us carries CUPTI's version "
              "suffix (tools look launches up by the plain CUDA name)",
              name, op->ts);
    if (!trace_op_is_gpu(op) || op->correlation == TRACE_NONE)
      continue;
    if (op->launch == TRACE_NO_OP)
      problem(&c,
              "launch: GPU op '%s' at %.3f us: no API call with its "
              "correlation %lld",
              name, op->ts, (long long)op->correlation);
    else if (!has(starts, ns, op->correlation) ||
             !has(ends, ne, op->correlation))
      problem(&c,
              "flows: GPU op '%s' at %.3f us: no ac2g flow start and end "
              "with id %lld (Perfetto draws no launch arrow)",
              name, op->ts, (long long)op->correlation);
  }
  free(starts);
  free(ends);
  return c.found;
}
