/* User ranges in the trace (host backend): each is one slice of category
 * user_annotation named as pushed (the tracer's copy, cut to
 * WEFT_RANGE_NAME_MAX bytes);
 * - a task's ranges are on the task's own lane, the one its waits are on,
 *   nested as pushed, enclosing the wait made inside them, and carry the
 *   task's id;
 * - a plain thread's range is on that thread's lane, with no task;
 * - a range a task leaves open ends by the end of its last run slice;
 * - the file passes `weft trace check`'s rules (slices nest on a lane). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"
#include "compat.h"
#include "conformance/kernels.h"
#include "expect.h"
#include "traced_host.h"
#include "weft.h"

enum { N = 1024 };

static test_kernels tk;

static void ranger(void *arg) {
  float *d = arg;
  int n = N;
  float a = 1, b = 1;
  void *args[] = {&d, &n, &a, &b};
  EXPECT_OK(weft_range_push("outer"));
  EXPECT_OK(weft_launch(&tk.axpb, WEFT_DIM1(N / TEST_THREADS),
                        WEFT_DIM1(TEST_THREADS), 0, args));
  EXPECT_OK(weft_sync()); /* a wait, inside "outer" */
  weft_yield();
  EXPECT_OK(weft_range_push("inner"));
  weft_yield();
  EXPECT_OK(weft_range_pop());
  EXPECT_OK(weft_range_pop());
  char long_name[100];
  memset(long_name, 'r', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  EXPECT_OK(weft_range_push(long_name));
  EXPECT_OK(weft_range_pop());
  EXPECT_OK(weft_range_push("left")); /* closed when the task returns */
}

static const trace_op *range_named(const trace_model *m, const char *name) {
  const trace_op *found = NULL;
  for (size_t i = 0; i < m->nops; i++)
    if (m->ops[i].kind == TRACE_OP_RANGE &&
        strcmp(trace_model_str(m, m->ops[i].name), name) == 0) {
      EXPECT_MSG(!found, "two ranges named '%s'", name);
      found = &m->ops[i];
    }
  EXPECT_MSG(found != NULL, "no range named '%s'", name);
  return found;
}

static int inside(const trace_op *in, const trace_op *out) {
  return in->ts >= out->ts && in->ts + in->dur <= out->ts + out->dur;
}

static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  EXPECT(f != NULL);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *s = malloc((size_t)n + 1);
  EXPECT(s && fread(s, 1, (size_t)n, f) == (size_t)n);
  s[n] = '\0';
  fclose(f);
  return s;
}

int main(void) {
  test_kernels_init(&tk);
  char path[] = "/tmp/weft-ranges-XXXXXX";
  traced_temp(path);
  weft_runtime *rt = traced_host_open(path, 0);
  float *d;
  EXPECT_OK(weft_device_alloc(N * sizeof(float), (void **)&d));
  EXPECT_OK(weft_sync());

  char *heap = strdup("main");
  EXPECT(heap != NULL);
  EXPECT_OK(weft_range_push(heap));
  memset(heap, 'X', strlen(heap)); /* the trace keeps its own copy */
  free(heap);
  weft_task_opts to;
  weft_task_opts_init(&to);
  to.name = "ranger";
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, ranger, d, &to));
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_range_pop());
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_shutdown(rt));

  char *text = read_all(path);
  EXPECT(strstr(text, "\"cat\":\"user_annotation\",\"name\":\"outer\""));
  free(text);

  trace_model m;
  trace_error err;
  EXPECT_MSG(trace_model_load_file(&m, path, &err) == 0, "%s", err.message);
  EXPECT_EQ_INT(m.count[TRACE_OP_RANGE], 5);
  const trace_op *main_r = range_named(&m, "main");
  const trace_op *outer = range_named(&m, "outer");
  const trace_op *inner = range_named(&m, "inner");
  const trace_op *left = range_named(&m, "left");
  char cut[WEFT_RANGE_NAME_MAX + 1];
  memset(cut, 'r', WEFT_RANGE_NAME_MAX);
  cut[WEFT_RANGE_NAME_MAX] = '\0';
  const trace_op *longr = range_named(&m, cut);

  /* The task's: its id, its wait lane, nested, around its wait. */
  EXPECT(outer->task != TRACE_NONE);
  EXPECT(inner->task == outer->task && left->task == outer->task &&
         longr->task == outer->task);
  EXPECT(inner->lane == outer->lane && left->lane == outer->lane);
  EXPECT(inside(inner, outer));
  EXPECT(!inside(left, outer) && left->ts >= outer->ts + outer->dur);
  const trace_op *wait = NULL;
  double last_slice_end = 0;
  for (size_t i = 0; i < m.nops; i++) {
    const trace_op *op = &m.ops[i];
    if (op->task != outer->task)
      continue;
    if (op->kind == TRACE_OP_WAIT && !wait)
      wait = op;
    if (op->kind == TRACE_OP_TASK) {
      EXPECT_MSG(op->lane != outer->lane,
                 "the task's ranges are on a worker's lane");
      if (op->ts + op->dur > last_slice_end)
        last_slice_end = op->ts + op->dur;
    }
  }
  EXPECT_MSG(wait != NULL, "the task's weft_sync left no wait");
  EXPECT_MSG(wait->lane == outer->lane, "ranges and waits on two lanes");
  EXPECT(inside(wait, outer));
  EXPECT(left->ts + left->dur <= last_slice_end + 1e-3);

  /* The plain thread's: its own lane, no task, around the task's. */
  EXPECT(main_r->task == TRACE_NONE);
  EXPECT(main_r->lane != outer->lane);
  EXPECT(inside(outer, main_r) && inside(left, main_r));

  EXPECT_EQ_INT(m.dropped, 0);
  EXPECT_EQ_INT(trace_compat_problems(stderr, &m, 20), 0);
  trace_model_free(&m);
  unlink(path);
  puts("ranges in the trace: ok");
  return 0;
}
