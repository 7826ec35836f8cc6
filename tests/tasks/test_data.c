/* Data that moves itself (weft/data.h), on every backend (the host backend
 * emulating 1 and 4 devices; CUDA with what it has): random programs over
 * three handles, each step a task on a random device that scales a handle
 * in place or copies one into another, with weft_data_sync and
 * write-backs started ahead at random points, bit-exact against the same
 * steps run one at a time on the CPU, with copies starting at the get and
 * at the spawn; the same under a limit on the instances' bytes that forces
 * evictions (write-backs of the only valid copy among them), and under one
 * too small for a single handle; one writer then readers on two devices,
 * each instance filled once (the bytes counted); an instance prefetched,
 * then read where it is without a copy; a writer's result written back
 * ahead, before any sync; a copy started at a reader's spawn while the
 * reader waits for an earlier task, none with data_prefetch off or where
 * it would cost an eviction; eviction sparing the instance a spawned task
 * will read; WEFT_DEVICE_ANY placing a task where its data is; data
 * registered in blocks over the devices, each placed at its home; and bad
 * input (a get inside a graph capture among it), refused with nothing
 * moved; an unregister that fails on one device leaving the others'
 * instances gone, not valid; readers' entries dropped once complete;
 * fillers counted right across a runtime's registrations. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_internal.h"
#include "task_common.h"
#include "weft_internal.h"

enum { N = 4096, H = 3 };

static int ndev;

typedef struct step {
  weft_data *d, *src; /* src: a copy's source, else NULL */
  float a, b;         /* a scale: x = x * a + b */
} step;

static void axpb_task(void *arg) {
  step *s = arg;
  float *x;
  EXPECT_OK(weft_data_get(s->d, WEFT_RW, (void **)&x));
  int n = N;
  void *args[] = {&x, &n, &s->a, &s->b};
  EXPECT_OK(weft_launch(&tk.axpb,
                        WEFT_DIM1((N + TEST_THREADS - 1) / TEST_THREADS),
                        WEFT_DIM1(TEST_THREADS), 0, args));
}

static void copy_task(void *arg) {
  step *s = arg;
  float *from, *to;
  EXPECT_OK(weft_data_get(s->src, WEFT_READ, (void **)&from));
  EXPECT_OK(weft_data_get(s->d, WEFT_WRITE, (void **)&to));
  EXPECT_OK(weft_copy(to, from, N * sizeof(float)));
}

static weft_task *spawn_step(weft_runtime *rt, step *s, int dev) {
  weft_access acc[2] = {weft_data_access(s->d, s->src ? WEFT_WRITE : WEFT_RW),
                        weft_data_access(s->src, WEFT_READ)};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.device = dev;
  o.accesses = acc;
  o.naccesses = s->src ? 2 : 1;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, s->src ? copy_task : axpb_task, s, &o));
  return t;
}

/* One random program of nsteps steps. */
static void program(weft_runtime *rt, uint64_t *seed, int nsteps) {
  float *x[H], *ref[H];
  weft_data *d[H];
  for (int h = 0; h < H; h++) {
    x[h] = malloc(N * sizeof(float)); /* pageable: weft stages it */
    ref[h] = malloc(N * sizeof(float));
    EXPECT(x[h] && ref[h]);
    for (int i = 0; i < N; i++)
      x[h][i] = ref[h][i] = (float)((i * (h + 3)) % 11);
    EXPECT_OK(weft_data_register(rt, x[h], N * sizeof(float), &d[h]));
  }
  /* The write-backs draw apart: the steps stay those of the seed. */
  uint64_t wb = *seed ^ 0x9e3779b97f4a7c15u;
  step *steps = calloc((size_t)nsteps, sizeof *steps);
  weft_task **tasks = calloc((size_t)nsteps, sizeof *tasks);
  EXPECT(steps && tasks);
  for (int k = 0; k < nsteps; k++) {
    step *s = &steps[k];
    int h = tt_rand_range(seed, 0, H - 1);
    s->d = d[h];
    if (tt_rand_range(seed, 0, 3) == 0) { /* a copy from another handle */
      int g = (h + tt_rand_range(seed, 1, H - 1)) % H;
      s->src = d[g];
      memcpy(ref[h], ref[g], N * sizeof(float));
    } else { /* small integers stay exact in floats */
      s->a = tt_rand_range(seed, 0, 1) ? 1.0f : -1.0f;
      s->b = (float)tt_rand_range(seed, -3, 3);
      for (int i = 0; i < N; i++)
        ref[h][i] = ref[h][i] * s->a + s->b;
    }
    tasks[k] = spawn_step(rt, s, tt_rand_range(seed, 0, ndev - 1));
    if (tt_rand_range(&wb, 0, 7) == 0) /* its write-back, ahead */
      EXPECT_OK(weft_data_prefetch(d[h], WEFT_DATA_HOST));
    if (tt_rand_range(seed, 0, 9) == 0) { /* read one back meanwhile */
      EXPECT_OK(weft_data_sync(d[h]));
      EXPECT_MSG(memcmp(x[h], ref[h], N * sizeof(float)) == 0,
                 "step %d: handle %d differs after weft_data_sync", k, h);
    }
  }
  for (int k = 0; k < nsteps; k++)
    EXPECT_OK(weft_task_join(tasks[k]));
  if (tt_rand_range(seed, 0, 1)) /* the write-backs side by side */
    EXPECT_OK(weft_data_unregister_n(d, H));
  else
    for (int h = 0; h < H; h++)
      EXPECT_OK(weft_data_unregister(d[h]));
  for (int h = 0; h < H; h++) {
    EXPECT_MSG(memcmp(x[h], ref[h], N * sizeof(float)) == 0,
               "handle %d differs after weft_data_unregister", h);
    free(x[h]);
    free(ref[h]);
  }
  free(steps);
  free(tasks);
}

/* A writer on device 0, then readers on device 0 and on the last device,
 * side by side: each instance is filled once. */
static void readers(weft_runtime *rt) {
  enum { R = 8 };
  float *x = malloc(N * sizeof(float)), *out[R];
  EXPECT(x != NULL);
  for (int i = 0; i < N; i++)
    x[i] = (float)i;
  weft_data *d, *od[R];
  EXPECT_OK(weft_data_register(rt, x, N * sizeof(float), &d));
  step w = {d, NULL, 2.0f, 1.0f}, r[R];
  weft_task *t[R + 1];
  t[0] = spawn_step(rt, &w, 0);
  for (int k = 0; k < R; k++) {
    out[k] = calloc(N, sizeof(float));
    EXPECT(out[k] != NULL);
    EXPECT_OK(weft_data_register(rt, out[k], N * sizeof(float), &od[k]));
    r[k] = (step){od[k], d, 0, 0};
    t[k + 1] = spawn_step(rt, &r[k], k % 2 ? ndev - 1 : 0);
  }
  for (int k = 0; k <= R; k++)
    EXPECT_OK(weft_task_join(t[k]));
  weft_data_stats st;
  EXPECT_OK(weft_data_stats_get(d, &st));
  EXPECT_EQ_INT((int)st.to_device, N * (int)sizeof(float));
  EXPECT_EQ_INT((int)st.device_to_device,
                ndev > 1 ? N * (int)sizeof(float) : 0);
  EXPECT_EQ_INT((int)st.to_host, 0);
  EXPECT_EQ_INT((int)st.instances, ndev > 1 ? 2 : 1);
  for (int k = 0; k < R; k++) {
    EXPECT_OK(weft_data_unregister(od[k]));
    EXPECT_MSG(out[k][N - 1] == 2.0f * (N - 1) + 1 && out[k][0] == 1.0f,
               "reader %d read %g", k, (double)out[k][N - 1]);
    free(out[k]);
  }
  EXPECT_OK(weft_data_unregister(d));
  EXPECT(x[5] == 11.0f);
  free(x);
}

/* A reader whose fill is held behind a gate on its stream, then a reader
 * on another device that fills from that instance: its copy must wait
 * for the held fill (the instance's ready event), not read it unfilled. */
