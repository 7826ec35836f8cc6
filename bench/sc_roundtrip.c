/* roundtrip: launch a kernel and wait for it, from a task.
 *
 * A task launches tick and calls weft_sync, over and over, on a runtime with
 * one worker that two other tasks keep busy (they weft_yield in a loop):
 * the wait must suspend the task, let the others run, and notice the
 * completion quickly. Also with the worker otherwise idle. Baseline, from a
 * plain thread that does nothing else: the launch on a raw stream, an event
 * record and a loop polling the event without pause (raw_api.h: on CUDA,
 * cudaLaunchKernel, cudaEventRecord and cudaEventQuery on a
 * cudaStreamNonBlocking stream and a timing-free event; on the host backend,
 * weft_host_launch, weft_host_event_record and weft_host_event_query on its
 * own stream and event, weft/host.h). The counters must equal the number of
 * launches. Target: weft <= raw + 1 us, while busy. */
#include <stdatomic.h>
#include <stdlib.h>

#include "bench.h"
#include "kernels.h"
#include "raw_api.h"

enum { NBUSY = 2 };

typedef struct trip {
  bench_ctx *c;
  weft_runtime *rt;
  bench_kernels k;
  long n; /* round trips per repeat */
  int busy;
  atomic_int stop;
  atomic_long yields; /* by the busy tasks while timed */
  bench_samples s;
} trip;

static void busy_task(void *arg) {
  trip *t = arg;
  while (!atomic_load_explicit(&t->stop, memory_order_relaxed)) {
    weft_yield();
    atomic_fetch_add_explicit(&t->yields, 1, memory_order_relaxed);
  }
}

static long expected(trip *t) { return t->n * (bench_repeat(t->c) + 1); }

static int check_count(trip *t, unsigned *counter, const char *who) {
  unsigned got = 0;
  if (bench_fetch(t->c, &got, counter, sizeof got))
    return BENCH_FAIL;
  if ((long)got != expected(t))
    return bench_fail(t->c, "%s: the kernel ran %u times, expected %ld", who,
                      got, expected(t));
  return 0;
}

