/* weft's benchmarks: scenarios, the runner that times them, and the helpers
 * every scenario uses.
 *
 * A scenario is one file, bench/sc_<name>.c, that defines
 *   const bench_scenario bench_sc_<name> = {"<name>", "<description>", fn};
 * and one line in BENCH_SCENARIOS (bench/scenarios.h), which sets the order
 * of `weft bench --list`. CMake picks up every bench/sc_*.c by itself.
 *
 * fn measures weft and the scenario's baseline side by side in the same run
 * and adds one row per variant with bench_report(). It checks its results
 * before it reports a time; a failed check or weft call ends the scenario
 * through bench_fail(), and `weft bench` then exits 1. Each scenario opens
 * the runtimes it needs (bench_runtime_open) and closes them before it
 * returns, so scenarios cannot disturb one another.
 *
 * Ratios: a row's ratio is its median over the median of the scenario's
 * baseline row in the same unit and group, measured in the same run. A
 * scenario's rows form one group until it calls bench_group(), which starts
 * the next (e.g. one per copy direction or size); a group may have one
 * baseline per unit, and rows in a unit without a baseline get no ratio. */
#ifndef WEFT_BENCH_H
#define WEFT_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "weft.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BENCH_MAX_REPEAT 1000

typedef struct bench_ctx bench_ctx;

typedef struct bench_scenario {
  const char *name;        /* what `weft bench NAME` selects */
  const char *description; /* one line for --list */
  /* Adds the scenario's rows. Returns 0, or BENCH_FAIL after bench_fail. */
  int (*run)(bench_ctx *c);
} bench_scenario;

enum { BENCH_OK = 0, BENCH_FAIL = -1 };

/* ---- what a scenario reads ---- */

/* The backend every runtime of this run opens: HOST or CUDA, never AUTO. */
weft_backend_kind bench_backend(const bench_ctx *c);
/* 1 under --quick: sizes shrink so the whole suite runs in seconds. */
int bench_quick(const bench_ctx *c);
/* Timed repeats per variant (--repeat; default 7, quick 3). Every variant
 * also runs once untimed first, to warm up. */
int bench_repeat(const bench_ctx *c);
/* full when not quick, else quick: the usual way to size a scenario. */
long bench_size(const bench_ctx *c, long full, long quick);

/* ---- timing ---- */

/* A function the compiler may neither inline nor see through, so that a
 * timed loop calls it for real. */
#if defined(__has_attribute)
#if __has_attribute(noipa)
#define BENCH_OPAQUE __attribute__((noinline, noipa))
#endif
#endif
#ifndef BENCH_OPAQUE
#define BENCH_OPAQUE __attribute__((noinline))
#endif

/* CLOCK_MONOTONIC in nanoseconds. Callable from anywhere. */
uint64_t bench_now_ns(void);

/* The repeats of one variant, in the row's unit. */
typedef struct bench_samples {
  int n;
  double v[BENCH_MAX_REPEAT];
} bench_samples;

typedef struct bench_stats {
  double median, min, max;
} bench_stats;

void bench_samples_add(bench_samples *s, double value);
/* Median (the mean of the middle two for an even count), min and max. */
bench_stats bench_stats_of(const bench_samples *s);

/* ---- rows ---- */

enum { BENCH_BASELINE = 1u << 0 };

/* Adds a row for the current scenario: variant, its repeats in unit ("ns",
 * "us", "ms", "MiB", "B/task", ...), flags (BENCH_BASELINE) and free-text
 * notes (printf format; may be NULL). Returns 0 or BENCH_FAIL (no samples,
 * or out of memory). Call from the scenario's own thread. */
int bench_report(bench_ctx *c, const char *variant, const char *unit,
                 const bench_samples *s, unsigned flags, const char *notes, ...)
    __attribute__((format(printf, 6, 7)));

/* Adds a row for a variant this run cannot measure (one device where it
 * needs two), with the reason (printf format) as its notes: printed as
 * "skipped", written to the JSON with null figures and "skipped": true,
 * no ratio, no chart point. Returns 0 or BENCH_FAIL (out of memory). */
int bench_skip(bench_ctx *c, const char *variant, const char *unit,
               const char *why, ...) __attribute__((format(printf, 4, 5)));

/* Marks the next row reported as one side of a measurement that the
 * PyTorch peers (bench/peers/) make too: key names it within the scenario
 * (e.g. "non_blocking"), side is "weft" or "raw". The JSON carries both,
 * and bench/peers/run_all.py joins the rows with the peers' figures into
 * one weft / raw / PyTorch table. Both strings must be literals. */
void bench_peer(bench_ctx *c, const char *key, const char *side);

/* Starts a new group of rows: the rows reported from now on take their
 * ratios from the baselines reported from now on (until the next call). */
void bench_group(bench_ctx *c);

/* ---- charts (`weft bench --plot DIR`, bench/plot.h) ---- */

enum { BENCH_CHART_LOG_X = 1u << 0, BENCH_CHART_LOG_Y = 1u << 1 };

/* A chart, defined once (static) by the scenario that fills it. */
typedef struct bench_chart {
  const char *name; /* its file, DIR/<name>.svg: letters, digits, - */
  const char *title;
  const char *x_label; /* with its unit; NULL: a bar chart */
  unsigned flags;      /* BENCH_CHART_LOG_X, BENCH_CHART_LOG_Y */
} bench_chart;

/* Marks the next row reported as a point of chart: at x on the line called
 * series, or, in a bar chart, as a bar labelled series (x unused). */
void bench_plot(bench_ctx *c, const bench_chart *chart, const char *series,
                double x);
/* Marks the next row as a bar chart's reference line (a floor, a target),
 * labelled label, drawn across the bars. */