typedef struct held {
  weft_data *d, *out;
  tt_gate g;
  int got; /* the first reader's get is done */
} held;

static void held_reader(void *arg) {
  held *h = arg;
  tt_gate_launch(&h->g);
  float *p;
  EXPECT_OK(weft_data_get(h->d, WEFT_READ, (void **)&p));
  __atomic_store_n(&h->got, 1, __ATOMIC_RELEASE);
}

static void ordered_fill(weft_runtime *rt) {
  float *x = malloc(N * sizeof(float)), *y = calloc(N, sizeof(float));
  EXPECT(x && y);
  for (int i = 0; i < N; i++)
    x[i] = (float)(i % 13);
  held h = {0};
  tt_gate_init(&h.g);
  EXPECT_OK(weft_data_register(rt, x, N * sizeof(float), &h.d));
  EXPECT_OK(weft_data_register(rt, y, N * sizeof(float), &h.out));
  /* The gate's words too, which its kernel writes (weft check). */
  weft_access a[2] = {weft_data_access(h.d, WEFT_READ),
                      {h.g.mem, 2 * sizeof(int), WEFT_RW}};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.device = 0;
  o.accesses = a;
  o.naccesses = 2;
  weft_task *t1;
  EXPECT_OK(weft_task_spawn(rt, &t1, held_reader, &h, &o));
  tt_wait_flag(&h.got, 10000, "the held reader's get");
  step r = {h.out, h.d, 0, 0};
  weft_task *t2 = spawn_step(rt, &r, ndev - 1);
  tt_sleep_ms(20); /* time for an unordered copy to run early */
  tt_gate_open(&h.g);
  EXPECT_OK(weft_task_join(t1));
  EXPECT_OK(weft_task_join(t2));
  weft_data_stats st;
  EXPECT_OK(weft_data_stats_get(h.d, &st));
  EXPECT_EQ_INT((int)st.device_to_device, N * (int)sizeof(float));
  EXPECT_OK(weft_data_unregister(h.out));
  EXPECT_OK(weft_data_unregister(h.d));
  EXPECT_MSG(memcmp(x, y, N * sizeof(float)) == 0,
             "the second reader copied the instance before it was filled");
  tt_gate_fini(&h.g);
  free(x);
  free(y);
}

/* weft_data_prefetch: the instance filled ahead, once; a reader there
 * then moves nothing; bad input refused. */
static void prefetched(weft_runtime *rt) {
  float *x = malloc(N * sizeof(float)), *y = calloc(N, sizeof(float));
  EXPECT(x && y);
  for (int i = 0; i < N; i++)
    x[i] = (float)(i % 7);
  weft_data *d, *out;
  EXPECT_OK(weft_data_register(rt, x, N * sizeof(float), &d));
  EXPECT_OK(weft_data_register(rt, y, N * sizeof(float), &out));
  EXPECT_ERR(weft_data_prefetch(d, ndev), WEFT_EINVAL);
  EXPECT_ERR(weft_data_prefetch(d, -1), WEFT_EINVAL);
  EXPECT_ERR(weft_data_prefetch(NULL, 0), WEFT_EINVAL);
  EXPECT_OK(weft_data_prefetch(d, ndev - 1));
  weft_data_stats st;
  for (int tries = 0; tries < 10000; tries++) { /* the fill, ahead */
    EXPECT_OK(weft_data_stats_get(d, &st));
    if (st.copies)
      break;
    tt_sleep_ms(1);
  }
  EXPECT_EQ_INT((int)st.copies, 1);
  step r = {out, d, 0, 0};
  EXPECT_OK(weft_task_join(spawn_step(rt, &r, ndev - 1)));
  EXPECT_OK(weft_data_stats_get(d, &st));
  EXPECT_EQ_INT((int)st.copies, 1); /* the reader found it filled */
  EXPECT_EQ_INT((int)st.to_device, N * (int)sizeof(float));
  EXPECT_OK(weft_data_unregister(out));
  EXPECT_OK(weft_data_unregister(d));
  EXPECT_MSG(memcmp(x, y, N * sizeof(float)) == 0, "the reader read %g",
             (double)y[N - 1]);
  EXPECT_ERR(weft_data_prefetch(d, 0), WEFT_EINVAL); /* unregistered */
  free(x);
  free(y);
}

/* weft_data_prefetch to the host: a writer's result comes back by
 * itself, before any sync, which then copies nothing; so does a second
 * one with the host copy valid; bad devices refused. */
static void written_back(weft_runtime *rt) {
  float *x = malloc(N * sizeof(float));
  EXPECT(x);
  for (int i = 0; i < N; i++)
    x[i] = (float)(i % 5);
  weft_data *d;
  EXPECT_OK(weft_data_register(rt, x, N * sizeof(float), &d));
  EXPECT_ERR(weft_data_prefetch(d, WEFT_DATA_HOST - 1), WEFT_EINVAL);
  EXPECT_ERR(weft_data_prefetch(d, WEFT_DEVICE_INHERIT), WEFT_EINVAL);
  step s = {d, NULL, 2.0f, 1.0f};
  weft_task *t = spawn_step(rt, &s, ndev - 1);
  EXPECT_OK(weft_data_prefetch(d, WEFT_DATA_HOST));
  weft_data_stats st;
  for (int tries = 0; tries < 10000; tries++) { /* no sync: by itself */
    EXPECT_OK(weft_data_stats_get(d, &st));
    if (st.to_host)
      break;
    tt_sleep_ms(1);
  }
  EXPECT_EQ_INT((int)st.to_host, N * (int)sizeof(float));
  EXPECT_EQ_INT((int)st.copies, 2); /* in for the writer, back */
  int bad = 0;
  for (int i = 0; i < N; i++)
    bad += x[i] != (float)(i % 5) * 2.0f + 1.0f;
  EXPECT_MSG(bad == 0, "%d values not written back", bad);
  EXPECT_OK(weft_data_prefetch(d, WEFT_DATA_HOST)); /* nothing to do */
  EXPECT_OK(weft_data_sync(d));
  EXPECT_OK(weft_data_stats_get(d, &st));
  EXPECT_EQ_INT((int)st.copies, 2);
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_data_unregister(d));
  EXPECT_ERR(weft_data_prefetch(d, WEFT_DATA_HOST), WEFT_EINVAL);
  free(x);
}

/* Copies at spawn: a reader of d ordered behind a blocker (both declare
 * z) cannot run, yet with data_prefetch on d's copy starts at its spawn;
 * off, nothing moves until it runs. Under a limit whose room a running
 * task holds, no copy starts (it would evict) until the reader runs. */
typedef struct spawn_fill {
  weft_data *d;
  float *z;     /* what the blocker writes and the reader reads */
  float *out;   /* the reader's copy of d, on the host */
  int release;  /* the blocker returns once set */
  int started;  /* the blocker runs */
  weft_data *e; /* held by the blocker when set (the limit's case) */
} spawn_fill;

static int released(void *arg) {
  return tt_load(&((spawn_fill *)arg)->release) ? 0 : WEFT_EAGAIN;
}

static void blocker(void *arg) {
  spawn_fill *f = arg;
  float *p;
  if (f->e) /* held until this task returns: no room to take */
    EXPECT_OK(weft_data_get(f->e, WEFT_RW, (void **)&p));
  tt_store(&f->started, 1);
  EXPECT_OK(weft_wait_until(released, f));
}

static void spawn_reader(void *arg) {
  spawn_fill *f = arg;
  float *p;
  EXPECT_OK(weft_data_get(f->d, WEFT_READ, (void **)&p));
  EXPECT_OK(weft_copy(f->out, p, N * sizeof(float)));
  EXPECT_OK(weft_sync());
}

/* prefetch: the runtime's data_prefetch; one_room: a limit of one handle,
 * which the blocker's handle takes; check: weft check, which turns
 * copies at spawn off (set here whatever WEFT_CHECK says). */
