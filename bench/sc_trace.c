/* trace: what the tracer costs a launch.
 *
 * The launch scenario's measurement, twice: weft_launch of a one-thread
 * kernel (tick: as cheap as an empty kernel, and it counts its runs) from a
 * task, in batches of which only the launch calls are timed, weft_sync
 * draining each batch untimed; in a runtime opened with trace_path set to
 * a temporary file (removed afterwards; under WEFT_TRACE the user's file,
 * kept), and (baseline) in runtimes opened
 * without tracing (trace_path "", so that WEFT_TRACE cannot turn it on)
 * just before and just after it, whose repeats are pooled so that drift
 * does not favour either side. On CUDA the tracer takes GPU records from
 * CUPTI's activity API (and the task id as an external correlation id once per
 * resume); on the host backend the backend's executor records each operation
 * itself. Checks: the counter equals the number of launches in both
 * runtimes, and the trace written at weft_shutdown holds exactly one
 * kernel record per launch. Target: <= 5 % overhead.
 *
 * Then CUPTI's own floor (CUDA only): the raw launch loop (cudaLaunchKernel
 * from a plain thread, bench_raw_launch_rounds) without CUPTI and with
 * CUPTI's activity API recording the kinds weft's tracer asks for (kernels,
 * copies, memsets, runtime calls, external correlations) into buffers that
 * are only counted: what any CUPTI-based tracer pays per launch, so that
 * weft's row shows its own cost above it. Check: one kernel record per
 * launch. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "kernels.h"
#include "launch_rounds.h"

#ifdef WEFT_BENCH_CUDA
#include <cupti.h>
#endif

enum { BATCH = 256 };

typedef struct trace_bench {
  bench_ctx *c;
  bench_kernels k;
  long batches;
  unsigned got; /* the counter after the rounds */
  bench_samples s[2];
  int traced; /* the runtime being measured */
  /* Raw launches: [0] no CUPTI, [1] bare CUPTI, [2] bare CUPTI with an
   * external correlation id pushed, as weft pushes a task's id around its
   * run slices (CUPTI then writes one more record per API call). */
  bench_samples bare[3];
} trace_bench;

static long total_launches(trace_bench *t) {
  return t->batches * BATCH * (bench_repeat(t->c) + 1);
}

static int rounds(trace_bench *t) {
  int rc = bench_launch_rounds(t->c, &t->k.tick, t->batches, BATCH, -1,
                               &t->s[t->traced], NULL, &t->got);
  if (rc == 0 && (long)t->got != total_launches(t))
    rc = bench_fail(t->c, "%s: the kernel ran %u times, expected %ld",
                    t->traced ? "traced" : "untraced", t->got,
                    total_launches(t));
  return rc;
}

static void rounds_task(void *arg) { rounds(arg); }

/* Opens a runtime tracing to path ("" for none), runs the rounds in a
 * task, and shuts it down (which writes the trace). */
static int measure(trace_bench *t, const char *path) {
  bench_ctx *c = t->c;
  weft_runtime_opts opts;
  weft_runtime_opts_init(&opts);
  opts.backend = bench_backend(c);
  opts.trace_path = path;
  weft_runtime *rt = NULL;
  BENCH_TRY(c, weft_init(&rt, &opts));
  int rc = bench_kernels_preload(&t->k);
  if (rc)
    rc = bench_fail_weft(c, rc, "weft_kernel_preload");
  if (rc == 0)
    rc = bench_in_task(c, rt, rounds_task, t);
  if (rc == 0 && bench_failed(c))
    rc = BENCH_FAIL;
  if (bench_runtime_close(c, &rt))
    rc = BENCH_FAIL;
  return rc;
}

/* ---- CUPTI's own floor ---- */

#ifdef WEFT_BENCH_CUDA
static const CUpti_ActivityKind bare_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};
static long bare_kernels; /* kernel records delivered */

static void CUPTIAPI bare_requested(uint8_t **buf, size_t *size,
                                    size_t *max_records) {
  *buf = aligned_alloc(8, (size_t)8 << 20);
  *size = *buf ? (size_t)8 << 20 : 0;
  *max_records = 0;
}

