/* Registered data (weft/data.h) where the order is easy to lose, on every
 * backend: two evictions of one handle's instances, the first picked
 * before a writer published, leave the newer data (not the older copy's
 * write-back) as the handle's; weft_data_sync and weft_data_prefetch
 * called by the task that wrote the handle copy what it wrote, not what
 * was there before; an unregister from a task that declared the handle
 * is refused with nothing freed; random programs over handles with those
 * calls between the spawns, under a limit, on 1, 2 and 4 devices, match
 * one-at-a-time execution. The parts with several devices run on the host
 * backend's emulated ones (or as many real GPUs as there are). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task_common.h"
#include "weft/data.h"

enum { B = 1 << 20, N = 1 << 24 };

/* fn(arg) on dev declaring h with mode, and gate's words if not NULL
 * (its spin kernel reads and writes them: weft check holds it to that). */
static weft_task *spawn_gated(weft_runtime *rt, weft_task_fn fn, void *arg,
                              weft_data *h, unsigned mode, int dev,
                              const tt_gate *gate) {
  weft_access a[2] = {weft_data_access(h, mode)};
  if (gate)
    a[1] = (weft_access){gate->mem, 2 * sizeof(int), WEFT_RW};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.device = dev;
  o.accesses = a;
  o.naccesses = gate ? 2 : 1;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, fn, arg, &o));
  return t;
}

static weft_task *spawn_on(weft_runtime *rt, weft_task_fn fn, void *arg,
                           weft_data *h, unsigned mode, int dev) {
  return spawn_gated(rt, fn, arg, h, mode, dev, NULL);
}

static int devices(weft_runtime *rt) {
  int n = 0;
  EXPECT_OK(weft_device_count(rt, &n));
  return n;
}

/* ---- two evictions of one handle ---- */

static weft_data *hd, *he, *hf, *hg;
static tt_gate g1, g2;

static void fill_task(void *arg) { /* writes its handle: d 1, others 5 */
  weft_data *h = arg;
  unsigned char *p;
  EXPECT_OK(weft_data_get(h, WEFT_RW, (void **)&p));
  EXPECT_OK(weft_memset(p, h == hd ? 1 : 5, B));
}

static void late_writer(void *arg) { /* device 1: gated, then writes d */
  (void)arg;
  unsigned char *p;
  tt_gate_launch(&g1);
  EXPECT_OK(weft_data_get(hd, WEFT_WRITE, (void **)&p)); /* evicts e */
  EXPECT_OK(weft_memset(p, 2, B));
}

static void room_taker(void *arg) { /* needs room for its handle */
  unsigned char *p;
  if (arg == hf)
    tt_gate_launch(&g2);
  EXPECT_OK(weft_data_get(arg, WEFT_RW, (void **)&p));
  EXPECT_OK(weft_memset(p, 9, B));
}

static void evicted_twice(void) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.host_devices = 2;
  o.data_limit = B; /* one instance a device */
  weft_runtime *rt = tt_open(&o);
  if (devices(rt) < 2) {
    tt_close(rt);
    return;
  }
  tt_gate_init(&g1);
  tt_gate_init(&g2);
  unsigned char *x = calloc(4, B);
  EXPECT(x != NULL);
  EXPECT_OK(weft_data_register(rt, x, B, &hd));
  EXPECT_OK(weft_data_register(rt, x + B, B, &he));
  EXPECT_OK(weft_data_register(rt, x + 2 * B, B, &hf));
  EXPECT_OK(weft_data_register(rt, x + 3 * B, B, &hg));
  EXPECT_OK(weft_task_join(spawn_on(rt, fill_task, hd, hd, WEFT_RW, 0)));
  EXPECT_OK(weft_task_join(spawn_on(rt, fill_task, he, he, WEFT_RW, 1)));
  /* The writer's get on device 1 starts behind g1; then the eviction of
   * d's device-0 copy (its only valid one) starts behind g2. */
  weft_task *w = spawn_gated(rt, late_writer, NULL, hd, WEFT_WRITE, 1, &g1);
  tt_gate_wait_started(&g1);
  tt_sleep_ms(50);
  weft_task *t = spawn_gated(rt, room_taker, hf, hf, WEFT_RW, 0, &g2);
  tt_gate_wait_started(&g2);
  tt_sleep_ms(50);
  tt_gate_open(&g1);
  EXPECT_OK(weft_task_join(w)); /* d: 2s, valid on device 1 alone */
  /* Room for g on device 1: d's instance there is not evicted while the
   * eviction of its device-0 copy is under way. */
  EXPECT_OK(weft_task_join(spawn_on(rt, room_taker, hg, hg, WEFT_RW, 1)));
  tt_gate_open(&g2);
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_data_sync(hd));
  weft_data *all[] = {hd, he, hf, hg};
  EXPECT_OK(weft_data_unregister_n(all, 4));
  int bad = 0;
  for (int i = 0; i < B; i++)
    bad += x[i] != 2;
  EXPECT_MSG(bad == 0,
             "%d of %d bytes of d not the latest write after two "
             "evictions (first %d)",
             bad, B, x[0]);
  free(x);
  tt_gate_fini(&g1);
  tt_gate_fini(&g2);
  tt_close(rt);
}

