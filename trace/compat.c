/* `weft trace check`'s compatibility test (compat.h). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"

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

/* Partial overlaps among the slices of each CPU lane (ops are sorted by
 * start, ties in file order: an enclosing slice first when it starts at
 * the same time and was written first). */
static int nesting_problems(finder *c, const trace_model *m) {
  size_t *open = malloc((m->nthreads ? m->nthreads : 1) * sizeof *open);
  double **ends = calloc(m->nthreads ? m->nthreads : 1, sizeof *ends);
  size_t *caps = calloc(m->nthreads ? m->nthreads : 1, sizeof *caps);
  int rc = open && ends && caps ? 0 : -1;
  for (size_t t = 0; rc == 0 && t < m->nthreads; t++)
    open[t] = 0;
  for (size_t i = 0; rc == 0 && i < m->nops; i++) {
    const trace_op *op = &m->ops[i];
    if (trace_op_is_gpu(op) || op->lane == TRACE_NO_OP ||
        op->lane >= m->nthreads)
      continue;
    size_t t = op->lane;
    double end = op->ts + op->dur;
    while (open[t] && ends[t][open[t] - 1] <= op->ts + 1e-3)
      open[t]--;
    if (open[t] && end > ends[t][open[t] - 1] + 1e-3)
      problem(c,
              "nesting: '%s' at %.3f us on thread %zu ends %.3f us after the "
              "slice it starts in",
              trace_model_str(m, op->name), op->ts, t,
              end - ends[t][open[t] - 1]);
    if (open[t] == caps[t]) {
      size_t cap = caps[t] ? caps[t] * 2 : 16;
      double *v = realloc(ends[t], cap * sizeof *v);
      if (!v) {
        rc = -1;
        break;
      }
      ends[t] = v;
      caps[t] = cap;
    }
    ends[t][open[t]++] = end;
  }
  for (size_t t = 0; ends && t < m->nthreads; t++)
    free(ends[t]);
  free(ends);
  free(caps);
  free(open);
  return rc;
}

long trace_compat_problems(FILE *out, const trace_model *m, long max) {
  finder c = {out, 0, max};
  if (m->rank < 0)
    problem(&c, "rank: no \"distributedInfo\": {\"rank\": N} in the header "
                "(HTA reads each file's rank from it)");
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
