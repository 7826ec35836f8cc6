/* The report: the text tables and the JSON schema on the two-stream trace,
 * JSON that our own strict reader accepts, and hostile names that stay on
 * one line in text and escaped in JSON. */
#include "json.h"
#include "trace_test.h"

/* The whole of text is one valid JSON value. */
static void check_json(const char *text) {
  trace_json j;
  trace_json_init(&j, text, strlen(text));
  trace_json_token t;
  trace_json_type type;
  while ((type = trace_json_next(&j, &t)) != TRACE_JSON_EOF &&
         type != TRACE_JSON_ERROR)
    ;
  EXPECT_MSG(type == TRACE_JSON_EOF, "invalid JSON report: %s\n%s",
             trace_json_error(&j), text);
  trace_json_free(&j);
}

/* The number after the first "key": in text. */
static double json_value(const char *text, const char *key) {
  char pat[128];
  snprintf(pat, sizeof pat, "\"%s\": ", key);
  const char *at = strstr(text, pat);
  EXPECT_MSG(at != NULL, "no %s in the report", key);
  return strtod(at + strlen(pat), NULL);
}

static void test_two_streams(void) {
  trace_model m;
  trace_analysis a;
  load_data("two_streams.json", &m, &a);

  char *text = report_text(&m, &a, 0);
  printf("%s\n", text);
  EXPECT_HAS(text, "GPU time over the span of GPU activity: 0.450 ms");
  EXPECT_HAS(text, "compute (kernels)                     0.300    66.7");
  EXPECT_HAS(text, "non-compute (copies, memsets)         0.100    22.2");
  EXPECT_HAS(text, "idle                                  0.050    11.1");
  EXPECT_HAS(text, "kernel/copy overlap: 0.100 ms");
  EXPECT_HAS(text, "   25.0 % of busy time");
  EXPECT_HAS(text, "   50.0 % of memory time");
  EXPECT_HAS(text, "gpu 0 stream 7");
  EXPECT_HAS(text, "median 5.000 us, p90 12.000 us, max 15.000 us");
  EXPECT_HAS(text, "HtoD           1        2000000      0.100     20.00");
  free(text);

  char *json = report_text(&m, &a, 1);
  check_json(json);
  EXPECT_HAS(json, "\"schema\": \"weft-trace-report/1\"");
  EXPECT_NEAR(json_value(json, "span_us"), 450);
  EXPECT_NEAR(json_value(json, "overlap_pct_of_busy"), 25);
  EXPECT_NEAR(json_value(json, "overlap_pct_of_memory"), 50);
  EXPECT_NEAR(json_value(json, "host_wait_us"), 200);
  EXPECT_NEAR(json_value(json, "gb_per_s"), 20);
  EXPECT_NEAR(json_value(json, "median"), 5);
  EXPECT_HAS(json, "\"tasks\": {\"count\": 0, \"top\": []}");
  free(json);
  trace_analysis_free(&a);
  trace_model_free(&m);
}

static void test_hostile_names(void) {
  trace_model m;
  trace_analysis a;
  /* A kernel name with a newline, a tab, quotes, a backslash, markup and a
   * non-ASCII character; a task name too. */
  load_text("[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"evil\\n\\t\\\"k\\\\"
            "</text><script>\\u00e9\",\"ts\":0,\"dur\":5,\"args\":{\"task\":"
            "1,\"task_name\":\"t\\u0001\"}}]",
            &m, &a);
  char *text = report_text(&m, &a, 0);
  EXPECT_HAS(text, "evil??\"k\\</text><script>\xC3\xA9");
  EXPECT_HAS(text, "t?");
  free(text);
  char *json = report_text(&m, &a, 1);
  check_json(json);
  EXPECT_HAS(json, "\"evil\\u000a\\u0009\\\"k\\\\</text><script>\xC3\xA9\"");
  EXPECT_HAS(json, "\"t\\u0001\"");
  free(json);
  trace_analysis_free(&a);
  trace_model_free(&m);
}

static void test_pytorch_json(void) {
  trace_model m;
  trace_analysis a;
  load_data("pytorch_sample.json", &m, &a);
  char *json = report_text(&m, &a, 1);
  check_json(json);
  EXPECT_NEAR(json_value(json, "start_us"), 1712345678020.0);
  EXPECT_NEAR(json_value(json, "kernel_wait_us"), 18);
  free(json);
  trace_analysis_free(&a);
  trace_model_free(&m);
}

int main(void) {
  test_two_streams();
  test_hostile_names();
  test_pytorch_json();
  printf("report: ok\n");
  return 0;
}
