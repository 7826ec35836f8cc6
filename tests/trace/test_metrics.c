/* The metrics on hand-built traces with known answers: the two-stream trace
 * (overlap exactly 25 % of busy time and 50 % of memory time), an empty
 * trace, a single op, launch delays with host-wait and kernel-wait gaps,
 * queue lengths, copies, several devices, and weft tasks. */
#include "trace_test.h"

static void test_two_streams(void) {
  trace_model m;
  trace_analysis a;
  load_data("two_streams.json", &m, &a);
  EXPECT_EQ_INT(m.count[TRACE_OP_KERNEL], 2);
  EXPECT_EQ_INT(m.count[TRACE_OP_MEMCPY], 2);
  EXPECT_EQ_INT(m.count[TRACE_OP_RUNTIME], 4);
  EXPECT_EQ_INT(m.ngpu_lanes, 2);
  EXPECT_EQ_INT(m.nthreads, 1);

  /* Kernels [0,200) [300,400); copies [150,250) [350,450). */
  const trace_breakdown *b = &a.all;
  EXPECT_NEAR(b->start, 0);
  EXPECT_NEAR(b->span, 450);
  EXPECT_NEAR(b->compute, 300);
  EXPECT_NEAR(b->memory, 200);
  EXPECT_NEAR(b->overlap, 100);
  EXPECT_NEAR(b->busy, 400);
  EXPECT_NEAR(b->non_compute, 100);
  EXPECT_NEAR(b->idle, 50);
  EXPECT_NEAR(trace_pct(b->overlap, b->busy), 25.0);
  EXPECT_NEAR(trace_pct(b->overlap, b->memory), 50.0);
  EXPECT_NEAR(trace_pct(b->compute, b->span), 100.0 * 300 / 450);
  EXPECT_EQ_INT(a.ndevices, 1);
  EXPECT_NEAR(a.devices[0].overlap, 100);
  EXPECT_EQ_INT(a.noverlap, 2);

  /* Each stream: one gap of 100 us whose next op's call ended late. */
  const trace_stream_stats *s7 = find_stream(&m, &a, 0, 7);
  EXPECT_EQ_INT(s7->ops, 2);
  EXPECT_NEAR(s7->span, 400);
  EXPECT_NEAR(s7->idle, 100);
  EXPECT_NEAR(s7->host_wait, 100);
  EXPECT_NEAR(s7->kernel_wait, 0);
  EXPECT_NEAR(s7->late_launch, 100);
  /* HTA's queue: launched, not yet started: [-10,0) and [290,300) over
   * the window [-10,400); weft's in flight: to the ops' ends. */
  EXPECT_EQ_INT(s7->queue_max, 1);
  EXPECT_NEAR(s7->queue_mean, 20.0 / 410.0);
  EXPECT_EQ_INT(s7->inflight_max, 1);
  EXPECT_NEAR(s7->inflight_mean, 320.0 / 410.0);
  const trace_stream_stats *s8 = find_stream(&m, &a, 0, 8);
  EXPECT_NEAR(s8->host_wait, 100);
  EXPECT_NEAR(s8->queue_mean, 30.0 / 310.0);
  EXPECT_NEAR(s8->inflight_mean, 230.0 / 310.0);

  /* Launch delays 5, 5, 5, 15. */
  EXPECT_EQ_INT(a.launch.matched, 4);
  EXPECT_EQ_INT(a.launch.unmatched, 0);
  EXPECT_NEAR(a.launch.median, 5);
  EXPECT_NEAR(a.launch.p90, 12); /* 5 + 0.7 * (15 - 5) */
  EXPECT_NEAR(a.launch.max, 15);

  /* Copies: 2 MB in 100 us is 20 GB/s, 1 MB in 100 us 10 GB/s. */
  const trace_copy_stats *h2d = &a.copies[TRACE_COPY_HTOD];
  EXPECT_EQ_INT(h2d->count, 1);
  EXPECT_NEAR(h2d->bytes / (h2d->total_with_bytes * 1e3), 20);
  EXPECT_NEAR(a.copies[TRACE_COPY_DTOH].bytes, 1e6);
  EXPECT_EQ_INT(h2d->pageable, 0);

  EXPECT_EQ_INT(a.nkernels, 2);
  EXPECT(!strcmp(trace_model_str(&m, a.kernels[0].name), "matmul"));
  EXPECT_NEAR(a.kernels[0].total, 200);
  EXPECT_EQ_INT(a.ntasks, 0);
  trace_analysis_free(&a);
  trace_model_free(&m);
}

