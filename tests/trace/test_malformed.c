/* Malformed traces are rejected with one clear message and no crash: bad
 * JSON, wrong top-level shapes, missing fields, wrong types, out-of-range
 * numbers, hostile nesting; every truncation of a good trace; and random
 * corruptions of it, whose survivors must analyse, report and draw safely. */
#include "trace_test.h"

#define EV(body) "{\"traceEvents\": [" body "]}"

static void fails(const char *text, const char *want) {
  load_fails(text, strlen(text), want);
}

static void test_shapes(void) {
  fails("", "empty input");
  fails("\"hello\"", "a trace is an object with a \"traceEvents\" array");
  fails("{\"foo\": 1}", "no \"traceEvents\" array");
  fails("{\"traceEvents\": {}}", "\"traceEvents\" must be an array");
  fails("{\"traceEvents\": [], \"traceEvents\": []}", "given twice");
  fails("[1, 2]", "an event must be an object, not a number");
  fails("[[]]", "an event must be an object, not an array");
  fails("{\"traceEvents\": []} []", "after the JSON value");
  fails("{\"traceEvents\": [{\"ph\": \"X\"", "unexpected end of input");
}

static void test_fields(void) {
  /* Runtime-latency arguments of task slices. */
  fails(EV("{\"ph\":\"X\",\"cat\":\"task\",\"name\":\"t\",\"ts\":1,\"dur\":1,"
           "\"args\":{\"weft_ready_by\":\"spawn\"}}"),
        "\"weft_ready_by\" without \"weft_ready_delay_us\"");
  fails(EV("{\"ph\":\"X\",\"cat\":\"task\",\"name\":\"t\",\"ts\":1,\"dur\":1,"
           "\"args\":{\"weft_ready_by\":\"gpu\",\"weft_ready_delay_us\":-3}}"),
        "\"weft_ready_delay_us\" must be a duration");
  fails(
      EV("{\"ph\":\"X\",\"cat\":\"task\",\"name\":\"t\",\"ts\":1,\"dur\":1,"
         "\"args\":{\"weft_ready_by\":\"gpu\",\"weft_ready_delay_us\":\"3\"}}"),
      "args.\"weft_ready_delay_us\" must be a number");
  fails(EV("{\"ph\":\"X\",\"cat\":\"task\",\"name\":\"t\",\"ts\":1,\"dur\":1,"
           "\"args\":{\"weft_ready_by\":4,\"weft_ready_delay_us\":3}}"),
        "args.\"weft_ready_by\" must be a string");
  /* weft check's stall, summed over findings: bounded like durations. */
  fails(EV("{\"ph\":\"i\",\"cat\":\"weft_check\",\"name\":\"implicit sync\","
           "\"ts\":1,\"args\":{\"stall_us\":1e308}}"),
        "\"stall_us\" must be a duration in [0, 1e15]");
  fails(EV("{\"ph\":\"i\",\"cat\":\"weft_check\",\"name\":\"implicit sync\","
           "\"ts\":1,\"args\":{\"stall_us\":-1}}"),
        "\"stall_us\" must be a duration in [0, 1e15]");
  fails(EV("{\"name\":\"k\",\"ts\":1,\"dur\":1}"), "event without \"ph\"");
  fails(EV("{\"ph\":\"X\",\"ts\":1,\"dur\":1}"), "without \"name\"");
  fails(EV("{\"ph\":\"X\",\"name\":\"k\",\"dur\":1}"), "without \"ts\"");
  fails(EV("{\"ph\":\"X\",\"name\":\"k\",\"ts\":1}"), "without \"dur\"");
  fails(EV("{\"ph\":\"X\",\"name\":\"k\",\"ts\":\"1\",\"dur\":1}"),
        "\"ts\" must be a number, not a string");
  fails(EV("{\"ph\":\"X\",\"name\":7,\"ts\":1,\"dur\":1}"),
        "\"name\" must be a string, not a number");
  fails(EV("{\"ph\":88,\"name\":\"k\",\"ts\":1,\"dur\":1}"),
        "\"ph\" must be a string");
  fails(EV("{\"ph\":\"X\",\"name\":\"k\",\"cat\":null,\"ts\":1,\"dur\":1}"),
        "\"cat\" must be a string, not null");
  fails(EV("{\"ph\":\"X\",\"name\":\"k\",\"pid\":[1],\"ts\":1,\"dur\":1}"),
        "\"pid\" must be a number or a string, not an array");
  fails(EV("{\"ph\":\"X\",\"name\":\"k\",\"tid\":1.5,\"ts\":1,\"dur\":1}"),
        "\"tid\" must be an integer or a string");
  fails(EV("{\"ph\":\"X\",\"name\":\"k\",\"ts\":1,\"dur\":1,\"args\":[]}"),
        "\"args\" must be an object, not an array");
  fails(EV("{\"ph\":\"X\",\"name\":\"k\",\"ts\":1,\"dur\":-1}"),
        "negative \"dur\"");
  fails(EV("{\"ph\":\"X\",\"name\":\"k\",\"ts\":1e300,\"dur\":1}"),
        "\"ts\" beyond");
  fails(EV("{\"ph\":\"X\",\"name\":\"k\",\"ts\":1,\"dur\":1e999}"),
        "number out of range");
  fails(EV("{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":1,"
           "\"args\":{\"stream\":\"7\"}}"),
        "args.\"stream\" must be an integer");
  fails(EV("{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":1,"
           "\"args\":{\"device\":0.5}}"),
        "args.\"device\" must be an integer");
  fails(EV("{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"c\",\"ts\":1,"
           "\"dur\":1,\"args\":{\"correlation\":{}}}"),
        "args.\"correlation\" must be an integer");
  fails(EV("{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"c\",\"ts\":1,"
           "\"dur\":1,\"args\":{\"bytes\":-5}}"),
        "args.\"bytes\" is negative");
  fails(EV("{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"c\",\"ts\":1,"
           "\"dur\":1,\"args\":{\"direction\":1}}"),
        "args.\"direction\" must be a string");
  fails(EV("{\"ph\":\"X\",\"cat\":\"task\",\"name\":\"t\",\"ts\":1,"
           "\"dur\":1,\"args\":{\"task\":true}}"),
        "args.\"task\" must be an integer");
  fails(EV("{\"ph\":\"M\",\"name\":\"thread_name\",\"args\":{\"name\":3}}"),
        "args.\"name\" must be a string");

  /* The error names the offset of the bad value. */
  trace_model m;
  trace_error err;
  const char *t = EV("{\"ph\":\"X\",\"name\":\"k\",\"ts\":true,\"dur\":1}");
  EXPECT(trace_model_load(&m, t, strlen(t), &err) != 0);
  trace_model_free(&m);
  char want[32];
  snprintf(want, sizeof want, "byte %zu ", (size_t)(strstr(t, "true") - t));
  EXPECT_MSG(!strncmp(err.message, want, strlen(want)), "%s", err.message);
}

