/* weft_wait_until on every backend: a task waiting on a test of its own
 * frees its worker (with one worker, the task that makes the test true
 * runs meanwhile); hundreds wait at once and each wakes when its own test
 * is done; the test's own return value comes back, and is not taken for a
 * failure of the task; a plain thread waits by calling the test; a NULL
 * test is refused; and a wait that would never end is ended by
 * weft_shutdown with WEFT_ESTATE. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "task_common.h"
#include "weft_internal.h"

enum { MANY = 500, ANSWER = 42 };

static int flags[MANY];
static int woke[MANY];

static int flag_set(void *arg) {
  return tt_load((const int *)arg) ? 0 : WEFT_EAGAIN;
}

static void waiter(void *arg) {
  int i = (int)(intptr_t)arg;
  EXPECT_OK(weft_wait_until(flag_set, &flags[i]));
  EXPECT(tt_load(&flags[i]) == 1);
  tt_store(&woke[i], 1);
}

/* Sets the flags one by one, yielding between them, from the same worker. */
static void releaser(void *arg) {
  int n = (int)(intptr_t)arg;
  for (int i = n - 1; i >= 0; i--) {
    tt_store(&flags[i], 1);
    weft_yield();
  }
}

static int answer(void *arg) {
  int *calls = arg;
  return ++*calls < 3 ? WEFT_EAGAIN : ANSWER;
}

static void answering(void *arg) {
  int calls = 0;
  *(int *)arg = weft_wait_until(answer, &calls);
}

static int never(void *arg) {
  tt_store((int *)arg, 1);
  return WEFT_EAGAIN;
}

static int never_waiting, never_rc;
static char never_msg[256];

static void never_task(void *arg) {
  (void)arg;
  never_rc = weft_wait_until(never, &never_waiting);
  snprintf(never_msg, sizeof never_msg, "%s", weft_last_error_message());
}

/* A slow test (each call 5 ms) is called by the task itself, once by the
 * poll that finds it slow, then by the slow tests' thread alone, while a task's
 * GPU round trips go on (issue 37: one 200 ms test once stalled every GPU
 * wait). */
static atomic_int slow_go, slow_on_workers, slow_off_workers;

static int slow_test(void *arg) {
  (void)arg;
  if (weft__worker_self())
    atomic_fetch_add(&slow_on_workers, 1);
  else
    atomic_fetch_add(&slow_off_workers, 1);
  struct timespec ts = {0, 5000000};
  nanosleep(&ts, NULL);
  return atomic_load(&slow_go) ? 0 : WEFT_EAGAIN;
}

static void slow_waiter(void *arg) {
  (void)arg;
  EXPECT_OK(weft_wait_until(slow_test, NULL));
}

static void round_trips(void *arg) {
  int *d = arg;
  for (int i = 0; i < 50; i++) {
    EXPECT_OK(weft_memset(d, i, sizeof *d));
    EXPECT_OK(weft_sync());
  }
  atomic_store(&slow_go, 1);
}

static void slow_test_moves_off(weft_runtime *rt) {
  int *d;
  EXPECT_OK(weft_device_alloc(sizeof *d, (void **)&d));
  weft_task *w, *r;
  EXPECT_OK(weft_task_spawn(rt, &w, slow_waiter, NULL, NULL));
  for (int ms = 0; ms < 10000 && atomic_load(&slow_off_workers) == 0; ms++)
    tt_sleep_ms(1);
  EXPECT_OK(weft_task_spawn(rt, &r, round_trips, d, NULL));
  EXPECT_OK(weft_task_join(r));
  EXPECT_OK(weft_task_join(w));
  EXPECT_MSG(atomic_load(&slow_on_workers) == 2,
             "the slow test was called %d times by workers (2 expected: "
             "the task's own, and the poll's that found it slow)",
             atomic_load(&slow_on_workers));
  EXPECT(atomic_load(&slow_off_workers) >= 1);
  EXPECT_OK(weft_device_free(d));
}

int main(void) {
  weft_runtime_opts ro;
  weft_runtime_opts_init(&ro);
  ro.workers = 1;
  weft_runtime *rt = tt_open(&ro);

  /* One worker: the waiters suspend, the releaser runs. */
  weft_task *t[MANY + 1];
  for (int i = 0; i < MANY; i++)
    EXPECT_OK(weft_task_spawn(rt, &t[i], waiter, (void *)(intptr_t)i, NULL));
  EXPECT_OK(
      weft_task_spawn(rt, &t[MANY], releaser, (void *)(intptr_t)MANY, NULL));
  for (int i = 0; i <= MANY; i++)
    EXPECT_OK(weft_task_join(t[i]));
  for (int i = 0; i < MANY; i++)
    EXPECT_MSG(woke[i], "waiter %d never woke", i);

  /* The test's own value, and no failure of the task. */
  int got = 0;
  weft_task *a;
  EXPECT_OK(weft_task_spawn(rt, &a, answering, &got, NULL));
  EXPECT_OK(weft_task_join(a));
  EXPECT_EQ_INT(got, ANSWER);

  /* A plain thread calls the test itself. */
  int calls = 0;
  EXPECT_EQ_INT(weft_wait_until(answer, &calls), ANSWER);
  EXPECT_EQ_INT(calls, 3);
  EXPECT_ERR(weft_wait_until(NULL, NULL), WEFT_EINVAL);

  slow_test_moves_off(rt);

  /* A wait for something that never comes does not hold weft_shutdown
   * for ever: it ends with WEFT_ESTATE, saying so. */
  weft_task *orphan;
  EXPECT_OK(weft_task_spawn(rt, &orphan, never_task, NULL, NULL));
  EXPECT_OK(weft_task_detach(orphan));
  while (!tt_load(&never_waiting))
    tt_sleep_ms(1);
  tt_close(rt);
  EXPECT_EQ_INT(never_rc, WEFT_ESTATE);
  EXPECT_MSG(strstr(never_msg, "weft_shutdown began") != NULL, "message: %s",
             never_msg);
  puts("ok");
  return 0;
}
