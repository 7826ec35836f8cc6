/* `weft trace explain` on planted traces, one per cause with the times
 * known (microseconds): the cause it names first, its time, the task it
 * names; a mix of two causes; a control that overlaps fully and gets no
 * finding; the text and JSON forms, the SVG's band of lost time; and a
 * truncated trace refused. */
#include <stdarg.h>

#include "explain.h"
#include "trace_test.h"

/* ---- a trace built event by event ---- */

static char buf[1 << 16];
static size_t len;

static void add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void add(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  len += (size_t)vsnprintf(buf + len, sizeof buf - len, fmt, ap);
  va_end(ap);
  EXPECT(len < sizeof buf);
}

static int corr;
/* The thread that makes the next ops' launch calls. */
static int launch_tid = 10;
/* Appended to the next kernels' args: their launch records. */
static const char *kernel_args = "";

static void begin(void) {
  len = 0;
  corr = 0;
  add("{\"traceEvents\":[{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,"
      "\"args\":{\"name\":\"host\"}}");
}

/* A GPU op on stream s over [ts, ts + dur), issued by task's call that ends
 * at issue on thread 10. kind: "kernel", or a copy direction. */
static void op(const char *kind, int s, double ts, double dur, double issue,
               int task) {
  int c = ++corr;
  add(",{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"%s\",\"pid\":1,"
      "\"tid\":%d,\"ts\":%.3f,\"dur\":1,\"args\":{\"correlation\":%d,"
      "\"task\":%d,\"task_name\":\"t%d\"}}",
      strcmp(kind, "kernel") ? "cudaMemcpyAsync" : "cudaLaunchKernel",
      launch_tid, issue - 1, c, task, task);
  if (!strcmp(kind, "kernel"))
    add(",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k%d\",\"pid\":0,"
        "\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"device\":0,"
        "\"stream\":%d,\"correlation\":%d%s}}",
        c, s, ts, dur, s, c, kernel_args);
  else
    add(",{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy %s (Pinned "
        "-> Device)\",\"pid\":0,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
        "\"args\":{\"device\":0,\"stream\":%d,\"correlation\":%d,"
        "\"bytes\":1024,\"direction\":\"%s\"}}",
        kind, s, ts, dur, s, c, kind);
}

/* Closes the trace with tail (after the events' array) and explains it. */
static void load_tail(const char *tail, trace_model *m, trace_explanation *e) {
  add("]%s}", tail);
  trace_analysis a;
  buf[len] = '\0';
  load_text(buf, m, &a);
  trace_analysis_free(&a);
  EXPECT(trace_explain(m, e) == 0);
}

static void load_explain(trace_model *m, trace_explanation *e) {
  add("]}");
  trace_analysis a;
  buf[len] = '\0';
  load_text(buf, m, &a);
  trace_analysis_free(&a);
  EXPECT(trace_explain(m, e) == 0);
}

static char *print(const trace_model *m, const trace_explanation *e, int json) {
  char *out = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&out, &n);
  EXPECT(f != NULL);
  trace_explain_opts o = {.source = "planted", .json = json, .top = 3};
  EXPECT(trace_explain_print(f, m, e, &o) == 0);
  EXPECT(fclose(f) == 0);
  return out;
}

/* The planted cause comes first, with its time and its task named. */
static void expect_cause(const char *what, trace_cause c, double us,
                         const char *task) {
  trace_model m;
  trace_explanation e;
  load_explain(&m, &e);
  EXPECT_MSG(e.top == (int)c, "%s: top cause %d (%s), planted %s", what, e.top,
             e.top >= 0 ? trace_cause_name(e.top) : "none",
             trace_cause_name(c));
  EXPECT_NEAR(e.cause[c], us);
  char *text = print(&m, &e, 0);
  EXPECT_HAS(text, trace_cause_name(c));
  EXPECT_HAS(text, task);
  EXPECT_HAS(text, "verdict: ");
  free(text);
  trace_explanation_free(&e);
  trace_model_free(&m);
}

/* ---- the causes ---- */

