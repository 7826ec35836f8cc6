#define _POSIX_C_SOURCE 200809L /* setenv, out_file.h */
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
 * checked against sums computed on the CPU in double. The variants live in
 * bench/demo.c, which the `normalize` benchmark measures too; this file
 * times and prints them, and reads the trace back. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "clip.h"
#include "demo.h"
#include "explain.h"
#include "out_file.h"
#include "svg.h"

#define DEMO_MAX_REPEAT 1000

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

/* A warm-up, then repeat timed runs, then the result check. The outputs are
 * poisoned with NaN first so a variant cannot pass on another's results. */
static int run_variant(demo *s, demo_variant v, int repeat, timing *t) {
  float ms[DEMO_MAX_REPEAT], ignored;
  demo_poison(s);
  int rc = demo_run(s, v, &ignored);
  for (int r = 0; rc == 0 && r < repeat; r++)
    rc = demo_run(s, v, &ms[r]);
  if (rc == 0)
    rc = demo_check(s, demo_name(v));
  if (rc)
    return cli_fail("demo", "%s", s->err);
  *t = summarise(ms, repeat);
  return CLI_OK;
}

/* One line per variant: the figures inside its ranges (demo_run puts
 * each run in a range named for its variant), as `weft trace report
 * --range NAME` computes them; the model is loaded afresh for each, since
 * clipping changes it. */