static int timed_trips(trip *t, unsigned *counter) {
  bench_ctx *c = t->c;
  void *args[] = {&counter};
  for (int r = 0; r <= bench_repeat(c); r++) {
    if (r == 1)
      atomic_store(&t->yields, 0);
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < t->n; i++) {
      BENCH_TRY(c,
                weft_launch(&t->k.tick, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
      BENCH_TRY(c, weft_sync());
    }
    uint64_t t1 = bench_now_ns();
    if (r > 0)
      bench_samples_add(&t->s, (double)(t1 - t0) / 1e3 / (double)t->n);
  }
  return 0;
}

static void measure_task(void *arg) {
  trip *t = arg;
  bench_ctx *c = t->c;
  weft_task *busy[NBUSY];
  int nbusy = 0, e;
  for (; nbusy < t->busy; nbusy++)
    if ((e = weft_task_spawn(t->rt, &busy[nbusy], busy_task, t, NULL)) != 0) {
      bench_fail_weft(c, e, "weft_task_spawn(busy)");
      break;
    }
  unsigned *counter = NULL;
  if ((e = weft_device_alloc(sizeof *counter, (void **)&counter)) != 0 ||
      (e = weft_memset(counter, 0, sizeof *counter)) != 0)
    bench_fail_weft(c, e, "counter setup");
  int timed = !bench_failed(c) && timed_trips(t, counter) == 0;
  atomic_store(&t->stop, 1);
  for (int i = 0; i < nbusy; i++)
    if ((e = weft_task_join(busy[i])) != 0)
      bench_fail_weft(c, e, "weft_task_join(busy)");
  /* After the joins: fetching the count allocates pinned memory, a
   * device-wide wait beside live tasks (weft check). */
  if (timed)
    check_count(t, counter, "weft");
  if (counter && (e = weft_device_free(counter)) != 0)
    bench_fail_weft(c, e, "weft_device_free");
  if ((e = weft_sync()) != 0)
    bench_fail_weft(c, e, "weft_sync");
}

static int weft_variant(bench_ctx *c, trip *t, int busy) {
  t->c = c;
  t->busy = busy;
  bench_kernels_init(&t->k);
  int rc = bench_runtime_open(c, 1, &t->rt);
  if (rc == 0 && (rc = bench_kernels_preload(&t->k)) != 0)
    rc = bench_fail_weft(c, rc, "weft_kernel_preload");
  if (rc == 0)
    rc = bench_in_task(c, t->rt, measure_task, t);
  if (bench_runtime_close(c, &t->rt) || bench_failed(c))
    rc = BENCH_FAIL;
  return rc;
}

/* ---- raw ---- */

/* The baseline's stream and event, made before timing; zeroed ones are not
 * made yet, and destroying them does nothing. */
typedef struct raw_trip {
  raw_stream s;
  raw_event done; /* timing-free */
  int ready;      /* both made */
} raw_trip;

static int raw_open(bench_ctx *c, weft_runtime *rt, raw_trip *x) {
  RAW_TRY(c, raw_stream_create(rt, 0, &x->s));
  RAW_TRY(c, raw_event_create(rt, 0, &x->done));
  x->ready = 1;
  return 0;
}

/* Waits for the stream, then frees the event and the stream; errors here
 * would only repeat one already reported by a checked call. */
static void raw_close(raw_trip *x) {
  if (x->ready)
    raw_stream_sync(x->s);
  raw_event_destroy(&x->done);
  raw_stream_destroy(&x->s);
  x->ready = 0;
}

/* t->n round trips: launch tick, record the event after it, poll the event
 * until it is done; the pattern weft's waits are built on. */
static int raw_trips(trip *t, raw_trip *x, unsigned *counter) {
  bench_ctx *c = t->c;
  void *args[] = {&counter};
  for (long i = 0; i < t->n; i++) {
    RAW_TRY(c, raw_launch(x->s, &t->k.tick, WEFT_DIM1(1), WEFT_DIM1(1), args));
    RAW_TRY(c, raw_event_record(x->done, x->s));
    int e;
    while ((e = raw_event_query(x->done)) == 1) {
    }
    RAW_TRY(c, e);
  }
  return 0;
}

static int raw_variant(bench_ctx *c, trip *t) {
  weft_runtime *rt = NULL;
  t->c = c;
  bench_kernels_init(&t->k);
  if (bench_runtime_open(c, 1, &rt))
    return BENCH_FAIL;
  raw_trip x = {0};
  int rc = raw_open(c, rt, &x), e;
  unsigned *counter = NULL;
  if (rc == 0 &&
      ((e = weft_device_alloc(sizeof *counter, (void **)&counter)) != 0 ||
       (e = weft_memset(counter, 0, sizeof *counter)) != 0 ||
       (e = weft_sync()) != 0))
    rc = bench_fail_weft(c, e, "counter setup");
  for (int r = 0; rc == 0 && r <= bench_repeat(c); r++) {
    uint64_t t0 = bench_now_ns();
    rc = raw_trips(t, &x, counter);
    uint64_t t1 = bench_now_ns();
    if (rc == 0 && r > 0)
      bench_samples_add(&t->s, (double)(t1 - t0) / 1e3 / (double)t->n);
  }
  if (rc == 0)
    rc = check_count(t, counter, "raw");
  /* The stream is waited for before the counter it may use is freed. */
  raw_close(&x);
  if (counter && (e = weft_device_free(counter)) != 0 && rc == 0)
    rc = bench_fail_weft(c, e, "weft_device_free");
  if ((e = weft_sync()) != 0 && rc == 0)
    rc = bench_fail_weft(c, e, "weft_sync");
  if (bench_runtime_close(c, &rt))
    rc = BENCH_FAIL;
  return rc;
}

static int run(bench_ctx *c) {
  trip *t = calloc(3, sizeof *t); /* busy, idle, raw */
  if (!t)
    return bench_fail(c, "out of memory");
  long n = bench_size(c, 3000, 300);
  t[0].n = t[1].n = t[2].n = n;
  int rc = weft_variant(c, &t[0], NBUSY);
  if (rc == 0)
    rc = weft_variant(c, &t[1], 0);
  if (rc == 0)
    rc = raw_variant(c, &t[2]);
  if (rc == 0) {
    double raw = bench_stats_of(&t[2].s).median;
    double d = bench_stats_of(&t[0].s).median - raw;
    double per =
        (double)atomic_load(&t[0].yields) / (double)(n * bench_repeat(c));
    rc = bench_report(c, "weft launch+sync, 2 busy tasks, 1 worker", "us",
                      &t[0].s, 0,
                      "raw %+.2f us; target <= raw + 1 us (%s); the busy "
                      "tasks yielded %.1f times per round trip",
                      d, d <= 1.0 ? "met" : "MISSED", per);
    if (rc == 0) {
      d = bench_stats_of(&t[1].s).median - raw;
      bench_peer(c, "roundtrip", "weft");
      rc = bench_report(c, "weft launch+sync, worker otherwise idle", "us",
                        &t[1].s, 0, "raw %+.2f us", d);
    }
  }
  if (rc == 0) {
    bench_peer(c, "roundtrip", "raw");
    rc = bench_report(c,
                      bench_backend(c) == WEFT_BACKEND_CUDA
                          ? "raw launch + event record + query loop"
                          : "raw host ops: launch, record, query loop",
                      "us", &t[2].s, BENCH_BASELINE,
                      "a plain thread polling without pause; %ld trips per "
                      "repeat",
                      n);
  }
  free(t);
  return rc;
}

const bench_scenario bench_sc_roundtrip = {
    "roundtrip",
    "launch + weft_sync from a task on a busy worker vs raw polling", run};
