/* Priority-aware admission (weft_runtime_opts.admission), on every backend:
 * - held: while a high-priority task lives, a normal task behind a closed
 *   gate has queued the gate and depth - 1 more operations and waits, not
 *   returned; when the high task ends it is released at once (the gate
 *   still closed) and queues the rest; its results keep stream order;
 * - off (admission 0): the same task queues everything at once;
 * - no starvation: beside a high task that lives throughout, a normal task
 *   of 200 operations at depth 1 completes;
 * - no deadlock: a high task joining a normal task that the policy holds;
 * - a running high task: while it runs on a worker (not suspended), a
 *   normal task's next operation waits, even with nothing in flight, for
 *   it to stop or for 1 ms (a high task spinning until the normal task's
 *   work shows is not a deadlock);
 * - weft_runtime_set_admission: on for a runtime opened without it, and
 *   off again releasing a held task;
 * - bad input: depths out of range, in the option and in WEFT_ADMISSION. */
#include <stdlib.h>
#include <string.h>

#include "task_common.h"

enum { N = 256, OPS = 10 };

static int open_flag; /* set by the test: the high task may end */

static int flag_set(void *arg) {
  return tt_load((const int *)arg) ? 0 : WEFT_EAGAIN;
}

/* A high task with no GPU work: alive until open_flag is set. */
static void high_waiter(void *arg) {
  (void)arg;
  EXPECT_OK(weft_wait_until(flag_set, &open_flag));
}

static int axpb(float *x, float a, float b) {
  int n = N;
  void *args[] = {&x, &n, &a, &b};
  return weft_launch(&tk.axpb, WEFT_DIM1((N + TEST_THREADS - 1) / TEST_THREADS),
                     WEFT_DIM1(TEST_THREADS), 0, args);
}

typedef struct job {
  tt_gate *gate; /* NULL: no gate first */
  float *x;      /* pinned, N floats */
  int ops;
  int issued; /* launches queued so far, read by the test */
} job;

/* The gate (if any), then ops launches x = x * 2 + i, then weft_sync. */
static void normal_work(void *arg) {
  job *j = arg;
  if (j->gate)
    tt_gate_launch(j->gate);
  for (int i = 0; i < j->ops; i++) {
    EXPECT_OK(axpb(j->x, 2.0f, (float)(i % 7)));
    tt_store(&j->issued, i + 1);
  }
  EXPECT_OK(weft_sync());
}

static int spinning;    /* set by high_spinner once it runs */
static int *spin_until; /* high_spinner stops once this is set */

/* A high task that stays on its worker, spinning, until *spin_until. */
static void high_spinner(void *arg) {
  (void)arg;
  tt_store(&spinning, 1);
  while (!tt_load(spin_until))
    ;
}

/* Waits, from the test's thread, until j has queued n launches (10 s at
 * most: a task held for ever fails the test instead of hanging it). */
static void wait_issued(job *j, int n) {
  int64_t until = tt_now_ns() + 10 * 1000000000LL;
  while (tt_load(&j->issued) < n && tt_now_ns() < until)
    tt_sleep_ms(1);
  EXPECT_EQ_INT(tt_load(&j->issued), n);
}

static float expected(int ops) {
  float v = 1.0f;
  for (int i = 0; i < ops; i++)
    v = v * 2.0f + (float)(i % 7);
  return v;
}

static void check_x(const float *x, int ops) {
  float want = expected(ops);
  for (int i = 0; i < N; i++)
    EXPECT_MSG(x[i] == want, "x[%d] = %g, want %g", i, (double)x[i],
               (double)want);
}

static weft_runtime *open_with(int depth) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.workers = 4;
  o.host_threads = 4; /* a gate holds one executor thread */
  o.admission = depth;
  return tt_open(&o);
}

static float *pinned_ones(void) {
  float *x;
  EXPECT_OK(weft_pinned_alloc(N * sizeof *x, (void **)&x));
  for (int i = 0; i < N; i++)
    x[i] = 1.0f;
  return x;
}

