/* Reading a measured run's GPU time back from its trace. See traced.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "traced.h"

void bench_trace_path(char *buf, size_t len, const char *tag) {
  const char *dir = getenv("TMPDIR");
  snprintf(buf, len, "%s/weft-bench-%ld-%s.json", dir && *dir ? dir : "/tmp",
           (long)getpid(), tag);
}

static int owned(const trace_model *m, const trace_op *op, const char *prefix) {
  if (!trace_op_is_gpu(op) || op->task_name == 0)
    return 0;
  return strncmp(trace_model_str(m, op->task_name), prefix, strlen(prefix)) ==
         0;
}

static int measure(const trace_model *m, const char *prefix, trace_breakdown *b,
                   trace_interval *all, trace_interval *kern,
                   trace_interval *mem) {
  size_t na = 0, nk = 0, nm = 0;
  for (size_t i = 0; i < m->nops; i++) {
    const trace_op *op = &m->ops[i];
    if (!owned(m, op, prefix))
      continue;
    trace_interval iv = {op->ts, op->ts + op->dur};
    if (b->ops == 0 || iv.start < b->start)
      b->start = iv.start;
    if (b->ops == 0 || iv.end > b->end)
      b->end = iv.end;
    b->ops++;
    all[na++] = iv;
    if (op->kind == TRACE_OP_KERNEL) {
      b->kernels++;
      kern[nk++] = iv;
    } else {
      if (op->kind == TRACE_OP_MEMCPY)
        b->copies++;
      else
        b->memsets++;
      mem[nm++] = iv;
    }
  }
  if (b->ops == 0)
    return -1;
  na = trace_intervals_union(all, na);
  nk = trace_intervals_union(kern, nk);
  nm = trace_intervals_union(mem, nm);
  b->span = b->end - b->start;
  b->busy = trace_intervals_length(all, na);
  b->compute = trace_intervals_length(kern, nk);
  b->memory = trace_intervals_length(mem, nm);
  b->overlap = trace_intervals_intersect(kern, nk, mem, nm, NULL, NULL);
  b->non_compute = b->memory - b->overlap;
  b->idle = b->span - b->busy;
  return 0;
}

int bench_trace_load(bench_ctx *c, const char *path, bench_trace *t) {
  trace_error err;
  t->iv = NULL;
  int rc = trace_model_load_file(&t->m, path, &err);
  unlink(path);
  if (rc != 0)
    return bench_fail(c, "trace %s: %s", path, err.message);
  t->iv = malloc(3 * (t->m.nops ? t->m.nops : 1) * sizeof *t->iv);
  if (!t->iv)
    return bench_fail(c, "out of memory");
  return 0;
}

void bench_trace_free(bench_trace *t) {
  trace_model_free(&t->m);
  free(t->iv);
  t->iv = NULL;
}

int bench_trace_gpu_time(bench_ctx *c, bench_trace *t, const char *prefix,
                         trace_breakdown *out) {
  size_t n = t->m.nops;
  memset(out, 0, sizeof *out);
  out->device = -1;
  if (measure(&t->m, prefix, out, t->iv, t->iv + n, t->iv + 2 * n) != 0)
    return bench_fail(c, "trace: no GPU operation of a task named %s*", prefix);
  return 0;
}