static int report_variants(const char *path) {
  printf("  per variant, inside its ranges (warm-up included): time, GPU busy "
         "as %% of that time, kernel/copy overlap as %% of busy time, the "
         "cause of most lost time\n");
  for (int v = 0; v < DEMO_NVARIANTS; v++) {
    const char *name = demo_name((demo_variant)v);
    trace_model m;
    trace_error err;
    trace_clip_info info;
    if (trace_model_load_file(&m, path, &err) != 0) {
      trace_model_free(&m);
      return cli_fail("demo", "%s: %s", path, err.message);
    }
    int r = trace_model_clip(&m, name, &info);
    trace_analysis a;
    if (r < 0 || (r == 0 && trace_analyze(&m, &a) != 0)) {
      trace_model_free(&m);
      return cli_fail("demo", "out of memory");
    }
    if (r > 0) {
      printf("    %-16s no range in the trace\n", name);
    } else {
      const trace_breakdown *b = &a.all;
      char overlap[16] = "-";
      if (b->busy > 0)
        snprintf(overlap, sizeof overlap, "%.1f %%",
                 trace_pct(b->overlap, b->busy));
      /* The cause that lost the variant the most time (explain.h). */
      char why[96] = "";
      trace_explanation e;
      if (trace_explain(&m, &e) == 0 && e.top >= 0)
        snprintf(why, sizeof why, "  lost most to: %s (%.0f %%)",
                 trace_cause_name((trace_cause)e.top),
                 100.0 * e.cause[e.top] / e.lost);
      trace_explanation_free(&e);
      printf("    %-16s %10.3f ms  busy %5.1f %%  overlap %8s%s\n", name,
             info.inside / 1e3,
             info.inside > 0 ? 100.0 * b->busy / info.inside : 0.0, overlap,
             why);
      trace_analysis_free(&a);
    }
    trace_model_free(&m);
  }
  return CLI_OK;
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
    out_file f;
    trace_svg_opts o = {.width = 1600, .title = path};
    if ((size_t)snprintf(svg, sizeof svg, "%s.svg", path) >= sizeof svg)
      rc = cli_fail("demo", "the timeline's name, %s.svg, is too long", path);
    else if (out_file_open(&f, svg) != 0)
      rc = cli_fail("demo", "cannot write %s: %s", svg, strerror(errno));
    else if (out_file_close(&f, trace_svg_write(f.f, &m, &a, &o) == 0) != 0)
      rc = cli_fail("demo", "cannot write %s%s%s", svg, errno ? ": " : "",
                    errno ? strerror(errno) : "");
    if (rc == CLI_OK)
      rc = report_variants(path);
    if (rc == CLI_OK)
      printf("  timeline: %s; full report: weft trace report %s [--range "
             "NAME]\n",
             svg, path);
    trace_explanation ex = {0};
    char why[400];
    if (rc == CLI_OK && trace_explain(&m, &ex) == 0 &&
        trace_explain_verdict(&ex, why, sizeof why) == 0)
      printf("  why the rest did not overlap: %s\n  (stretch by stretch: "
             "weft trace explain %s [--range NAME])\n",
             why, path);
    trace_explanation_free(&ex);
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
      /* The trace is a file the demo reads back, with FILE.svg beside it:
       * "-" would be read as stdin, %r as itself. */
      if (!strcmp(v, "-") || strstr(v, "%r"))
        return cli_usage_error("demo --trace needs a plain file name, not "
                               "'%s'",
                               v);
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

  demo *s = calloc(1, sizeof *s);
  if (!s)
    return cli_fail("demo", "out of memory");
  weft_runtime *rt = NULL;
  rc = cli_open_runtime(g, "demo", &rt, NULL, 0);
  if (rc != CLI_OK) {
    free(s);
    return rc;
  }
  weft_backend_kind kind = weft_runtime_backend(rt);
  if (log2n == 0) /* the host backend is a CPU: keep its default run short */
    log2n = kind == WEFT_BACKEND_CUDA ? 24 : 20;

  weft_device_info info;
  int e = weft_device_get_info(rt, 0, &info);
  if (e != 0)
    rc = cli_fail("demo", "weft_device_get_info: %s: %s", weft_err_name(e),
                  weft_last_error_message());
  if (rc == CLI_OK && demo_open(s, rt, (int)arrays, (unsigned)log2n) != 0)
    rc = cli_fail("demo", "%s", s->err);
  s->depth = (int)depth;

  timing t[DEMO_NVARIANTS];
  for (int v = 0; v < DEMO_NVARIANTS && rc == CLI_OK; v++)
    rc = run_variant(s, (demo_variant)v, (int)repeat, &t[v]);

  if (rc == CLI_OK) {
    double kib = (double)s->bytes / 1024.0;
    printf("weft demo: normalise %d array%s of 2^%u floats (%g %s each): "
           "H2D copy, 3 kernels, D2H copy\n",
           s->narrays, s->narrays == 1 ? "" : "s", s->log2n,
           kib >= 1024 ? kib / 1024 : kib, kib >= 1024 ? "MiB" : "KiB");
    printf("backend %s, device 0: %s\n", weft_backend_name(kind), info.name);
    printf("event-timed, median of %ld run%s after 1 warm-up\n\n", repeat,
           repeat == 1 ? "" : "s");
    char names[DEMO_NVARIANTS][32];
    snprintf(names[DEMO_RAW1], 32, "1 stream");
    snprintf(names[DEMO_RAWN], 32, "%d stream%s", s->narrays,
             s->narrays == 1 ? "" : "s");
    snprintf(names[DEMO_TASKS], 32, "%d task%s", s->narrays,
             s->narrays == 1 ? "" : "s");
    snprintf(names[DEMO_PIPELINED], 32, "pipelined");
    printf("%-12s %10s %19s %9s\n", "variant", "median ms", "min - max ms",
           "speed-up");
    float one = t[DEMO_RAW1].median;
    for (int v = 0; v < DEMO_NVARIANTS; v++)
      printf("%-12s %10.3f %8.3f - %-8.3f %8.2fx\n", names[v], t[v].median,
             t[v].min, t[v].max, t[v].median > 0 ? one / t[v].median : 0.0);
    printf("\ncheck passed: each array sums to 1 (1e-3), each element is "
           "input / CPU sum (1e-4)\n");
  }
  int trc = CLI_OK;
  if (demo_close(s) != 0)
    trc = cli_fail("demo", "%s", s->err);
  if ((e = weft_shutdown(rt)) != 0 && trc == CLI_OK)
    trc = cli_fail("demo", "weft_shutdown: %s: %s", weft_err_name(e),
                   weft_last_error_message());
  free(s);
  if (rc == CLI_OK && trc == CLI_OK && trace)
    trc = report_trace(trace);
  return rc != CLI_OK ? rc : trc;
}