static void test_empty(void) {
  const char *texts[] = {
      "{\"traceEvents\": []}", "[]",
      /* CPU activity only */
      "[{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaMalloc\","
      "\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":5},"
      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add\",\"ts\":0,"
      "\"dur\":1}]"};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    trace_model m;
    trace_analysis a;
    load_text(texts[i], &m, &a);
    EXPECT_EQ_INT(a.gpu_ops, 0);
    EXPECT_EQ_INT(a.nstreams, 0);
    EXPECT_EQ_INT(a.launch.matched, 0);
    char *text = report_text(&m, &a, 0);
    EXPECT_HAS(text, "no GPU activity");
    EXPECT(!strstr(text, "nan") && !strstr(text, "inf"));
    free(text);
    char *json = report_text(&m, &a, 1);
    EXPECT_HAS(json, "\"gpu\": null");
    EXPECT(!strstr(json, "nan") && !strstr(json, "inf"));
    free(json);
    trace_analysis_free(&a);
    trace_model_free(&m);
  }
}

static void test_single_op(void) {
  trace_model m;
  trace_analysis a;
  load_text("[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"only\",\"pid\":0,"
            "\"tid\":3,\"ts\":5,\"dur\":10}]",
            &m, &a);
  EXPECT_NEAR(a.all.span, 10);
  EXPECT_NEAR(a.all.compute, 10);
  EXPECT_NEAR(a.all.idle, 0);
  EXPECT_NEAR(trace_pct(a.all.overlap, a.all.busy), 0);
  EXPECT(trace_pct(a.all.overlap, a.all.memory) < 0); /* no memory time */
  const trace_stream_stats *s = find_stream(&m, &a, 0, 3);
  EXPECT_EQ_INT(s->gaps, 0);
  /* No launch call: never queued (HTA), in flight for its whole span. */
  EXPECT_EQ_INT(s->queue_max, 0);
  EXPECT_NEAR(s->queue_mean, 0);
  EXPECT_EQ_INT(s->inflight_max, 1);
  EXPECT_NEAR(s->inflight_mean, 1);
  EXPECT_EQ_INT(a.launch.matched, 0);
  EXPECT_EQ_INT(a.launch.unmatched, 1);
  char *json = report_text(&m, &a, 1);
  EXPECT_HAS(json, "\"overlap_pct_of_memory\": null");
  EXPECT_HAS(json, "\"delay_us\": null");
  free(json);
  trace_analysis_free(&a);
  trace_model_free(&m);

  /* A single zero-length op: a span of 0, percentages absent. */
  load_text("[{\"ph\":\"X\",\"cat\":\"gpu_memset\",\"name\":\"Memset\","
            "\"ts\":5,\"dur\":0}]",
            &m, &a);
  EXPECT_NEAR(a.all.span, 0);
  EXPECT(trace_pct(a.all.idle, a.all.span) < 0);
  json = report_text(&m, &a, 1);
  EXPECT(!strstr(json, "nan") && !strstr(json, "inf"));
  free(json);
  trace_analysis_free(&a);
  trace_model_free(&m);
}

#define CALL(ts, dur, corr)                                                    \
  "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","      \
  "\"pid\":1,\"tid\":1,\"ts\":" #ts ",\"dur\":" #dur                           \
  ",\"args\":{\"correlation\":" #corr "}}"
#define GPU(cat, ts, dur, corr)                                                \
  "{\"ph\":\"X\",\"cat\":\"" cat "\",\"name\":\"op" #corr "\",\"pid\":0,"      \
  "\"tid\":1,\"ts\":" #ts ",\"dur\":" #dur ",\"args\":{\"stream\":1,"          \
  "\"correlation\":" #corr "}}"