/* Two streams, a kernel and a copy side by side all along: nothing lost. */
static void control(void) {
  begin();
  op("kernel", 1, 0, 100, -5, 1);
  op("HtoD", 2, 0, 100, -5, 2);
  op("kernel", 1, 100, 100, 95, 1);
  op("HtoD", 2, 100, 100, 95, 2);
  trace_model m;
  trace_explanation e;
  load_explain(&m, &e);
  EXPECT_EQ_INT(e.top, -1);
  EXPECT_NEAR(e.lost, 0);
  EXPECT_NEAR(e.span, 200);
  EXPECT_NEAR(e.busy, 200);
  char *text = print(&m, &e, 0);
  EXPECT_HAS(text, "verdict: nothing lost");
  free(text);
  trace_explanation_free(&e);
  trace_model_free(&m);
}

/* Four 10 us kernels every gap us on one stream, each launched from a
 * thread of its own as the last ends: 4 threads counted, fill tasks to
 * fill the gaps, and the verdict's remedy says. */
static void four_threads(int gap, int fill, const char *says) {
  begin();
  for (int i = 0; i < 4; i++) {
    launch_tid = 10 + i;
    op("kernel", 1, i * gap, 10, i ? i * gap : -5, 3);
  }
  launch_tid = 10;
  trace_model m;
  trace_explanation e;
  load_explain(&m, &e);
  EXPECT_EQ_INT(e.issuers, 4);
  EXPECT_EQ_INT(e.tasks_to_fill, fill);
  char *text = print(&m, &e, 0), *json = print(&m, &e, 1);
  EXPECT_HAS(text, says);
  EXPECT_HAS(json, "\"issuing_threads\": 4");
  free(text);
  free(json);
  trace_explanation_free(&e);
  trace_model_free(&m);
}

/* Kernels of 10 us, each issued as the last ends 40 us later: 80 us idle
 * with nothing issued; 110 / 30 rounds up to 4 tasks to fill it. */
static void host_slow(void) {
  begin();
  op("kernel", 1, 0, 10, -5, 3);
  op("kernel", 1, 50, 10, 50, 3);
  op("kernel", 1, 100, 10, 100, 3);
  trace_model m;
  trace_explanation e;
  load_explain(&m, &e);
  EXPECT_EQ_INT(e.top, TRACE_CAUSE_HOST_SLOW);
  EXPECT_NEAR(e.cause[TRACE_CAUSE_HOST_SLOW], 80);
  EXPECT_NEAR(e.lost_idle, 80);
  EXPECT_EQ_INT(e.tasks_to_fill, 4);
  char *text = print(&m, &e, 0);
  EXPECT_HAS(text, "about 4 tasks issuing side by side, or a graph");
  EXPECT_HAS(text, "'t3' (id 3)");
  free(text);
  trace_explanation_free(&e);
  trace_model_free(&m);
  /* Launches from 4 threads: gaps that 5 tasks would fill name tasks;
   * gaps that 3 would, a graph (more tasks would not help). */
  four_threads(60, 5, "about 5 tasks issuing side by side, or a graph");
  four_threads(30, 3, "4 threads issued the work already: a graph");
}

/* A copy, a kernel and a copy back, all issued up front on one stream:
 * the kernel and the copy back wait behind it with their engines free. */
static void one_stream(void) {
  begin();
  op("HtoD", 1, 0, 100, -5, 4);
  op("kernel", 1, 100, 100, -5, 4);
  op("DtoH", 1, 200, 100, -5, 4);
  expect_cause("one stream", TRACE_CAUSE_ONE_STREAM, 200, "'t4' (id 4)");
}

/* A copy out on stream 2 waits for stream 1's kernel (an event): its
 * stream and copy engine free, issued, it starts when the kernel ends. */
static void ordered(void) {
  begin();
  op("kernel", 1, 0, 100, -5, 5);
  op("DtoH", 2, 100, 50, -5, 6);
  expect_cause("ordered", TRACE_CAUSE_ORDERED, 100, "'t6' (id 6)");
}

/* A stream wait, as weft's tracer writes it: stream s waits, from ts on,
 * for stream f's work issued by recorded; made by task. */