static void copies_at_spawn(int prefetch, int one_room, int check) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.data_prefetch = prefetch;
  o.check = check;
  o.data_limit = one_room ? N * sizeof(float) : 0;
  weft_runtime *rt = tt_open(&o);
  float *x = malloc(N * sizeof(float)), *y = calloc(N, sizeof(float));
  float *z = calloc(16, sizeof(float)), *out = calloc(N, sizeof(float));
  EXPECT(x && y && z && out);
  for (int i = 0; i < N; i++)
    x[i] = (float)(i % 11);
  spawn_fill f = {.z = z, .out = out};
  EXPECT_OK(weft_data_register(rt, x, N * sizeof(float), &f.d));
  if (one_room)
    EXPECT_OK(weft_data_register(rt, y, N * sizeof(float), &f.e));
  weft_access ab[2] = {{z, 16 * sizeof(float), WEFT_WRITE}},
              ar[2] = {{z, 16 * sizeof(float), WEFT_READ},
                       weft_data_access(f.d, WEFT_READ)};
  if (one_room)
    ab[1] = weft_data_access(f.e, WEFT_RW);
  weft_task_opts ob, orr;
  weft_task_opts_init(&ob);
  ob.device = 0;
  ob.accesses = ab;
  ob.naccesses = one_room ? 2 : 1;
  orr = ob;
  orr.accesses = ar;
  orr.naccesses = 2;
  weft_task *tb, *tr;
  EXPECT_OK(weft_task_spawn(rt, &tb, blocker, &f, &ob));
  tt_wait_flag(&f.started, 10000, "the blocker's start");
  EXPECT_OK(weft_task_spawn(rt, &tr, spawn_reader, &f, &orr));
  weft_data_stats st;
  int copies_early = prefetch && !one_room && !check;
  for (int tries = 0; tries < (copies_early ? 10000 : 30); tries++) {
    EXPECT_OK(weft_data_stats_get(f.d, &st));
    if (st.copies)
      break;
    tt_sleep_ms(1);
  }
  EXPECT_MSG((int)st.copies == copies_early,
             "data_prefetch %d, %s, check %d: %d copies of the reader's data "
             "before it could run",
             prefetch, one_room ? "no room" : "room", check, (int)st.copies);
  EXPECT(!tt_task_returned(tr));
  weft_mem_stats ms = {.struct_size = sizeof ms};
  EXPECT_OK(weft_mem_stats_get(rt, &ms));
  EXPECT_EQ_INT((int)ms.data_evictions, 0);
  tt_store(&f.release, 1);
  EXPECT_OK(weft_task_join(tb));
  EXPECT_OK(weft_task_join(tr));
  EXPECT_OK(weft_data_stats_get(f.d, &st));
  EXPECT_EQ_INT((int)st.copies, 1); /* filled once, early or by the get */
  EXPECT_MSG(memcmp(x, out, N * sizeof(float)) == 0, "the reader read %g",
             (double)out[N - 1]);
  if (one_room)
    EXPECT_OK(weft_data_unregister(f.e));
  EXPECT_OK(weft_data_unregister(f.d));
  tt_close(rt);
  free(x);
  free(y);
  free(z);
  free(out);
}

/* Eviction spares the instance a task already spawned will use: of two
 * instances in a limit of two, x used first and y after, with a reader
 * of x spawned (held behind a blocker) and none of y, a third handle's
 * get evicts y, which least-recently-used order would keep; the reader
 * then finds x where it was, filled once. */
static void get_read(void *arg) {
  float *p;
  EXPECT_OK(weft_data_get(arg, WEFT_READ, (void **)&p));
}

static void read_after_blocker(void *arg) {
  spawn_fill *f = arg;
  float *p;
  EXPECT_OK(weft_data_get(f->d, WEFT_READ, (void **)&p));
}

static void spares_next_user(void) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.data_limit = 2 * N * sizeof(float);
  weft_runtime *rt = tt_open(&o);
  float *host[3], *z = calloc(16, sizeof(float));
  weft_data *h[3];
  for (int i = 0; i < 3; i++) {
    EXPECT((host[i] = calloc(N, sizeof(float))) != NULL);
    EXPECT_OK(weft_data_register(rt, host[i], N * sizeof(float), &h[i]));
  }
  weft_task_opts to;
  weft_task_opts_init(&to);
  to.device = 0;
  to.naccesses = 1;
  weft_task *t;
  for (int i = 0; i < 2; i++) { /* x, then y: y the more recently used */
    weft_access a = weft_data_access(h[i], WEFT_READ);
    to.accesses = &a;
    EXPECT_OK(weft_task_spawn(rt, &t, get_read, h[i], &to));
    EXPECT_OK(weft_task_join(t));
  }
  spawn_fill f = {.d = h[0], .z = z};
  weft_access ab = {z, 16 * sizeof(float), WEFT_WRITE},
              ar[2] = {{z, 16 * sizeof(float), WEFT_READ},
                       weft_data_access(h[0], WEFT_READ)};
  weft_task *tb, *tr;
  to.accesses = &ab;
  EXPECT_OK(weft_task_spawn(rt, &tb, blocker, &f, &to));
  to.accesses = ar;
  to.naccesses = 2;
  EXPECT_OK(weft_task_spawn(rt, &tr, read_after_blocker, &f, &to));
  weft_access az = weft_data_access(h[2], WEFT_READ);
  to.accesses = &az;
  to.naccesses = 1;
  EXPECT_OK(weft_task_spawn(rt, &t, get_read, h[2], &to));
  EXPECT_OK(weft_task_join(t)); /* made room for z's instance */
  weft_data_stats sx, sy;
  EXPECT_OK(weft_data_stats_get(h[0], &sx));
  EXPECT_OK(weft_data_stats_get(h[1], &sy));
  EXPECT_MSG(sx.evictions == 0 && sy.evictions == 1,
             "evicted x %d times, y %d: x has a reader ahead, y none",
             (int)sx.evictions, (int)sy.evictions);
  EXPECT(!tt_task_returned(tr));
  tt_store(&f.release, 1);
  EXPECT_OK(weft_task_join(tb));
  EXPECT_OK(weft_task_join(tr));
  EXPECT_OK(weft_data_stats_get(h[0], &sx));
  EXPECT_EQ_INT((int)sx.copies, 1);
  EXPECT_OK(weft_data_unregister_n(h, 3));
  tt_close(rt);
  for (int i = 0; i < 3; i++)
    free(host[i]);
  free(z);
}

/* WEFT_DEVICE_ANY places a task where the most bytes of the handles it
 * declares are valid. */
static void where(void *arg) { *(int *)arg = weft_task_device(); }

static int placed(weft_runtime *rt, weft_data *const *h, int n) {
  weft_access a[3];
  for (int k = 0; k < n; k++)
    a[k] = weft_data_access(h[k], WEFT_READ);
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.device = WEFT_DEVICE_ANY;
  o.accesses = a;
  o.naccesses = (size_t)n;
  int dev = -1;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, where, &dev, &o));
  EXPECT_OK(weft_task_join(t));
  return dev;
}

static void placed_by_data(weft_runtime *rt) {
  float *x[3];
  weft_data *d[3];
  for (int k = 0; k < 3; k++) {
    x[k] = calloc(N, sizeof(float));
    EXPECT(x[k] != NULL);
    EXPECT_OK(weft_data_register(rt, x[k], N * sizeof(float), &d[k]));
  }
  int far = ndev - 1;
  step w[3] = {{d[0], NULL, 1, 1}, {d[1], NULL, 1, 2}, {d[2], NULL, 1, 3}};
  EXPECT_OK(weft_task_join(spawn_step(rt, &w[0], 0)));
  EXPECT_OK(weft_task_join(spawn_step(rt, &w[1], far)));
  EXPECT_OK(weft_task_join(spawn_step(rt, &w[2], far)));
  EXPECT_EQ_INT(placed(rt, d, 1), 0);       /* d[0] is valid on 0 alone */
  EXPECT_EQ_INT(placed(rt, d + 1, 1), far); /* d[1] on the last */
  EXPECT_EQ_INT(placed(rt, d, 3), far);     /* two handles there, one on 0 */
  for (int k = 0; k < 3; k++) {
    EXPECT_OK(weft_data_unregister(d[k]));
    EXPECT(x[k][0] == (float)(k + 1));
    free(x[k]);
  }
}