static void test_launch_and_gaps(void) {
  trace_model m;
  trace_analysis a;
  /* One stream: A [10,20) B [20,30) C [50,60) D [70,80) E [85,90)
   * F [95,100). Calls: A [0,5) B [6,8) C [40,45) D [46,47) F [48,49); E has
   * none. Gaps, split as HTA does: 30->50 host wait (C's call started at
   * 40 > 30); 60->70 kernel wait (D's call started at 46 < 60, gap under
   * 30 us); 80->85 other (no call); 90->95 kernel wait (F, a memset, queued
   * since 48: HTA counts copies and memsets too). weft's late launch: only
   * C's call ended after its gap opened (45 > 30). */
  load_text(
      "[" CALL(0, 5, 1) "," CALL(6, 2, 2) "," CALL(40, 5, 3) "," CALL(46, 1, 4) "," CALL(
          48, 1,
          6) "," GPU("kernel", 10, 10,
                     1) "," GPU("kernel", 20, 10,
                                2) "," GPU("kernel", 50, 10,
                                           3) "," GPU("kernel", 70, 10,
                                                      4) "," GPU("gpu_memcpy",
                                                                 85, 5,
                                                                 5) "," GPU("gp"
                                                                            "u_"
                                                                            "me"
                                                                            "ms"
                                                                            "e"
                                                                            "t",
                                                                            95,
                                                                            5,
                                                                            6) "]",
      &m, &a);
  const trace_stream_stats *s = find_stream(&m, &a, 0, 1);
  EXPECT_EQ_INT(s->ops, 6);
  EXPECT_NEAR(s->span, 90);
  EXPECT_NEAR(s->busy, 50);
  EXPECT_NEAR(s->idle, 40);
  EXPECT_NEAR(s->host_wait, 20);
  EXPECT_NEAR(s->kernel_wait, 15);
  EXPECT_NEAR(s->other_wait, 5);
  EXPECT_NEAR(s->late_launch, 20);
  EXPECT_EQ_INT(s->gaps, 4);
  EXPECT_NEAR(a.host_wait, 20);

  /* Delays: A 5, B 12, C 5, D 23, F 46; E unmatched. */
  EXPECT_EQ_INT(a.launch.matched, 5);
  EXPECT_EQ_INT(a.launch.unmatched, 1);
  EXPECT_NEAR(a.launch.median, 12);
  EXPECT_NEAR(a.launch.p90, 23 + 0.6 * (46 - 23));
  EXPECT_NEAR(a.launch.max, 46);
  EXPECT_NEAR(a.launch.min, 5);

  /* HTA's queue, launched and not yet started: A [0,10) B [6,20) C [40,50)
   * D [46,70) F [48,95), E never (no call): at most 3 at once (48 to 50:
   * C, D, F); mean = 105 / (100 - 0). weft's in flight, to the ends (E from
   * its start): 155 / 100, at most 3 (46 to 60: C, D, F). */
  EXPECT_EQ_INT(s->queue_max, 3);
  EXPECT_NEAR(s->queue_mean, 1.05);
  EXPECT_EQ_INT(s->inflight_max, 3);
  EXPECT_NEAR(s->inflight_mean, 1.55);
  trace_analysis_free(&a);
  trace_model_free(&m);

  /* A call that returns after its kernel started: a delay of -6, clipped
   * to 0 as HTA does, and counted as early. */
  load_text("[" CALL(0, 10, 1) "," GPU("kernel", 4, 10, 1) "]", &m, &a);
  EXPECT_NEAR(a.launch.median, 0);
  EXPECT_NEAR(a.launch.min, 0);
  EXPECT_EQ_INT(a.launch.early, 1);
  trace_analysis_free(&a);
  trace_model_free(&m);
}

static void test_devices(void) {
  trace_model m;
  trace_analysis a;
  load_text("[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":0,"
            "\"dur\":10,\"args\":{\"device\":0,\"stream\":1}},"
            "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy PtoP\","
            "\"ts\":5,\"dur\":10,\"args\":{\"device\":1,\"stream\":1,"
            "\"bytes\":100}}]",
            &m, &a);
  EXPECT_EQ_INT(a.ndevices, 2);
  EXPECT_NEAR(a.all.span, 15);
  EXPECT_NEAR(a.all.overlap, 5);
  EXPECT_NEAR(a.all.busy, 15);
  EXPECT_EQ_INT(a.devices[0].device, 0);
  EXPECT_NEAR(a.devices[0].compute, 10);
  EXPECT_NEAR(a.devices[0].overlap, 0);
  EXPECT_EQ_INT(a.devices[1].device, 1);
  EXPECT_NEAR(a.devices[1].non_compute, 10);
  EXPECT_NEAR(a.devices[1].start, 5);
  /* Peer copies have a row of their own (PtoP), not DtoD's or other's. */
  EXPECT_EQ_INT(a.copies[TRACE_COPY_PTOP].count, 1);
  EXPECT_EQ_INT(a.copies[TRACE_COPY_OTHER].count, 0);
  EXPECT_EQ_INT(a.copies[TRACE_COPY_DTOD].count, 0);
  trace_analysis_free(&a);
  trace_model_free(&m);
}

