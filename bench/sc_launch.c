/* launch: the host cost of one kernel launch.
 *
 * weft_launch of a one-thread kernel (tick: as cheap as an empty one, and it
 * counts its runs) from a task, in batches: only the launch calls are
 * timed, then weft_sync drains the batch untimed, so the device's queue
 * never fills and blocks a launch. Baseline, from a plain thread: the same
 * batches of the same kernel on one raw stream (raw_api.h), each drained by
 * a stream sync, untimed: on CUDA, cudaLaunchKernel of the same __global__
 * function on a cudaStreamNonBlocking stream; on the host backend,
 * weft_host_launch on one of its own streams (weft/host.h). Both counters
 * must equal the number of launches. The two rows' rounds take turns
 * (weft's in a task, then raw's), so that drift over the run favours
 * neither. Target: weft <= raw + 0.1 us.
 *
 * Looked up: with 1024 device allocations made and every other one freed
 * first, so that a launch looks its pointer up among 512 live and 512
 * freed ranges (backend.c; before any free, a single-device launch looks
 * nothing up), batches whose launches alternate between two counters, so
 * that none finds its pointer among those the stream's last launch passed,
 * take turns with batches that pass one counter throughout (remembered,
 * no lookup): their difference is the lookup's cost, free of the drift
 * between two runs (the rows' earlier form, against weft's row, read
 * +21 to +513 ns of it). Target: <= 20 ns more than the remembered.
 *
 * Typed: the same loop launching through weft.hpp (weft::kernel, its
 * arguments converted and passed by address on the stack; cpp_rows.cpp),
 * its batches taking turns with weft's row's in the same task, so that
 * the 20 ns it is judged by is not a drift of the machine between two
 * runs. Target: <= 20 ns more than weft's row. */
#include <stdlib.h>

#include "bench.h"
#include "kernels.h"
#include "launch_rounds.h"

enum { BATCH = 256 };

typedef struct launcher {
  bench_ctx *c;
  bench_kernels k;
  long batches;
  bench_samples s;
  bench_samples *typed; /* weft.hpp's batches, taking turns; or NULL */
  int round;            /* weft's and raw's rounds take turns: this one */
} launcher;

static long total_launches(launcher *l) {
  return l->batches * BATCH * (bench_repeat(l->c) + 1) * (l->typed ? 2 : 1);
}

/* One round of weft's row, in a task; its count checked. */
static void launch_task(void *arg) {
  launcher *l = arg;
  unsigned ran = 0;
  long want = l->batches * BATCH * (l->typed ? 2 : 1);
  int rc = bench_launch_rounds(l->c, &l->k.tick, l->batches, BATCH, l->round,
                               &l->s, l->typed, &ran);
  if (rc == 0 && (long)ran != want)
    bench_fail(l->c, "weft: the kernel ran %u times, expected %ld", ran, want);
}

enum { NALLOCS = 1024 };

/* The looked-up rows' loop (see the top): batches cycling through n
 * counters, each its own allocation (into l->s), take turns with batches
 * of one (into *remembered); *ran the runs all counted. */
enum { MAX_COUNTERS = 16 };

