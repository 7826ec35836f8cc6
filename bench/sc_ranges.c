/* ranges: what a user range costs with tracing off.
 *
 * A weft_range_push and its weft_range_pop, over many iterations, from a
 * task and from a plain thread, nested two deep so that the stack is
 * used as a program uses it. Target: <= 50 ns a push and its pop. */
#include <stdlib.h>

#include "bench.h"

typedef struct ranger {
  bench_ctx *c;
  long n; /* push+pop pairs per repeat */
  bench_samples s;
} ranger;

static int rounds(ranger *r) {
  BENCH_TRY(r->c, weft_range_push("bench outer"));
  for (int k = 0; k <= bench_repeat(r->c); k++) {
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < r->n; i++) {
      BENCH_TRY(r->c, weft_range_push("bench"));
      BENCH_TRY(r->c, weft_range_pop());
    }
    uint64_t t1 = bench_now_ns();
    if (k > 0)
      bench_samples_add(&r->s, (double)(t1 - t0) / (double)r->n);
  }
  BENCH_TRY(r->c, weft_range_pop());
  return 0;
}

static void rounds_task(void *arg) { rounds(arg); }

static int variant(bench_ctx *c, int from_task, const char *name) {
  ranger *r = calloc(1, sizeof *r);
  if (!r)
    return bench_fail(c, "out of memory");
  r->c = c;
  r->n = bench_size(c, 2000000, 200000);
  weft_runtime *rt = NULL;
  int rc = bench_runtime_open(c, 1, &rt);
  if (rc == 0)
    rc = from_task ? bench_in_task(c, rt, rounds_task, r) : rounds(r);
  if (bench_runtime_close(c, &rt) || bench_failed(c))
    rc = BENCH_FAIL;
  if (rc == 0)
    rc = bench_report(c, name, "ns", &r->s, 0,
                      "a push and its pop, inside one open range, tracing "
                      "off; target <= 50 ns");
  free(r);
  return rc;
}

static int run(bench_ctx *c) {
  int rc = variant(c, 1, "weft_range_push + pop from a task");
  if (rc == 0)
    rc = variant(c, 0, "weft_range_push + pop from a plain thread");
  return rc;
}

const bench_scenario bench_sc_ranges = {
    "ranges", "a user range's push and pop, tracing off", run};
