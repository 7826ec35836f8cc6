/* explain: how long `weft trace explain` takes on a large trace.
 *
 * A trace of the shape a busy run writes (half launch calls on one CPU
 * thread, half the GPU ops they launch, round-robin over 4 streams: 3
 * kernels, then a copy, every op launched 3 us ahead) is generated to a
 * temporary file of about 1 GB (20 MB under --quick), then read and
 * explained (load, trace_explain, the text printed to /dev/null), against
 * the baseline of reading and reporting it (`weft trace report`: load,
 * trace_analyze, the report). Needs no device. Check: every GPU op is
 * loaded, the span explained is the report's. Target: explain of a 1 GB
 * trace in under 30 s on the 2-core CI machine. One timed repeat at the
 * full size (each takes tens of seconds), --repeat ones under --quick. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "analysis.h"
#include "bench.h"
#include "explain.h"
#include "model.h"
#include "traced.h"

/* Writes the trace to path until it holds about bytes; the op count in
 * *nops. Returns 0, or -1 when writing failed. */
static int generate(const char *path, size_t bytes, size_t *nops) {
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  fprintf(f, "{\"schemaVersion\": 1, \"traceEvents\": [\n");
  size_t n = 0;
  long written = 0;
  double t = 1.7e12; /* absolute microseconds, as Kineto writes them */
  for (long i = 0; (size_t)written < bytes; i++, t += 2) {
    int stream = 7 + (int)(i % 4), copy = stream == 10;
    written += fprintf(
        f,
        "%s{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"%s\",\"pid\":1,"
        "\"tid\":1,\"ts\":%.3f,\"dur\":1.25,\"args\":{\"correlation\":%ld}}",
        i ? ",\n" : "", copy ? "cudaMemcpyAsync" : "cudaLaunchKernel", t, i);
    written +=
        fprintf(f,
                ",\n{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s%ld\",\"pid\":0,"
                "\"tid\":%d,\"ts\":%.3f,\"dur\":%.1f,\"args\":{\"device\":0,"
                "\"stream\":%d,\"correlation\":%ld%s}}",
                copy ? "gpu_memcpy" : "kernel",
                copy ? "Memcpy HtoD (Pinned -> Device) " : "kernel_", i % 50,
                stream, t + 4.25, copy ? 7.0 : 6.5, stream, i,
                copy ? ",\"bytes\":1048576,\"direction\":\"HtoD\"" : "");
    n += 2;
  }
  fprintf(f, "], \"displayTimeUnit\": \"ms\"}\n");
  *nops = n;
  return fclose(f) == 0 && written > 0 ? 0 : -1;
}

/* Reads path and explains it (or analyses and reports it): seconds, or -1
 * with the failure reported. *span the span found. */
static double once(bench_ctx *c, const char *path, int explain, size_t nops,
                   double *span) {
  FILE *null = fopen("/dev/null", "w");
  if (!null)
    return bench_fail(c, "cannot open /dev/null"), -1;
  uint64_t t0 = bench_now_ns();
  trace_model m;
  trace_error err;
  double s = -1;
  if (trace_model_load_file(&m, path, &err) != 0) {
    bench_fail(c, "%s: %s", path, err.message);
  } else if (m.nops != nops) {
    bench_fail(c, "%zu ops loaded, %zu written", m.nops, nops);
  } else if (explain) {
    trace_explanation e;
    trace_explain_opts o = {.source = path, .json = 0, .top = 3};
    if (trace_explain(&m, &e) != 0 || trace_explain_print(null, &m, &e, &o))
      bench_fail(c, "explain failed");
    else
      s = (double)(bench_now_ns() - t0) / 1e9;
    *span = e.span;
    trace_explanation_free(&e);
  } else {
    trace_analysis a;
    trace_report_opts o = {.source = path, .json = 0, .top = 10};
    if (trace_analyze(&m, &a) != 0 || trace_report_print(null, &m, &a, &o))
      bench_fail(c, "report failed");
    else
      s = (double)(bench_now_ns() - t0) / 1e9;
    *span = a.all.span;
    trace_analysis_free(&a);
  }
  trace_model_free(&m);
  fclose(null);
  return s;
}

static int run(bench_ctx *c) {
  size_t bytes = (size_t)bench_size(c, 1L << 30, 20L << 20);
  char path[256];
  bench_trace_path(path, sizeof path, "explain");
  size_t nops = 0;
  if (generate(path, bytes, &nops) != 0) {
    unlink(path);
    return bench_fail(c, "cannot write %s", path);
  }
  int reps = bench_quick(c) ? bench_repeat(c) : 1;
  bench_samples *s = calloc(2, sizeof *s);
  if (!s) {
    unlink(path);
    return bench_fail(c, "out of memory");
  }
  double spans[2] = {0, 0};
  int rc = 0;
  for (int r = 0; rc == 0 && r < reps; r++)
    for (int k = 0; k < 2 && rc == 0; k++) {
      double t = once(c, path, k, nops, &spans[k]);
      if (t < 0)
        rc = BENCH_FAIL;
      else
        bench_samples_add(&s[k], t);
    }
  unlink(path);
  if (rc == 0 && spans[0] != spans[1])
    rc = bench_fail(c, "explain's span %.3f us, the report's %.3f us", spans[1],
                    spans[0]);
  double mb = (double)bytes / 1e6;
  if (rc == 0)
    rc = bench_report(c, "read and report (weft trace report)", "s", &s[0],
                      BENCH_BASELINE, "%.0f MB, %zu ops", mb, nops);
  if (rc == 0)
    rc = bench_report(c, "read and explain (weft trace explain)", "s", &s[1], 0,
                      "%.0f MB; target < 30 s for 1 GB (2-core machine)", mb);
  free(s);
  return rc;
}

const bench_scenario bench_sc_explain = {
    "explain", "weft trace explain on a generated trace of about 1 GB", run};
