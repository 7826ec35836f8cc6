/* GPU work issued by tasks runs in the task's issue order.
 *
 * Each of 64 tasks copies random data to the device, runs a chain of axpb
 * launches (x = x*a + b; affine maps do not commute, so reordering changes
 * the result), takes a snapshot mid-chain, copies the result back, syncs
 * and compares with the same chain on the CPU. Tasks yield between
 * operations so they migrate between workers mid-chain, and their chains
 * run side by side on their own streams. Values stay small integers, so
 * float arithmetic is exact on every device (fused multiply-add included)
 * and the comparison is exact. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task_common.h"

enum { TASKS = 64, MAX_STEPS = 16, MAX_N = 20000 };

/* The host buffers come from main, before the tasks start: a pinned-cache
 * miss inside concurrent tasks waits for the whole device (weft check
 * says so), which is not what this test is about. */
typedef struct chain {
  uint64_t seed;
  float *in, *snap, *out; /* pinned, MAX_N each */
  int ok;
} chain;

static float pick_a(uint64_t *r) {
  static const float as[] = {-2.0f, -1.0f, 1.0f, 2.0f};
  return as[tt_rand(r) % 4];
}

static void launch_axpb(float *d, int n, float a, float b) {
  void *args[] = {&d, &n, &a, &b};
  unsigned blocks = (unsigned)((n + TEST_THREADS - 1) / TEST_THREADS);
  EXPECT_OK(weft_launch(&tk.axpb, WEFT_DIM1(blocks), WEFT_DIM1(TEST_THREADS), 0,
                        args));
}

static void chain_task(void *arg) {
  chain *c = arg;
  uint64_t r = c->seed;
  int n = tt_rand_range(&r, 1, MAX_N);
  int steps = tt_rand_range(&r, 2, MAX_STEPS);
  int mid = tt_rand_range(&r, 1, steps - 1);
  float a[MAX_STEPS], b[MAX_STEPS];
  for (int k = 0; k < steps; k++) {
    a[k] = pick_a(&r);
    b[k] = (float)tt_rand_range(&r, -8, 8);
  }
  size_t bytes = (size_t)n * sizeof(float);

  float *in = c->in, *snap = c->snap, *out = c->out, *d;
  for (int i = 0; i < n; i++) {
    in[i] = (float)tt_rand_range(&r, -16, 16);
    snap[i] = out[i] = 1e30f; /* never a result */
  }
  EXPECT_OK(weft_device_alloc(bytes, (void **)&d));
  EXPECT_OK(weft_copy(d, in, bytes));
  for (int k = 0; k < steps; k++) {
    if (k == mid)
      EXPECT_OK(weft_copy(snap, d, bytes));
    launch_axpb(d, n, a[k], b[k]);
    if (tt_rand(&r) % 3 == 0)
      weft_yield();
  }
  EXPECT_OK(weft_copy(out, d, bytes));
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_sync());

  for (int i = 0; i < n; i++) {
    float x = in[i];
    for (int k = 0; k < steps; k++) {
      if (k == mid)
        EXPECT_MSG(snap[i] == x,
                   "task seed %llu: snapshot[%d] = %g, expected %g",
                   (unsigned long long)c->seed, i, (double)snap[i], (double)x);
      x = x * a[k] + b[k];
    }
    EXPECT_MSG(out[i] == x, "task seed %llu: out[%d] = %g, expected %g",
               (unsigned long long)c->seed, i, (double)out[i], (double)x);
  }
  c->ok = 1;
}

int main(void) {
  weft_runtime *rt = tt_open(NULL);
  static chain cs[TASKS];
  weft_task *t[TASKS];
  uint64_t seed = 12345;
  size_t bytes = MAX_N * sizeof(float);
  for (int i = 0; i < TASKS; i++) {
    EXPECT_OK(weft_pinned_alloc(bytes, (void **)&cs[i].in));
    EXPECT_OK(weft_pinned_alloc(bytes, (void **)&cs[i].snap));
    EXPECT_OK(weft_pinned_alloc(bytes, (void **)&cs[i].out));
  }
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < TASKS; i++) {
      cs[i].seed = tt_rand(&seed);
      cs[i].ok = 0;
      EXPECT_OK(weft_task_spawn(rt, &t[i], chain_task, &cs[i], NULL));
    }
    for (int i = 0; i < TASKS; i++) {
      EXPECT_OK(weft_task_join(t[i]));
      EXPECT(cs[i].ok);
    }
  }
  for (int i = 0; i < TASKS; i++) {
    EXPECT_OK(weft_pinned_free(cs[i].in));
    EXPECT_OK(weft_pinned_free(cs[i].snap));
    EXPECT_OK(weft_pinned_free(cs[i].out));
  }
  tt_close(rt);
  puts("ok");
  return 0;
}