/* Blocks over devices: each layout's homes and each block's bytes; the
 * blocks placed at their homes (one copy each, none between devices),
 * a task per block on its home, and one on WEFT_DEVICE_ANY going there;
 * the result in the host memory after; bad input refused with nothing
 * registered. */
typedef struct blk {
  weft_data *d;
  int n; /* floats */
} blk;

static void blk_task(void *arg) {
  blk *k = arg;
  float *x, a = 2, b = 1;
  EXPECT_OK(weft_data_get(k->d, WEFT_RW, (void **)&x));
  void *args[] = {&x, &k->n, &a, &b};
  EXPECT_OK(weft_launch(&tk.axpb,
                        WEFT_DIM1((k->n + TEST_THREADS - 1) / TEST_THREADS),
                        WEFT_DIM1(TEST_THREADS), 0, args));
}

static void blocks(weft_runtime *rt) {
  enum { NB = 7, BF = 1000, LAST = 500 }; /* blocks, floats a block */
  size_t nf = (NB - 1) * BF + LAST, bb = BF * sizeof(float);
  float *x = malloc(nf * sizeof *x), *want = malloc(nf * sizeof *want);
  EXPECT(x && want);
  for (size_t i = 0; i < nf; i++)
    want[i] = x[i] = (float)(i % 5);
  for (int layout = WEFT_DATA_BLOCKED; layout <= WEFT_DATA_CYCLIC; layout++) {
    weft_data_blocks *m;
    EXPECT_OK(weft_data_register_blocks(rt, x, nf * sizeof *x, bb,
                                        (weft_data_layout)layout, &m));
    EXPECT_EQ_INT((int)weft_data_blocks_count(m), NB);
    blk k[NB];
    weft_task *t[NB];
    for (int i = 0; i < NB; i++) {
      weft_access a = weft_data_access(weft_data_blocks_at(m, (size_t)i), 0);
      EXPECT(a.ptr == (void *)(x + (size_t)i * BF));
      EXPECT_EQ_INT((int)a.bytes,
                    (i < NB - 1 ? BF : LAST) * (int)sizeof(float));
      int home = layout == WEFT_DATA_CYCLIC ? i % ndev : i * ndev / NB;
      EXPECT_EQ_INT(weft_data_blocks_device(m, (size_t)i), home);
    }
    EXPECT(weft_data_blocks_at(m, NB) == NULL);
    EXPECT_ERR(weft_data_blocks_device(m, NB), WEFT_EINVAL);
    EXPECT(strstr(weft_last_error_message(), "block 7 of 7") != NULL);
    /* A block goes back with the others, not alone. */
    weft_data *one = weft_data_blocks_at(m, 1);
    EXPECT_ERR(weft_data_unregister(one), WEFT_EINVAL);
    EXPECT(strstr(weft_last_error_message(), "weft_data_unregister_blocks") !=
           NULL);
    EXPECT_ERR(weft_data_unregister_n(&one, 1), WEFT_EINVAL);
    EXPECT_OK(weft_data_blocks_place(m));
    for (int i = 0; i < NB; i++) { /* the fills, ahead */
      weft_data_stats st = {0};
      for (int tries = 0; tries < 10000 && !st.copies; tries++) {
        EXPECT_OK(weft_data_stats_get(weft_data_blocks_at(m, (size_t)i), &st));
        if (!st.copies)
          tt_sleep_ms(1);
      }
      EXPECT_EQ_INT((int)st.copies, 1);
    }
    if (ndev > 1) /* each is valid at its home alone */
      for (int i = 0; i < NB; i++) {
        weft_data *d = weft_data_blocks_at(m, (size_t)i);
        EXPECT_EQ_INT(placed(rt, &d, 1), weft_data_blocks_device(m, (size_t)i));
      }
    for (int i = 0; i < NB; i++) {
      k[i] = (blk){weft_data_blocks_at(m, (size_t)i), i < NB - 1 ? BF : LAST};
      weft_access a = weft_data_access(k[i].d, WEFT_RW);
      weft_task_opts o;
      weft_task_opts_init(&o);
      o.device = weft_data_blocks_device(m, (size_t)i);
      o.accesses = &a;
      o.naccesses = 1;
      EXPECT_OK(weft_task_spawn(rt, &t[i], blk_task, &k[i], &o));
    }
    for (int i = 0; i < NB; i++) {
      EXPECT_OK(weft_task_join(t[i]));
      weft_data_stats st;
      EXPECT_OK(weft_data_stats_get(k[i].d, &st));
      EXPECT_EQ_INT((int)st.to_device, k[i].n * (int)sizeof(float));
      EXPECT_EQ_INT((int)st.device_to_device, 0); /* found at home */
    }
    EXPECT_OK(weft_data_unregister_blocks(m));
    /* m is gone (freed): each call refuses it instead of reading it. */
    EXPECT_ERR(weft_data_unregister_blocks(m), WEFT_EINVAL);
    EXPECT(strstr(weft_last_error_message(), "not a registered block set") !=
           NULL);
    EXPECT_ERR(weft_data_blocks_place(m), WEFT_EINVAL);
    EXPECT_ERR(weft_data_blocks_device(m, 0), WEFT_EINVAL);
    EXPECT_EQ_INT((int)weft_data_blocks_count(m), 0);
    EXPECT(weft_data_blocks_at(m, 0) == NULL);
    for (size_t i = 0; i < nf; i++)
      want[i] = want[i] * 2 + 1;
    EXPECT_MSG(memcmp(x, want, nf * sizeof *x) == 0,
               "layout %d: x[%d] = %g, want %g", layout, BF, (double)x[BF],
               (double)want[BF]);
  }
  /* Bad input: nothing registered after any of it. */
  weft_data_blocks *m = (weft_data_blocks *)1;
  EXPECT_ERR(weft_data_register_blocks(NULL, x, bb, bb, 0, &m), WEFT_EINVAL);
  EXPECT(m == (weft_data_blocks *)1); /* a failure leaves it (error.h) */
  EXPECT_ERR(weft_data_register_blocks(rt, NULL, bb, bb, 0, &m), WEFT_EINVAL);
  EXPECT_ERR(weft_data_register_blocks(rt, x, bb, bb, 0, NULL), WEFT_EINVAL);
  EXPECT_ERR(weft_data_register_blocks(rt, x, 0, bb, 0, &m), WEFT_EINVAL);
  EXPECT_ERR(weft_data_register_blocks(rt, x, bb, 0, 0, &m), WEFT_EINVAL);
  EXPECT_ERR(weft_data_register_blocks(rt, x, bb, bb, 2, &m), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "layout") != NULL);
  EXPECT_ERR(
      weft_data_register_blocks(rt, x, WEFT_DATA_BLOCKS_MAX + 1, 1, 0, &m),
      WEFT_EINVAL);
  weft_data *mid;
  EXPECT_OK(weft_data_register(rt, x + 3 * BF, bb, &mid));
  EXPECT_ERR(weft_data_register_blocks(rt, x, nf * sizeof *x, bb,
                                       WEFT_DATA_CYCLIC, &m),
             WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "block 3") != NULL);
  EXPECT(m == (weft_data_blocks *)1);
  weft_data *first; /* the blocks before the overlap were undone */
  EXPECT_OK(weft_data_register(rt, x, 3 * bb, &first));
  EXPECT_OK(weft_data_unregister(first));
  EXPECT_OK(weft_data_unregister(mid));
  EXPECT_ERR(weft_data_blocks_place(NULL), WEFT_EINVAL);
  EXPECT_ERR(weft_data_unregister_blocks(NULL), WEFT_EINVAL);
  EXPECT_EQ_INT((int)weft_data_blocks_count(NULL), 0);
  EXPECT(weft_data_blocks_at(NULL, 0) == NULL);
  free(x);
  free(want);
}