static void CUPTIAPI bare_completed(CUcontext ctx, uint32_t stream,
                                    uint8_t *buf, size_t size, size_t valid) {
  (void)ctx, (void)stream, (void)size;
  CUpti_Activity *a = NULL;
  while (cuptiActivityGetNextRecord(buf, valid, &a) == CUPTI_SUCCESS)
    if (a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
      __atomic_fetch_add(&bare_kernels, 1, __ATOMIC_RELAXED);
  free(buf);
}

/* CUPTI on (recording into counted buffers) or off around the raw rounds,
 * in a runtime that does not trace; mode 0 off, 1 on, 2 on with an
 * external id pushed on this thread for the rounds. */
static int bare_cupti(trace_bench *t, weft_runtime *rt, int mode) {
  bench_ctx *c = t->c;
  int on = mode != 0;
  size_t enabled = 0;
  if (on) {
    bare_kernels = 0;
    CUptiResult r =
        cuptiActivityRegisterCallbacks(bare_requested, bare_completed);
    for (; r == CUPTI_SUCCESS &&
           enabled < sizeof bare_kinds / sizeof bare_kinds[0];
         enabled++)
      r = cuptiActivityEnable(bare_kinds[enabled]);
    if (r != CUPTI_SUCCESS) {
      const char *msg = "?";
      cuptiGetResultString(r, &msg);
      while (enabled-- > 0)
        cuptiActivityDisable(bare_kinds[enabled]);
      return bench_fail(c, "CUPTI: %s", msg);
    }
  }
  unsigned ran = 0;
  if (mode == 2)
    cuptiActivityPushExternalCorrelationId(
        CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 1);
  int rc = bench_raw_launch_rounds(c, rt, &t->k.tick, t->batches, BATCH, -1,
                                   &t->bare[mode], &ran);
  if (mode == 2) {
    uint64_t id;
    cuptiActivityPopExternalCorrelationId(
        CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id);
  }
  if (on) {
    cuptiActivityFlushAll(1);
    while (enabled-- > 0)
      cuptiActivityDisable(bare_kinds[enabled]);
    cuptiActivityFlushAll(1);
  }
  if (rc == 0 && (long)ran != total_launches(t))
    rc = bench_fail(c, "raw: the kernel ran %u times, expected %ld", ran,
                    total_launches(t));
  if (rc == 0 && on && bare_kernels != total_launches(t))
    rc = bench_fail(c,
                    "bare CUPTI delivered %ld kernel records for %ld "
                    "launches",
                    bare_kernels, total_launches(t));
  return rc;
}
#endif

/* The raw rounds without CUPTI, with it, with it and an external id, and
 * without it again (pooled); then the rows. On the host backend the rows
 * are skipped. */
static int floor_rows(trace_bench *t) {
  bench_ctx *c = t->c;
  bench_group(c);
  static const char *const names[3] = {
      "raw cudaLaunchKernel, no CUPTI",
      "raw cudaLaunchKernel, bare CUPTI activity",
      "raw cudaLaunchKernel, bare CUPTI + external id"};
  if (bench_backend(c) != WEFT_BACKEND_CUDA) {
    int rc = 0;
    for (int i = 0; i < 3 && rc == 0; i++)
      rc = bench_skip(c, names[i], "us", "CUPTI is CUDA only");
    return rc;
  }
#ifdef WEFT_BENCH_CUDA
  static const char *const what[3] = {
      NULL, "CUPTI's own cost with weft's record kinds, buffers only counted",
      "the same with an external id pushed, as weft does around a task's "
      "run (a record more per API call)"};
  weft_runtime *rt = NULL;
  int rc = bench_runtime_open_with(c, &(bench_rt_opts){.no_check = 1}, &rt);
  static const int modes[] = {0, 1, 2, 0};
  for (size_t pass = 0; rc == 0 && pass < sizeof modes / sizeof *modes; pass++)
    rc = bare_cupti(t, rt, modes[pass]);
  if (bench_runtime_close(c, &rt))
    rc = BENCH_FAIL;
  if (rc)
    return rc;
  double raw = bench_stats_of(&t->bare[0]).median;
  double w0 = bench_stats_of(&t->s[0]).median;
  double w1 = bench_stats_of(&t->s[1]).median;
  rc = bench_report(c, names[0], "us", &t->bare[0], BENCH_BASELINE,
                    "from a plain thread, before and after the CUPTI run; "
                    "batches of %d, synced untimed",
                    BATCH);
  for (int m = 1; rc == 0 && m < 3; m++) {
    double v = bench_stats_of(&t->bare[m]).median;
    rc = bench_report(c, names[m], "us", &t->bare[m], 0,
                      "%+.1f %% (%+.3f us a launch): %s; weft's tracer above "
                      "it: %+.3f us a launch",
                      raw > 0 ? 100 * (v / raw - 1) : 0, v - raw, what[m],
                      (w1 - w0) - (v - raw));
  }
  return rc;
#else
  return 0;
#endif
}

/* Counts the trace's kernel records (one JSON event a line) and reads the
 * records it says were dropped. */
static int read_trace(trace_bench *t, const char *path, long *kernels,
                      long *dropped, long *bytes) {
  FILE *f = fopen(path, "r");
  if (!f)
    return bench_fail(t->c, "cannot open the trace %s", path);
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  *kernels = 0;
  *dropped = -1;
  *bytes = 0;
  while ((len = getline(&line, &cap, f)) > 0) {
    *bytes += len;
    const char *d = strstr(line, "\"dropped_records\":");
    if (d && *dropped < 0)
      *dropped = strtol(d + strlen("\"dropped_records\":"), NULL, 10);
    if (strstr(line, "\"cat\":\"kernel\""))
      (*kernels)++;
  }
  free(line);
  fclose(f);
  if (*dropped < 0)
    return bench_fail(t->c, "the trace %s has no weft header", path);
  return 0;
}

static int run(bench_ctx *c) {
  trace_bench *t = calloc(1, sizeof *t);
  if (!t)
    return bench_fail(c, "out of memory");
  t->c = c;
  bench_kernels_init(&t->k);
  t->batches = bench_size(c, 80, 40);

  /* Under WEFT_TRACE the traced runtime's file is the user's, kept. */
  char path[4096];
  const char *user = bench_trace_claim(c);
  const char *dir = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/weft-bench-trace-XXXXXX.json",
           dir && *dir ? dir : "/tmp");
  int fd = *user ? 0 : mkstemps(path, 5);
  if (fd < 0) {
    free(t);
    return bench_fail(c, "cannot create a temporary file in %s",
                      dir && *dir ? dir : "/tmp");
  }
  if (*user)
    snprintf(path, sizeof path, "%s", user);
  else
    close(fd);

  t->traced = 0;
  int rc = measure(t, "");
  if (rc == 0) {
    t->traced = 1;
    rc = measure(t, path);
  }
  if (rc == 0) {
    t->traced = 0;
    rc = measure(t, "");
  }
  long kernels = 0, dropped = 0, bytes = 0;
  if (rc == 0)
    rc = read_trace(t, path, &kernels, &dropped, &bytes);
  if (!*user)
    unlink(path);
  if (rc == 0 && kernels != total_launches(t))
    rc = bench_fail(c,
                    "the trace holds %ld kernel records for %ld launches "
                    "(%ld records dropped)",
                    kernels, total_launches(t), dropped);
  if (rc == 0)
    rc = bench_report(c, "weft_launch from a task, untraced", "us", &t->s[0],
                      BENCH_BASELINE,
                      "trace_path \"\", before and after the traced runtime; "
                      "%ld launches per repeat in batches of %d, synced "
                      "untimed",
                      t->batches * BATCH, BATCH);
  if (rc == 0) {
    double base = bench_stats_of(&t->s[0]).median;
    double over = base > 0 ? bench_stats_of(&t->s[1]).median / base - 1 : 0;
    rc = bench_report(
        c, "weft_launch from a task, traced", "us", &t->s[1], 0,
        "%+.1f %%; target <= 5 %% (%s); %s; %ld kernel records in a %.1f MiB "
        "trace, %ld dropped",
        100 * over, over <= 0.05 ? "met" : "MISSED",
        bench_backend(c) == WEFT_BACKEND_CUDA
            ? "CUPTI activity records"
            : "host backend: executor records (CUPTI is CUDA only)",
        kernels, (double)bytes / (1 << 20), dropped);
  }
  if (rc == 0)
    rc = floor_rows(t);
  free(t);
  return rc;
}

const bench_scenario bench_sc_trace = {
    "trace", "tracer overhead: weft_launch in a traced vs an untraced runtime",
    run};
