/* weft_copy keeps stream order, whatever the host memory.
 *
 * A gate (a kernel spinning on a flag) holds the stream while the work is
 * queued, so every operation is queued before any runs and an operation
 * done eagerly, or late, shows in the data:
 * - device -> pageable, then a kernel changing the device data: the copy
 *   holds the data as it was when the copy was queued, after the copy in
 *   queued before it, and not the kernel's result;
 * - pageable -> device, then at once a kernel reading (and changing) the
 *   destination: the kernel sees the copied data;
 * - copies between host buffers (pinned or pageable) queued after a copy
 *   from the device into their source: each sees the data of the one
 *   before, and weft_copy returns without waiting for the stream (the
 *   gate is still closed when every copy has been queued);
 * - a task queues device -> pageable and returns without weft_sync: after
 *   weft_task_join the destination is complete;
 * - memory pinned through another runtime is pinned here too, as CUDA's
 *   pointer attributes are the process's: a copy from it is not staged.
 * Each runs in a task and on the plain main thread, for a small size and
 * one spanning several 4 MiB staging chunks. Data are small integers as
 * floats, so x*2+1 is exact on every device. */
#include <stdlib.h>
#include <string.h>

#include "mem_common.h"

static weft_runtime *rt;

/* Floats: a small count, and one staged in several 4 MiB chunks (three;
 * two under tt_quick, where the sanitizers slow every byte). */
static int counts[] = {1000, (9 << 20) / 4 + 3};
enum { NCOUNTS = sizeof counts / sizeof counts[0] };

static void launch_axpb(float *d, int n, float a, float b) {
  void *args[] = {&d, &n, &a, &b};
  unsigned blocks = (unsigned)((n + TEST_THREADS - 1) / TEST_THREADS);
  EXPECT_OK(weft_launch(&tk.axpb, WEFT_DIM1(blocks), WEFT_DIM1(TEST_THREADS), 0,
                        args));
}

static float *floats_random(int n, uint64_t *seed) {
  float *v = malloc((size_t)n * sizeof *v);
  EXPECT(v != NULL);
  for (int i = 0; i < n; i++)
    v[i] = (float)tt_rand_range(seed, -1000, 1000);
  return v;
}

static void check_floats(const float *got, const float *want, int n,
                         const char *what) {
  for (int i = 0; i < n; i++)
    EXPECT_MSG(got[i] == want[i], "%s, %d floats: [%d] = %g, expected %g", what,
               n, i, (double)got[i], (double)want[i]);
}

/* Everything was queued while the gate held the stream. A gate that timed
 * out (TEST_SPIN_TIMED_OUT) means a weft_copy waited for the stream
 * instead of queuing. */
static void gate_check_held(const tt_gate *g) {
  EXPECT_MSG(tt_gate_state(g) == TEST_SPIN_STARTED,
             "the gate stopped holding the stream (state %d%s) before the "
             "work was queued",
             tt_gate_state(g),
             tt_gate_state(g) == TEST_SPIN_TIMED_OUT
                 ? ": a weft_copy blocked until the stream drained"
                 : "");
}

/* device -> pageable, then a kernel on the device data. */
static void d2h_then_kernel(int n, uint64_t *seed) {
  size_t bytes = (size_t)n * sizeof(float);
  float *a0 = floats_random(n, seed), *a1 = floats_random(n, seed);
  float *out = calloc((size_t)n, sizeof *out), *after;
  float *pin, *d;
  EXPECT(out != NULL);
  EXPECT_OK(weft_pinned_alloc(bytes, (void **)&pin));
  EXPECT_OK(weft_pinned_alloc(bytes, (void **)&after));
  EXPECT_OK(weft_device_alloc(bytes, (void **)&d));
  memcpy(pin, a1, bytes);
  EXPECT_OK(weft_copy(d, a0, bytes)); /* d holds a0 before the gate */
  EXPECT_OK(weft_sync());

  tt_gate g;
  tt_gate_init(&g);
  tt_gate_launch(&g);
  tt_gate_wait_started(&g);
  EXPECT_OK(weft_copy(d, pin, bytes)); /* d = a1 once the gate opens */
  EXPECT_OK(weft_copy(out, d, bytes)); /* must see a1 */
  launch_axpb(d, n, 2.0f, 1.0f);       /* must not reach out */
  EXPECT_OK(weft_copy(after, d, bytes));
  gate_check_held(&g);
  tt_gate_open(&g);
  EXPECT_OK(weft_sync());
  check_floats(out, a1, n, "device->pageable copy before a kernel");
  for (int i = 0; i < n; i++)
    a1[i] = a1[i] * 2.0f + 1.0f;
  check_floats(after, a1, n, "the kernel after the copy");

  tt_gate_fini(&g);
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_pinned_free(pin));
  EXPECT_OK(weft_pinned_free(after));
  free(out);
  free(a0);
  free(a1);
}