static int lookup_rounds(launcher *l, int n, bench_samples *remembered,
                         unsigned *ran) {
  bench_ctx *c = l->c;
  unsigned *counter[MAX_COUNTERS] = {NULL};
  void *args[MAX_COUNTERS][1];
  int rc = 0, e;
  for (int i = 0; i < n && rc == 0; i++) {
    if ((e = weft_device_alloc(sizeof(unsigned), (void **)&counter[i])) ||
        (e = weft_memset(counter[i], 0, sizeof(unsigned))))
      rc = bench_fail_weft(c, e, "counter setup");
    args[i][0] = &counter[i];
  }
  for (int r = 0; rc == 0 && r <= bench_repeat(c); r++) {
    uint64_t ns[2] = {0, 0};
    for (long b = 0; rc == 0 && b < l->batches * 2; b++) {
      int looked = (int)(b % 2);
      uint64_t t0 = bench_now_ns();
      for (int i = 0; i < BATCH; i++)
        if ((e = weft_launch(&l->k.tick, WEFT_DIM1(1), WEFT_DIM1(1), 0,
                             args[looked ? i % n : 0])) != 0) {
          rc = bench_fail_weft(c, e, "weft_launch");
          break;
        }
      ns[looked] += bench_now_ns() - t0;
      if ((e = weft_sync()) != 0 && rc == 0)
        rc = bench_fail_weft(c, e, "weft_sync");
    }
    if (r > 0) {
      double k = (double)(l->batches * BATCH);
      bench_samples_add(remembered, (double)ns[0] / 1e3 / k);
      bench_samples_add(&l->s, (double)ns[1] / 1e3 / k);
    }
  }
  *ran = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    unsigned got = 0;
    rc = bench_fetch(c, &got, counter[i], sizeof got);
    *ran += got;
  }
  for (int i = 0; i < n; i++)
    if (counter[i] && (e = weft_device_free(counter[i])) != 0 && rc == 0)
      rc = bench_fail_weft(c, e, "weft_device_free");
  return rc;
}

/* The two looked-up rows: MAX_COUNTERS allocations taking turns, more
 * than a stream remembers (a lookup each launch), and two. */
typedef struct lookup_job {
  launcher *l[2];
  bench_samples *remembered[2];
} lookup_job;

static void looked_up_task(void *arg) {
  lookup_job *j = arg;
  bench_ctx *c = j->l[0]->c;
  void **p = calloc(NALLOCS, sizeof *p);
  int n = 0, rc = p ? 0 : bench_fail(c, "out of memory");
  for (; rc == 0 && n < NALLOCS; n++)
    if ((rc = weft_device_alloc(256, &p[n])) != 0)
      rc = bench_fail_weft(c, rc, "weft_device_alloc");
  for (int i = 0; i < n; i += 2)
    if (weft_device_free(p[i]) != 0 && rc == 0)
      rc = bench_fail(c, "weft_device_free");
  if (rc == 0 && weft_sync() != 0)
    rc = bench_fail(c, "weft_sync");
  for (int k = 0; k < 2 && rc == 0; k++) {
    unsigned ran = 0;
    if (lookup_rounds(j->l[k], k ? 2 : MAX_COUNTERS, j->remembered[k], &ran) !=
        0)
      break;
    if ((long)ran != 2 * total_launches(j->l[k])) {
      bench_fail(c, "looked up: the kernel ran %u times, expected %ld", ran,
                 2 * total_launches(j->l[k]));
      break;
    }
  }
  for (int i = 1; i < n; i += 2)
    weft_device_free(p[i]);
  free(p);
}

/* One round of raw's row, from the calling plain thread. */
static int raw_round(launcher *l, weft_runtime *rt) {
  unsigned ran = 0;
  int rc = bench_raw_launch_rounds(l->c, rt, &l->k.tick, l->batches, BATCH,
                                   l->round, &l->s, &ran);
  if (rc == 0 && (long)ran != l->batches * BATCH)
    rc = bench_fail(l->c, "raw: the kernel ran %u times, expected %ld", ran,
                    l->batches * BATCH);
  return rc;
}