static void outside_task(void *arg) {
  void *p = (void *)1;
  EXPECT_ERR(weft_data_get(arg, 0, &p), WEFT_EINVAL);
  EXPECT(p == NULL);
  EXPECT_ERR(weft_data_get(arg, WEFT_RW | WEFT_ACCESS_HOST, &p), WEFT_EINVAL);
  EXPECT_ERR(weft_data_get(arg, WEFT_READ, NULL), WEFT_EINVAL);
}

/* A get inside a graph capture is refused, even where it would fill
 * nothing (the instance written before): a captured kernel never makes
 * the write a get records. */
static void get_in_capture_task(void *arg) {
  void *p;
  EXPECT_OK(weft_data_get(arg, WEFT_WRITE, &p));
  EXPECT_OK(weft_graph_begin());
  void *q = (void *)1;
  EXPECT_ERR(weft_data_get(arg, WEFT_RW, &q), WEFT_ESTATE);
  EXPECT(q == NULL);
  EXPECT(strstr(weft_last_error_message(), "graph capture") != NULL);
  weft_graph *g;
  EXPECT_OK(weft_graph_end(&g));
  EXPECT_OK(weft_graph_destroy(g));
  EXPECT_OK(weft_sync());
}

/* A task of another runtime asks for the handle. */
static void other_runtime_task(void *arg) {
  void *p = (void *)1;
  EXPECT_ERR(weft_data_get(arg, WEFT_READ, &p), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "another runtime") != NULL);
  EXPECT(p == NULL);
}

/* Another runtime's handles over the same memory: each runtime's keep
 * apart in the registry. */
typedef struct beside {
  weft_runtime *b;
  float *mem;
  weft_data *h[4];
} beside;

static void beside_register(void *arg) {
  beside *s = arg;
  for (int i = 0; i < 4; i++)
    EXPECT_OK(weft_data_register(s->b, &s->mem[i * 16], 16 * sizeof(float),
                                 &s->h[i]));
}

static void beside_unregister_one(void *arg) {
  EXPECT_OK(weft_data_unregister(arg));
}

static void beside_unregister(void *arg) {
  beside *s = arg;
  EXPECT_OK(weft_data_unregister_n(s->h, 4));
}

static void *left_registered(void *arg) {
  (void)arg;
  static float mine[16];
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.workers = 1;
  weft_runtime *c;
  weft_data *e;
  EXPECT_OK(weft_init(&c, &o));
  EXPECT_OK(weft_data_register(c, mine, sizeof mine, &e));
  EXPECT_ERR(weft_shutdown(c), WEFT_EBUSY);
  EXPECT(strstr(weft_last_error_message(), "1 registered data") != NULL);
  char at[64]; /* named: where, and how large */
  snprintf(at, sizeof at, "the first at %p (%zu bytes)", (void *)mine,
           sizeof mine);
  EXPECT_MSG(strstr(weft_last_error_message(), at) != NULL, "%s",
             weft_last_error_message());
  EXPECT_OK(weft_data_unregister(e));
  weft_data_blocks *m; /* blocks: their own call named */
  EXPECT_OK(weft_data_register_blocks(c, mine, sizeof mine, 4 * sizeof *mine,
                                      WEFT_DATA_BLOCKED, &m));
  EXPECT_ERR(weft_shutdown(c), WEFT_EBUSY);
  EXPECT_MSG(strstr(weft_last_error_message(),
                    "4 of them blocks: weft_data_unregister_blocks") != NULL,
             "%s", weft_last_error_message());
  EXPECT_OK(weft_data_unregister_blocks(m));
  EXPECT_OK(weft_shutdown(c));
  return NULL;
}

static void bad_input(weft_runtime *rt) {
  static float buf[64];
  weft_data *d, *e;
  EXPECT_ERR(weft_data_register(NULL, buf, sizeof buf, &d), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "rt is NULL") != NULL);
  EXPECT_ERR(weft_data_register(rt, NULL, sizeof buf, &d), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "ptr is NULL") != NULL);
  /* A failure leaves the output as it was (error.h). */
  weft_data *const untouched = (weft_data *)&buf[1];
  d = untouched;
  EXPECT_ERR(weft_data_register(rt, buf, 0, &d), WEFT_EINVAL);
  EXPECT(d == untouched);
  EXPECT_ERR(weft_data_register(rt, buf, SIZE_MAX, &d), WEFT_EINVAL);
  EXPECT(d == untouched);
  weft_data_blocks *mb = (weft_data_blocks *)untouched;
  EXPECT_ERR(
      weft_data_register_blocks(rt, buf, sizeof buf, 0, WEFT_DATA_BLOCKED, &mb),
      WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "block_bytes is 0") != NULL);
  EXPECT(mb == (weft_data_blocks *)untouched);
  EXPECT_OK(weft_data_register(rt, buf, sizeof buf, &d));
  e = untouched;
  EXPECT_ERR(weft_data_register(rt, buf + 8, 4, &e), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "overlap") != NULL);
  EXPECT(e == untouched);
  /* Around another, ending inside it, starting inside it; then beside it
   * on either side. */
  static float big[256];
  {
    weft_data *around, *left, *right;
    EXPECT_OK(weft_data_register(rt, big + 100, 16 * sizeof(float), &around));
    EXPECT_ERR(weft_data_register(rt, big, sizeof big, &e), WEFT_EINVAL);
    EXPECT_ERR(weft_data_register(rt, big + 90, 11 * sizeof(float), &e),
               WEFT_EINVAL);
    EXPECT_ERR(weft_data_register(rt, big + 115, 8, &e), WEFT_EINVAL);
    EXPECT_OK(weft_data_register(rt, big + 90, 10 * sizeof(float), &left));
    EXPECT_OK(weft_data_register(rt, big + 116, 10 * sizeof(float), &right));
    weft_data *three[] = {around, left, right};
    EXPECT_OK(weft_data_unregister_n(three, 3));
  }
  void *p = (void *)1;
  EXPECT_ERR(weft_data_get(d, WEFT_READ, &p), WEFT_ESTATE); /* no task */
  EXPECT(p == NULL);
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, outside_task, d, NULL));
  EXPECT_OK(weft_task_join(t));
  { /* a handle of its own: d's stats below count nothing moved */
    static float mem[64];
    weft_data *c;
    EXPECT_OK(weft_data_register(rt, mem, sizeof mem, &c));
    weft_access a = weft_data_access(c, WEFT_RW);
    weft_task_opts to;
    weft_task_opts_init(&to);
    to.accesses = &a;
    to.naccesses = 1;
    EXPECT_OK(weft_task_spawn(rt, &t, get_in_capture_task, c, &to));
    EXPECT_OK(weft_task_join(t));
    EXPECT_OK(weft_data_unregister(c));
  }
  weft_runtime_opts ob;
  weft_runtime_opts_init(&ob);
  ob.workers = 1;
  weft_runtime *b;
  EXPECT_OK(weft_init(&b, &ob));
  EXPECT_OK(weft_task_spawn(b, &t, other_runtime_task, d, NULL));
  EXPECT_OK(weft_task_join(t));
  { /* b's handle from this thread, whose runtime is rt: named so */
    static float mem[16];
    weft_data *theirs;
    EXPECT_OK(weft_data_register(b, mem, sizeof mem, &theirs));
    EXPECT_ERR(weft_data_sync(theirs), WEFT_EINVAL);
    EXPECT(strstr(weft_last_error_message(), "weft_data_sync: the handle is "
                                             "another runtime's") != NULL);
    EXPECT_ERR(weft_data_prefetch(theirs, 0), WEFT_EINVAL);
    EXPECT(strstr(weft_last_error_message(), "weft_data_prefetch") != NULL);
    EXPECT_ERR(weft_data_unregister(theirs), WEFT_EINVAL);
    EXPECT(strstr(weft_last_error_message(), "another runtime's") != NULL);
    EXPECT_OK(weft_task_spawn(b, &t, beside_unregister_one, theirs, NULL));
    EXPECT_OK(weft_task_join(t));
  }
  { /* b's handles around and over rt's: rt still finds its own overlaps
       among them, and none with b's */
    static float mem[64];
    beside s = {b, mem, {NULL}};
    weft_data *mine, *other;
    EXPECT_OK(weft_data_register(rt, &mem[16], 16 * sizeof(float), &mine));
    EXPECT_OK(weft_task_spawn(b, &t, beside_register, &s, NULL));
    EXPECT_OK(weft_task_join(t));
    EXPECT_ERR(weft_data_register(rt, &mem[20], 4 * sizeof(float), &other),
               WEFT_EINVAL); /* inside rt's */
    EXPECT_ERR(weft_data_register(rt, &mem[8], 16 * sizeof(float), &other),
               WEFT_EINVAL); /* over rt's first byte */
    EXPECT_ERR(weft_data_register(rt, &mem[30], 8 * sizeof(float), &other),
               WEFT_EINVAL); /* over rt's last */
    EXPECT_OK(weft_data_register(rt, &mem[32], 32 * sizeof(float), &other));
    EXPECT_OK(weft_data_unregister(other)); /* b's alone there */
    EXPECT_OK(weft_data_unregister(mine));
    EXPECT_OK(weft_task_spawn(b, &t, beside_unregister, &s, NULL));
    EXPECT_OK(weft_task_join(t));
  }
  EXPECT_OK(weft_shutdown(b));
  weft_data_stats st;
  EXPECT_OK(weft_data_stats_get(d, &st));
  EXPECT_EQ_INT((int)st.copies, 0); /* nothing moved */
  EXPECT_ERR(weft_data_stats_get(d, NULL), WEFT_EINVAL);
  weft_data *twice[2] = {d, d};
  EXPECT_ERR(weft_data_unregister_n(twice, 2), WEFT_EINVAL);
  { /* many (found by sorting): the message names both places */
    static float many[40];
    weft_data *h[41];
    for (int i = 0; i < 40; i++)
      EXPECT_OK(weft_data_register(rt, &many[i], sizeof(float), &h[i]));
    h[40] = h[5];
    EXPECT_ERR(weft_data_unregister_n(h, 41), WEFT_EINVAL);
    EXPECT(strstr(weft_last_error_message(), "handle 40 is also handle 5") !=
           NULL);
    EXPECT_OK(weft_data_stats_get(h[5], &st)); /* nothing unregistered */
    EXPECT_OK(weft_data_unregister_n(h, 40));
  }
  EXPECT_ERR(weft_data_unregister_n(NULL, 1), WEFT_EINVAL);
  EXPECT_OK(weft_data_unregister_n(NULL, 0));
  EXPECT_OK(weft_data_stats_get(d, &st)); /* still registered */
  EXPECT_OK(weft_data_unregister(d));
  EXPECT_ERR(weft_data_unregister(d), WEFT_EINVAL);
  EXPECT_ERR(weft_data_sync(d), WEFT_EINVAL);
  EXPECT_ERR(weft_data_stats_get(d, &st), WEFT_EINVAL);
  { /* an unregistered handle's access names no memory, and spawn says
       why (d is freed: read, it was the old range, taken as plain memory) */
    weft_access gone = weft_data_access(d, WEFT_RW);
    EXPECT(gone.ptr == NULL && gone.bytes == 0);
    weft_task_opts to;
    weft_task_opts_init(&to);
    to.accesses = &gone;
    to.naccesses = 1;
    weft_task *never = NULL;
    EXPECT_ERR(weft_task_spawn(rt, &never, outside_task, NULL, &to),
               WEFT_EINVAL);
    EXPECT_MSG(strstr(weft_last_error_message(), "unregistered handle") != NULL,
               "%s", weft_last_error_message());
    EXPECT(never == NULL);
  }
  /* A handle left registered keeps its runtime open, and says so (on a
   * thread of that runtime's own). */
  pthread_t th;
  EXPECT(pthread_create(&th, NULL, left_registered, NULL) == 0);
  EXPECT(pthread_join(th, NULL) == 0);
  /* The region is free again. */
  EXPECT_OK(weft_data_register(rt, buf + 8, 4, &e));
  EXPECT_OK(weft_data_unregister(e));
  weft_access a = weft_data_access(NULL, WEFT_READ);
  EXPECT(a.ptr == NULL && a.bytes == 0);
}

