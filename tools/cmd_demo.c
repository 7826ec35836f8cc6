#define _POSIX_C_SOURCE 200809L /* setenv */
/* weft demo: seed 000's experiment. Normalise N arrays (a <- a / sum(a)) with
 * three kernels, once with every array on one stream and once with each
 * array on its own stream, and time both with events.
 *
 * A third variant does the same as weft is meant to be used: one task per
 * array, no stream written; each task's work lands on its own stream. The
 * fourth hands the arrays to weft_map_chunks, which pipelines them.
 *
 * Each array goes through: H2D copy, partial_reduce, single_thread_sum,
 * divide_by, D2H copy. Inputs stay untouched in pinned memory so every run
 * starts from the same data; results land in a second pinned buffer and are
 * checked against sums computed on the CPU in double. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cli.h"
#include "demo_kernels.h"
#include "weft_internal.h"
#include "trace/analysis.h"
#include "trace/svg.h"

#define DEMO_MAX_ARRAYS 64
#define DEMO_MAX_REPEAT 1000

typedef struct demo {
  weft_runtime *rt;
  weft__backend *bk;
  demo_kernels k;
  int narrays, repeat;
  unsigned log2n;
  unsigned long long n; /* floats per array */
  unsigned blocks;      /* grid of partial_reduce and divide_by */
  int depth;            /* pipelined variant's depth; 0: the default */

  weft__stream *streams[DEMO_MAX_ARRAYS];
  weft__event *start, *final, *end[DEMO_MAX_ARRAYS];
  float *in_all, *out_all; /* pinned host, narrays arrays each */
  float *in[DEMO_MAX_ARRAYS], *out[DEMO_MAX_ARRAYS]; /* into those */
  float *dev_a[DEMO_MAX_ARRAYS], *dev_partial[DEMO_MAX_ARRAYS],
      *dev_sum[DEMO_MAX_ARRAYS];
  double cpu_sum[DEMO_MAX_ARRAYS];
} demo;

/* Prints a failed weft call with the library's detail; returns CLI_FAIL. */
static int failed(int rc, const char *what) {
  const char *msg = weft_last_error_message();
  return cli_fail("demo", "%s: %s: %s", what, weft_err_name(rc),
                  *msg ? msg : weft_strerror(rc));
}