static int run(bench_ctx *c) {
  launcher *w = calloc(1, sizeof *w), *raw = calloc(1, sizeof *raw);
  launcher *look = calloc(2, sizeof *look);
  bench_samples *typed = calloc(1, sizeof *typed);
  bench_samples *remembered = calloc(2, sizeof *remembered);
  weft_runtime *rt = NULL;
  int rc = w && raw && look && typed && remembered
               ? 0
               : bench_fail(c, "out of memory");
#ifdef WEFT_BENCH_CXX
  int cxx = 1;
#else
  int cxx = 0;
#endif
  if (rc == 0)
    rc = bench_runtime_open(c, 0, &rt);
  if (rc == 0) {
    w->c = raw->c = look[0].c = look[1].c = c;
    w->typed = cxx ? typed : NULL;
    bench_kernels_init(&w->k);
    bench_kernels_init(&raw->k);
    bench_kernels_init(&look[0].k);
    bench_kernels_init(&look[1].k);
    rc = bench_kernels_preload(&w->k);
    if (rc)
      rc = bench_fail_weft(c, rc, "weft_kernel_preload");
    w->batches = raw->batches = look[0].batches = look[1].batches =
        bench_size(c, 80, 40);
    /* Round by round, weft's in a task, then raw's from this thread, so
     * that drift over the run favours neither. */
    for (int r = 0; rc == 0 && r <= bench_repeat(c); r++) {
      w->round = raw->round = r;
      rc = bench_in_task(c, rt, launch_task, w);
      if (rc == 0 && bench_failed(c))
        rc = BENCH_FAIL;
      if (rc == 0)
        rc = raw_round(raw, rt);
    }
    lookup_job lj = {{&look[0], &look[1]}, {&remembered[0], &remembered[1]}};
    if (rc == 0 && !bench_failed(c))
      rc = bench_in_task(c, rt, looked_up_task, &lj);
    if (rc == 0 && bench_failed(c))
      rc = BENCH_FAIL;
  }
  if (bench_runtime_close(c, &rt))
    rc = BENCH_FAIL;
  if (rc == 0) {
    double d = bench_stats_of(&w->s).median - bench_stats_of(&raw->s).median;
    bench_peer(c, "launch", "weft");
    rc = bench_report(c, "weft_launch from a task", "us", &w->s, 0,
                      "raw %+.3f us; target <= raw + 0.1 us (%s); %ld "
                      "launches per repeat",
                      d, d <= 0.1 ? "met" : "MISSED", w->batches * BATCH);
  }
  if (rc == 0) {
    double d = bench_stats_of(&look[0].s).median -
               bench_stats_of(&remembered[0]).median;
    rc = bench_report(c, "weft_launch, pointer looked up", "us", &look[0].s, 0,
                      "%+.1f ns against the same launches with the pointer "
                      "remembered (%.3f us), batches taking turns; target <= "
                      "+20 ns (%s); %d allocations taking turns, more than a "
                      "stream remembers, among %d live and %d freed device "
                      "ranges",
                      d * 1e3, bench_stats_of(&remembered[0]).median,
                      d * 1e3 <= 20 ? "met" : "MISSED", MAX_COUNTERS,
                      NALLOCS / 2, NALLOCS / 2);
  }
  if (rc == 0) {
    double d = bench_stats_of(&look[1].s).median -
               bench_stats_of(&remembered[1]).median;
    rc = bench_report(c, "weft_launch, two allocations taking turns", "us",
                      &look[1].s, 0,
                      "%+.1f ns against the same launches with one pointer "
                      "(%.3f us), batches taking turns: the stream remembers "
                      "both allocations, no lookup",
                      d * 1e3, bench_stats_of(&remembered[1]).median);
  }
  if (rc == 0 && cxx) {
    double d = bench_stats_of(typed).median - bench_stats_of(&w->s).median;
    rc = bench_report(c, "weft::launch, typed (weft.hpp)", "us", typed, 0,
                      "%+.1f ns against weft_launch, batches taking turns; "
                      "target <= +20 ns (%s); weft::kernel<unsigned *>, "
                      "weft::try_launch",
                      d * 1e3, d * 1e3 <= 20 ? "met" : "MISSED");
  } else if (rc == 0) {
    rc = bench_skip(c, "weft::launch, typed (weft.hpp)", "us",
                    "built without C++ (WEFT_WITH_CXX=OFF)");
  }
  if (rc == 0) {
    bench_peer(c, "launch", "raw");
    rc = bench_report(c,
                      bench_backend(c) == WEFT_BACKEND_CUDA
                          ? "raw cudaLaunchKernel, own stream"
                          : "raw weft_host_launch, own stream (host ops)",
                      "us", &raw->s, BENCH_BASELINE,
                      "from a plain thread; batches of %d, synced untimed; "
                      "its rounds take turns with weft_launch's",
                      BATCH);
  }
  free(w);
  free(raw);
  free(look);
  free(typed);
  free(remembered);
  return rc;
}

const bench_scenario bench_sc_launch = {
    "launch", "host cost of weft_launch from a task vs a raw launch", run};