static weft_task *spawn(weft_runtime *rt, weft_task_fn fn, void *arg,
                        int high) {
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.priority = high ? WEFT_PRIORITY_HIGH : WEFT_PRIORITY_NORMAL;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, fn, arg, &o));
  return t;
}

/* Held at depth 2 behind a closed gate, released when the high task ends;
 * with depth 0, never held. */
static void held_then_released(int depth) {
  weft_runtime *rt = open_with(depth);
  tt_gate gate;
  tt_gate_init(&gate);
  tt_store(&open_flag, 0);
  weft_task *high = spawn(rt, high_waiter, NULL, 1);
  job j = {&gate, pinned_ones(), OPS, 0};
  weft_task *normal = spawn(rt, normal_work, &j, 0);
  tt_gate_wait_started(&gate);
  if (depth) {
    /* What depth allows, however slowly the worker gets to it; then time
     * to queue more, were it not held. */
    wait_issued(&j, depth - 1);
    tt_sleep_ms(30);
    EXPECT_EQ_INT(tt_load(&j.issued), depth - 1);
    EXPECT(!tt_task_returned(normal));
    tt_store(&open_flag, 1); /* the high task ends: no one to hold for */
    EXPECT_OK(weft_task_join(high));
  }
  /* Everything queued, behind the gate that is still closed. */
  wait_issued(&j, OPS);
  EXPECT_EQ_INT(tt_gate_state(&gate), TEST_SPIN_STARTED);
  tt_gate_open(&gate);
  EXPECT_OK(weft_task_join(normal));
  check_x(j.x, OPS);
  if (!depth) {
    tt_store(&open_flag, 1);
    EXPECT_OK(weft_task_join(high));
  }
  EXPECT_OK(weft_pinned_free(j.x));
  tt_gate_fini(&gate);
  tt_close(rt);
}

/* Beside a high task alive throughout, depth 1: the normal task still
 * finishes, one operation in flight at a time. */
static void no_starvation(void) {
  weft_runtime *rt = open_with(1);
  tt_store(&open_flag, 0);
  weft_task *high = spawn(rt, high_waiter, NULL, 1);
  job j = {NULL, pinned_ones(), 200, 0};
  weft_task *normal = spawn(rt, normal_work, &j, 0);
  EXPECT_OK(weft_task_join(normal));
  check_x(j.x, 200);
  tt_store(&open_flag, 1);
  EXPECT_OK(weft_task_join(high));
  EXPECT_OK(weft_pinned_free(j.x));
  tt_close(rt);
}

typedef struct parent_job {
  weft_runtime *rt;
  job child;
} parent_job;

/* A high task spawns a normal one, which the policy holds (its spawner is
 * a live high task), and joins it. */
static void high_parent(void *arg) {
  parent_job *p = arg;
  weft_task *t = spawn(p->rt, normal_work, &p->child, 0);
  EXPECT_OK(weft_task_join(t));
}

static void no_deadlock(void) {
  weft_runtime *rt = open_with(1);
  parent_job p = {rt, {NULL, pinned_ones(), 50, 0}};
  weft_task *t = spawn(rt, high_parent, &p, 1);
  EXPECT_OK(weft_task_join(t));
  check_x(p.child.x, 50);
  EXPECT_OK(weft_pinned_free(p.child.x));
  tt_close(rt);
}

/* A normal task beside a running high task waits to issue: here the high
 * task spins until the normal task's first launch is queued, so the wait
 * ends only by its 1 ms bound (no deadlock), and no sooner. */
