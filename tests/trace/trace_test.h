/* Helpers shared by the trace tests: load a trace from a string or a data
 * file, compare times, find a stream, capture output in memory. */
#ifndef WEFT_TEST_TRACE_TEST_H
#define WEFT_TEST_TRACE_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "expect.h"
#include "model.h"
#include "svg.h"

/* a and b agree to within 1e-6 (times in microseconds, percentages). */
#define EXPECT_NEAR(a, b)                                                      \
  do {                                                                         \
    double check_a_ = (a), check_b_ = (b);                                     \
    if (!(fabs(check_a_ - check_b_) <= 1e-6 * (1 + fabs(check_b_))))           \
      EXPECT_FAIL_("EXPECT_NEAR(%s, %s) failed: %.9g != %.9g", #a, #b,         \
                   check_a_, check_b_);                                        \
  } while (0)

/* s contains sub. */
#define EXPECT_HAS(s, sub)                                                     \
  do {                                                                         \
    const char *check_s_ = (s), *check_sub_ = (sub);                           \
    if (!strstr(check_s_, check_sub_))                                         \
      EXPECT_FAIL_("EXPECT_HAS(%s, \"%s\") failed in:\n%s", #s, check_sub_,    \
                   check_s_);                                                  \
  } while (0)

/* Loads text (NUL-terminated) and analyses it; fails the test on an error. */
static inline void load_text(const char *text, trace_model *m,
                             trace_analysis *a) {
  trace_error err;
  /* An exact-size copy, so ASan sees any read past the end. */
  size_t n = strlen(text);
  char *copy = malloc(n ? n : 1);
  EXPECT(copy != NULL);
  memcpy(copy, text, n);
  int rc = trace_model_load(m, copy, n, &err);
  free(copy);
  EXPECT_MSG(rc == 0, "load failed: %s", err.message);
  EXPECT(trace_analyze(m, a) == 0);
}

/* Expects loading text to fail with a message containing want. */
static inline void load_fails(const char *text, size_t n, const char *want) {
  trace_model m;
  trace_error err;
  char *copy = malloc(n ? n : 1);
  EXPECT(copy != NULL);
  memcpy(copy, text, n);
  int rc = trace_model_load(&m, copy, n, &err);
  free(copy);
  trace_model_free(&m);
  EXPECT_MSG(rc != 0, "loaded, expected an error containing '%s': %.200s", want,
             text);
  EXPECT_MSG(strstr(err.message, want) != NULL,
             "error '%s' does not contain '%s'", err.message, want);
}

static inline void load_data(const char *name, trace_model *m,
                             trace_analysis *a) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", WEFT_TRACE_DATA, name);
  trace_error err;
  int rc = trace_model_load_file(m, path, &err);
  EXPECT_MSG(rc == 0, "%s: %s", path, err.message);
  EXPECT(trace_analyze(m, a) == 0);
}

static inline const trace_stream_stats *find_stream(const trace_model *m,
                                                    const trace_analysis *a,
                                                    long long device,
                                                    long long stream) {
  for (size_t i = 0; i < a->nstreams; i++) {
    const trace_gpu_lane *l = &m->gpu_lanes[a->streams[i].lane];
    if (l->device == device && l->stream == stream)
      return &a->streams[i];
  }
  EXPECT_FAIL_("no stream %lld on device %lld", stream, device);
  return NULL;
}

/* Output captured in memory: open, write to .f, then close to read .buf. */
typedef struct capture {
  FILE *f;
  char *buf;
  size_t len;
} capture;

static inline void capture_open(capture *c) {
  c->buf = NULL;
  c->len = 0;
  c->f = open_memstream(&c->buf, &c->len);
  EXPECT(c->f != NULL);
}

static inline void capture_close(capture *c) {
  EXPECT(fclose(c->f) == 0);
  c->f = NULL;
}

static inline char *report_text(const trace_model *m, const trace_analysis *a,
                                int json) {
  capture c;
  capture_open(&c);
  trace_report_opts o = {.source = "test", .json = json, .top = 10};
  EXPECT(trace_report_print(c.f, m, a, &o) == 0);
  capture_close(&c);
  return c.buf;
}

static inline char *svg_text(const trace_model *m, const trace_analysis *a,
                             int width, const char *title, size_t *len) {
  capture c;
  capture_open(&c);
  trace_svg_opts o = {.width = width, .title = title};
  EXPECT(trace_svg_write(c.f, m, a, &o) == 0);
  capture_close(&c);
  if (len)
    *len = c.len;
  return c.buf;
}

#endif
