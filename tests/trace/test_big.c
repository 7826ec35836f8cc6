/* A generated trace of a million ops (about 150 MB of JSON), loaded,
 * analysed, reported, drawn and explained. Prints the time of each step (not
 * checked: machines differ) and checks that the results are right and that
 * memory stays proportional to the input: under 1 KiB per op at the peak, the
 * JSON text included.
 *
 *   WEFT_TRACE_BIG_OPS       ops to generate (default 1000000)
 *   WEFT_TRACE_SANITIZED=1   skip the memory bound (sanitizers add their own)
 */
#include <sys/resource.h>
#include <time.h>

#include "explain.h"
#include "trace_test.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long max_rss_kib(void) {
  struct rusage ru;
  EXPECT(getrusage(RUSAGE_SELF, &ru) == 0);
  return ru.ru_maxrss; /* KiB on Linux */
}

/* Half the ops are launch calls on one CPU thread, half the GPU ops they
 * launch (round-robin over 4 streams: 3 kernels, then a copy), with
 * Kineto-like absolute timestamps and fields. */
static char *generate(size_t nops, size_t *len) {
  size_t cap = nops * 200 + 4096, n = 0;
  char *buf = malloc(cap);
  EXPECT(buf != NULL);
  n +=
      (size_t)snprintf(buf, cap, "{\"schemaVersion\": 1, \"traceEvents\": [\n");
  double t = 1712345678000.0;
  for (size_t i = 0; i < nops / 2; i++) {
    size_t stream = 7 + i % 4;
    double call = t + 2.0 * (double)i;
    n += (size_t)snprintf(
        buf + n, cap - n,
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"%s\",\"pid\":4242,"
        "\"tid\":4242,\"ts\":%.3f,\"dur\":1.250,\"args\":{\"External id\":%zu,"
        "\"correlation\":%zu}},\n",
        i % 4 == 3 ? "cudaMemcpyAsync" : "cudaLaunchKernel", call, i, i);
    if (i % 4 == 3)
      n += (size_t)snprintf(
          buf + n, cap - n,
          "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy HtoD (Pinned "
          "-> Device)\",\"pid\":0,\"tid\":%zu,\"ts\":%.3f,\"dur\":7.000,"
          "\"args\":{\"device\":0,\"stream\":%zu,\"correlation\":%zu,"
          "\"bytes\":65536}}%s\n",
          stream, call + 3.0, stream, i, i + 1 < nops / 2 ? "," : "");
    else
      n += (size_t)snprintf(
          buf + n, cap - n,
          "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"kernel_%zu\",\"pid\":0,"
          "\"tid\":%zu,\"ts\":%.3f,\"dur\":6.500,\"args\":{\"device\":0,"
          "\"stream\":%zu,\"correlation\":%zu,\"grid\":[128,1,1],"
          "\"block\":[256,1,1]}}%s\n",
          i % 50, stream, call + 3.0, stream, i, i + 1 < nops / 2 ? "," : "");
    EXPECT(n < cap - 1024);
  }
  n += (size_t)snprintf(buf + n, cap - n, "], \"displayTimeUnit\": \"ms\"}\n");
  *len = n;
  return buf;
}