/* unregister_n's write-backs wait for their copies side by side, behind
 * a writer held at a gate: each lends its stream while it waits, so that
 * they run on the streams made ahead (2) rather than one made each. One
 * worker, so that each write-back waits, lending, before the next asks
 * for a stream (with two, one may ask while another is between its lease
 * and its wait, and make a third). */
enum { WB = 12, WB_FLOATS = 256 };

typedef struct wb_state {
  weft_runtime *rt;
  weft_task *w; /* the writer */
  weft_data *h[WB];
  tt_gate g;
  int rc; /* the unregister's */
} wb_state;

static void wb_writer(void *arg) {
  wb_state *s = arg;
  tt_gate_launch(&s->g);
  for (int i = 0; i < WB; i++) {
    float *p;
    EXPECT_OK(weft_data_get(s->h[i], WEFT_WRITE, (void **)&p));
    EXPECT_OK(weft_memset(p, i + 1, WB_FLOATS * sizeof(float)));
  }
}

/* The spawner of the writer, whose unregister its data flow orders after
 * it. */
static void *wb_spawner(void *arg) {
  wb_state *s = arg;
  weft_access a[WB + 1];
  for (int i = 0; i < WB; i++)
    a[i] = weft_data_access(s->h[i], WEFT_WRITE);
  a[WB] = (weft_access){s->g.mem, 2 * sizeof(int), WEFT_RW};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.device = 0;
  o.accesses = a;
  o.naccesses = WB + 1;
  EXPECT_OK(weft_task_spawn(s->rt, &s->w, wb_writer, s, &o));
  s->rc = weft_data_unregister_n(s->h, WB);
  return NULL;
}

static void write_backs_lend(void) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.workers = 1;
  o.streams = 2;
  o.host_threads = 4; /* the gate holds an executor thread */
  weft_runtime *rt = tt_open(&o);
  wb_state s = {0};
  tt_gate_init(&s.g);
  unsigned char *host;
  size_t bytes = WB_FLOATS * sizeof(float);
  EXPECT_OK(weft_pinned_alloc(WB * bytes, (void **)&host));
  memset(host, 0, WB * bytes);
  for (int i = 0; i < WB; i++)
    EXPECT_OK(weft_data_register(rt, host + i * bytes, bytes, &s.h[i]));
  s.rt = rt;
  pthread_t th;
  EXPECT(pthread_create(&th, NULL, wb_spawner, &s) == 0);
  /* The writer finishing and every write-back waiting for its copy. */
  int64_t deadline = tt_now_ns() + 10000000000LL;
  while (atomic_load(&rt->waits.n) < WB + 1 && tt_now_ns() < deadline)
    tt_sleep_ms(1);
  EXPECT_MSG(atomic_load(&rt->waits.n) >= WB + 1,
             "%d tasks wait, not the writer and its %d write-backs",
             atomic_load(&rt->waits.n), WB);
  tt_expect_streams_ahead(rt, 2, "write-backs wait for their copies");
  /* All but the two that found a stream free, or the writer's handed on,
   * took one over; weft check takes none. */
  weft_task_stats ts = {.struct_size = sizeof ts};
  EXPECT_OK(weft_task_stats_get(rt, &ts));
  EXPECT_MSG(rt->h.bk->check ? ts.streams_taken_over == 0
                             : ts.streams_taken_over >= WB - 2,
             "%llu streams taken over by %d write-backs",
             (unsigned long long)ts.streams_taken_over, WB);
  tt_gate_open(&s.g);
  EXPECT(pthread_join(th, NULL) == 0);
  EXPECT_OK(s.rc);
  EXPECT_OK(weft_task_join(s.w));
  for (int i = 0; i < WB; i++)
    EXPECT_MSG(host[i * bytes] == i + 1 && host[(i + 1) * bytes - 1] == i + 1,
               "handle %d was not written back", i);
  EXPECT_OK(weft_pinned_free(host));
  tt_gate_fini(&s.g);
  tt_close(rt);
}

