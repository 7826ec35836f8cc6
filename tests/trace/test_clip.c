/* `weft trace report --range NAME` (clip.h) on a planted trace, every
 * figure worked out by hand below.
 *
 * Ranges "step" [100, 200] and [300, 350] us on the host thread, and
 * "whole" [0, 500] around them. Inside "step": U = [100, 200] ∪ [300,
 * 350], 150 us, and time closes up as c(t) = t on the first, 200 + (t -
 * 300) on the second, 200 between them, 250 after:
 *
 *   op                     real        inside U               closed up
 *   K1 kernel  stream 7    [50, 150]   [100, 150]             [100, 150]
 *   K2 kernel  stream 7    [180, 320]  [180, 200] [300, 320]  [180, 220]
 *   K3 kernel  stream 7    [400, 450]  none: dropped
 *   C1 HtoD    stream 8    [120, 220]  [120, 200]             [120, 200]
 *   C2 DtoH    stream 8    [330, 340]  [330, 340]             [230, 240]
 *   launch K1  host        [90, 95]    none: K1 loses its launch
 *   launch K2  host        [170, 175]  [170, 175]             [170, 175]
 *
 * span 100 -> 240 = 140; |K| = 50 + 40 = 90; |M| = 80 + 10 = 90;
 * |K ∩ M| = [120, 150] + [180, 200] = 50; busy = 90 + 90 - 50 = 130;
 * idle 10 ([220, 230]); overlap 50 / 130 of busy, 50 / 90 of memory.
 * Stream 7: span 120, busy 90, one gap of 30 before K2 whose call began
 * (170) after the stream ran dry (150): host wait 30. Launches: K2
 * matched, delay 180 - 175 = 5; K1, C1, C2 unmatched. */
#include "clip.h"
#include "trace_test.h"

static const char planted[] =
    "{\"traceEvents\": ["
    "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":1,"
    "\"args\":{\"name\":\"main\"}},"
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"whole\",\"pid\":1,"
    "\"tid\":1,\"ts\":0,\"dur\":500},"
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"step\",\"pid\":1,"
    "\"tid\":1,\"ts\":100,\"dur\":100},"
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"step\",\"pid\":1,"
    "\"tid\":1,\"ts\":300,\"dur\":50},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
    "\"pid\":1,\"tid\":1,\"ts\":90,\"dur\":5,\"args\":{\"correlation\":1}},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
    "\"pid\":1,\"tid\":1,\"ts\":170,\"dur\":5,\"args\":{\"correlation\":2}},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k1\",\"pid\":0,\"tid\":7,"
    "\"ts\":50,\"dur\":100,\"args\":{\"device\":0,\"stream\":7,"
    "\"correlation\":1}},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k2\",\"pid\":0,\"tid\":7,"
    "\"ts\":180,\"dur\":140,\"args\":{\"device\":0,\"stream\":7,"
    "\"correlation\":2}},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k3\",\"pid\":0,\"tid\":7,"
    "\"ts\":400,\"dur\":50,\"args\":{\"device\":0,\"stream\":7}},"
    "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy HtoD\",\"pid\":0,"
    "\"tid\":8,\"ts\":120,\"dur\":100,\"args\":{\"device\":0,\"stream\":8,"
    "\"bytes\":1000}},"
    "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy DtoH\",\"pid\":0,"
    "\"tid\":8,\"ts\":330,\"dur\":10,\"args\":{\"device\":0,\"stream\":8,"
    "\"bytes\":1000}}"
    "]}";