int main(void) {
  const char *env = getenv("WEFT_TRACE_BIG_OPS");
  size_t nops = env ? (size_t)strtoull(env, NULL, 10) : 1000000;
  if (nops < 8)
    nops = 8;
  nops -= nops % 8;
  const char *san = getenv("WEFT_TRACE_SANITIZED");
  int sanitized = san && *san && strcmp(san, "0") != 0;
  long rss0 = max_rss_kib();

  double t0 = now();
  size_t len;
  char *json = generate(nops, &len);
  double t1 = now();

  trace_model m;
  trace_error err;
  int rc = trace_model_load(&m, json, len, &err);
  EXPECT_MSG(rc == 0, "%s", err.message);
  free(json);
  double t2 = now();

  trace_analysis a;
  EXPECT(trace_analyze(&m, &a) == 0);
  double t3 = now();

  FILE *null = fopen("/dev/null", "w");
  EXPECT(null != NULL);
  trace_report_opts ro = {.source = "big", .json = 0, .top = 10};
  EXPECT(trace_report_print(null, &m, &a, &ro) == 0);
  ro.json = 1;
  EXPECT(trace_report_print(null, &m, &a, &ro) == 0);
  fclose(null);
  double t4 = now();

  size_t svg_len;
  char *svg = svg_text(&m, &a, 1600, "big", &svg_len);
  free(svg);
  double t5 = now();

  trace_explanation ex;
  EXPECT(trace_explain(&m, &ex) == 0);
  FILE *null2 = fopen("/dev/null", "w");
  EXPECT(null2 != NULL);
  trace_explain_opts eo = {.source = "big", .json = 0, .top = 3};
  EXPECT(trace_explain_print(null2, &m, &ex, &eo) == 0);
  fclose(null2);
  double t6 = now();
  long rss1 = max_rss_kib();

  printf("%zu ops, %.1f MB of JSON\n", nops, (double)len / 1e6);
  printf("  generate  %7.3f s\n", t1 - t0);
  printf("  load      %7.3f s  (%.0f MB/s)\n", t2 - t1,
         (double)len / 1e6 / (t2 - t1));
  printf("  analyse   %7.3f s\n", t3 - t2);
  printf("  report    %7.3f s  (text and JSON)\n", t4 - t3);
  printf("  svg       %7.3f s  (%zu bytes)\n", t5 - t4, svg_len);
  printf("  explain   %7.3f s  (%.0f MB/s of JSON)\n", t6 - t5,
         (double)len / 1e6 / (t6 - t5));
  printf("  peak RSS  %ld MiB, %.0f bytes per op above the start\n",
         rss1 / 1024, (double)(rss1 - rss0) * 1024.0 / (double)nops);

  EXPECT_EQ_INT(m.nops, nops);
  EXPECT_EQ_INT(a.gpu_ops, nops / 2);
  EXPECT_EQ_INT(m.ngpu_lanes, 4);
  EXPECT_EQ_INT(a.launch.matched, nops / 2);
  EXPECT_NEAR(a.launch.median, 1.75); /* 3 - 1.25 */
  EXPECT_EQ_INT(a.nkernels, 50);
  EXPECT_EQ_INT(a.copies[TRACE_COPY_HTOD].count, nops / 8);
  /* Each stream gets an op every 8 us lasting 6.5 us (kernels, streams
   * 7-9) or 7 us (copies, stream 10), launched 3 us ahead: each gap comes
   * before an op already queued, so none is a host wait, and each is under
   * HTA's 30 us, so all are kernel wait (copies' gaps too, as HTA counts). */
  for (size_t i = 0; i < a.nstreams; i++) {
    const trace_stream_stats *s = &a.streams[i];
    EXPECT_NEAR(s->host_wait, 0);
    EXPECT_EQ_INT(s->gaps, s->ops - 1);
    EXPECT_NEAR(s->kernel_wait, s->idle);
  }
  EXPECT(svg_len < 2000000);
  /* One device, never idle inside its span with nothing issued: what is
   * lost is issued work behind other work, and the span is the
   * breakdown's. */
  EXPECT_EQ_INT(ex.ndevices, 1);
  EXPECT_NEAR(ex.span, a.all.span);
  EXPECT_NEAR(ex.busy, a.all.busy);
  EXPECT(ex.lost <= ex.span);
  trace_explanation_free(&ex);

  if (!sanitized) {
    EXPECT_MSG((double)(rss1 - rss0) * 1024.0 / (double)nops < 1024.0,
               "peak memory %ld KiB for %zu ops", rss1 - rss0, nops);
  }
  trace_analysis_free(&a);
  trace_model_free(&m);
  printf("big: ok\n");
  return 0;
}