/* What the loader takes without complaint. */
static void test_liberal(void) {
  trace_model m;
  trace_analysis a;
  /* Odd args on an event whose kind does not use them; unknown phases and
   * keys; a large integer correlation; B/E pairs (ignored). */
  load_text(EV("{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\",\"ts\":1,"
               "\"dur\":1,\"args\":{\"stream\":\"x\",\"bytes\":[1]}},"
               "{\"ph\":\"B\",\"name\":\"b\",\"ts\":1},"
               "{\"ph\":\"E\",\"ts\":2},"
               "{\"ph\":\"C\",\"name\":\"c\",\"ts\":1,\"args\":{\"v\":1}},"
               "{\"ph\":\"X\",\"cat\":\"Kernel\",\"name\":\"k\",\"ts\":1,"
               "\"dur\":2,\"pid\":\"GPU 1\",\"tid\":\"stream 9\","
               "\"future\":{\"x\":[null]},"
               "\"args\":{\"correlation\":9007199254740993}}"),
            &m, &a);
  EXPECT_EQ_INT(m.count[TRACE_OP_OTHER], 1);
  EXPECT_EQ_INT(m.count[TRACE_OP_KERNEL], 1); /* "Kernel": older Kineto */
  EXPECT_EQ_INT(m.ignored, 3);
  EXPECT_EQ_INT(m.gpu_lanes[0].device, 1);
  EXPECT_EQ_INT(m.gpu_lanes[0].stream, 9);
  EXPECT(m.ops[1].correlation == 9007199254740993LL);
  trace_analysis_free(&a);
  trace_model_free(&m);
}