static void swait(int s, int f, double ts, double recorded, int task) {
  add(",{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"weft_stream_wait\","
      "\"name\":\"stream wait\",\"pid\":1,\"tid\":10,\"ts\":%.3f,\"args\":{"
      "\"weft_device\":0,\"weft_stream\":%d,\"weft_waits_for_device\":0,"
      "\"weft_waits_for_stream\":%d,\"weft_recorded_at\":%.3f,\"task\":%d}}",
      ts, s, f, recorded, task);
}

/* A takeover, as weft's tracer writes it: task took stream s over at ts
 * with task from's work queued. */
static void takeover(int s, double ts, int task, int from) {
  add(",{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"weft_stream_takeover\","
      "\"name\":\"stream taken over\",\"pid\":1,\"tid\":10,\"ts\":%.3f,"
      "\"args\":{\"weft_device\":0,\"weft_stream\":%d,\"weft_from_task\":%d,"
      "\"task\":%d}}",
      ts, s, from, task);
}

/* The end of a weft trace: its header says every wait weft made is in
 * the file. Loads and explains buf. */
static void load_weft(trace_model *m, trace_explanation *e) {
  add("],\"weft\":{\"version\":\"0.1.0\",\"backend\":\"cuda\"}}");
  buf[len] = '\0';
  trace_analysis a;
  load_text(buf, m, &a);
  trace_analysis_free(&a);
  EXPECT(trace_explain(m, e) == 0);
}

/* ordered() in a weft trace: the wait is recorded, and named; without
 * it, the copy starting as the kernel ends is the device running the two
 * one after the other, not an order; and a record made before the kernel
 * was issued holds nothing back. */
static void ordered_recorded(void) {
  trace_model m;
  trace_explanation e;
  begin();
  op("kernel", 1, 0, 100, -5, 5);
  swait(2, 1, -4, -4.5, 6);
  op("DtoH", 2, 100, 50, -3, 6);
  load_weft(&m, &e);
  EXPECT_EQ_INT((int)m.nswaits, 1);
  EXPECT_NEAR(e.cause[TRACE_CAUSE_ORDERED], 100);
  char *text = print(&m, &e, 0);
  EXPECT_HAS(text, "(a stream wait made by task 6 at");
  free(text);
  trace_explanation_free(&e);
  trace_model_free(&m);
  for (int early = 0; early < 2; early++) {
    begin();
    op("kernel", 1, 0, 100, -5, 5);
    if (early)
      swait(2, 1, -4, -7, 6);
    op("DtoH", 2, 100, 50, -3, 6);
    load_weft(&m, &e);
    EXPECT_NEAR(e.cause[TRACE_CAUSE_ORDERED], 0);
    EXPECT_NEAR(e.cause[TRACE_CAUSE_GPU_FULL], 100);
    text = print(&m, &e, 0);
    EXPECT_HAS(text, "of task 't6' (id 6) waited while kernel 'k1'");
    free(text);
    trace_explanation_free(&e);
    trace_model_free(&m);
  }
}

/* A kernel on stream 2 waits (recorded) for stream 1's kernel while a
 * long kernel of stream 3 runs beside both: the order holds it, not the
 * busy device. Without the wait, the device is full; with a second
 * kernel on stream 4 that waits for nothing, that one's wait is the
 * device's (a free op held only by the engine comes first). */
static void ordered_beside_kernels(void) {
  for (int variant = 0; variant < 3; variant++) {
    begin();
    op("kernel", 1, 0, 100, -5, 5);
    op("kernel", 3, 0, 300, -5, 7);
    if (variant != 1)
      swait(2, 1, -4, -4.5, 6);
    op("kernel", 2, 100, 50, -3, 6);
    if (variant == 2)
      op("kernel", 4, 100, 50, -2, 8);
    trace_model m;
    trace_explanation e;
    load_weft(&m, &e);
    EXPECT_NEAR(e.cause[TRACE_CAUSE_ORDERED], variant == 0 ? 100 : 0);
    EXPECT_NEAR(e.cause[TRACE_CAUSE_GPU_FULL], variant == 0 ? 0 : 100);
    char *text = print(&m, &e, 0);
    if (variant == 0)
      EXPECT_HAS(text, "(a stream wait made by task 6 at");
    else
      EXPECT_HAS(text, variant == 1 ? "of task 't6' (id 6) waited while"
                                    : "of task 't8' (id 8) waited while");
    free(text);
    trace_explanation_free(&e);
    trace_model_free(&m);
  }
}