static void clip_step(void) {
  trace_model m;
  trace_analysis a;
  load_text(planted, &m, &a);
  EXPECT_EQ_INT(m.count[TRACE_OP_RANGE], 3);
  trace_analysis_free(&a);
  trace_clip_info info;
  EXPECT_EQ_INT(trace_model_clip(&m, "step", &info), 0);
  EXPECT_EQ_INT(info.ranges, 2);
  EXPECT_NEAR(info.start, 100);
  EXPECT_NEAR(info.inside, 150);
  EXPECT(trace_analyze(&m, &a) == 0);

  const trace_breakdown *b = &a.all;
  EXPECT_EQ_INT(b->kernels, 2);
  EXPECT_EQ_INT(b->copies, 2);
  EXPECT_NEAR(b->start, 100);
  EXPECT_NEAR(b->end, 240);
  EXPECT_NEAR(b->span, 140);
  EXPECT_NEAR(b->compute, 90);
  EXPECT_NEAR(b->memory, 90);
  EXPECT_NEAR(b->overlap, 50);
  EXPECT_NEAR(b->busy, 130);
  EXPECT_NEAR(b->idle, 10);
  EXPECT_NEAR(trace_pct(b->overlap, b->busy), 100.0 * 50 / 130);
  EXPECT_NEAR(trace_pct(b->overlap, b->memory), 100.0 * 50 / 90);

  const trace_stream_stats *s7 = find_stream(&m, &a, 0, 7);
  EXPECT_EQ_INT(s7->ops, 2);
  EXPECT_NEAR(s7->span, 120);
  EXPECT_NEAR(s7->busy, 90);
  EXPECT_NEAR(s7->idle, 30);
  EXPECT_NEAR(s7->host_wait, 30);
  const trace_stream_stats *s8 = find_stream(&m, &a, 0, 8);
  EXPECT_NEAR(s8->span, 120); /* 120 -> 240 */
  EXPECT_NEAR(s8->idle, 30);  /* [200, 230] */

  EXPECT_EQ_INT(a.launch.matched, 1);
  EXPECT_EQ_INT(a.launch.unmatched, 3);
  EXPECT_NEAR(a.launch.median, 5);
  EXPECT_EQ_INT(m.count[TRACE_OP_KERNEL], 2);
  EXPECT_EQ_INT(m.count[TRACE_OP_RUNTIME], 1);
  EXPECT_EQ_INT(m.count[TRACE_OP_RANGE], 3); /* "whole" clipped, kept */

  /* The report says what it covers. */
  capture c;
  capture_open(&c);
  trace_report_opts o = {.source = "planted",
                         .top = 10,
                         .range = "step",
                         .ranges = info.ranges,
                         .inside_us = info.inside};
  EXPECT(trace_report_print(c.f, &m, &a, &o) == 0);
  capture_close(&c);
  EXPECT_HAS(c.buf, "inside range 'step': 2 ranges, 0.150 ms together");
  EXPECT_HAS(c.buf, "38.5 % of busy time");
  free(c.buf);
  capture_open(&c);
  o.json = 1;
  EXPECT(trace_report_print(c.f, &m, &a, &o) == 0);
  capture_close(&c);
  EXPECT_HAS(c.buf, "\"range\": {\"name\": \"step\", \"ranges\": 2, "
                    "\"inside_us\": 150.000}");
  free(c.buf);
  trace_analysis_free(&a);
  trace_model_free(&m);
}

/* One range around everything changes no figure. */
static void clip_whole(void) {
  trace_model m, w;
  trace_analysis a, aw;
  load_text(planted, &m, &a);
  load_text(planted, &w, &aw);
  trace_analysis_free(&aw);
  trace_clip_info info;
  EXPECT_EQ_INT(trace_model_clip(&w, "whole", &info), 0);
  EXPECT(trace_analyze(&w, &aw) == 0);
  EXPECT_NEAR(aw.all.span, a.all.span);
  EXPECT_NEAR(aw.all.busy, a.all.busy);
  EXPECT_NEAR(aw.all.overlap, a.all.overlap);
  EXPECT_EQ_INT(aw.launch.matched, a.launch.matched);
  EXPECT_EQ_INT(w.nops, m.nops);
  trace_analysis_free(&a);
  trace_analysis_free(&aw);
  trace_model_free(&m);
  trace_model_free(&w);
}

static void unknown_name(void) {
  trace_model m;
  trace_analysis a;
  load_text(planted, &m, &a);
  trace_clip_info info;
  size_t nops = m.nops;
  EXPECT_EQ_INT(trace_model_clip(&m, "nope", &info), 1);
  EXPECT_EQ_INT(m.nops, nops); /* unchanged */
  char names[64];
  EXPECT_EQ_INT(trace_range_names(&m, names, sizeof names), 2);
  EXPECT(strcmp(names, "'step', 'whole'") == 0);
  char small[12];
  EXPECT_EQ_INT(trace_range_names(&m, small, sizeof small), 2);
  EXPECT(strlen(small) < sizeof small);
  trace_analysis_free(&a);
  trace_model_free(&m);
}

int main(void) {
  clip_step();
  clip_whole();
  unknown_name();
  printf("ok\n");
  return 0;
}
