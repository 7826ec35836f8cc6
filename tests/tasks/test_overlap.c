/* Waiting for the GPU suspends the task, not its worker thread.
 *
 * On a runtime with a single worker, task A launches a kernel that spins
 * until a flag in pinned memory is set, then waits for it (weft_sync, or
 * weft_event_sync). Task B, on the same runtime and so the same worker,
 * then launches a small kernel, copies its result back, waits for that,
 * and only then sets the flag. If A's wait blocked the worker, B could not
 * run: A's kernel would time out (the test sees TEST_SPIN_TIMED_OUT) and
 * the test fails. B also checks that A's kernel was still spinning when
 * B's own work completed: A's stream did not hold B's back. */
#include <stdio.h>

#include "task_common.h"

typedef struct scene {
  tt_gate gate;
  int *d;   /* device int for B */
  int *out; /* pinned int for B */
  int use_event;
  int a_rc, a_state;
  int b_saw_state;
  int b_ok;
} scene;

static void task_a(void *arg) {
  scene *s = arg;
  tt_gate_launch(&s->gate);
  if (s->use_event) {
    weft_event *ev;
    EXPECT_OK(weft_event_create(&ev));
    EXPECT_OK(weft_event_record(ev));
    s->a_rc = weft_event_sync(ev);
    EXPECT_OK(weft_event_destroy(&ev));
  } else {
    s->a_rc = weft_sync();
  }
  s->a_state = tt_gate_state(&s->gate);
}

static void task_b(void *arg) {
  scene *s = arg;
  /* Yields until A's kernel runs; A is suspended meanwhile. */
  tt_gate_wait_started(&s->gate);
  int v = 77;
  void *args[] = {&s->d, &v};
  EXPECT_OK(weft_launch(&tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  EXPECT_OK(weft_copy(s->out, s->d, sizeof(int)));
  int rc = weft_sync();
  s->b_saw_state = tt_gate_state(&s->gate);
  s->b_ok = rc == 0 && *s->out == 77;
  tt_gate_open(&s->gate); /* only now may A finish */
}

static void run(weft_runtime *rt, int use_event) {
  static scene s;
  s = (scene){.use_event = use_event};
  tt_gate_init(&s.gate);
  EXPECT_OK(weft_pinned_alloc(sizeof(int), (void **)&s.out));
  *s.out = -1;
  EXPECT_OK(weft_device_alloc(sizeof(int), (void **)&s.d));
  EXPECT_OK(weft_sync());

  weft_task *a, *b;
  EXPECT_OK(weft_task_spawn(rt, &a, task_a, &s, NULL));
  EXPECT_OK(weft_task_spawn(rt, &b, task_b, &s, NULL));
  EXPECT_OK(weft_task_join(b));
  EXPECT_OK(weft_task_join(a));

  EXPECT_MSG(s.b_ok,
             "task B's launch, copy and sync did not complete (out = %d)",
             *s.out);
  EXPECT_MSG(
      s.b_saw_state == TEST_SPIN_STARTED,
      "A's kernel should have been spinning when B's work completed (state %d)",
      s.b_saw_state);
  EXPECT_OK(s.a_rc);
  EXPECT_MSG(s.a_state == TEST_SPIN_RELEASED,
             "A's kernel was not released by B (state %d%s)", s.a_state,
             s.a_state == TEST_SPIN_TIMED_OUT
                 ? ": timed out, so B could not run while A waited"
                 : "");

  EXPECT_OK(weft_device_free(s.d));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_pinned_free(s.out));
  tt_gate_fini(&s.gate);
}

int main(void) {
  weft_runtime *rt = tt_open_workers(1);
  run(rt, 0);
  run(rt, 1);
  run(rt, 0);
  tt_close(rt);
  puts("ok");
  return 0;
}