/* pageable -> device, then at once a kernel reading the destination. */
static void h2d_then_kernel(int n, uint64_t *seed) {
  size_t bytes = (size_t)n * sizeof(float);
  float *src = floats_random(n, seed);
  float *res, *d;
  EXPECT_OK(weft_pinned_alloc(bytes, (void **)&res));
  memset(res, 0, bytes);
  EXPECT_OK(weft_device_alloc(bytes, (void **)&d));
  EXPECT_OK(weft_memset(d, 0, bytes));

  for (int gated = 0; gated < 2; gated++) {
    tt_gate g;
    if (gated) {
      tt_gate_init(&g);
      tt_gate_launch(&g);
      tt_gate_wait_started(&g);
    }
    EXPECT_OK(weft_copy(d, src, bytes));
    launch_axpb(d, n, 2.0f, 1.0f);
    EXPECT_OK(weft_copy(res, d, bytes));
    if (gated) {
      gate_check_held(&g);
      tt_gate_open(&g);
    }
    EXPECT_OK(weft_sync());
    for (int i = 0; i < n; i++)
      EXPECT_MSG(res[i] == src[i] * 2.0f + 1.0f,
                 "kernel right after a pageable->device copy (%s), %d "
                 "floats: [%d] = %g, expected %g",
                 gated ? "gated" : "not gated", n, i, (double)res[i],
                 (double)(src[i] * 2.0f + 1.0f));
    if (gated)
      tt_gate_fini(&g);
  }
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_pinned_free(res));
  free(src);
}

/* Host -> host copies in stream order, behind a device -> host copy. */
static void h2h_ordered(size_t n, uint64_t *seed) {
  unsigned char *src, *p1, *p2, *o1 = calloc(1, n), *o2 = calloc(1, n);
  void *d;
  EXPECT(o1 != NULL && o2 != NULL);
  EXPECT_OK(weft_pinned_alloc(n, (void **)&src));
  EXPECT_OK(weft_pinned_alloc(n, (void **)&p1));
  EXPECT_OK(weft_pinned_alloc(n, (void **)&p2));
  EXPECT_OK(weft_device_alloc(n, &d));
  mt_fill(src, n, seed);
  memset(p1, 0, n);
  memset(p2, 0, n);

  tt_gate g;
  tt_gate_init(&g);
  tt_gate_launch(&g);
  tt_gate_wait_started(&g);
  EXPECT_OK(weft_copy(d, src, n)); /* pinned -> device */
  EXPECT_OK(weft_copy(p1, d, n));  /* device -> pinned */
  EXPECT_OK(weft_copy(o1, p1, n)); /* pinned -> pageable */
  EXPECT_OK(weft_copy(o2, o1, n)); /* pageable -> pageable */
  EXPECT_OK(weft_copy(p2, o2, n)); /* pageable -> pinned */
  gate_check_held(&g);
  tt_gate_open(&g);
  EXPECT_OK(weft_sync());
  mt_check_same(o1, src, n, "pinned->pageable after device->pinned");
  mt_check_same(o2, src, n, "pageable->pageable after that");
  mt_check_same(p2, src, n, "pageable->pinned after that");

  tt_gate_fini(&g);
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_pinned_free(src));
  EXPECT_OK(weft_pinned_free(p1));
  EXPECT_OK(weft_pinned_free(p2));
  free(o1);
  free(o2);
}

static void all_orders(uint64_t seed) {
  for (int i = 0; i < NCOUNTS; i++) {
    d2h_then_kernel(counts[i], &seed);
    h2d_then_kernel(counts[i], &seed);
    h2h_ordered((size_t)counts[i] * sizeof(float) + 1, &seed);
  }
}

static void orders_task(void *arg) {
  all_orders(99);
  *(int *)arg = 1;
}

/* A task that queues device -> pageable and returns without weft_sync. */
typedef struct unsynced {
  size_t n;
  const unsigned char *src; /* pageable, read by the task's copy */
  unsigned char *out;       /* pageable, written after the task returns */
  int gated;
  tt_gate gate;
  int queued;
} unsynced;

