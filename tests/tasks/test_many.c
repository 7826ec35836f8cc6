/* Many tasks with random waits and GPU-side dependency chains.
 *
 * 2000 tasks (400 in quick and sanitizer builds) share a few device
 * buffers. Task i applies x = x*a_i + b_i to its buffer, after calling
 * weft_task_after on the previous task that wrote the same buffer, so the
 * updates of a buffer form a chain ordered on the device only; affine maps
 * do not commute, so any break in a chain changes the result. Around that,
 * each task randomly yields, syncs, does nothing, dawdles (yields many
 * times, so that its successors call weft_task_after while it still runs)
 * or orders itself after a random earlier task of any buffer as well. The
 * buffers are compared at the end with a sequential CPU simulation.
 *
 * The test counts the weft_task_after calls that found the other task still
 * running, returned with GPU work pending, or completed, and checks that
 * the first and last happened. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task_common.h"

enum { BUFS = 8, LEN = 300 };

typedef struct plan {
  int buf;
  float a, b;
  int pred;          /* previous task on the same buffer, or -1 */
  int other;         /* another earlier task to follow too, or -1 */
  int before, after; /* actions: 0 none, 1 yield, 2 sync, 3 dawdle */
} plan;

static int ntasks;
static plan *plans;
static weft_task **handles;
static float *bufs[BUFS];
static int n_running, n_pending, n_completed;
static int finished; /* tasks whose function returned */

static void act(int action, uint64_t *r) {
  switch (action) {
  case 1:
    for (int k = tt_rand_range(r, 1, 3); k > 0; k--)
      weft_yield();
    break;
  case 2:
    EXPECT_OK(weft_sync());
    break;
  case 3:
    for (int k = 0; k < 40; k++)
      weft_yield();
    break;
  }
}

static void follow(int j) {
  weft_task *o = handles[j];
  if (!tt_task_returned(o))
    tt_add(&n_running, 1);
  else if (!tt_task_done(o))
    tt_add(&n_pending, 1);
  else
    tt_add(&n_completed, 1);
  EXPECT_OK(weft_task_after(o));
}

static void step(void *arg) {
  int i = (int)(intptr_t)arg;
  const plan *p = &plans[i];
  uint64_t r = 0x1234567ULL + (uint64_t)i * 7919;
  act(p->before, &r);
  if (p->other >= 0)
    follow(p->other);
  if (p->pred >= 0)
    follow(p->pred);
  float *d = bufs[p->buf];
  int n = LEN;
  float a = p->a, b = p->b;
  void *args[] = {&d, &n, &a, &b};
  unsigned blocks = (LEN + TEST_THREADS - 1) / TEST_THREADS;
  EXPECT_OK(weft_launch(&tk.axpb, WEFT_DIM1(blocks), WEFT_DIM1(TEST_THREADS), 0,
                        args));
  act(p->after, &r);
  tt_add(&finished, 1);
}

int main(void) {
  ntasks = tt_quick() ? 400 : 2000;
  weft_runtime *rt = tt_open_workers(4);
  plans = calloc((size_t)ntasks, sizeof *plans);
  handles = calloc((size_t)ntasks, sizeof *handles);
  EXPECT(plans && handles);

  float *host;
  EXPECT_OK(weft_pinned_alloc(BUFS * LEN * sizeof(float), (void **)&host));
  static float ref[BUFS][LEN];
  for (int k = 0; k < BUFS; k++) {
    for (int e = 0; e < LEN; e++)
      ref[k][e] = host[k * LEN + e] = (float)(e % 17 - 8 + k);
    EXPECT_OK(weft_device_alloc(LEN * sizeof(float), (void **)&bufs[k]));
    EXPECT_OK(weft_copy(bufs[k], host + k * LEN, LEN * sizeof(float)));
  }
  EXPECT_OK(weft_sync());

  uint64_t r = 2024;
  int last[BUFS];
  for (int k = 0; k < BUFS; k++)
    last[k] = -1;
  for (int i = 0; i < ntasks; i++) {
    plan *p = &plans[i];
    p->buf = (int)(tt_rand(&r) % BUFS);
    p->a = tt_rand(&r) % 2 ? 1.0f : -1.0f;
    p->b = (float)tt_rand_range(&r, -4, 4);
    p->pred = last[p->buf];
    last[p->buf] = i;
    p->other = i > 0 && tt_rand(&r) % 4 == 0 ? (int)(tt_rand(&r) % i) : -1;
    int u = (int)(tt_rand(&r) % 100);
    p->before = u < 40 ? 0 : u < 70 ? 1 : u < 85 ? 2 : 3;
    u = (int)(tt_rand(&r) % 100);
    p->after = u < 50 ? 0 : u < 75 ? 1 : u < 95 ? 2 : 3;
    for (int e = 0; e < LEN; e++)
      ref[p->buf][e] = ref[p->buf][e] * p->a + p->b;
  }

  for (int i = 0; i < ntasks; i++)
    EXPECT_OK(
        weft_task_spawn(rt, &handles[i], step, (void *)(intptr_t)i, NULL));
  /* A handle may be joined only once no task can still follow it. */
  while (tt_load(&finished) < ntasks)
    tt_sleep_ms(1);
  for (int i = 0; i < ntasks; i++)
    EXPECT_OK(weft_task_join(handles[i]));

  for (int k = 0; k < BUFS; k++)
    EXPECT_OK(weft_copy(host + k * LEN, bufs[k], LEN * sizeof(float)));
  EXPECT_OK(weft_sync());
  for (int k = 0; k < BUFS; k++)
    for (int e = 0; e < LEN; e++)
      EXPECT_MSG(host[k * LEN + e] == ref[k][e],
                 "buffer %d element %d: %g, expected %g", k, e,
                 (double)host[k * LEN + e], (double)ref[k][e]);

  printf("%d tasks; weft_task_after found the other task running %d times, "
         "returned with work pending %d times, completed %d times\n",
         ntasks, n_running, n_pending, n_completed);
  EXPECT_MSG(n_running > 0, "no weft_task_after call met a running task");
  EXPECT_MSG(n_completed > 0, "no weft_task_after call met a completed task");

  for (int k = 0; k < BUFS; k++)
    EXPECT_OK(weft_device_free(bufs[k]));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_pinned_free(host));
  tt_close(rt);
  free(plans);
  free(handles);
  puts("ok");
  return 0;
}
