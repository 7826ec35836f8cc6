/* stream: looking up the current task's stream.
 *
 * weft_stream_current() from a task whose stream is already leased, over
 * many calls; also from a plain thread, whose context is found another way.
 * Baseline: the least such a lookup can be, a _Thread_local pointer read
 * through a function the compiler may not inline or see through. Every
 * result is compared with the first, which must not be NULL.
 * Target: <= 20 ns. */
#include <stdlib.h>

#include "bench.h"

static _Thread_local void *tls_stream;

BENCH_OPAQUE static void *tls_lookup(void) { return tls_stream; }

typedef struct lookup {
  bench_ctx *c;
  long n;
  long wrong;
  bench_samples s;
} lookup;

/* Calls GET n times per repeat, directly, so that each loop times its own
 * call; counts results that differ from the first. */
#define BENCH_ROUNDS(fn, GET)                                                  \
  static void fn(lookup *l) {                                                  \
    void *want = GET;                                                          \
    if (!want) {                                                               \
      bench_fail(l->c, "the lookup returned NULL: %s",                         \
                 weft_last_error_message());                                   \
      return;                                                                  \
    }                                                                          \
    for (int r = 0; r <= bench_repeat(l->c); r++) {                            \
      long wrong = 0;                                                          \
      uint64_t t0 = bench_now_ns();                                            \
      for (long i = 0; i < l->n; i++)                                          \
        wrong += (void *)GET != want;                                          \
      uint64_t t1 = bench_now_ns();                                            \
      l->wrong += wrong;                                                       \
      if (r > 0)                                                               \
        bench_samples_add(&l->s, (double)(t1 - t0) / (double)l->n);            \
    }                                                                          \
  }

BENCH_ROUNDS(weft_rounds, weft_stream_current())
BENCH_ROUNDS(tls_rounds, tls_lookup())

static void weft_rounds_task(void *arg) { weft_rounds(arg); }

static int variant(bench_ctx *c, weft_runtime *rt, int which, long n) {
  static const char *const names[] = {
      "weft_stream_current() in a task",
      "weft_stream_current() on a plain thread",
      "_Thread_local read, noinline function",
  };
  static const char *const notes[] = {
      "stream leased before timing; target <= 20 ns",
      "the thread's own context",
      "the floor of any per-thread lookup",
  };
  lookup *l = calloc(1, sizeof *l);
  if (!l)
    return bench_fail(c, "out of memory");
  l->c = c;
  l->n = n;
  int rc = 0;
  if (which == 0) {
    rc = bench_in_task(c, rt, weft_rounds_task, l);
  } else if (which == 1) {
    weft_rounds(l);
  } else {
    tls_stream = &tls_stream;
    tls_rounds(l);
  }
  if (rc == 0 && bench_failed(c))
    rc = BENCH_FAIL;
  if (rc == 0 && l->wrong)
    rc = bench_fail(c, "%s: %ld results differed from the first", names[which],
                    l->wrong);
  if (rc == 0)
    rc = bench_report(c, names[which], "ns", &l->s,
                      which == 2 ? BENCH_BASELINE : 0, "%s", notes[which]);
  free(l);
  return rc;
}

static int run(bench_ctx *c) {
  long n = bench_size(c, 20000000, 2000000);
  weft_runtime *rt = NULL;
  int rc = bench_runtime_open(c, 0, &rt);
  for (int which = 0; rc == 0 && which < 3; which++)
    rc = variant(c, rt, which, n);
  if (bench_runtime_close(c, &rt))
    rc = BENCH_FAIL;
  return rc;
}

const bench_scenario bench_sc_stream = {
    "stream", "weft_stream_current() lookup vs a thread-local read", run};