static void test_hostile(void) {
  size_t deep = 100000;
  char *b = malloc(deep + 32);
  EXPECT(b != NULL);
  memcpy(b, "{\"traceEvents\": [{\"x\": ", 23);
  memset(b + 23, '[', deep);
  load_fails(b, deep + 23, "nesting deeper than 128");
  free(b);
  static const char nul[] = "[{\"ph\":\"X\",\"name\":\"a\0b\",\"ts\":0,"
                            "\"dur\":0}]";
  load_fails(nul, sizeof nul - 1, "NUL byte");
  fails("[{\"ph\":\"X\",\"name\":\"\\ud800\",\"ts\":0,\"dur\":0}]",
        "unpaired high surrogate");

  trace_model m;
  trace_error err;
  EXPECT(trace_model_load_file(&m, "/nonexistent/trace.json", &err) != 0);
  EXPECT_HAS(err.message, "cannot open");
  trace_model_free(&m);
}

static char *read_data(const char *name, size_t *len) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", WEFT_TRACE_DATA, name);
  FILE *f = fopen(path, "rb");
  EXPECT(f != NULL);
  static char buf[1 << 16];
  *len = fread(buf, 1, sizeof buf, f);
  fclose(f);
  char *copy = malloc(*len);
  EXPECT(copy != NULL);
  memcpy(copy, buf, *len);
  return copy;
}

/* Everything downstream of a load must survive whatever loaded. */
static void exercise(const char *buf, size_t n) {
  trace_model m;
  trace_error err;
  char *copy = malloc(n ? n : 1);
  EXPECT(copy != NULL);
  memcpy(copy, buf, n);
  int rc = trace_model_load(&m, copy, n, &err);
  free(copy);
  if (rc != 0) {
    EXPECT(err.message[0] != '\0');
    trace_model_free(&m);
    return;
  }
  trace_analysis a;
  EXPECT(trace_analyze(&m, &a) == 0);
  FILE *null = fopen("/dev/null", "w");
  EXPECT(null != NULL);
  trace_report_opts o = {.source = "fuzz", .json = 0, .top = 5};
  EXPECT(trace_report_print(null, &m, &a, &o) == 0);
  o.json = 1;
  EXPECT(trace_report_print(null, &m, &a, &o) == 0);
  trace_svg_opts so = {.width = 600, .title = "fuzz"};
  EXPECT(trace_svg_write(null, &m, &a, &so) == 0);
  fclose(null);
  trace_analysis_free(&a);
  trace_model_free(&m);
}

static void test_truncated_and_corrupted(void) {
  const char *files[] = {"two_streams.json", "pytorch_sample.json",
                         "weft_tasks.json"};
  for (size_t f = 0; f < 3; f++) {
    size_t n;
    char *doc = read_data(files[f], &n);
    /* Every strict prefix is an error: the file is one object. Trailing
     * whitespace may be cut without harm. */
    size_t end = n;
    while (end > 0 && (doc[end - 1] == '\n' || doc[end - 1] == ' '))
      end--;
    for (size_t k = 0; k < end; k++) {
      trace_model m;
      trace_error err;
      char *copy = malloc(k ? k : 1);
      EXPECT(copy != NULL);
      memcpy(copy, doc, k);
      EXPECT_MSG(trace_model_load(&m, copy, k, &err) != 0,
                 "%s: prefix of %zu bytes loaded", files[f], k);
      EXPECT(err.message[0] != '\0');
      free(copy);
      trace_model_free(&m);
    }
    /* Random corruptions: flip, replace or delete bytes. */
    uint64_t x = 0x9E3779B97F4A7C15u + f;
    char *mut = malloc(n);
    EXPECT(mut != NULL);
    for (int round = 0; round < 3000; round++) {
      memcpy(mut, doc, n);
      size_t len = n;
      for (int k = 0; k < 1 + round % 4; k++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t at = (size_t)(x % len);
        static const char pick[] = "{}[]\",:0-9eE.\\u tfn\x80\xff";
        switch ((x >> 32) % 3) {
        case 0:
          mut[at] ^= (char)(1u << ((x >> 40) % 8));
          break;
        case 1:
          mut[at] = pick[(x >> 40) % (sizeof pick - 1)];
          break;
        default:
          memmove(mut + at, mut + at + 1, len - at - 1);
          len--;
        }
      }
      exercise(mut, len);
    }
    free(mut);
    exercise(doc, n);
    free(doc);
  }
}

int main(void) {
  test_shapes();
  test_fields();
  test_liberal();
  test_hostile();
  test_truncated_and_corrupted();
  printf("malformed: ok\n");
  return 0;
}