/* Two kernels of two streams, issued together, one after the other. */
static void gpu_full(void) {
  begin();
  op("kernel", 1, 0, 100, -5, 7);
  op("kernel", 2, 100, 100, -5, 8);
  expect_cause("GPU full", TRACE_CAUSE_GPU_FULL, 100, "'t8' (id 8)");
}

/* Sixteen kernels that start 5 us after their launch calls on an idle
 * device set its launch latency; then a kernel issued beside a long one
 * waits 10 us: 5 of them the launch path's, 5 the device's. With 8 such
 * kernels the latency is unknown, and all 10 are the device's. */
static void launch_latency(void) {
  for (int nidle = 16; nidle >= 8; nidle -= 8) {
    begin();
    for (int i = 0; i < nidle; i++)
      op("kernel", 1, i * 20, 10, i * 20 - 5, 20);
    op("kernel", 3, 400, 100, 395, 21);
    op("kernel", 2, 420, 10, 410, 22);
    trace_model m;
    trace_explanation e;
    load_explain(&m, &e);
    EXPECT_NEAR(e.cause[TRACE_CAUSE_GPU_FULL], nidle == 16 ? 5 : 10);
    int found = 0; /* the launch path's 5 us, the GPU busy */
    for (size_t i = 0; i < e.nlost; i++)
      found |= e.lost_at[i].cause == TRACE_CAUSE_HOST_SLOW &&
               !e.lost_at[i].idle && e.lost_at[i].start == 410 &&
               e.lost_at[i].end == 415;
    EXPECT_EQ_INT(found, nidle == 16);
    EXPECT_NEAR(e.launch_latency, nidle == 16 ? 5 : 0);
    char *text = print(&m, &e, 0), *json = print(&m, &e, 1);
    if (nidle == 16) {
      EXPECT_HAS(text, "launch latency on an idle device 5.0 us (median)");
      EXPECT_HAS(json, "\"launch_latency_us\": 5.000");
    } else {
      EXPECT(strstr(text, "launch latency on an idle device") == NULL);
      EXPECT_HAS(json, "\"launch_latency_us\": 0.000");
    }
    free(text);
    free(json);
    trace_explanation_free(&e);
    trace_model_free(&m);
  }
}

/* A kernel issued at 10 on a free stream beside a copy (0-200), starting
 * at 150 with nothing recorded holding it and nothing ended before it
 * started: the device held it while the copy ran (the launch latency
 * unknown: all of it), not the host that had issued it 140 us before. */
static void held_beside_other_work(void) {
  begin();
  op("HtoD", 1, 0, 200, -5, 30);
  op("kernel", 2, 150, 10, 10, 31);
  trace_model m;
  trace_explanation e;
  load_explain(&m, &e);
  EXPECT_NEAR(e.cause[TRACE_CAUSE_GPU_FULL], 140);
  EXPECT_NEAR(e.cause[TRACE_CAUSE_HOST_SLOW], 0);
  trace_explanation_free(&e);
  trace_model_free(&m);
}

/* A span with no GPU work: nothing lost, and the verdict says there was
 * nothing to explain rather than that the GPU ran all it could. */
static void no_gpu_work(void) {
  begin();
  trace_model m;
  trace_explanation e;
  load_explain(&m, &e);
  EXPECT_EQ_INT(e.top, -1);
  char *text = print(&m, &e, 0);
  EXPECT_HAS(text, "verdict: nothing to explain: the GPU ran no work here");
  free(text);
  trace_explanation_free(&e);
  trace_model_free(&m);
}

/* A stretch under a microsecond prints in ns, not as "+0.000 ms". */
static void short_stretch(void) {
  begin();
  op("HtoD", 1, 0, 0.4, -5, 4);
  op("kernel", 1, 0.4, 10, -5, 4);
  trace_model m;
  trace_explanation e;
  load_explain(&m, &e);
  EXPECT_EQ_INT(e.top, TRACE_CAUSE_ONE_STREAM);
  char *text = print(&m, &e, 0);
  EXPECT_HAS(text, "  0.000 ms +400 ns, device 0: kernel");
  free(text);
  trace_explanation_free(&e);
  trace_model_free(&m);
}

