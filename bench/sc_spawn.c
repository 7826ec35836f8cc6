/* spawn: starting an empty task and waiting for it to end.
 *
 * From inside a task, spawn + join of a task that does nothing, over many
 * iterations: with one worker (no other thread to wake) and with one worker
 * per core (spawns and wakes may involve the others). Also from a plain
 * thread, whose join blocks and must be woken by a worker. Baseline:
 * pthread_create + pthread_join of a thread that does nothing. Every child
 * counts itself, and the count is checked. Target: <= 1 us.
 *
 * weft.hpp: spawn + join of a capturing lambda (cpp_rows.cpp), in the same
 * rounds as the C row from a task with 1 worker, the two loops taking
 * turns. Target: <= 1.1 x the C row. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "bench.h"
#include "cpp_rows.h"

typedef struct spawner {
  bench_ctx *c;
  weft_runtime *rt;
  long n;          /* spawns per repeat */
  atomic_long ran; /* children that ran */
  bench_samples s;
  int with_cpp; /* weft.hpp's loop takes turns with the C one */
  long cpp_ran; /* its children that ran */
  bench_samples cpp;
} spawner;

static void child(void *arg) {
  spawner *sp = arg;
  atomic_fetch_add_explicit(&sp->ran, 1, memory_order_relaxed);
}

/* n spawn + join pairs from the calling task or thread. */
static int spawn_join(spawner *sp, long n) {
  for (long i = 0; i < n; i++) {
    weft_task *t;
    BENCH_TRY(sp->c, weft_task_spawn(sp->rt, &t, child, sp, NULL));
    BENCH_TRY(sp->c, weft_task_join(t));
  }
  return 0;
}

static int rounds(spawner *sp) {
  for (int r = 0; r <= bench_repeat(sp->c); r++) {
    uint64_t t0 = bench_now_ns();
    if (spawn_join(sp, sp->n))
      return BENCH_FAIL;
    uint64_t t1 = bench_now_ns();
    if (r > 0)
      bench_samples_add(&sp->s, (double)(t1 - t0) / 1e3 / (double)sp->n);
#ifdef WEFT_BENCH_CXX
    if (!sp->with_cpp)
      continue;
    t0 = bench_now_ns();
    BENCH_TRY(sp->c, bench_cpp_spawn_join(sp->n, &sp->cpp_ran));
    t1 = bench_now_ns();
    if (r > 0)
      bench_samples_add(&sp->cpp, (double)(t1 - t0) / 1e3 / (double)sp->n);
#endif
  }
  return 0;
}

static void rounds_task(void *arg) { rounds(arg); }

/* One variant: a fresh runtime with `workers`, spawning from a task or from
 * this thread. */
/* The weft.hpp row of sp, which took turns with its C row. */
static int report_cpp(spawner *sp, long want) {
  bench_ctx *c = sp->c;
  const char *name = "weft.hpp spawn+join of a capturing lambda, from a task";
#ifdef WEFT_BENCH_CXX
  if (sp->cpp_ran != want)
    return bench_fail(c, "weft.hpp: %ld children ran, expected %ld",
                      sp->cpp_ran, want);
  double x = bench_stats_of(&sp->cpp).median / bench_stats_of(&sp->s).median;
  return bench_report(c, name, "us", &sp->cpp, 0,
                      "1 worker, rounds taking turns with the C row: %.2f x "
                      "it; target <= 1.1 x (%s); captures 16 bytes",
                      x, x <= 1.1 ? "met" : "MISSED");
#else
  (void)want;
  return bench_skip(c, name, "us", "built without C++ (WEFT_WITH_CXX=OFF)");
#endif
}

static int variant(bench_ctx *c, int workers, int from_task, long n,
                   const char *name, const char *notes) {
  spawner *sp = calloc(1, sizeof *sp);
  if (!sp)
    return bench_fail(c, "out of memory");
  sp->c = c;
  sp->n = n;
  sp->with_cpp = workers == 1 && from_task;
  int rc = bench_runtime_open(c, workers, &sp->rt);
  if (rc == 0)
    rc = from_task ? bench_in_task(c, sp->rt, rounds_task, sp) : rounds(sp);
  if (bench_runtime_close(c, &sp->rt) || bench_failed(c))
    rc = BENCH_FAIL;
  long want = n * (bench_repeat(c) + 1);
  if (rc == 0 && atomic_load(&sp->ran) != want)
    rc = bench_fail(c, "%s: %ld children ran, expected %ld", name,
                    (long)atomic_load(&sp->ran), want);
  if (rc == 0)
    rc = bench_report(c, name, "us", &sp->s, 0, "%s", notes);
  if (rc == 0 && sp->with_cpp)
    rc = report_cpp(sp, want);
  free(sp);
  return rc;
}

static void *nothing(void *arg) {
  atomic_fetch_add_explicit((atomic_long *)arg, 1, memory_order_relaxed);
  return NULL;
}

static int pthreads(bench_ctx *c, long n) {
  bench_samples *s = calloc(1, sizeof *s);
  if (!s)
    return bench_fail(c, "out of memory");
  atomic_long ran = 0;
  int rc = 0;
  for (int r = 0; rc == 0 && r <= bench_repeat(c); r++) {
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
      pthread_t th;
      if (pthread_create(&th, NULL, nothing, &ran) != 0) {
        rc = bench_fail(c, "pthread_create failed");
        break;
      }
      pthread_join(th, NULL);
    }
    uint64_t t1 = bench_now_ns();
    if (r > 0)
      bench_samples_add(s, (double)(t1 - t0) / 1e3 / (double)n);
  }
  long want = n * (bench_repeat(c) + 1);
  if (rc == 0 && atomic_load(&ran) != want)
    rc = bench_fail(c, "%ld threads ran, expected %ld", (long)atomic_load(&ran),
                    want);
  if (rc == 0)
    rc = bench_report(c, "pthread_create + pthread_join", "us", s,
                      BENCH_BASELINE, "empty thread, default attributes");
  free(s);
  return rc;
}

static int run(bench_ctx *c) {
  long n = bench_size(c, 20000, 3000);
  int rc = variant(c, 1, 1, n, "weft spawn+join from a task, 1 worker",
                   "target <= 1 us");
  if (rc == 0)
    rc = variant(c, 0, 1, n, "weft spawn+join from a task, all cores",
                 "target <= 2 us; one worker per core; idle ones may be "
                 "woken");
  if (rc == 0)
    rc = variant(c, 0, 0, bench_size(c, 5000, 1000),
                 "weft spawn+join from a plain thread",
                 "target <= 5 us; the joining thread runs the task itself");
  if (rc == 0)
    rc = pthreads(c, bench_size(c, 5000, 1000));
  return rc;
}

const bench_scenario bench_sc_spawn = {
    "spawn", "spawn + join of an empty task vs pthread_create + join", run};