static void unsynced_task(void *arg) {
  unsynced *u = arg;
  void *d;
  if (u->gated) {
    tt_gate_init(&u->gate);
    tt_gate_launch(&u->gate);
    tt_gate_wait_started(&u->gate);
  }
  EXPECT_OK(weft_device_alloc(u->n, &d));
  EXPECT_OK(weft_copy(d, u->src, u->n));
  EXPECT_OK(weft_copy(u->out, d, u->n));
  EXPECT_OK(weft_device_free(d));
  tt_store(&u->queued, 1);
  /* Returns with the copies queued, no weft_sync. */
}

static void task_returns_unsynced(size_t n, int gated, uint64_t seed) {
  unsynced u = {.n = n, .gated = gated};
  unsigned char *src = malloc(n);
  u.out = calloc(1, n);
  EXPECT(src != NULL && u.out != NULL);
  mt_fill(src, n, &seed);
  u.src = src;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, unsynced_task, &u, NULL));
  if (gated) {
    tt_wait_flag(&u.queued, 20000, "the task to queue its copies");
    gate_check_held(&u.gate);
    tt_gate_open(&u.gate);
  }
  EXPECT_OK(weft_task_join(t));
  mt_check_same(u.out, src, n,
                gated ? "pageable destination after join (gated)"
                      : "pageable destination after join");
  if (gated)
    tt_gate_fini(&u.gate);
  free(u.out);
  free(src);
}

typedef struct pin_job {
  void *p;
  size_t n;
} pin_job;

static void pin_task(void *arg) {
  pin_job *j = arg;
  EXPECT_OK(weft_pinned_alloc(j->n, &j->p));
}

static void unpin_task(void *arg) { EXPECT_OK(weft_pinned_free(arg)); }

typedef struct there_and_back {
  unsigned char *src;
  size_t n;
} there_and_back;

static void there_and_back_task(void *arg) {
  there_and_back *j = arg;
  void *d;
  EXPECT_OK(weft_device_alloc(j->n, &d));
  EXPECT_OK(weft_copy(d, j->src, j->n));
  EXPECT_OK(weft_copy(j->src, d, j->n));
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_sync());
}

/* Copies n bytes of src to the device and back into src in a task of rt,
 * and returns how many pinned blocks rt's cache handed out meanwhile (a
 * staged copy takes some). */
static uint64_t blocks_for_copies(unsigned char *src, size_t n) {
  weft_mem_stats before = mt_stats(rt);
  there_and_back j = {src, n};
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, there_and_back_task, &j, NULL));
  EXPECT_OK(weft_task_join(t));
  weft_mem_stats after = mt_stats(rt);
  return (after.pinned_hits + after.pinned_misses) -
         (before.pinned_hits + before.pinned_misses);
}

static void pinned_by_another_runtime(void) {
  const size_t n = 3 * MT_MIB;
  weft_runtime *other = tt_open_workers(2);
  pin_job pj = {NULL, n};
  weft_task *t;
  EXPECT_OK(weft_task_spawn(other, &t, pin_task, &pj, NULL));
  EXPECT_OK(weft_task_join(t));
  uint64_t seed = 41;
  mt_fill(pj.p, n, &seed);
  unsigned char *want = malloc(n);
  EXPECT(want != NULL);
  memcpy(want, pj.p, n);
  EXPECT_EQ_INT((int)blocks_for_copies(pj.p, n), 0);
  mt_check_same(pj.p, want, n, "pinned by another runtime, there and back");
  /* The counter this reads does count staging: malloc memory's copies
   * take blocks wherever copies are staged. */
  const char *pg = getenv("WEFT_HOST_PAGEABLE");
  if (weft_runtime_backend(rt) == WEFT_BACKEND_CUDA ||
      (pg && strcmp(pg, "1") == 0))
    EXPECT(blocks_for_copies(want, n) > 0);
  EXPECT_OK(weft_task_spawn(other, &t, unpin_task, pj.p, NULL));
  EXPECT_OK(weft_task_join(t));
  free(want);
  tt_close(other);
}

int main(void) {
  if (tt_quick())
    counts[1] = (5 << 20) / 4 + 3;
  rt = tt_open_workers(2);
  int ok = 0;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, orders_task, &ok, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT(ok);
  all_orders(7);

  const size_t un_sizes[] = {777, (tt_quick() ? 5 : 9) * MT_MIB + 3};
  for (int i = 0; i < 2; i++)
    for (int gated = 0; gated < 2; gated++)
      task_returns_unsynced(un_sizes[i], gated, 31 + (uint64_t)i);
  pinned_by_another_runtime();

  weft_mem_stats s = mt_stats(rt);
  EXPECT_EQ_INT(s.pinned_blocks, 0);
  EXPECT_EQ_INT(s.device_allocs, 0);
  tt_close(rt);
  puts("ok");
  return 0;
}