/* Two kernels of two streams one after the other, with their launch
 * records: the first filled every SM 4 times over (the GPU was full,
 * measured); or both left room, on one hardware channel (its queue), or
 * on two (their blocks did not fit together, or the trace cannot tell). */
static void launch_records(void) {
  static const struct {
    const char *first, *second;
    trace_cause cause;
    const char *says;
  } cases[] = {
      {",\"blocks per SM\":64,\"weft_resident_blocks_per_sm\":16,"
       "\"weft_hw_channel\":3",
       ",\"blocks per SM\":0.01,\"weft_resident_blocks_per_sm\":16,"
       "\"weft_hw_channel\":3",
       TRACE_CAUSE_GPU_FULL,
       "filled every SM (4.0 times the blocks the device holds at once)"},
      {",\"blocks per SM\":0.01,\"weft_resident_blocks_per_sm\":16,"
       "\"weft_hw_channel\":3",
       ",\"blocks per SM\":0.01,\"weft_resident_blocks_per_sm\":16,"
       "\"weft_hw_channel\":3",
       TRACE_CAUSE_HW_QUEUE,
       "waited behind kernel 'k1' of task 't7' (id 7) in hardware channel "
       "3, the device not full"},
      {",\"blocks per SM\":0.01,\"weft_resident_blocks_per_sm\":16,"
       "\"weft_hw_channel\":3",
       ",\"blocks per SM\":0.01,\"weft_resident_blocks_per_sm\":16,"
       "\"weft_hw_channel\":4",
       TRACE_CAUSE_GPU_FULL,
       "waited while kernel 'k1' of task 't7' (id 7) ran"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    begin();
    kernel_args = cases[i].first;
    op("kernel", 1, 0, 100, -5, 7);
    kernel_args = cases[i].second;
    op("kernel", 2, 100, 100, -5, 8);
    kernel_args = "";
    trace_model m;
    trace_explanation e;
    load_explain(&m, &e);
    EXPECT_EQ_INT(e.top, (int)cases[i].cause);
    EXPECT_NEAR(e.cause[cases[i].cause], 100);
    char *text = print(&m, &e, 0);
    EXPECT_HAS(text, cases[i].says);
    if (cases[i].cause == TRACE_CAUSE_HW_QUEUE)
      EXPECT_HAS(text, "CUDA_DEVICE_MAX_CONNECTIONS");
    free(text);
    trace_explanation_free(&e);
    trace_model_free(&m);
  }
  /* Kineto's occupancy: 2048 warps per SM at 100 % of 64 warp slots is
   * 32 times the device (full); 8 at 12.5 % says nothing of the fill. */
  for (int full = 0; full < 2; full++) {
    begin();
    kernel_args = full ? ",\"warps per SM\":2048,\"est. achieved "
                         "occupancy %\":100"
                       : ",\"warps per SM\":8,\"est. achieved occupancy "
                         "%\":12.5";
    op("kernel", 1, 0, 100, -5, 7);
    op("kernel", 2, 100, 100, -5, 8);
    kernel_args = "";
    trace_model m;
    trace_explanation e;
    load_tail(",\"deviceProperties\":[{\"id\":0,\"numSms\":132,"
              "\"maxThreadsPerMultiprocessor\":2048,\"warpSize\":32}]",
              &m, &e);
    EXPECT_EQ_INT(m.warps_per_sm, 64);
    EXPECT(m.ops[m.nops - 2].kind == TRACE_OP_KERNEL);
    EXPECT_NEAR(m.ops[m.nops - 2].fill, full ? 32 : 0);
    EXPECT_NEAR(e.cause[TRACE_CAUSE_GPU_FULL], 100);
    char *text = print(&m, &e, 0);
    if (full)
      EXPECT_HAS(text, "filled every SM (32.0 times");
    else
      EXPECT(strstr(text, "filled every SM (") == NULL);
    free(text);
    trace_explanation_free(&e);
    trace_model_free(&m);
  }
}

/* Two copies to the device on two streams: one engine, one after the other. */
static void copy_engine(void) {
  begin();
  op("HtoD", 1, 0, 100, -5, 9);
  op("HtoD", 2, 100, 100, -5, 10);
  expect_cause("copy engines", TRACE_CAUSE_COPY_ENGINE, 100, "'t10' (id 10)");
}

/* A cudaMalloc at [20, 20 + dur) between two kernels, the device idle
 * over [10, 100). */
static void plant_malloc(double dur) {
  begin();
  op("kernel", 1, 0, 10, -5, 11);
  add(",{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaMalloc\","
      "\"pid\":1,\"tid\":11,\"ts\":20,\"dur\":%.3f,\"args\":{\"task\":12,"
      "\"task_name\":\"t12\"}}",
      dur);
  op("kernel", 1, 100, 10, 100, 11);
}

/* The cudaMalloc holds the device for 70 of the 90 us idle: those are the
 * sync's, the 20 before and after it the host's. A 5 us one in the same
 * gap is blamed for its 5 us only, and the host's 85 come first. */
static void implicit_sync_call(void) {
  plant_malloc(70);
  expect_cause("cudaMalloc", TRACE_CAUSE_IMPLICIT_SYNC, 70, "cudaMalloc");
  plant_malloc(70);
  trace_model m;
  trace_explanation e;
  load_explain(&m, &e);
  EXPECT_NEAR(e.cause[TRACE_CAUSE_HOST_SLOW], 20);
  EXPECT_NEAR(e.lost_idle, 90);
  trace_explanation_free(&e);
  trace_model_free(&m);
  plant_malloc(5);
  load_explain(&m, &e);
  EXPECT_EQ_INT(e.top, TRACE_CAUSE_HOST_SLOW);
  EXPECT_NEAR(e.cause[TRACE_CAUSE_IMPLICIT_SYNC], 5);
  EXPECT_NEAR(e.cause[TRACE_CAUSE_HOST_SLOW], 85);
  EXPECT_EQ_INT((int)e.count[TRACE_CAUSE_IMPLICIT_SYNC], 1);
  trace_explanation_free(&e);
  trace_model_free(&m);
  /* Two calls from two threads overlapping: one stretch of 70, named by
   * the first with the other said. */
  plant_malloc(30);
  add(",{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaFree\","
      "\"pid\":1,\"tid\":12,\"ts\":40,\"dur\":50,\"args\":{\"task\":13,"
      "\"task_name\":\"t13\"}}");
  load_explain(&m, &e);
  EXPECT_NEAR(e.cause[TRACE_CAUSE_IMPLICIT_SYNC], 70);
  EXPECT_EQ_INT((int)e.count[TRACE_CAUSE_IMPLICIT_SYNC], 1);
  char *text = print(&m, &e, 0);
  EXPECT_HAS(text, "held every stream for 0.030 ms, other such calls "
                   "overlapping it");
  free(text);
  trace_explanation_free(&e);
  trace_model_free(&m);
}

/* weft check's finding of a weft_device_sync in the same place. */
static void implicit_sync_found(void) {
  begin();
  op("kernel", 1, 0, 10, -5, 13);
  add(",{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"weft_check\",\"name\":\"implicit "
      "sync\",\"pid\":1,\"tid\":11,\"ts\":90,\"args\":{\"message\":"
      "\"weft_device_sync from task 'syncer' (id 14) took 70.0 us\","
      "\"task\":14,\"stall_us\":70}}");
  op("kernel", 1, 100, 10, 100, 13);
  expect_cause("weft check's sync", TRACE_CAUSE_IMPLICIT_SYNC, 70,
               "task 'syncer' (id 14)");
}

/* The task that issues the next kernel was ready (spawned) at 5 us and
 * ran only at 90: weft's until then (80 us), the host's from 90 to its
 * call at 100. */
static void weft_cost(void) {
  begin();
  op("kernel", 1, 0, 10, -5, 15);
  add(",{\"ph\":\"X\",\"cat\":\"task\",\"name\":\"t16\",\"pid\":1,\"tid\":10,"
      "\"ts\":90,\"dur\":20,\"args\":{\"task\":16,\"task_name\":\"t16\","
      "\"weft_ready_by\":\"spawn\",\"weft_ready_delay_us\":85}}");
  op("kernel", 1, 100, 10, 100, 16);
  expect_cause("weft", TRACE_CAUSE_WEFT, 80, "'t16' (id 16)");
}

/* One stream's 200 us and the host's 80 us in one trace: both named, the
 * larger first. */
static void mixed(void) {
  begin();
  op("HtoD", 1, 0, 100, -5, 17);
  op("kernel", 1, 100, 100, -5, 17);
  op("DtoH", 1, 200, 100, -5, 17);
  op("kernel", 1, 380, 10, 380, 18);
  trace_model m;
  trace_explanation e;
  load_explain(&m, &e);
  EXPECT_EQ_INT(e.top, TRACE_CAUSE_ONE_STREAM);
  EXPECT_NEAR(e.cause[TRACE_CAUSE_ONE_STREAM], 200);
  EXPECT_NEAR(e.cause[TRACE_CAUSE_HOST_SLOW], 80);
  EXPECT_NEAR(e.lost, 280);
  EXPECT_NEAR(e.lost_idle, 80);
  char *json = print(&m, &e, 1);
  EXPECT_HAS(json, "\"schema\": \"weft-trace-explain/1\"");
  EXPECT_HAS(json, "\"verdict\": {\"cause\": \"one_stream\"");
  EXPECT_HAS(json, "\"cause\": \"host_slow\"");
  EXPECT_HAS(json, "\"task\": 18");
  free(json);
  /* The SVG's band of lost time, its causes in the legend. */
  char *svg = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&svg, &n);
  EXPECT(f != NULL);
  trace_analysis a;
  EXPECT(trace_analyze(&m, &a) == 0);
  trace_svg_opts so = {.width = 800, .title = "mixed", .explain = &e};
  EXPECT(trace_svg_write(f, &m, &a, &so) == 0);
  EXPECT(fclose(f) == 0);
  EXPECT_HAS(svg, "lost: why");
  EXPECT_HAS(svg, ">one stream</text>");
  EXPECT_HAS(svg, "fill=\"#1ABC9C\""); /* one stream's colour, drawn */
  free(svg);
  trace_analysis_free(&a);
  trace_explanation_free(&e);
  trace_model_free(&m);
}