static void test_tasks(void) {
  trace_model m;
  trace_analysis a;
  load_data("weft_tasks.json", &m, &a);
  EXPECT_EQ_INT(m.count[TRACE_OP_TASK], 4);
  EXPECT_EQ_INT(m.count[TRACE_OP_WAIT], 2);
  EXPECT_EQ_INT(m.nthreads, 2);
  char label[64];
  trace_thread_label(&m, &m.threads[0], label, sizeof label);
  EXPECT(!strcmp(label, "worker 0"));
  EXPECT(!strcmp(trace_model_str(&m, m.threads[1].process_name), "weft demo"));

  EXPECT_EQ_INT(a.ntasks, 3);
  const trace_task_stats *t = &a.tasks[0]; /* most GPU time first */
  EXPECT_EQ_INT(t->task, 1);
  EXPECT(!strcmp(trace_model_str(&m, t->name), "load"));
  EXPECT_EQ_INT(t->slices, 2);
  EXPECT_NEAR(t->run, 20);
  EXPECT_NEAR(t->wait, 20);
  EXPECT_NEAR(t->ext_wait, 0); /* "wait: GPU" */
  EXPECT_EQ_INT(t->gpu_ops, 2);
  EXPECT_NEAR(t->gpu, 16);
  EXPECT_EQ_INT(t->nstreams, 1);
  EXPECT_EQ_INT(m.gpu_lanes[a.task_streams[t->streams_at]].stream, 3);

  t = &a.tasks[1];
  EXPECT_EQ_INT(t->task, 2);
  EXPECT(!strcmp(trace_model_str(&m, t->name), "compute"));
  EXPECT_NEAR(t->run, 15);
  EXPECT_NEAR(t->wait, 0);
  EXPECT_NEAR(t->gpu, 12);
  EXPECT_EQ_INT(t->nstreams, 2);

  t = &a.tasks[2];
  EXPECT_EQ_INT(t->task, 3);
  EXPECT_NEAR(t->gpu, 0);
  EXPECT_EQ_INT(t->nstreams, 0);
  /* "wait: weft_wait_until": a wait for something outside weft. */
  EXPECT_NEAR(t->wait, 7);
  EXPECT_NEAR(t->ext_wait, 7);

  /* Copy directions from args.direction. */
  EXPECT_EQ_INT(a.copies[TRACE_COPY_HTOD].count, 1);
  EXPECT_EQ_INT(a.copies[TRACE_COPY_DTOH].count, 1);
  EXPECT_NEAR(a.copies[TRACE_COPY_HTOD].bytes, 800000);

  char *text = report_text(&m, &a, 0);
  EXPECT_HAS(text, "load");
  EXPECT_HAS(text, "0/4 0/5");
  free(text);
  trace_analysis_free(&a);
  trace_model_free(&m);
}

/* Runtime latency: task 1 waits 10 us after its spawn and 2 us after its
 * GPU wait; task 2 waits 30, then 4 and 6 us after joins; task 3 runs 1 us
 * late after a yield and carries no delay on its first slice. Task 2 lives
 * longest: made ready at 170 - 30 = 140, last slice ends at 400. */
