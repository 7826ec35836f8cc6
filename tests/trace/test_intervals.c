/* Interval sets, the base of every time metric: nested, touching,
 * overlapping, unsorted and empty intervals, and intersections. */
#include "trace_test.h"

static size_t unite(trace_interval *iv, size_t n, double *len) {
  n = trace_intervals_union(iv, n);
  *len = trace_intervals_length(iv, n);
  return n;
}

static void test_union(void) {
  double len;
  trace_interval nested[] = {{0, 100}, {10, 20}, {50, 100}};
  EXPECT_EQ_INT(unite(nested, 3, &len), 1);
  EXPECT_NEAR(len, 100);

  trace_interval touching[] = {{0, 10}, {10, 20}, {20, 25}};
  EXPECT_EQ_INT(unite(touching, 3, &len), 1);
  EXPECT_NEAR(touching[0].start, 0);
  EXPECT_NEAR(touching[0].end, 25);

  trace_interval overlapping[] = {{0, 10}, {5, 15}};
  EXPECT_EQ_INT(unite(overlapping, 2, &len), 1);
  EXPECT_NEAR(len, 15);

  trace_interval unsorted[] = {{20, 30}, {0, 10}, {5, 12}};
  EXPECT_EQ_INT(unite(unsorted, 3, &len), 2);
  EXPECT_NEAR(len, 22);
  EXPECT_NEAR(unsorted[0].end, 12);
  EXPECT_NEAR(unsorted[1].start, 20);

  trace_interval empty[] = {{5, 5}, {7, 3}, {1, 2}};
  EXPECT_EQ_INT(unite(empty, 3, &len), 1);
  EXPECT_NEAR(len, 1);

  EXPECT_EQ_INT(trace_intervals_union(NULL, 0), 0);
}

static void test_intersect(void) {
  trace_interval a[] = {{0, 10}, {20, 30}}, b[] = {{5, 25}}, out[3];
  size_t n;
  EXPECT_NEAR(trace_intervals_intersect(a, 2, b, 1, out, &n), 10);
  EXPECT_EQ_INT(n, 2);
  EXPECT_NEAR(out[0].start, 5);
  EXPECT_NEAR(out[0].end, 10);
  EXPECT_NEAR(out[1].start, 20);
  EXPECT_NEAR(out[1].end, 25);

  trace_interval c[] = {{0, 10}}, d[] = {{10, 20}};
  EXPECT_NEAR(trace_intervals_intersect(c, 1, d, 1, out, &n), 0);
  EXPECT_EQ_INT(n, 0); /* touching is not overlapping */

  trace_interval e[] = {{0, 100}}, f[] = {{10, 20}, {30, 40}, {90, 120}};
  EXPECT_NEAR(trace_intervals_intersect(e, 1, f, 3, NULL, NULL), 30);
  EXPECT_NEAR(trace_intervals_intersect(f, 3, e, 1, NULL, NULL), 30);
  EXPECT_NEAR(trace_intervals_intersect(e, 1, NULL, 0, NULL, NULL), 0);
}

/* The same shapes through whole traces. */
static void test_in_traces(void) {
  trace_model m;
  trace_analysis a;
  /* A kernel inside another (two streams): compute is the outer one. */
  load_text("[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"outer\",\"ts\":0,"
            "\"dur\":100,\"args\":{\"stream\":1}},"
            "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"inner\",\"ts\":10,"
            "\"dur\":10,\"args\":{\"stream\":2}}]",
            &m, &a);
  EXPECT_NEAR(a.all.span, 100);
  EXPECT_NEAR(a.all.compute, 100);
  EXPECT_NEAR(a.all.idle, 0);
  trace_analysis_free(&a);
  trace_model_free(&m);

  /* A copy starting as a kernel ends: no overlap, busy is their sum. */
  load_text("[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":0,"
            "\"dur\":10,\"args\":{\"stream\":1}},"
            "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy HtoD\","
            "\"ts\":10,\"dur\":10,\"args\":{\"stream\":2}}]",
            &m, &a);
  EXPECT_NEAR(a.all.overlap, 0);
  EXPECT_NEAR(a.all.busy, 20);
  EXPECT_NEAR(a.all.non_compute, 10);
  EXPECT_EQ_INT(a.noverlap, 0);
  trace_analysis_free(&a);
  trace_model_free(&m);

  /* Overlapping copies on two streams count once in memory time. */
  load_text("[{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy HtoD\","
            "\"ts\":0,\"dur\":10,\"args\":{\"stream\":1}},"
            "{\"ph\":\"X\",\"cat\":\"gpu_memset\",\"name\":\"Memset\","
            "\"ts\":5,\"dur\":10,\"args\":{\"stream\":2}},"
            "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":12,"
            "\"dur\":10,\"args\":{\"stream\":3}}]",
            &m, &a);
  EXPECT_NEAR(a.all.memory, 15);
  EXPECT_NEAR(a.all.overlap, 3);
  EXPECT_NEAR(a.all.busy, 22);
  EXPECT_NEAR(a.all.non_compute, 12);
  EXPECT_NEAR(a.all.compute + a.all.non_compute + a.all.idle, a.all.span);
  trace_analysis_free(&a);
  trace_model_free(&m);
}

int main(void) {
  test_union();
  test_intersect();
  test_in_traces();
  printf("intervals: ok\n");
  return 0;
}