/* Task 8's copy waits on stream 1 behind task 7's kernel: a takeover of the
 * stream by task 8 makes it "a stream taken over"; one by another task,
 * or none, leaves it ordered (a follower handed the stream). A takeover
 * with a bad id is refused. */
static void taken_over(void) {
  for (int by = 0; by < 3; by++) {
    begin();
    if (by)
      takeover(1, -4, by == 1 ? 8 : 9, 7);
    op("kernel", 1, 0, 100, -5, 7);
    op("DtoH", 1, 100, 20, -3, 8);
    if (by == 1) {
      expect_cause("taken over", TRACE_CAUSE_TAKEOVER, 100, "'t8' (id 8)");
      continue;
    }
    expect_cause("handed over", TRACE_CAUSE_ORDERED, 100, "'t8' (id 8)");
  }
  begin();
  add(",{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"weft_stream_takeover\","
      "\"name\":\"stream taken over\",\"pid\":1,\"tid\":10,\"ts\":1,"
      "\"args\":{\"weft_device\":0,\"weft_stream\":1,\"weft_from_task\":"
      "\"seven\",\"task\":8}}]}");
  load_fails(buf, len, "weft_from_task");
}

int main(void) {
  control();
  host_slow();
  one_stream();
  ordered();
  ordered_recorded();
  ordered_beside_kernels();
  taken_over();
  gpu_full();
  launch_records();
  launch_latency();
  held_beside_other_work();
  no_gpu_work();
  short_stretch();
  copy_engine();
  implicit_sync_call();
  implicit_sync_found();
  weft_cost();
  mixed();
  /* Cut short, the file is refused by the loader, never explained. */
  begin();
  op("kernel", 1, 0, 10, -5, 1);
  load_fails(buf, len / 2, "");
  puts("ok");
  return 0;
}