static void test_latency(void) {
  const char *text = "[{\"ph\":\"X\",\"cat\":\"task\",\"name\":\"a\",\"pid\":1,"
                     "\"tid\":1,\"ts\":110,\"dur\":5,\"args\":{\"task\":1,"
                     "\"weft_ready_by\":\"spawn\",\"weft_ready_delay_us\":10}},"
                     "{\"ph\":\"X\",\"cat\":\"task\",\"name\":\"a\",\"pid\":1,"
                     "\"tid\":1,\"ts\":150,\"dur\":5,\"args\":{\"task\":1,"
                     "\"weft_ready_by\":\"gpu\",\"weft_ready_delay_us\":2}},"
                     "{\"ph\":\"X\",\"cat\":\"task\",\"name\":\"b\",\"pid\":1,"
                     "\"tid\":2,\"ts\":170,\"dur\":5,\"args\":{\"task\":2,"
                     "\"weft_ready_by\":\"spawn\",\"weft_ready_delay_us\":30}},"
                     "{\"ph\":\"X\",\"cat\":\"task\",\"name\":\"b\",\"pid\":1,"
                     "\"tid\":2,\"ts\":250,\"dur\":5,\"args\":{\"task\":2,"
                     "\"weft_ready_by\":\"join\",\"weft_ready_delay_us\":4}},"
                     "{\"ph\":\"X\",\"cat\":\"task\",\"name\":\"b\",\"pid\":1,"
                     "\"tid\":2,\"ts\":390,\"dur\":10,\"args\":{\"task\":2,"
                     "\"weft_ready_by\":\"join\",\"weft_ready_delay_us\":6}},"
                     "{\"ph\":\"X\",\"cat\":\"task\",\"name\":\"c\",\"pid\":1,"
                     "\"tid\":1,\"ts\":200,\"dur\":1,\"args\":{\"task\":3}},"
                     "{\"ph\":\"X\",\"cat\":\"task\",\"name\":\"c\",\"pid\":1,"
                     "\"tid\":1,\"ts\":210,\"dur\":1,\"args\":{\"task\":3,"
                     "\"weft_ready_by\":\"yield\",\"weft_ready_delay_us\":1}}]";
  trace_model m;
  trace_analysis a;
  load_text(text, &m, &a);
  EXPECT_EQ_INT(a.latency_slices, 6);
  const trace_latency_stats *sp = &a.latency[TRACE_READY_SPAWN];
  EXPECT_EQ_INT(sp->count, 2);
  EXPECT_NEAR(sp->median, 20);
  EXPECT_NEAR(sp->p90, 28); /* 10 + 0.9 * (30 - 10) */
  EXPECT_NEAR(sp->max, 30);
  EXPECT_NEAR(sp->total, 40);
  EXPECT_EQ_INT(a.latency[TRACE_READY_GPU].count, 1);
  EXPECT_NEAR(a.latency[TRACE_READY_GPU].max, 2);
  const trace_latency_stats *jn = &a.latency[TRACE_READY_JOIN];
  EXPECT_EQ_INT(jn->count, 2);
  EXPECT_NEAR(jn->median, 5);
  EXPECT_NEAR(jn->total, 10);
  EXPECT_EQ_INT(a.latency[TRACE_READY_YIELD].count, 1);
  EXPECT_EQ_INT((int)a.slowest_task, 2);
  EXPECT_NEAR(a.slowest_life, 260);
  EXPECT_NEAR(a.slowest_delay, 40);
  char *txt = report_text(&m, &a, 0);
  EXPECT_HAS(txt, "runtime latency");
  EXPECT_HAS(txt, "spawn -> first run");
  EXPECT_HAS(txt, "slowest task 2 (b): life 0.260 ms, of which runtime delays "
                  "0.040 ms (15.4 %)");
  free(txt);
  char *json = report_text(&m, &a, 1);
  EXPECT_HAS(json, "\"spawn\": {\"count\": 2, \"median_us\": 20.000");
  EXPECT_HAS(json, "\"runtime_delay_us\": 40.000");
  free(json);
  trace_analysis_free(&a);
  trace_model_free(&m);

  /* Without ready delays (PyTorch's traces, older weft ones): no section. */
  load_text("[{\"ph\":\"X\",\"cat\":\"task\",\"name\":\"a\",\"ts\":0,"
            "\"dur\":1,\"args\":{\"task\":1}}]",
            &m, &a);
  EXPECT_EQ_INT(a.latency_slices, 0);
  txt = report_text(&m, &a, 0);
  EXPECT(!strstr(txt, "runtime latency"));
  free(txt);
  json = report_text(&m, &a, 1);
  EXPECT_HAS(json, "\"runtime_latency\": null");
  free(json);
  trace_analysis_free(&a);
  trace_model_free(&m);
}

int main(void) {
  test_latency();
  test_two_streams();
  test_empty();
  test_single_op();
  test_launch_and_gaps();
  test_devices();
  test_tasks();
  printf("metrics: ok\n");
  return 0;
}