#define TRY(call)                                                              \
  do {                                                                         \
    int rc_ = (call);                                                          \
    if (rc_ != 0)                                                              \
      return failed(rc_, #call);                                               \
  } while (0)

static int setup(demo *d) {
  weft__backend *bk = d->bk;
  size_t bytes = (size_t)d->n * sizeof(float);
  for (int i = 0; i < d->narrays; i++)
    TRY(weft__stream_create(bk, 0, 0, &d->streams[i]));
  TRY(weft__event_create(bk, 0, WEFT__EVENT_TIMING, &d->start));
  TRY(weft__event_create(bk, 0, WEFT__EVENT_TIMING, &d->final));
  /* The per-stream end events only order streams; timing would cost. */
  for (int i = 0; i < d->narrays; i++)
    TRY(weft__event_create(bk, 0, 0, &d->end[i]));

  weft__stream *s0 = d->streams[0];
  for (int i = 0; i < d->narrays; i++) {
    /* One contiguous pinned buffer each for inputs and outputs, so the
     * pipelined variant can map over the arrays as chunks. */
    if (i == 0) {
      TRY(weft_pinned_alloc(bytes * (size_t)d->narrays, (void **)&d->in_all));
      TRY(weft_pinned_alloc(bytes * (size_t)d->narrays, (void **)&d->out_all));
    }
    d->in[i] = d->in_all + (size_t)i * d->n;
    d->out[i] = d->out_all + (size_t)i * d->n;
    TRY(weft__device_alloc(s0, bytes, (void **)&d->dev_a[i]));
    TRY(weft__device_alloc(s0, d->blocks * sizeof(float),
                           (void **)&d->dev_partial[i]));
    TRY(weft__device_alloc(s0, sizeof(float), (void **)&d->dev_sum[i]));
  }

  /* Random floats in (0, 1]: positive, so every sum is far from zero. */
  uint64_t seed = 0x9E3779B97F4A7C15ULL;
  for (int i = 0; i < d->narrays; i++)
    d->cpu_sum[i] = demo_fill_input(d->in[i], d->n, &seed);
  /* Allocations are ordered on stream 0; other streams may use them once
   * that stream has passed them. */
  TRY(weft__stream_sync(s0));
  return CLI_OK;
}

/* Enqueues one array's pipeline on stream s. */
static int enqueue_array(demo *d, int i, weft__stream *s) {
  size_t bytes = (size_t)d->n * sizeof(float);
  unsigned long long n = d->n;
  unsigned blocks = d->blocks;
  weft_dim3 grid = WEFT_DIM1(d->blocks), block = WEFT_DIM1(DEMO_THREADS);
  void *reduce_args[] = {&d->dev_a[i], &d->dev_partial[i], &n};
  void *sum_args[] = {&d->dev_partial[i], &d->dev_sum[i], &blocks};
  void *divide_args[] = {&d->dev_a[i], &d->dev_sum[i], &n};

  TRY(weft__copy(s, d->dev_a[i], d->in[i], bytes, WEFT__COPY_H2D));
  TRY(weft__launch(s, &d->k.partial_reduce, grid, block, 0, reduce_args));
  TRY(weft__launch(s, &d->k.single_thread_sum, WEFT_DIM1(1), WEFT_DIM1(1), 0,
                   sum_args));
  TRY(weft__launch(s, &d->k.divide_by, grid, block, 0, divide_args));
  TRY(weft__copy(s, d->out[i], d->dev_a[i], bytes, WEFT__COPY_D2H));
  return CLI_OK;
}

/* The tasks variant: the same pipeline through the public API, one task
 * per array. The task's first operation makes its stream wait (on the
 * device) for the start event, so the events bracket all the work. */
typedef struct array_job {
  demo *d;
  int i;
  weft_event *start;
  int rc;
} array_job;

static void array_task(void *arg) {
  array_job *j = arg;
  demo *d = j->d;
  int i = j->i;
  size_t bytes = (size_t)d->n * sizeof(float);
  unsigned long long n = d->n;
  unsigned blocks = d->blocks;
  weft_dim3 grid = WEFT_DIM1(d->blocks), block = WEFT_DIM1(DEMO_THREADS);
  void *reduce_args[] = {&d->dev_a[i], &d->dev_partial[i], &n};
  void *sum_args[] = {&d->dev_partial[i], &d->dev_sum[i], &blocks};
  void *divide_args[] = {&d->dev_a[i], &d->dev_sum[i], &n};
  int rc = weft_event_wait(j->start);
  if (!rc)
    rc = weft_copy(d->dev_a[i], d->in[i], bytes);
  if (!rc)
    rc = weft_launch(&d->k.partial_reduce, grid, block, 0, reduce_args);
  if (!rc)
    rc = weft_launch(&d->k.single_thread_sum, WEFT_DIM1(1), WEFT_DIM1(1), 0,
                     sum_args);
  if (!rc)
    rc = weft_launch(&d->k.divide_by, grid, block, 0, divide_args);
  if (!rc)
    rc = weft_copy(d->out[i], d->dev_a[i], bytes);
  j->rc = rc; /* no weft_sync: the task completes when its GPU work does */
}

/* The calling thread records start, spawns the tasks, orders its own stream
 * after each task's GPU work (weft_task_after: no host wait for the GPU),
 * then records and waits for the final event. */
static int run_tasks_once(demo *d, float *ms) {
  weft_event *start = NULL, *final = NULL;
  weft_task *tasks[DEMO_MAX_ARRAYS] = {0};
  array_job jobs[DEMO_MAX_ARRAYS];
  TRY(weft_event_create(&start));
  TRY(weft_event_create(&final));
  TRY(weft_event_record(start));
  int rc = 0;
  for (int i = 0; i < d->narrays && !rc; i++) {
    jobs[i] = (array_job){d, i, start, 0};
    rc = weft_task_spawn(d->rt, &tasks[i], array_task, &jobs[i], NULL);
  }
  for (int i = 0; i < d->narrays && !rc; i++)
    rc = weft_task_after(tasks[i]);
  if (!rc)
    rc = weft_event_record(final);
  if (!rc)
    rc = weft_event_sync(final);
  if (!rc)
    rc = weft_event_elapsed_ms(start, final, ms);
  for (int i = 0; i < d->narrays; i++) {
    int jr = tasks[i] ? weft_task_join(tasks[i]) : 0;
    if (!rc && jr)
      rc = jr;
    if (!rc && tasks[i] && jobs[i].rc)
      rc = jobs[i].rc;
  }
  weft_event_destroy(&start);
  weft_event_destroy(&final);
  TRY(rc);
  return CLI_OK;
}

/* The pipelined variant: weft_map_chunks with one array per chunk, in
 * place. The helper's tasks overlap one array's copy in with another's
 * kernels and a third's copy out, on three streams. */
static int normalise_chunk(void *dev_in, void *dev_out, size_t index,
                           void *user) {
  demo *d = user;
  unsigned long long n = d->n;
  unsigned blocks = d->blocks;
  weft_dim3 grid = WEFT_DIM1(d->blocks), block = WEFT_DIM1(DEMO_THREADS);
  float *a = dev_in, *partial = d->dev_partial[index], *sum = d->dev_sum[index];
  void *reduce_args[] = {&a, &partial, &n};
  void *sum_args[] = {&partial, &sum, &blocks};
  void *divide_args[] = {&a, &sum, &n};
  (void)dev_out;
  int rc = weft_launch(&d->k.partial_reduce, grid, block, 0, reduce_args);
  if (!rc)
    rc = weft_launch(&d->k.single_thread_sum, WEFT_DIM1(1), WEFT_DIM1(1), 0,
                     sum_args);
  if (!rc)
    rc = weft_launch(&d->k.divide_by, grid, block, 0, divide_args);
  return rc;
}

static int run_pipelined_once(demo *d, float *ms) {
  weft_event *start = NULL, *final = NULL;
  TRY(weft_event_create(&start));
  TRY(weft_event_create(&final));
  int rc = weft_event_record(start);
  if (!rc)
    rc = weft_map_chunks(d->in_all, (size_t)d->n * sizeof(float), d->out_all, 0,
                         (size_t)d->narrays, normalise_chunk, d, NULL);
  if (!rc) /* the map returned: all its work is done; final marks that */
    rc = weft_event_record(final);
  if (!rc)
    rc = weft_event_sync(final);
  if (!rc)
    rc = weft_event_elapsed_ms(start, final, ms);
  weft_event_destroy(&start);
  weft_event_destroy(&final);
  TRY(rc);
  return CLI_OK;
}

/* One timed run. Every stream starts after the start event on stream 0, and
 * stream 0 waits for every stream's end event before recording the final
 * one, so start -> final spans all the work of the run. */
static int run_once(demo *d, int per_array_streams, float *ms) {
  weft__stream *s0 = d->streams[0];
  int nstreams = per_array_streams ? d->narrays : 1;
  TRY(weft__event_record(d->start, s0));
  for (int i = 1; i < nstreams; i++)
    TRY(weft__stream_wait_event(d->streams[i], d->start));
  for (int i = 0; i < d->narrays; i++) {
    int rc = enqueue_array(d, i, per_array_streams ? d->streams[i] : s0);
    if (rc != CLI_OK)
      return rc;
  }
  for (int i = 1; i < nstreams; i++) {
    TRY(weft__event_record(d->end[i], d->streams[i]));
    TRY(weft__stream_wait_event(s0, d->end[i]));
  }
  TRY(weft__event_record(d->final, s0));
  TRY(weft__event_sync(d->final));
  TRY(weft__event_elapsed(d->start, d->final, ms));
  return CLI_OK;
}

/* Every element must equal input / CPU sum (1e-4 relative) and every array
 * must sum to 1 (1e-3 relative). The negated comparisons catch NaN. */
static int check(demo *d, const char *variant) {
  for (int i = 0; i < d->narrays; i++) {
    double total = 0.0;
    for (unsigned long long j = 0; j < d->n; j++) {
      double want = d->in[i][j] / d->cpu_sum[i];
      double got = d->out[i][j];
      if (!(fabs(got - want) <= 1e-4 * want))
        return cli_fail("demo",
                        "%s: array %d, first bad index %llu: got %.9g, "
                        "want %.9g (input %.9g, CPU sum %.9g)",
                        variant, i, j, got, want, d->in[i][j], d->cpu_sum[i]);
      total += got;
    }
    if (!(fabs(total - 1.0) <= 1e-3))
      return cli_fail("demo", "%s: array %d sums to %.9g, not 1", variant, i,
                      total);
  }
  return CLI_OK;
}

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

typedef struct timing {
  float median, min, max;
} timing;

static timing summarise(float *ms, int n) {
  qsort(ms, (size_t)n, sizeof *ms, cmp_float);
  timing t = {.min = ms[0], .max = ms[n - 1]};
  t.median = n % 2 ? ms[n / 2] : 0.5f * (ms[n / 2 - 1] + ms[n / 2]);
  return t;
}

/* Warm-up, then --repeat timed runs, then the result check. The outputs are
 * poisoned with NaN first so a variant cannot pass on another's results. */
enum { ONE_STREAM, PER_ARRAY_STREAMS, TASKS, PIPELINED };

static int run_any(demo *d, int variant, float *ms) {
  switch (variant) {
  case TASKS:
    return run_tasks_once(d, ms);
  case PIPELINED:
    return run_pipelined_once(d, ms);
  default:
    return run_once(d, variant == PER_ARRAY_STREAMS, ms);
  }
}

static int run_variant(demo *d, int variant, timing *t) {
  static const char *names[] = {"one stream", "per-array streams", "tasks",
                                "pipelined"};
  const char *name = names[variant];
  float ms[DEMO_MAX_REPEAT], ignored;
  for (int i = 0; i < d->narrays; i++)
    memset(d->out[i], 0xff, (size_t)d->n * sizeof(float));
  int rc = run_any(d, variant, &ignored);
  for (int r = 0; rc == CLI_OK && r < d->repeat; r++)
    rc = run_any(d, variant, &ms[r]);
  if (rc == CLI_OK)
    rc = check(d, name);
  if (rc == CLI_OK)
    *t = summarise(ms, d->repeat);
  return rc;
}

/* Releases whatever setup got to, even after a failure; the first failure
 * is reported. weft_shutdown refuses (EBUSY) if anything is left. */
static int teardown(demo *d) {
  int status = CLI_OK, rc;
#define KEEP(call)                                                             \
  do {                                                                         \
    if ((rc = (call)) != 0 && status == CLI_OK)                                \
      status = failed(rc, #call);                                              \
  } while (0)
  weft__stream *s0 = d->streams[0];
  if (s0) {
    KEEP(weft__device_sync(d->bk, 0));
    for (int i = 0; i < d->narrays; i++) {
      KEEP(weft__device_free(s0, d->dev_a[i]));
      KEEP(weft__device_free(s0, d->dev_partial[i]));
      KEEP(weft__device_free(s0, d->dev_sum[i]));
    }
    KEEP(weft__stream_sync(s0));
  }
  for (int i = 0; i < d->narrays; i++) {

    if (d->end[i])
      KEEP(weft__event_destroy(&d->end[i]));
  }
  KEEP(weft_pinned_free(d->in_all));
  KEEP(weft_pinned_free(d->out_all));
  if (d->start)
    KEEP(weft__event_destroy(&d->start));
  if (d->final)
    KEEP(weft__event_destroy(&d->final));
  for (int i = 0; i < d->narrays; i++)
    if (d->streams[i])
      KEEP(weft__stream_destroy(&d->streams[i]));
  KEEP(weft_shutdown(d->rt));
#undef KEEP
  return status;
}

/* After a traced run: how much of the GPU's busy time overlapped, and a
 * timeline picture next to the trace (FILE.svg). The numbers are `weft
 * trace report`'s; that command gives the whole report. */
static int report_trace(const char *path) {
  trace_model m;
  trace_error err;
  if (trace_model_load_file(&m, path, &err) != 0) {
    trace_model_free(&m);
    return cli_fail("demo", "%s: %s", path, err.message);
  }
  trace_analysis a;
  int rc =
      trace_analyze(&m, &a) == 0 ? CLI_OK : cli_fail("demo", "out of memory");
  if (rc == CLI_OK) {
    const trace_breakdown *b = &a.all;
    /* The analysis works in microseconds, as the trace format does. */
    printf("\ntrace %s (all variants, warm-ups included; tracing adds host "
           "cost to each launch):\n",
           path);
    printf("  GPU busy %.3f ms of a %.3f ms span: kernels %.3f ms, "
           "copies %.3f ms\n",
           b->busy / 1e3, b->span / 1e3, b->compute / 1e3, b->memory / 1e3);
    printf("  kernels and copies overlapped %.3f ms: %.1f %% of busy time, "
           "%.1f %% of copy time\n",
           b->overlap / 1e3, trace_pct(b->overlap, b->busy),
           trace_pct(b->overlap, b->memory));
    char svg[4096];
    snprintf(svg, sizeof svg, "%s.svg", path);
    FILE *f = fopen(svg, "w");
    trace_svg_opts o = {.width = 1600, .title = path};
    if (!f || trace_svg_write(f, &m, &a, &o) != 0)
      rc = cli_fail("demo", "cannot write %s", svg);
    if (f && fclose(f) != 0 && rc == CLI_OK)
      rc = cli_fail("demo", "cannot write %s", svg);
    if (rc == CLI_OK)
      printf("  timeline: %s; full report: weft trace report %s\n", svg, path);
  }
  trace_analysis_free(&a);
  trace_model_free(&m);
  return rc;
}

static int parse_args(cli_global *g, int argc, char **argv, long *arrays,
                      long *log2n, long *repeat, long *depth,
                      const char **trace) {
  for (int i = 1; i < argc; i++) {
    const char *v;
    int m;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      cli_print_command_help("demo");
      return -1;
    }
    if ((m = cli_common_flag(g, argc, argv, &i)) != 0) {
      if (m < 0)
        return CLI_USAGE;
    } else if ((m = cli_flag_value(argc, argv, &i, "--arrays", &v)) != 0) {
      if (m < 0 || cli_parse_long("--arrays", v, 1, DEMO_MAX_ARRAYS, arrays))
        return CLI_USAGE;
    } else if ((m = cli_flag_value(argc, argv, &i, "--log2n", &v)) != 0) {
      if (m < 0 || cli_parse_long("--log2n", v, 8, 28, log2n))
        return CLI_USAGE;
    } else if ((m = cli_flag_value(argc, argv, &i, "--repeat", &v)) != 0) {
      if (m < 0 || cli_parse_long("--repeat", v, 1, DEMO_MAX_REPEAT, repeat))
        return CLI_USAGE;
    } else if ((m = cli_flag_value(argc, argv, &i, "--trace", &v)) != 0) {
      if (m < 0)
        return CLI_USAGE;
      *trace = v;
    } else if ((m = cli_flag_value(argc, argv, &i, "--depth", &v)) != 0) {
      if (m < 0 || cli_parse_long("--depth", v, 1, 64, depth))
        return CLI_USAGE;
    } else {
      return cli_bad_arg("demo", argv[i]);
    }
  }
  return CLI_OK;
}

int cmd_demo(cli_global *g, int argc, char **argv) {
  long arrays = 10, log2n = 0, repeat = 5, depth = 0;
  const char *trace = NULL;
  int rc = parse_args(g, argc, argv, &arrays, &log2n, &repeat, &depth, &trace);
  if (rc != CLI_OK)
    return rc < 0 ? CLI_OK : rc;
  /* The runtime reads WEFT_TRACE when it opens, and writes the trace when
   * it shuts down. */
  if (trace && setenv("WEFT_TRACE", trace, 1) != 0)
    return cli_fail("demo", "cannot set WEFT_TRACE");

  demo *d = calloc(1, sizeof *d);
  if (!d)
    return cli_fail("demo", "out of memory");
  rc = cli_open_runtime(g, "demo", &d->rt, NULL, 0);
  if (rc != CLI_OK) {
    free(d);
    return rc;
  }
  d->bk = weft__runtime_backend(d->rt);
  weft_backend_kind kind = weft_runtime_backend(d->rt);
  if (log2n == 0) /* the host backend is a CPU: keep its default run short */
    log2n = kind == WEFT_BACKEND_CUDA ? 24 : 20;
  d->narrays = (int)arrays;
  d->depth = (int)depth;
  d->repeat = (int)repeat;
  d->log2n = (unsigned)log2n;
  d->n = 1ull << d->log2n;
  unsigned long long need = (d->n + DEMO_THREADS - 1) / DEMO_THREADS;
  d->blocks = need < DEMO_MAX_BLOCKS ? (unsigned)need : DEMO_MAX_BLOCKS;
  demo_kernels_init(&d->k);

  weft_device_info info;
  rc = weft_device_get_info(d->rt, 0, &info);
  if (rc != 0)
    rc = failed(rc, "weft_device_get_info");
  if (rc == CLI_OK)
    rc = setup(d);

  timing one, many, tasks, piped;
  if (rc == CLI_OK)
    rc = run_variant(d, ONE_STREAM, &one);
  if (rc == CLI_OK)
    rc = run_variant(d, PER_ARRAY_STREAMS, &many);
  if (rc == CLI_OK)
    rc = run_variant(d, TASKS, &tasks);
  if (rc == CLI_OK)
    rc = run_variant(d, PIPELINED, &piped);

  if (rc == CLI_OK) {
    double kib = (double)d->n * sizeof(float) / 1024.0;
    printf("weft demo: normalise %d array%s of 2^%u floats (%g %s each): "
           "H2D copy, 3 kernels, D2H copy\n",
           d->narrays, d->narrays == 1 ? "" : "s", d->log2n,
           kib >= 1024 ? kib / 1024 : kib, kib >= 1024 ? "MiB" : "KiB");
    printf("backend %s, device 0: %s\n", weft_backend_name(kind), info.name);
    printf("event-timed, median of %d run%s after 1 warm-up\n\n", d->repeat,
           d->repeat == 1 ? "" : "s");
    char many_name[32];
    if (d->narrays == 1)
      snprintf(many_name, sizeof many_name, "1 per array");
    else
      snprintf(many_name, sizeof many_name, "%d streams", d->narrays);
    printf("%-12s %10s %19s %9s\n", "variant", "median ms", "min - max ms",
           "speed-up");
    printf("%-12s %10.3f %8.3f - %-8.3f %8.2fx\n", "1 stream", one.median,
           one.min, one.max, 1.0);
    printf("%-12s %10.3f %8.3f - %-8.3f %8.2fx\n", many_name, many.median,
           many.min, many.max,
           many.median > 0 ? one.median / many.median : 0.0);
    char tasks_name[32];
    snprintf(tasks_name, sizeof tasks_name, "%d tasks", d->narrays);
    printf("%-12s %10.3f %8.3f - %-8.3f %8.2fx\n", tasks_name, tasks.median,
           tasks.min, tasks.max,
           tasks.median > 0 ? one.median / tasks.median : 0.0);
    printf("%-12s %10.3f %8.3f - %-8.3f %8.2fx\n", "pipelined", piped.median,
           piped.min, piped.max,
           piped.median > 0 ? one.median / piped.median : 0.0);
    printf("\ncheck passed: each array sums to 1 (1e-3), each element is "
           "input / CPU sum (1e-4)\n");
  }
  int trc = teardown(d);
  free(d);
  if (rc == CLI_OK && trc == CLI_OK && trace)
    trc = report_trace(trace);
  return rc != CLI_OK ? rc : trc;
}
