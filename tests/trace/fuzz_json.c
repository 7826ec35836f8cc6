/* libFuzzer target for everything that reads a trace file: the JSON reader
 * token by token, then the trace loader, and on whatever loads the
 * analysis, both reports and the SVG. Built and run by scripts/fuzz-trace
 * (clang -fsanitize=fuzzer,address,undefined); not part of the CTest
 * suite, which replays the seed corpus through the same code in
 * test_malformed. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis.h"
#include "explain.h"
#include "json.h"
#include "model.h"
#include "svg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *sink(void) {
  static FILE *null;
  if (!null)
    null = fopen("/dev/null", "w");
  if (!null)
    abort();
  return null;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* The reader alone: it must reach the end or an error, with a message. */
  trace_json j;
  trace_json_init(&j, data, size);
  trace_json_token t;
  trace_json_type type;
  size_t tokens = 0;
  while ((type = trace_json_next(&j, &t)) != TRACE_JSON_EOF &&
         type != TRACE_JSON_ERROR) {
    if (++tokens > size + 1)
      abort(); /* no progress */
    if ((type == TRACE_JSON_STRING || type == TRACE_JSON_KEY) && t.len &&
        !t.str)
      abort();
  }
  if (type == TRACE_JSON_ERROR && !trace_json_error(&j)[0])
    abort();
  trace_json_free(&j);

  /* The loader and everything after it. */
  trace_model m;
  trace_error err;
  if (trace_model_load(&m, data, size, &err) == 0) {
    trace_analysis a;
    if (trace_analyze(&m, &a) == 0) {
      trace_report_opts o = {.source = "fuzz", .json = 0, .top = 5};
      trace_report_print(sink(), &m, &a, &o);
      o.json = 1;
      trace_report_print(sink(), &m, &a, &o);
      trace_svg_opts so = {.width = 800, .title = "fuzz"};
      trace_svg_write(sink(), &m, &a, &so);
    }
    trace_analysis_free(&a);
    trace_explanation e;
    if (trace_explain(&m, &e) == 0) {
      trace_explain_opts eo = {.source = "fuzz", .json = 0, .top = 3};
      trace_explain_print(sink(), &m, &e, &eo);
      eo.json = 1;
      trace_explain_print(sink(), &m, &e, &eo);
    }
    trace_explanation_free(&e);
  } else if (!err.message[0]) {
    abort();
  }
  trace_model_free(&m);
  return 0;
}
