/* The runtime-latency figures on a real run with deliberately delayed
 * workers, on each backend: with one worker, a task that spawns another and
 * then computes for DELAY_MS before joining delays the child's first run by
 * at least that long; two tasks woken by the same task's end run one after
 * the other, each computing DELAY_MS, so one of them waits that long; and
 * tasks waiting for the GPU report their resume delays (their work is held
 * by a spin kernel until both wait, so neither finds it done). The trace
 * written at shutdown is read back with the trace tools. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis.h"
#include "expect.h"
#include "kernels.h"
#include "traced_host.h"
#include "weft.h"
#include "weft_internal.h"

#define DELAY_MS 5

static weft_runtime *rt;
static int *dev; /* one int per GPU waiter: their memsets run at once */
/* The GPU waiters' gate, pinned: gate[0] the flag this thread sets once
 * both wait, gate[1 + i] waiter i's spin state. */
static int *gate;
static test_kernels tk;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Computes without yielding: the worker is taken for the whole time. */
static void busy(void) {
  double end = now_ms() + DELAY_MS;
  while (now_ms() < end)
    ;
}

static void child(void *arg) { (void)arg; }

static void spawner(void *arg) {
  (void)arg;
  weft_task *c;
  EXPECT_OK(weft_task_spawn(rt, &c, child, NULL, NULL));
  busy();
  EXPECT_OK(weft_task_join(c));
}

static weft_task *awaited;

static void follower(void *arg) {
  (void)arg;
  EXPECT_OK(weft_task_after(awaited)); /* suspends until it returns */
  busy();
}

static void gpu_waiter(void *arg) {
  int i = *(int *)arg;
  const int *flag = &gate[0];
  int *state = &gate[1 + i];
  long long timeout = 15LL * 1000000000LL; /* a broken runtime cannot hang */
  void *args[] = {&flag, &state, &timeout};
  EXPECT_OK(weft_launch(&tk.spin_until, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  EXPECT_OK(weft_memset(dev + i, 0, sizeof *dev));
  EXPECT_OK(weft_sync());
}

static int driver_done;

static void driver(void *arg) {
  (void)arg;
  weft_task *s;
  EXPECT_OK(weft_task_spawn(rt, &s, spawner, NULL, NULL));
  EXPECT_OK(weft_task_join(s));

  /* Two followers of one task; the task runs after both are waiting. */
  weft_task *f[2];
  EXPECT_OK(weft_task_spawn(rt, &awaited, child, NULL, NULL));
  EXPECT_OK(weft_task_spawn(rt, &f[0], follower, NULL, NULL));
  EXPECT_OK(weft_task_spawn(rt, &f[1], follower, NULL, NULL));
  EXPECT_OK(weft_task_join(f[0]));
  EXPECT_OK(weft_task_join(f[1]));
  EXPECT_OK(weft_task_join(awaited));

  weft_task *g[2];
  static int which[2] = {0, 1};
  for (int i = 0; i < 2; i++)
    EXPECT_OK(weft_task_spawn(rt, &g[i], gpu_waiter, &which[i], NULL));
  for (int i = 0; i < 2; i++)
    EXPECT_OK(weft_task_join(g[i]));
  __atomic_store_n(&driver_done, 1, __ATOMIC_RELEASE);
}

int main(void) {
  char path[] = "/tmp/weft-latency-XXXXXX";
  traced_temp(path);
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.workers = 1;
  o.trace_path = path;
  int rc = weft_init(&rt, &o);
  if (rc == WEFT_ENODEV) {
    unlink(path);
    printf("latency: no device for this backend, skipped\n");
    return 77;
  }
  /* CUPTI serves one subscriber: under compute-sanitizer, which holds it,
   * a CUDA runtime cannot trace. */
  if (rc && strstr(weft_last_error_message(), "MULTIPLE_SUBSCRIBERS")) {
    unlink(path);
    printf("latency: CUPTI is taken by another tool, skipped\n");
    return 77;
  }
  EXPECT_OK(rc);
  test_kernels_init(&tk);
  EXPECT_OK(weft_device_alloc(2 * sizeof *dev, (void **)&dev));
  EXPECT_OK(weft_pinned_alloc(3 * sizeof *gate, (void **)&gate));
  for (int i = 0; i < 3; i++)
    __atomic_store_n(&gate[i], 0, __ATOMIC_RELEASE);
  EXPECT_OK(weft_sync());
  /* Detached and waited for by a flag: a join would run the driver and its
   * spawns on this thread too (the guest slot), and the one worker would
   * not be the only thread running tasks. */
  EXPECT_OK(weft_task_spawn(rt, NULL, driver, NULL, NULL));
  double give_up = now_ms() + 60000;
  while (!__atomic_load_n(&driver_done, __ATOMIC_ACQUIRE)) {
    EXPECT_MSG(now_ms() < give_up, "the driver did not finish in 60 s");
    /* Both GPU waiters in the wait set: their work may finish. */
    if (!__atomic_load_n(&gate[0], __ATOMIC_ACQUIRE) &&
        atomic_load(&rt->waits.n) >= 2)
      __atomic_store_n(&gate[0], 1, __ATOMIC_RELEASE);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  for (int i = 0; i < 2; i++)
    EXPECT_MSG(gate[1 + i] == TEST_SPIN_RELEASED,
               "GPU waiter %d's spin ended in state %d, not released", i,
               gate[1 + i]);
  EXPECT_OK(weft_pinned_free(gate));
  EXPECT_OK(weft_device_free(dev));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_shutdown(rt));

  trace_model m;
  trace_error err;
  EXPECT_MSG(trace_model_load_file(&m, path, &err) == 0, "%s", err.message);
  unlink(path);
  trace_analysis a;
  EXPECT(trace_analyze(&m, &a) == 0);
  const double delay_us = DELAY_MS * 1000.0;
  const trace_latency_stats *sp = &a.latency[TRACE_READY_SPAWN];
  /* driver, spawner, child, awaited, 2 followers, 2 GPU waiters */
  EXPECT_EQ_INT(sp->count, 8);
  EXPECT_MSG(sp->max >= delay_us,
             "the child spawned before %d ms of work "
             "started %.1f us after its spawn",
             DELAY_MS, sp->max);
  const trace_latency_stats *jn = &a.latency[TRACE_READY_JOIN];
  /* driver (3 joins that waited at most), spawner, 2 followers */
  EXPECT_MSG(jn->count >= 3, "%zu join wake-ups", jn->count);
  EXPECT_MSG(jn->max >= delay_us,
             "the second follower resumed %.1f us after "
             "the task it followed ended, not after the first's %d ms",
             jn->max, DELAY_MS);
  const trace_latency_stats *gp = &a.latency[TRACE_READY_GPU];
  EXPECT_MSG(gp->count >= 2, "%zu GPU wake-ups (2 tasks waited)", gp->count);
  EXPECT(gp->max >= 0 && gp->median <= gp->max);
  EXPECT(a.slowest_task != TRACE_NONE && a.slowest_delay >= 0);
  EXPECT(a.slowest_delay <= a.slowest_life);
  trace_analysis_free(&a);
  trace_model_free(&m);
  printf("latency: ok\n");
  return 0;
}