/* ---- the writer itself syncs or prefetches ---- */

static weft_data *hw;
static unsigned char *hx;
static int where; /* weft_data_prefetch's device, or -1: weft_data_sync */

static void writer(void *arg) {
  int v = *(int *)arg;
  unsigned char *p;
  EXPECT_OK(weft_data_get(hw, WEFT_RW, (void **)&p));
  EXPECT_OK(weft_memset(p, v, N));
  if (where != -1) {
    EXPECT_OK(weft_data_prefetch(hw, where));
    return;
  }
  EXPECT_OK(weft_data_sync(hw));
  EXPECT_MSG(hx[0] == v && hx[N - 1] == v,
             "after weft_data_sync in the writer: %d .. %d, want %d", hx[0],
             hx[N - 1], v);
}

static void reader(void *arg) {
  int v = *(int *)arg;
  unsigned char *p, h[2];
  EXPECT_OK(weft_data_get(hw, WEFT_READ, (void **)&p));
  EXPECT_OK(weft_copy(&h[0], p, 1));
  EXPECT_OK(weft_copy(&h[1], p + N - 1, 1));
  EXPECT_OK(weft_sync());
  EXPECT_MSG(h[0] == v && h[1] == v,
             "a reader after a writer that prefetched to %d: %d .. %d, want "
             "%d",
             where, h[0], h[1], v);
}

static void written_then_moved(int w) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.host_devices = 2;
  weft_runtime *rt = tt_open(&o);
  int two = devices(rt) >= 2;
  where = w;
  if (w == 1 && !two) {
    tt_close(rt);
    return;
  }
  hx = calloc(1, N);
  EXPECT(hx != NULL);
  EXPECT_OK(weft_data_register(rt, hx, N, &hw));
  int vals[] = {1, 2, 3};
  for (int k = 0; k < 3; k++) {
    weft_task *t = spawn_on(rt, writer, &vals[k], hw, WEFT_RW, 0);
    weft_task *r = spawn_on(rt, reader, &vals[k], hw, WEFT_READ, two ? 1 : 0);
    EXPECT_OK(weft_task_join(t));
    EXPECT_OK(weft_task_join(r));
  }
  EXPECT_OK(weft_data_unregister(hw));
  EXPECT_MSG(hx[0] == 3 && hx[N - 1] == 3,
             "after the unregister: %d .. %d, want 3", hx[0], hx[N - 1]);
  free(hx);
  tt_close(rt);
}

/* ---- an unregister from the declaring task ---- */

static void self_unregister(void *arg) {
  (void)arg;
  unsigned char *p;
  EXPECT_OK(weft_data_get(hw, WEFT_RW, (void **)&p));
  EXPECT_ERR(weft_data_unregister(hw), WEFT_EBUSY);
  EXPECT_MSG(strstr(weft_last_error_message(), "declared by the calling "
                                               "task") != NULL,
             "%s", weft_last_error_message());
  EXPECT_OK(weft_memset(p, 7, B)); /* the instance is still there */
}

/* A task that spawns a writer of the handle and returns without joining
 * it: the program's unregister does not follow that writer. */
static tt_gate gc;
static int child_done;

static void gated_child(void *arg) {
  (void)arg;
  unsigned char *p;
  tt_gate_launch(&gc);
  EXPECT_OK(weft_data_get(hw, WEFT_RW, (void **)&p));
  EXPECT_OK(weft_memset(p, 8, B));
  EXPECT_OK(weft_sync());
  tt_store(&child_done, 1);
}