static void held_while_high_runs(void) {
  weft_runtime *rt = open_with(4);
  job j = {NULL, pinned_ones(), OPS, 0};
  tt_store(&spinning, 0);
  spin_until = &j.issued;
  weft_task *high = spawn(rt, high_spinner, NULL, 1);
  int64_t until = tt_now_ns() + 10 * 1000000000LL;
  while (!tt_load(&spinning) && tt_now_ns() < until)
    tt_sleep_ms(1);
  EXPECT(tt_load(&spinning));
  int64_t t0 = tt_now_ns();
  weft_task *normal = spawn(rt, normal_work, &j, 0);
  wait_issued(&j, OPS);
  EXPECT_OK(weft_task_join(high));
  int64_t held = tt_now_ns() - t0;
  EXPECT_MSG(held >= 1000000, "the first launch waited %lld ns, not 1 ms",
             (long long)held);
  EXPECT_OK(weft_task_join(normal));
  check_x(j.x, OPS);
  EXPECT_OK(weft_pinned_free(j.x));
  tt_close(rt);
}

/* weft_runtime_set_admission: turned on for a runtime opened without it,
 * raised while a task is held, which lets it queue up to the new depth,
 * then off, which releases it. */
static void set_at_run_time(void) {
  weft_runtime *rt = open_with(0);
  EXPECT_OK(weft_runtime_set_admission(rt, 1));
  tt_gate gate;
  tt_gate_init(&gate);
  tt_store(&open_flag, 0);
  weft_task *high = spawn(rt, high_waiter, NULL, 1);
  job j = {&gate, pinned_ones(), OPS, 0};
  weft_task *normal = spawn(rt, normal_work, &j, 0);
  tt_gate_wait_started(&gate);
  tt_sleep_ms(30);
  EXPECT_EQ_INT(tt_load(&j.issued), 0); /* depth 1: the gate alone */
  /* Deeper: the held task queues up to the new depth at once. */
  EXPECT_OK(weft_runtime_set_admission(rt, 3));
  wait_issued(&j, 2); /* the gate and two more */
  tt_sleep_ms(30);
  EXPECT_EQ_INT(tt_load(&j.issued), 2);
  EXPECT_OK(weft_runtime_set_admission(rt, 0));
  wait_issued(&j, OPS);
  tt_gate_open(&gate);
  EXPECT_OK(weft_task_join(normal));
  check_x(j.x, OPS);
  tt_store(&open_flag, 1);
  EXPECT_OK(weft_task_join(high));
  EXPECT_ERR(weft_runtime_set_admission(rt, 65), WEFT_EINVAL);
  EXPECT_ERR(weft_runtime_set_admission(rt, -1), WEFT_EINVAL);
  EXPECT_ERR(weft_runtime_set_admission(NULL, 1), WEFT_EINVAL);
  EXPECT_OK(weft_pinned_free(j.x));
  tt_gate_fini(&gate);
  tt_close(rt);
}

static void bad_input(void) {
  weft_runtime *rt = NULL;
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  EXPECT_EQ_INT(o.admission, -1);
  o.admission = 65;
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "admission 65") != NULL);
  o.admission = -2;
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);
  static const char *const bad[] = {"65", "abc", "-1", "2x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    EXPECT(setenv("WEFT_ADMISSION", bad[i], 1) == 0);
    EXPECT_ERR(weft_init(&rt, NULL), WEFT_EINVAL);
    EXPECT(strstr(weft_last_error_message(), "WEFT_ADMISSION") != NULL);
  }
  /* A good value is used; the option (0: off) wins over the variable. */
  EXPECT(setenv("WEFT_ADMISSION", "4", 1) == 0);
  rt = tt_open(NULL);
  tt_close(rt);
  weft_runtime_opts_init(&o);
  o.admission = 0;
  rt = tt_open(&o);
  tt_close(rt);
  EXPECT(unsetenv("WEFT_ADMISSION") == 0);
}

int main(void) {
  bad_input();
  held_then_released(2);
  held_then_released(0);
  no_starvation();
  no_deadlock();
  set_at_run_time();
  held_while_high_runs();
  printf("ok\n");
  return 0;
}