/* Other spawners' tasks (issue 40's review): an unregister from another
 * plain thread than the spawner of a task declaring d that has yet to
 * return is refused, as one from another task is (each plain thread keeps
 * a data-flow record of its own); and one from the main thread while a
 * task another task spawned has returned with its write still queued
 * (behind a closed gate) waits for that work: the host gets the write. */
enum { OS_BYTES = 4096 };

typedef struct others {
  weft_data *d;
  tt_gate g;
  weft_task *child;
  int got, go, rc;
  char why[512]; /* the unregister's message, on its thread */
} others;

static void os_held(void *arg) {
  others *s = arg;
  void *p;
  EXPECT_OK(weft_data_get(s->d, WEFT_RW, &p));
  tt_store(&s->got, 1);
  while (!tt_load(&s->go))
    weft_yield();
}

static void *os_unregister(void *arg) {
  others *s = arg;
  s->rc = weft_data_unregister(s->d);
  snprintf(s->why, sizeof s->why, "%s", s->rc ? weft_last_error_message() : "");
  return NULL;
}

static void os_gated_writer(void *arg) {
  others *s = arg;
  void *p;
  EXPECT_OK(weft_data_get(s->d, WEFT_RW, &p));
  tt_gate_launch(&s->g);
  EXPECT_OK(weft_memset(p, 7, OS_BYTES));
}

static void os_parent(void *arg) {
  others *s = arg;
  weft_access a[2] = {weft_data_access(s->d, WEFT_RW),
                      {s->g.mem, 2 * sizeof(int), WEFT_RW}};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.accesses = a;
  o.naccesses = 2;
  EXPECT_OK(weft_task_spawn(weft_runtime_current(), &s->child, os_gated_writer,
                            s, &o));
}

static void *os_open_later(void *arg) {
  tt_sleep_ms(100);
  tt_gate_open(arg);
  return NULL;
}

static void other_spawners(void) {
  weft_runtime *rt = tt_open_workers(2);
  static unsigned char host[OS_BYTES];
  memset(host, 0, sizeof host);
  others s = {0};
  EXPECT_OK(weft_data_register(rt, host, sizeof host, &s.d));
  weft_access a = weft_data_access(s.d, WEFT_RW);
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.accesses = &a;
  o.naccesses = 1;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, os_held, &s, &o));
  while (!tt_load(&s.got))
    tt_sleep_ms(1);
  pthread_t th;
  EXPECT(pthread_create(&th, NULL, os_unregister, &s) == 0);
  EXPECT(pthread_join(th, NULL) == 0);
  EXPECT_ERR(s.rc, WEFT_EBUSY);
  EXPECT_MSG(strstr(s.why, "another task or thread") != NULL, "%s", s.why);
  tt_store(&s.go, 1);
  EXPECT_OK(weft_task_join(t));
  EXPECT(pthread_create(&th, NULL, os_unregister, &s) == 0);
  EXPECT(pthread_join(th, NULL) == 0);
  EXPECT_OK(s.rc); /* the task completed: nothing left to follow */

  tt_gate_init(&s.g);
  EXPECT_OK(weft_data_register(rt, host, sizeof host, &s.d));
  EXPECT_OK(weft_task_spawn(rt, &t, os_parent, &s, NULL));
  EXPECT_OK(weft_task_join(t));
  int64_t deadline = tt_now_ns() + 10000000000LL;
  while (!tt_task_returned(s.child) && tt_now_ns() < deadline)
    tt_sleep_ms(1);
  EXPECT(tt_task_returned(s.child) && !tt_task_done(s.child));
  EXPECT(pthread_create(&th, NULL, os_open_later, &s.g) == 0);
  EXPECT_OK(weft_data_unregister(s.d));
  EXPECT_MSG(host[0] == 7 && host[OS_BYTES - 1] == 7,
             "the write-back did not wait for the returned writer's work: "
             "host[0] = %d",
             host[0]);
  EXPECT_OK(weft_task_join(s.child));
  EXPECT(pthread_join(th, NULL) == 0);
  tt_gate_fini(&s.g);
  tt_close(rt);
}

/* Returns the backend. limit: opts.data_limit, in handles' bytes;
 * prefetch: opts.data_prefetch. */
/* An unregister that fails on one device (a live graph holds the
 * instance there: a kernel captured on its pointer) keeps d registered,
 * and the instances it freed on the others are gone, not valid: a read
 * there fills anew. */
typedef struct kept {
  weft_data *d;
  weft_graph *g;
  float *host;
} kept;

static void kept_writer(void *arg) {
  step s = {((kept *)arg)->d, NULL, 0.0f, 7.0f};
  axpb_task(&s);
}

static void kept_capturer(void *arg) {
  kept *k = arg;
  float *x;
  EXPECT_OK(weft_data_get(k->d, WEFT_READ, (void **)&x));
  EXPECT_OK(weft_graph_begin());
  int n = N;
  float a = 1.0f, b = 0.0f;
  void *args[] = {&x, &n, &a, &b};
  EXPECT_OK(weft_launch(&tk.axpb,
                        WEFT_DIM1((N + TEST_THREADS - 1) / TEST_THREADS),
                        WEFT_DIM1(TEST_THREADS), 0, args));
  EXPECT_OK(weft_graph_end(&k->g));
}

static void kept_reader(void *arg) {
  kept *k = arg;
  float *x;
  EXPECT_OK(weft_data_get(k->d, WEFT_READ, (void **)&x));
  EXPECT_OK(weft_copy(k->host, x, N * sizeof(float)));
  EXPECT_OK(weft_sync());
}

static void unregister_fails_midway(void) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.host_devices = 2;
  weft_runtime *rt = tt_open(&o);
  if (weft_runtime_backend(rt) != WEFT_BACKEND_HOST) {
    tt_close(rt);
    return;
  }
  static float x[N];
  kept k = {NULL, NULL, NULL};
  EXPECT_OK(weft_pinned_alloc(N * sizeof(float), (void **)&k.host));
  EXPECT_OK(weft_data_register(rt, x, sizeof x, &k.d));
  weft_task_fn fns[] = {kept_writer, kept_capturer};
  for (int dev = 0; dev < 2; dev++) {
    weft_access a = weft_data_access(k.d, dev ? WEFT_READ : WEFT_RW);
    weft_task_opts to;
    weft_task_opts_init(&to);
    to.device = dev;
    to.accesses = &a;
    to.naccesses = 1;
    weft_task *t;
    EXPECT_OK(weft_task_spawn(rt, &t, fns[dev], &k, &to));
    EXPECT_OK(weft_task_join(t));
  }
  EXPECT_ERR(weft_data_unregister(k.d), WEFT_EBUSY);
  memset(k.host, 0, N * sizeof(float));
  weft_access a[2] = {weft_data_access(k.d, WEFT_READ),
                      {k.host, N * sizeof(float), WEFT_WRITE}};
  weft_task_opts to;
  weft_task_opts_init(&to);
  to.device = 0;
  to.accesses = a;
  to.naccesses = 2;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, kept_reader, &k, &to));
  EXPECT_OK(weft_task_join(t));
  int bad = 0;
  for (int i = 0; i < N; i++)
    bad += k.host[i] != 7.0f;
  EXPECT_MSG(bad == 0,
             "%d of %d values wrong on device 0 after an unregister that "
             "failed on device 1",
             bad, N);
  EXPECT_OK(weft_graph_destroy(k.g));
  EXPECT_OK(weft_data_unregister(k.d));
  EXPECT_OK(weft_pinned_free(k.host));
  tt_close(rt);
}

/* Readers of one handle, joined batch by batch, without a limit: the
 * instance's list of the tasks given it drops the completed ones instead
 * of growing with every reader. */
static void reader_task(void *arg) {
  float *x;
  EXPECT_OK(weft_data_get(arg, WEFT_READ, (void **)&x));
}