static void leaving_parent(void *arg) {
  weft_runtime *rt = arg;
  weft_task *c =
      spawn_gated(rt, gated_child, NULL, hw, WEFT_RW, WEFT_DEVICE_INHERIT, &gc);
  EXPECT_OK(weft_task_detach(c));
}

static void unregistered_by_declarer(void) {
  weft_runtime *rt = tt_open_workers(2);
  hx = calloc(1, B);
  EXPECT(hx != NULL);
  EXPECT_OK(weft_data_register(rt, hx, B, &hw));
  EXPECT_OK(weft_task_join(
      spawn_on(rt, self_unregister, NULL, hw, WEFT_RW, WEFT_DEVICE_INHERIT)));
  EXPECT_OK(weft_data_unregister(hw));
  EXPECT_MSG(hx[0] == 7 && hx[B - 1] == 7, "after the unregister: %d .. %d",
             hx[0], hx[B - 1]);
  /* Another task's writer still running: refused, nothing freed. */
  tt_gate_init(&gc);
  EXPECT_OK(weft_data_register(rt, hx, B, &hw));
  weft_task *parent;
  EXPECT_OK(weft_task_spawn(rt, &parent, leaving_parent, rt, NULL));
  EXPECT_OK(weft_task_join(parent));
  tt_gate_wait_started(&gc);
  EXPECT_ERR(weft_data_unregister(hw), WEFT_EBUSY);
  EXPECT_MSG(strstr(weft_last_error_message(),
                    "another task or thread spawned") != NULL,
             "%s", weft_last_error_message());
  tt_gate_open(&gc);
  tt_wait_flag(&child_done, 10000, "the other task's writer ended");
  int rc;
  while ((rc = weft_data_unregister(hw)) == WEFT_EBUSY) /* until it returned */
    tt_sleep_ms(1);
  EXPECT_OK(rc);
  EXPECT_MSG(hx[0] == 8 && hx[B - 1] == 8, "after the writer: %d .. %d", hx[0],
             hx[B - 1]);
  tt_gate_fini(&gc);
  free(hx);
  tt_close(rt);
}

/* ---- random programs, with prefetches and syncs between the spawns ----
 *
 * Steps over H handles on random devices: a scale (RW), a copy (READ one
 * handle, WRITE another), a check (READ, compared in the task with the
 * contents one-at-a-time execution gives), each spawn followed now and
 * then by a write-back started ahead, a prefetch to a device or a
 * weft_data_sync (the host compared there); the host copies compared
 * after the unregister. Under a limit of two handles a device, so that
 * evictions and fills interleave with the write-backs. */
enum { RN = 2048, RH = 6, RSTEPS = 160 };

static int rdev, rbad;

typedef struct rstep {
  weft_data *d, *src;
  float a, b;
  float *want; /* a check's expected contents */
} rstep;

static void scale_task(void *arg) {
  rstep *s = arg;
  float *x;
  EXPECT_OK(weft_data_get(s->d, WEFT_RW, (void **)&x));
  int n = RN;
  void *args[] = {&x, &n, &s->a, &s->b};
  EXPECT_OK(weft_launch(&tk.axpb,
                        WEFT_DIM1((RN + TEST_THREADS - 1) / TEST_THREADS),
                        WEFT_DIM1(TEST_THREADS), 0, args));
}

static void copy_task(void *arg) {
  rstep *s = arg;
  float *from, *to;
  EXPECT_OK(weft_data_get(s->src, WEFT_READ, (void **)&from));
  EXPECT_OK(weft_data_get(s->d, WEFT_WRITE, (void **)&to));
  EXPECT_OK(weft_copy(to, from, RN * sizeof(float)));
}

static void check_task(void *arg) {
  rstep *s = arg;
  float *x, *h = malloc(RN * sizeof(float));
  EXPECT(h != NULL);
  EXPECT_OK(weft_data_get(s->d, WEFT_READ, (void **)&x));
  EXPECT_OK(weft_copy(h, x, RN * sizeof(float)));
  EXPECT_OK(weft_sync());
  if (memcmp(h, s->want, RN * sizeof(float)) != 0)
    __atomic_add_fetch(&rbad, 1, __ATOMIC_SEQ_CST);
  free(h);
}

