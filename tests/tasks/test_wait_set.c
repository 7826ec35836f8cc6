/* Thousands of tasks in the GPU wait set at once, none let go early.
 *
 * A gate task closes a gate (a kernel spinning until the test opens it)
 * and records an event behind it. Then N tasks (3000; 600 in quick and
 * sanitizer builds) each order their stream after that event, queue
 * x[i] = x[i] * 1 + (i + 1) and weft_sync. Once all N are inside
 * weft_sync, the test waits a little and checks that no sync has
 * returned: the work cannot have run, so a wait that ended would be a
 * completion reported too early (with CUDA's completion flags on, a flag
 * read wrong: slots handed on from one event to the next, values that
 * must not repeat, src/cuda/cuda_completion.c). Then the gate opens, every
 * task must return, and every element must hold its value. Three rounds,
 * so that the second and third reuse the first one's events and flags;
 * all of it twice, on a runtime opened with WEFT_CUDA_FLAGS=0 (CUDA's
 * completion flags off: every wait queries its event) and with 1 (on, the
 * default); nothing to the host backend. */
#include <stdlib.h>

#include "task_common.h"

enum { ROUNDS = 3 };

static int n;
static float *x;       /* device, n elements */
static weft_event *ev; /* recorded behind the closed gate */
static tt_gate gate;
static int recorded, entered, left;

static void gate_task(void *arg) {
  (void)arg;
  tt_gate_launch(&gate);
  EXPECT_OK(weft_event_record(ev));
  tt_store(&recorded, 1);
}

static void waiter(void *arg) {
  int i = (int)(intptr_t)arg;
  EXPECT_OK(weft_event_wait(ev));
  float *d = x + i;
  int one = 1;
  float a = 1.0f, b = (float)(i + 1);
  void *args[] = {&d, &one, &a, &b};
  EXPECT_OK(weft_launch(&tk.axpb, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  tt_add(&entered, 1);
  EXPECT_OK(weft_sync());
  tt_add(&left, 1);
}

/* Waits from the main thread until *p reaches want, or fails. */
static void wait_count(const int *p, int want, const char *what) {
  int64_t end = tt_now_ns() + 60LL * 1000000000LL;
  while (tt_load(p) < want) {
    EXPECT_MSG(tt_now_ns() < end, "%s: %d of %d after 60 s", what, tt_load(p),
               want);
    tt_sleep_ms(1);
  }
}

/* Three rounds on a runtime of its own. */
static void run(void) {
  /* Every waiter holds a stream while the gate spins: made at weft_init,
   * since CUDA makes no more than about 34 streams on demand while the
   * device runs work (runtime.h, opts.streams). */
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.workers = 4;
  o.host_threads = 4;
  o.streams = n + 2; /* and the gate task and this thread */
  weft_runtime *rt = tt_open(&o);
  weft_task **h = calloc((size_t)n, sizeof *h);
  float *host = calloc((size_t)n, sizeof *host);
  EXPECT(h && host);
  tt_gate_init(&gate);
  EXPECT_OK(weft_event_create(&ev));
  EXPECT_OK(weft_device_alloc((size_t)n * sizeof(float), (void **)&x));
  EXPECT_OK(weft_memset(x, 0, (size_t)n * sizeof(float)));
  EXPECT_OK(weft_sync());

  for (int round = 1; round <= ROUNDS; round++) {
    tt_store(&recorded, 0);
    tt_store(&entered, 0);
    tt_store(&left, 0);
    weft_task *g;
    EXPECT_OK(weft_task_spawn(rt, &g, gate_task, NULL, NULL));
    wait_count(&recorded, 1, "the gate's record");
    for (int i = 0; i < n; i++)
      EXPECT_OK(weft_task_spawn(rt, &h[i], waiter, (void *)(intptr_t)i, NULL));
    wait_count(&entered, n, "tasks inside weft_sync");
    tt_sleep_ms(20);
    EXPECT_MSG(tt_gate_state(&gate) != TEST_SPIN_TIMED_OUT,
               "round %d: the gate timed out before all %d tasks waited", round,
               n);
    EXPECT_MSG(tt_load(&left) == 0,
               "round %d: %d of %d syncs returned with the gate closed", round,
               tt_load(&left), n);
    tt_gate_open(&gate);
    for (int i = 0; i < n; i++)
      EXPECT_OK(weft_task_join(h[i]));
    EXPECT_OK(weft_task_join(g));
    EXPECT_EQ_INT(tt_load(&left), n);
  }

  EXPECT_OK(weft_copy(host, x, (size_t)n * sizeof(float)));
  EXPECT_OK(weft_sync());
  for (int i = 0; i < n; i++)
    EXPECT_MSG(host[i] == (float)ROUNDS * (float)(i + 1),
               "x[%d] = %g, expected %g", i, (double)host[i],
               (double)ROUNDS * (i + 1));
  EXPECT_OK(weft_device_free(x));
  EXPECT_OK(weft_event_destroy(&ev));
  tt_gate_fini(&gate);
  free(h);
  free(host);
  tt_close(rt);
}

int main(void) {
  n = tt_quick() ? 600 : 3000;
  setenv("WEFT_CUDA_FLAGS", "0", 1);
  run();
  setenv("WEFT_CUDA_FLAGS", "1", 1);
  run();
  return 0;
}