static void readers_leave_the_list(void) {
  weft_runtime *rt = tt_open_workers(2);
  static float x[16];
  weft_data *d;
  EXPECT_OK(weft_data_register(rt, x, sizeof x, &d));
  weft_access a = weft_data_access(d, WEFT_READ);
  weft_task_opts to;
  weft_task_opts_init(&to);
  to.device = 0;
  to.accesses = &a;
  to.naccesses = 1;
  enum { BATCH = 256, READERS = 20 * 1024 };
  weft_task *t[BATCH];
  for (int i = 0; i < READERS; i += BATCH) {
    for (int k = 0; k < BATCH; k++)
      EXPECT_OK(weft_task_spawn(rt, &t[k], reader_task, d, &to));
    for (int k = 0; k < BATCH; k++)
      EXPECT_OK(weft_task_join(t[k]));
  }
  pthread_mutex_lock(&d->lock);
  size_t cap = d->inst[0].capusers;
  pthread_mutex_unlock(&d->lock);
  EXPECT_MSG(cap <= 4 * BATCH,
             "after %d readers in batches of %d, the instance's user list "
             "has room for %zu",
             READERS, BATCH, cap);
  EXPECT_OK(weft_data_unregister(d));
  tt_close(rt);
}

/* Copies at spawn with the runtime's last handle unregistered while its
 * reader's filler is still queued, then registered again, round after
 * round: each filler counts itself off the usage it counted itself on,
 * and the runtime's fillers all end, none counted below zero. */
typedef struct churn {
  weft_runtime *rt;
  weft_data *cur;
} churn;

static void churn_reader(void *arg) {
  float *x;
  EXPECT_OK(weft_data_get(((churn *)arg)->cur, WEFT_READ, (void **)&x));
}

static void churn_driver(void *arg) {
  churn *c = arg;
  static float x[1024];
  weft_task_opts to;
  weft_task_opts_init(&to);
  to.device = 0;
  to.naccesses = 1;
  for (int i = 0; i < 50; i++) {
    EXPECT_OK(weft_data_register(c->rt, x, sizeof x, &c->cur));
    weft_access a = weft_data_access(c->cur, WEFT_READ);
    to.accesses = &a;
    EXPECT_OK(weft_task_spawn(c->rt, NULL, churn_reader, c, &to));
    EXPECT_OK(weft_data_unregister(c->cur)); /* after the reader */
  }
  /* Kept: a usage of the runtime's again, while fillers may still run. */
  EXPECT_OK(weft_data_register(c->rt, x, sizeof x, &c->cur));
}

static int fillers_of(const weft_runtime *rt) {
  int f = 0;
  pthread_mutex_lock(&weft__data_reg.lock);
  for (usage *u = weft__data_reg.usages; u; u = u->next)
    if (u->rt == rt)
      for (int dev = 0; dev < u->ndev; dev++)
        f += u->dev[dev].fillers < 0 ? -1000 : u->dev[dev].fillers;
  pthread_mutex_unlock(&weft__data_reg.lock);
  return f;
}

static void fillers_across_registrations(void) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.host_devices = 1;
  o.data_prefetch = 1;
  o.workers = 1;
  churn c = {tt_open(&o), NULL};
  weft_task *t;
  EXPECT_OK(weft_task_spawn(c.rt, &t, churn_driver, &c, NULL));
  EXPECT_OK(weft_task_join(t));
  int f = 1;
  for (int ms = 0; ms < 5000 && f; ms += 5) {
    f = fillers_of(c.rt);
    if (f)
      tt_sleep_ms(5);
  }
  EXPECT_MSG(f == 0, "fillers counted after every filler ended: %d", f);
  EXPECT_OK(weft_data_unregister(c.cur));
  tt_close(c.rt);
}

static weft_backend_kind run(int host_devices, double limit, int prefetch) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.host_devices = host_devices;
  o.data_prefetch = prefetch;
  o.data_limit = (size_t)(limit * N * sizeof(float));
  weft_runtime *rt = tt_open(&o);
  EXPECT_OK(weft_device_count(rt, &ndev));
  if (!limit) { /* these count copies that eviction would add to */
    bad_input(rt);
    readers(rt);
    prefetched(rt);
    written_back(rt);
    blocks(rt);
    if (ndev > 1) {
      ordered_fill(rt);
      placed_by_data(rt);
    }
  }
  uint64_t seed = 0x5eed + (uint64_t)host_devices;
  int programs = tt_quick() ? 3 : 10;
  int steps = TT_SANITIZED ? 40 : 120;
  if (limit && limit < 1) /* each copy step waits for room it never gets */
    programs = 1, steps = 30;
  for (int p = 0; p < programs; p++)
    program(rt, &seed, steps);
  weft_mem_stats ms = {.struct_size = sizeof ms};
  EXPECT_OK(weft_mem_stats_get(rt, &ms));
  EXPECT_EQ_INT((int)ms.device_allocs, 0); /* every instance freed */
  EXPECT_MSG(ms.data_evicted_bytes == ms.data_evictions * N * sizeof(float) &&
                 ms.data_written_back <= ms.data_evicted_bytes,
             "%llu evictions of %llu bytes, %llu written back",
             (unsigned long long)ms.data_evictions,
             (unsigned long long)ms.data_evicted_bytes,
             (unsigned long long)ms.data_written_back);
  /* Three handles on one device within two's room: some must go. */
  if (limit && ndev == 1)
    EXPECT_MSG(ms.data_evictions > 0,
               "no eviction under a limit of %g "
               "handles",
               limit);
  if (!limit)
    EXPECT_EQ_INT((int)ms.data_evictions, 0);
  printf("data: %d device(s), limit %g handles, copies at %s: %d random "
         "programs bit-exact, %llu evictions (%llu bytes written back)\n",
         ndev, limit, prefetch ? "spawn" : "get", programs,
         (unsigned long long)ms.data_evictions,
         (unsigned long long)ms.data_written_back);
  weft_backend_kind b = weft_runtime_backend(rt);
  tt_close(rt);
  return b;
}

/* WEFT_DATA_LIMIT: a value that is no size is refused, naming it;
 * data_prefetch and WEFT_DATA_PREFETCH take 0 or 1 (on the host backend,
 * which every machine has). */
static void data_opts(void) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.workers = 1;
  o.backend = WEFT_BACKEND_HOST;
  weft_runtime *rt;
  const char *bad[] = {"12X", "-1", "K", "1.5G", "99999999999999999999G"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("WEFT_DATA_LIMIT", bad[i], 1);
    EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);
    EXPECT(strstr(weft_last_error_message(), "WEFT_DATA_LIMIT") != NULL);
  }
  setenv("WEFT_DATA_LIMIT", "64K", 1);
  EXPECT_OK(weft_init(&rt, &o));
  EXPECT_OK(weft_shutdown(rt));
  unsetenv("WEFT_DATA_LIMIT");
  o.data_prefetch = 2;
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "data_prefetch") != NULL);
  o.data_prefetch = -1;
  setenv("WEFT_DATA_PREFETCH", "yes", 1);
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "WEFT_DATA_PREFETCH") != NULL);
  setenv("WEFT_DATA_PREFETCH", "1", 1);
  EXPECT_OK(weft_init(&rt, &o));
  EXPECT_OK(weft_shutdown(rt));
  unsetenv("WEFT_DATA_PREFETCH");
}

int main(void) {
  data_opts();
  copies_at_spawn(1, 0, 0);
  copies_at_spawn(0, 0, 0);
  copies_at_spawn(1, 1, 0);
  copies_at_spawn(1, 0, 1);
  spares_next_user();
  write_backs_lend();
  unregister_fails_midway();
  readers_leave_the_list();
  fillers_across_registrations();
  other_spawners();
  weft_backend_kind b = run(1, 0, 0);
  run(1, 2, 0);   /* three handles in two's room: evictions, write-backs */
  run(1, 0.5, 0); /* no room for one: past the limit rather than never */
  run(1, 0, 1);   /* copies at spawn */
  run(1, 2, 1);
  if (b == WEFT_BACKEND_HOST) {
    run(4, 0, 0); /* emulated devices: fills from another device's instance */
    run(2, 2, 0);
    run(4, 1.5, 0);
    run(4, 0, 1); /* fillers racing the writers of other devices */
    run(2, 2, 1);
  }
  puts("ok");
  return 0;
}