static void random_program(weft_runtime *rt, uint64_t *seed) {
  float *x[RH], *ref[RH];
  weft_data *d[RH];
  for (int h = 0; h < RH; h++) {
    x[h] = malloc(RN * sizeof(float));
    ref[h] = malloc(RN * sizeof(float));
    EXPECT(x[h] && ref[h]);
    for (int i = 0; i < RN; i++)
      x[h][i] = ref[h][i] = (float)((i * (h + 3)) % 11);
    EXPECT_OK(weft_data_register(rt, x[h], RN * sizeof(float), &d[h]));
  }
  rstep *steps = calloc(RSTEPS, sizeof *steps);
  weft_task **tasks = calloc(RSTEPS, sizeof *tasks);
  EXPECT(steps && tasks);
  for (int k = 0; k < RSTEPS; k++) {
    rstep *s = &steps[k];
    int h = tt_rand_range(seed, 0, RH - 1), kind = tt_rand_range(seed, 0, 5);
    s->d = d[h];
    weft_access acc[2];
    weft_task_fn fn;
    size_t na = 1;
    if (kind == 0) {
      int g = (h + tt_rand_range(seed, 1, RH - 1)) % RH;
      s->src = d[g];
      memcpy(ref[h], ref[g], RN * sizeof(float));
      acc[0] = weft_data_access(s->d, WEFT_WRITE);
      acc[1] = weft_data_access(s->src, WEFT_READ);
      na = 2;
      fn = copy_task;
    } else if (kind <= 2) {
      s->want = malloc(RN * sizeof(float));
      EXPECT(s->want != NULL);
      memcpy(s->want, ref[h], RN * sizeof(float));
      acc[0] = weft_data_access(s->d, WEFT_READ);
      fn = check_task;
    } else {
      s->a = tt_rand_range(seed, 0, 1) ? 1.0f : -1.0f;
      s->b = (float)tt_rand_range(seed, -3, 3);
      for (int i = 0; i < RN; i++)
        ref[h][i] = ref[h][i] * s->a + s->b;
      acc[0] = weft_data_access(s->d, WEFT_RW);
      fn = scale_task;
    }
    weft_task_opts o;
    weft_task_opts_init(&o);
    int dv = tt_rand_range(seed, -1, rdev - 1);
    o.device = dv < 0 ? WEFT_DEVICE_ANY : dv;
    o.accesses = acc;
    o.naccesses = na;
    EXPECT_OK(weft_task_spawn(rt, &tasks[k], fn, s, &o));
    int r = tt_rand_range(seed, 0, 19);
    if (r == 0) {
      EXPECT_OK(weft_data_prefetch(d[h], WEFT_DATA_HOST));
    } else if (r == 1) {
      EXPECT_OK(weft_data_prefetch(d[tt_rand_range(seed, 0, RH - 1)],
                                   tt_rand_range(seed, 0, rdev - 1)));
    } else if (r == 2) {
      EXPECT_OK(weft_data_sync(d[h]));
      EXPECT_MSG(memcmp(x[h], ref[h], RN * sizeof(float)) == 0,
                 "step %d: handle %d differs after weft_data_sync", k, h);
    }
  }
  for (int k = 0; k < RSTEPS; k++) {
    EXPECT_OK(weft_task_join(tasks[k]));
    free(steps[k].want);
  }
  EXPECT_OK(weft_data_unregister_n(d, RH));
  for (int h = 0; h < RH; h++) {
    EXPECT_MSG(memcmp(x[h], ref[h], RN * sizeof(float)) == 0,
               "handle %d differs after the unregister", h);
    free(x[h]);
    free(ref[h]);
  }
  free(steps);
  free(tasks);
}

static void random_programs(int devs, int prefetch, uint64_t seed) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.host_devices = devs;
  o.data_prefetch = prefetch;
  o.data_limit = 2 * RN * sizeof(float);
  weft_runtime *rt = tt_open(&o);
  EXPECT_OK(weft_device_count(rt, &rdev));
  for (int p = 0; p < (tt_quick() ? 2 : 6); p++)
    random_program(rt, &seed);
  tt_close(rt);
  EXPECT_MSG(rbad == 0,
             "%d checks read stale data (%d devices, copies at "
             "spawn %d)",
             rbad, devs, prefetch);
}

int main(void) {
  evicted_twice();
  written_then_moved(-1);
  written_then_moved(1);
  written_then_moved(WEFT_DATA_HOST);
  unregistered_by_declarer();
  static const int devs[] = {1, 2, 4};
  for (int i = 0; i < 3; i++)
    for (int prefetch = 0; prefetch < 2; prefetch++)
      random_programs(devs[i], prefetch,
                      0x5eedu + (uint64_t)(i * 2 + prefetch));
  puts("ok");
  return 0;
}