void bench_plot_ref(bench_ctx *c, const bench_chart *chart, const char *label);

/* ---- failures ---- */

/* Records why the scenario failed (the first message wins) and returns
 * BENCH_FAIL. Thread-safe: tasks and threads of a scenario may call it. */
int bench_fail(bench_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* 1 once bench_fail was called in the current scenario. */
int bench_failed(bench_ctx *c);
/* bench_fail for a weft call that returned rc, with the library's detail. */
int bench_fail_weft(bench_ctx *c, int rc, const char *call);

/* Evaluates a weft call; on failure records it and returns BENCH_FAIL from
 * the enclosing function. */
#define BENCH_TRY(c, call)                                                     \
  do {                                                                         \
    int bench_rc_ = (call);                                                    \
    if (bench_rc_ != 0)                                                        \
      return bench_fail_weft((c), bench_rc_, #call);                           \
  } while (0)

/* ---- runtimes ---- */

/* WEFT_TRACE under `weft bench`: the first runtime a scenario opens
 * through these helpers (or with bench_trace_claim) traces to the
 * scenario's file, the rest never do, so that one runtime's trace is not
 * overwritten by the next one's and none is refused for another tracing
 * at the same time (docs/decisions/tracing.md, "A bench scenario's trace
 * is its first runtime's"). Returns that file's path the first time it is
 * called in a scenario run under WEFT_TRACE, else "" (a runtime's
 * trace_path for no trace). */
const char *bench_trace_claim(bench_ctx *c);
/* Says why the scenario's trace may hold no operation (a literal), which
 * `weft bench` prints on stderr when it holds none. */
void bench_untraced(bench_ctx *c, const char *why);

/* Opens a runtime on the run's backend with the given worker count (0: the
 * default, one per core), traced when bench_trace_claim says so. Returns 0
 * or BENCH_FAIL. */
int bench_runtime_open(bench_ctx *c, int workers, weft_runtime **rt);
/* A runtime with more than a worker count: cuBLAS calls need bigger fiber
 * stacks than the default (weft/cuda.h), and a traced run names its file. */
typedef struct bench_rt_opts {
  int workers;            /* 0: one per core */
  size_t stack_size;      /* 0: weft's default */
  const char *trace_path; /* NULL: bench_trace_claim's */
  int no_check;           /* 1: weft check off, whatever WEFT_CHECK says */
  int host_devices;       /* the host backend's devices; 0: its default */
  size_t data_limit;      /* registered data's bytes a device; 0: none */
  int prefetch;           /* 1: copies at spawn (data_prefetch 1) */
} bench_rt_opts;
int bench_runtime_open_with(bench_ctx *c, const bench_rt_opts *o,
                            weft_runtime **rt);
/* Stack bytes for tasks that call cuBLAS. */
#define BENCH_CUBLAS_STACK ((size_t)1 << 20)

/* Shuts *rt down (if not NULL) and sets it to NULL. Returns 0 or
 * BENCH_FAIL; a scenario that already failed keeps its first message. */
int bench_runtime_close(bench_ctx *c, weft_runtime **rt);
/* Runs fn(arg) as one task of rt and waits for it from this thread.
 * Returns 0 or BENCH_FAIL (spawn or join failed). */
int bench_in_task(bench_ctx *c, weft_runtime *rt, weft_task_fn fn, void *arg);

/* Spawns n (at most BENCH_TASKS_MAX) tasks of rt, task i running
 * fn(jobs + i * job_size) on device dev[i] (job_size 0: the same job for
 * all), and joins them all. Returns 0 or BENCH_FAIL (after bench_fail, or
 * when a task failed the scenario). */
#define BENCH_TASKS_MAX 64
int bench_tasks_on(bench_ctx *c, weft_runtime *rt, int n, weft_task_fn fn,
                   void *jobs, size_t job_size, const int *dev);

/* Copies n bytes of device memory at src to host memory at dst on the
 * calling task's (or thread's) stream, after the work queued there, and
 * waits. For result checks. Returns 0 or BENCH_FAIL. */
int bench_fetch(bench_ctx *c, void *dst, const void *src, size_t n);

/* ---- memory ---- */

/* The process's resident set now and its peak so far, in bytes, from
 * /proc/self/status (VmRSS, VmHWM). Returns 0, or -1 when unreadable. */
int bench_rss(size_t *rss, size_t *peak);
/* Hands freed heap memory back to the system (glibc), so that the next
 * RSS reading starts from what is really in use. */
void bench_trim(void);

/* ---- the runner, for the command-line tool ---- */

typedef struct bench_opts {
  weft_backend_kind backend; /* HOST or CUDA: resolved by the caller */
  const char *device;        /* device 0's name, for the header */
  int quick;
  int repeat;               /* 0: the default (7, or 3 under quick) */
  const char *json_path;    /* NULL: no JSON */
  const char *plot_dir;     /* NULL: no charts; made if missing */
  const char *const *names; /* scenarios to run; NULL or none: all */
  int nnames;
  FILE *out; /* the table; stderr gets failures */
  /* WEFT_TRACE: the file each scenario's trace goes to, with "-NAME"
   * before a ".json" ending when several run; NULL: none. */
  const char *trace_path;
} bench_opts;

/* Every scenario, in BENCH_SCENARIOS order; *n receives the count. */
const bench_scenario *const *bench_scenarios(size_t *n);
/* The scenario called name, or NULL. */
const bench_scenario *bench_find(const char *name);
/* Runs the chosen scenarios, prints the table, writes the JSON (the rows
 * made so far even when a scenario failed) and the charts. Returns 0 when
 * every scenario ran and passed its checks and the JSON and charts were
 * written, else 1, with each failure printed on stderr. */
int bench_run(const bench_opts *o);

#ifdef __cplusplus
}
#endif

#endif
