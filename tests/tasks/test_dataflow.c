/* Declared data (weft/dataflow.h) on every backend.
 *
 * Random programs: thousands of tasks over a few dozen device buffers,
 * each task copying a random sub-range of one buffer onto a sub-range of
 * another (or of itself) and running x = x * a + b over what it wrote,
 * declaring exactly what it reads and writes; run with the declarations
 * and joined at the end, then run again one task at a time (spawn, join),
 * and the buffers compared bit for bit; also read-mostly programs, whose
 * ranges are read by many tasks between writes (readers folded into
 * joins), and tiled ones, whose accesses mostly name whole tiles again
 * (the record's index of ranges by first byte). Tasks yield at random, so they
 * interleave and migrate between workers. Then the edge cases: a task
 * whose host code reads pinned memory an earlier task's GPU work wrote
 * (WEFT_ACCESS_HOST), readers left to run side by side, tasks spawned by a
 * task ordered among themselves, followers waiting for a task that has
 * not returned without a stack, freed memory leaving the record, the
 * record's size bounded by the ranges and not by the tasks, and bad
 * declarations refused with nothing spawned. Captured: the same random
 * programs spawned inside a graph capture become one graph of steps,
 * which runs nothing until replayed and then matches the program run
 * one task at a time, replay for replay; what a capture refuses of its
 * steps. */
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task_common.h"
#include "weft_internal.h"

enum { NBUF = 24, LEN = 256 };

static void nothing_step(void *arg) { (void)arg; }
static weft_runtime *the_rt;

typedef struct step {
  int src, dst;        /* buffers; src < 0: no copy */
  int soff, doff, len; /* elements */
  float a, b;          /* x = x * a + b over dst[doff, doff + len) */
  int yield;
} step;

static float *bufs[NBUF];

static void axpb(float *x, int n, float a, float b) {
  void *args[] = {&x, &n, &a, &b};
  unsigned blocks = (unsigned)((n + TEST_THREADS - 1) / TEST_THREADS);
  EXPECT_OK(weft_launch(&tk.axpb, WEFT_DIM1(blocks), WEFT_DIM1(TEST_THREADS), 0,
                        args));
}

static void step_task(void *arg) {
  const step *s = arg;
  float *dst = bufs[s->dst] + s->doff;
  if (s->yield)
    weft_yield();
  if (s->src >= 0)
    EXPECT_OK(
        weft_copy(dst, bufs[s->src] + s->soff, (size_t)s->len * sizeof(float)));
  if (s->yield > 1)
    weft_yield();
  axpb(dst, s->len, s->a, s->b);
}

/* A seed above HOT makes a read-mostly program: most steps copy from
 * buffer 0 or 1 and few write there, so that many tasks read a range
 * between its writes (the record folds them into joins, which the
 * writers then follow). A seed above TILED makes a program over tiles
 * of TILE elements, one to three at a time, mostly one, with a rare
 * range that starts or ends inside a tile: most accesses name ranges the
 * record already holds whole (its index finds them), a write of several
 * tiles merges them, and the next access of one of them finds a range
 * that is no longer whole. */
#define HOT 1000u
#define TILED 2000u
enum { TILE = 32 };

static void make_program(step *p, int n, uint64_t seed) {
  static const float as[] = {-1.0f, 0.5f, 1.0f, 2.0f};
  int tiled = seed > TILED, hot = seed > HOT && !tiled;
  for (int i = 0; i < n; i++) {
    step *s = &p[i];
    s->len = tt_rand_range(&seed, 1, LEN / 2);
    s->dst = tt_rand_range(&seed, 0, NBUF - 1);
    if (hot && s->dst < 2 && tt_rand(&seed) % 16 != 0)
      s->dst += 2;
    s->doff = tt_rand_range(&seed, 0, LEN - s->len);
    if (tiled && tt_rand(&seed) % 16 != 0) {
      int tiles = tt_rand(&seed) % 4 == 0 ? tt_rand_range(&seed, 2, 3) : 1;
      s->len = tiles * TILE;
      s->doff = tt_rand_range(&seed, 0, LEN / TILE - tiles) * TILE;
    }
    s->src = tt_rand(&seed) % 4 == 0 ? -1 : tt_rand_range(&seed, 0, NBUF - 1);
    if (hot && tt_rand(&seed) % 8 != 0)
      s->src = (int)(tt_rand(&seed) % 2);
    s->soff = tt_rand_range(&seed, 0, LEN - s->len);
    if (tiled && s->len % TILE == 0)
      s->soff = tt_rand_range(&seed, 0, (LEN - s->len) / TILE) * TILE;
    if (s->src == s->dst)
      s->soff = s->doff; /* a copy onto itself: the same range, read too */
    s->a = as[tt_rand(&seed) % 4];
    s->b = (float)tt_rand_range(&seed, -3, 3);
    s->yield = (int)(tt_rand(&seed) % 5 == 0) + (int)(tt_rand(&seed) % 7 == 0);
  }
}

/* A copy from pageable memory reads it until weft_sync: a row each. */
static void reset_buffers(void) {
  static float init[NBUF][LEN];
  for (int b = 0; b < NBUF; b++) {
    for (int i = 0; i < LEN; i++)
      init[b][i] = (float)((b * 7 + i) % 13 - 6);
    EXPECT_OK(weft_copy(bufs[b], init[b], sizeof init[b]));
  }
  EXPECT_OK(weft_sync());
}

static void snapshot(float *out) {
  for (int b = 0; b < NBUF; b++)
    EXPECT_OK(weft_copy(out + (size_t)b * LEN, bufs[b], LEN * sizeof(float)));
  EXPECT_OK(weft_sync());
}

static weft_task_opts declared(const step *s, weft_access acc[2]) {
  weft_task_opts o;
  weft_task_opts_init(&o);
  size_t n = (size_t)s->len * sizeof(float);
  acc[0] = (weft_access){bufs[s->dst] + s->doff, n, WEFT_RW};
  o.accesses = acc;
  o.naccesses = 1;
  if (s->src >= 0 && s->src != s->dst) {
    acc[1] = (weft_access){bufs[s->src] + s->soff, n, WEFT_READ};
    o.naccesses = 2;
  }
  return o;
}

/* The reference: the program rounds times over, one task at a time from
 * fresh buffers, into seq. */
static void one_at_a_time(weft_runtime *rt, step *p, int n, int rounds,
                          float *seq) {
  reset_buffers();
  for (int r = 0; r < rounds; r++)
    for (int i = 0; i < n; i++) {
      weft_task *t;
      EXPECT_OK(weft_task_spawn(rt, &t, step_task, &p[i], NULL));
      EXPECT_OK(weft_task_join(t));
    }
  snapshot(seq);
}

/* got against the reference, bit for bit; what names the run. */
static void same_bits(const float *got, const float *seq, const char *what) {
  for (int i = 0; i < NBUF * LEN; i++)
    EXPECT_MSG(memcmp(&got[i], &seq[i], sizeof(float)) == 0,
               "%s: buffer %d [%d] = %g, %g one task at a time", what, i / LEN,
               i % LEN, (double)got[i], (double)seq[i]);
}

/* The program with declarations, every task in flight at once; then one
 * task at a time; the buffers must agree bit for bit. */
static void random_program(weft_runtime *rt, int n, uint64_t seed) {
  step *p = malloc((size_t)n * sizeof *p);
  weft_task **t = malloc((size_t)n * sizeof *t);
  float *flow = malloc(NBUF * LEN * sizeof(float));
  float *seq = malloc(NBUF * LEN * sizeof(float));
  EXPECT(p && t && flow && seq);
  make_program(p, n, seed);

  reset_buffers();
  for (int i = 0; i < n; i++) {
    weft_access acc[2];
    weft_task_opts o = declared(&p[i], acc);
    EXPECT_OK(weft_task_spawn(rt, &t[i], step_task, &p[i], &o));
  }
  for (int i = 0; i < n; i++)
    EXPECT_OK(weft_task_join(t[i]));
  snapshot(flow);
  size_t ranges = weft__flow_ranges(weft__caller_self());

  one_at_a_time(rt, p, n, 1, seq);
  char what[96];
  snprintf(what, sizeof what, "%d tasks with declarations, seed %llu", n,
           (unsigned long long)seed);
  same_bits(flow, seq, what);
  /* The record holds ranges, not history: at most two boundaries an
   * access, within the buffers' bytes. */
  EXPECT_MSG(ranges <= (size_t)NBUF * LEN, "%zu ranges after %d tasks", ranges,
             n);
  free(p);
  free(t);
  free(flow);
  free(seq);
}

/* ---- captured: the program as one graph, replayed ---- */

/* The program spawned inside a graph capture: each spawn a step, run at
 * once, its work recorded, no handle given; nothing runs until a replay.
 * Replayed `replays` times, against the program run that many times one
 * task at a time, bit for bit. */
static void captured_program(weft_runtime *rt, int n, uint64_t seed,
                             int replays) {
  step *p = malloc((size_t)n * sizeof *p);
  weft_task **t = malloc((size_t)n * sizeof *t);
  float *init = malloc(NBUF * LEN * sizeof(float));
  float *flow = malloc(NBUF * LEN * sizeof(float));
  float *seq = malloc(NBUF * LEN * sizeof(float));
  EXPECT(p && t && init && flow && seq);
  make_program(p, n, seed);

  reset_buffers();
  snapshot(init);
  weft_graph *g = NULL;
  EXPECT_OK(weft_graph_begin());
  for (int i = 0; i < n; i++) {
    weft_access acc[2];
    weft_task_opts o = declared(&p[i], acc);
    t[i] = (weft_task *)1;
    EXPECT_OK(weft_task_spawn(rt, &t[i], step_task, &p[i], &o));
    EXPECT_MSG(t[i] == NULL, "a step inside a capture handed out a handle");
  }
  EXPECT_OK(weft_graph_end(&g));
  snapshot(flow);
  EXPECT_MSG(memcmp(flow, init, NBUF * LEN * sizeof(float)) == 0,
             "the captured steps ran before any replay");
  weft_graph_info info;
  EXPECT_OK(weft_graph_get_info(g, &info));
  EXPECT_MSG(info.kernels == (size_t)n, "%zu kernels in the graph, want %d",
             info.kernels, n);
  for (int r = 0; r < replays; r++)
    EXPECT_OK(weft_graph_launch(g));
  snapshot(flow);
  EXPECT_OK(weft_graph_destroy(g));

  one_at_a_time(rt, p, n, replays, seq);
  char what[96];
  snprintf(what, sizeof what, "%d steps captured, %d replays, seed %llu", n,
           replays, (unsigned long long)seed);
  same_bits(flow, seq, what);
  free(p);
  free(t);
  free(init);
  free(flow);
  free(seq);
}

static void end_inside(void *arg) {
  weft_graph *g = NULL;
  *(int *)arg = weft_graph_end(&g);
}

static void spawn_inside(void *arg) {
  weft_access acc = {bufs[1], 16, WEFT_READ};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.accesses = &acc;
  o.naccesses = 1;
  *(int *)arg = weft_task_spawn(the_rt, NULL, nothing_step, NULL, &o);
}

/* A call the capture refuses, made by a step that ignores the refusal. */
static void sync_inside(void *arg) { *(int *)arg = weft_sync(); }

/* What a capture refuses of its steps; each refusal makes the capture
 * end without a graph. */
static void captured_refusals(weft_runtime *rt) {
  weft_access acc = {bufs[0], 64, WEFT_READ | WEFT_ACCESS_HOST};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.accesses = &acc;
  o.naccesses = 1;
  weft_graph *g = NULL;
  EXPECT_OK(weft_graph_begin());
  /* A refused step leaves the caller's handle as it was. */
  weft_task *kept = (weft_task *)&acc;
  EXPECT_ERR(weft_task_spawn(rt, &kept, nothing_step, NULL, &o), WEFT_ESTATE);
  EXPECT(kept == (weft_task *)&acc);
  EXPECT_ERR(weft_graph_end(&g), WEFT_ESTATE);
  EXPECT(g == NULL);

  acc.mode = WEFT_RW;
  int inner = 0;
  EXPECT_OK(weft_graph_begin());
  EXPECT_OK(weft_task_spawn(rt, NULL, end_inside, &inner, &o));
  EXPECT_MSG(inner == WEFT_ESTATE, "weft_graph_end inside a step: %d", inner);
  EXPECT_OK(weft_task_spawn(rt, NULL, spawn_inside, &inner, &o));
  EXPECT_MSG(inner == WEFT_ESTATE, "a step declaring a step: %d", inner);
  EXPECT_ERR(weft_graph_end(&g), WEFT_ESTATE);
  EXPECT(g == NULL);

  /* A refused call inside a step fails the capture even when the step
   * goes on as if nothing happened (weft/dataflow.h). */
  EXPECT_OK(weft_graph_begin());
  inner = 0;
  EXPECT_OK(weft_task_spawn(rt, NULL, sync_inside, &inner, &o));
  EXPECT_MSG(inner == WEFT_ESTATE, "weft_sync inside a step: %d", inner);
  EXPECT_ERR(weft_graph_end(&g), WEFT_ESTATE);
  EXPECT(g == NULL);

  /* Undeclared spawns inside a capture are tasks as before. */
  EXPECT_OK(weft_graph_begin());
  weft_task *plain = NULL;
  EXPECT_OK(weft_task_spawn(rt, &plain, nothing_step, NULL, NULL));
  EXPECT(plain != NULL);
  EXPECT_OK(weft_task_join(plain));
  EXPECT_OK(weft_graph_end(&g));
  EXPECT_OK(weft_graph_destroy(g));
}

/* ---- WEFT_ACCESS_HOST: the host code sees what the GPU wrote ---- */

static float *dev_x, *pin_x;
static int host_saw_ok;

static void gpu_writer(void *arg) {
  (void)arg;
  /* Slow enough that a host read not waiting would see the old values. */
  for (int k = 0; k < 50; k++)
    axpb(dev_x, LEN, 1.0f, 1.0f);
  EXPECT_OK(weft_copy(pin_x, dev_x, LEN * sizeof(float)));
}

static void host_reader(void *arg) {
  (void)arg;
  int ok = 1;
  for (int i = 0; i < LEN; i++)
    ok &= pin_x[i] == 50.0f;
  host_saw_ok = ok;
}

static void host_access(weft_runtime *rt) {
  EXPECT_OK(weft_device_alloc(LEN * sizeof(float), (void **)&dev_x));
  EXPECT_OK(weft_pinned_alloc(LEN * sizeof(float), (void **)&pin_x));
  EXPECT_OK(weft_memset(dev_x, 0, LEN * sizeof(float)));
  memset(pin_x, 0, LEN * sizeof(float));
  EXPECT_OK(weft_sync());
  weft_access w[] = {{dev_x, LEN * sizeof(float), WEFT_RW},
                     {pin_x, LEN * sizeof(float), WEFT_WRITE}};
  weft_access r[] = {
      {pin_x, LEN * sizeof(float), WEFT_READ | WEFT_ACCESS_HOST}};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.accesses = w;
  o.naccesses = 2;
  weft_task *a, *b;
  EXPECT_OK(weft_task_spawn(rt, &a, gpu_writer, NULL, &o));
  o.accesses = r;
  o.naccesses = 1;
  EXPECT_OK(weft_task_spawn(rt, &b, host_reader, NULL, &o));
  EXPECT_OK(weft_task_join(b));
  EXPECT_OK(weft_task_join(a));
  EXPECT_MSG(host_saw_ok, "a WEFT_ACCESS_HOST reader saw pinned memory before "
                          "the writer's GPU work finished");
  /* Freed memory leaves the record (a new allocation there is new data). */
  size_t before = weft__flow_ranges(weft__caller_self());
  EXPECT_OK(weft_device_free(dev_x));
  EXPECT_OK(weft_pinned_free(pin_x));
  EXPECT_OK(weft_sync());
  size_t after = weft__flow_ranges(weft__caller_self());
  EXPECT_MSG(after + 2 <= before, "%zu ranges before the frees, %zu after",
             before, after);
}

/* ---- readers run side by side ---- */

static int readers_in;

static void reader(void *arg) {
  (void)arg;
  tt_add(&readers_in, 1);
  /* Both readers must be in at once: one waiting for the other would
   * never see 2. */
  while (tt_load(&readers_in) < 2)
    weft_yield();
}

static void concurrent_readers(weft_runtime *rt) {
  weft_access r[] = {{bufs[0], 64, WEFT_READ}};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.accesses = r;
  o.naccesses = 1;
  weft_task *a, *b;
  readers_in = 0;
  EXPECT_OK(weft_task_spawn(rt, &a, reader, NULL, &o));
  EXPECT_OK(weft_task_spawn(rt, &b, reader, NULL, &o));
  EXPECT_OK(weft_task_join(a));
  EXPECT_OK(weft_task_join(b));
}

/* ---- a task's children are ordered among themselves ---- */

static void nested_parent(void *arg) {
  weft_runtime *rt = arg;
  int n = tt_quick() ? 200 : 1000;
  step *p = malloc((size_t)n * sizeof *p);
  weft_task **t = malloc((size_t)n * sizeof *t);
  EXPECT(p && t);
  make_program(p, n, 99);
  for (int i = 0; i < n; i++) {
    weft_access acc[2];
    weft_task_opts o = declared(&p[i], acc);
    EXPECT_OK(weft_task_spawn(rt, &t[i], step_task, &p[i], &o));
  }
  for (int i = 0; i < n; i++)
    EXPECT_OK(weft_task_join(t[i]));
  free(p);
  free(t);
}

static void nested(weft_runtime *rt) {
  float *flow = malloc(NBUF * LEN * sizeof(float));
  float *seq = malloc(NBUF * LEN * sizeof(float));
  EXPECT(flow && seq);
  reset_buffers();
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, nested_parent, rt, NULL));
  EXPECT_OK(weft_task_join(t));
  snapshot(flow);
  int n = tt_quick() ? 200 : 1000;
  step *p = malloc((size_t)n * sizeof *p);
  EXPECT(p != NULL);
  make_program(p, n, 99);
  reset_buffers();
  for (int i = 0; i < n; i++) {
    EXPECT_OK(weft_task_spawn(rt, &t, step_task, &p[i], NULL));
    EXPECT_OK(weft_task_join(t));
  }
  snapshot(seq);
  EXPECT_MSG(memcmp(flow, seq, NBUF * LEN * sizeof(float)) == 0,
             "a task's children with declarations differ from the same "
             "steps one at a time");
  free(p);
  free(flow);
  free(seq);
}

/* ---- a chain hands its stream on ----
 *
 * A gate holds the first task's work; forty tasks, each reading and
 * writing the same buffer, follow one another. Each returns with its work
 * queued behind the gate, so the next takes its stream over instead of
 * holding a stream of its own: the runtime makes none beyond those made
 * ahead. (Under weft check the order goes through weft_task_after, stream
 * by stream, and only the result is checked.) */

enum { CHAIN = 40 };
static tt_gate chain_gate;
static float *chain_buf;

static void chain_first(void *arg) {
  (void)arg;
  tt_gate_launch(&chain_gate);
  axpb(chain_buf, LEN, 1.0f, 1.0f);
}

static void chain_link(void *arg) {
  int i = (int)(intptr_t)arg;
  axpb(chain_buf, LEN, 2.0f, (float)i);
}

static void chain_hands_streams_on(void) {
  weft_runtime *rt = tt_open_ahead(2);
  tt_gate_init(&chain_gate);
  EXPECT_OK(weft_device_alloc(LEN * sizeof(float), (void **)&chain_buf));
  EXPECT_OK(weft_memset(chain_buf, 0, LEN * sizeof(float)));
  EXPECT_OK(weft_sync());
  weft_access rw[] = {{chain_buf, LEN * sizeof(float), WEFT_RW}};
  weft_task_opts to;
  weft_task_opts_init(&to);
  to.accesses = rw;
  to.naccesses = 1;
  weft_task *t[CHAIN + 1];
  /* The first task's gate reads and writes its two pinned words too. */
  weft_access first_rw[] = {rw[0], {chain_gate.mem, 2 * sizeof(int), WEFT_RW}};
  weft_task_opts fo = to;
  fo.accesses = first_rw;
  fo.naccesses = 2;
  EXPECT_OK(weft_task_spawn(rt, &t[0], chain_first, NULL, &fo));
  for (int i = 1; i <= CHAIN; i++)
    EXPECT_OK(weft_task_spawn(rt, &t[i], chain_link, (void *)(intptr_t)i, &to));
  tt_chain_holds_streams_ahead(rt, t, CHAIN + 1, 2);
  tt_gate_open(&chain_gate);
  for (int i = 0; i <= CHAIN; i++)
    EXPECT_OK(weft_task_join(t[i]));
  float *host = malloc(LEN * sizeof(float));
  EXPECT(host != NULL);
  EXPECT_OK(weft_copy(host, chain_buf, LEN * sizeof(float)));
  EXPECT_OK(weft_sync());
  double want = 1.0; /* the first task's x = x + 1, then x = 2x + i */
  for (int i = 1; i <= CHAIN; i++)
    want = 2.0 * want + i;
  for (int e = 0; e < LEN; e++)
    EXPECT_MSG(host[e] == (float)want, "element %d: %g, expected %g", e,
               (double)host[e], want);
  free(host);
  EXPECT_OK(weft_device_free(chain_buf));
  tt_gate_fini(&chain_gate);
  tt_close(rt);
}

/* ---- followers wait without a stack ----
 *
 * A first task waits on the host before it returns; forty tasks follow
 * it by one range. Each waits for the one before it to return without a
 * stack, so once the workers have taken what they can, the first task's
 * is the only stack in use (before, each follower held one). */
static int park_open;

static int park_test(void *arg) {
  (void)arg;
  return tt_load(&park_open) ? 0 : WEFT_EAGAIN;
}

static void park_first(void *arg) {
  (void)arg;
  EXPECT_OK(weft_wait_until(park_test, NULL));
}

static void park_link(void *arg) { tt_add(arg, 1); }

static void followers_hold_no_stack(weft_runtime *rt) {
  static int cell;
  int ran = 0;
  tt_store(&park_open, 0);
  weft_access rw = {&cell, sizeof cell, WEFT_RW};
  weft_task_opts to;
  weft_task_opts_init(&to);
  to.accesses = &rw;
  to.naccesses = 1;
  weft_task *t[CHAIN + 1];
  EXPECT_OK(weft_task_spawn(rt, &t[0], park_first, NULL, &to));
  for (int i = 1; i <= CHAIN; i++)
    EXPECT_OK(weft_task_spawn(rt, &t[i], park_link, &ran, &to));
  tt_sleep_ms(100); /* the workers take every task they can */
  weft_task_stats st = {.struct_size = sizeof st};
  EXPECT_OK(weft_task_stats_get(rt, &st));
  EXPECT_MSG(st.stacks_in_use <= 1,
             "%llu stacks in use by a chain waiting for its first task",
             (unsigned long long)st.stacks_in_use);
  EXPECT_EQ_INT(tt_load(&ran), 0);
  tt_store(&park_open, 1);
  for (int i = 0; i <= CHAIN; i++)
    EXPECT_OK(weft_task_join(t[i]));
  EXPECT_EQ_INT(tt_load(&ran), CHAIN);
}

/* ---- bad declarations ---- */

static void nothing(void *arg) { (void)arg; }

static void bad_input(weft_runtime *rt) {
  weft_task_opts o;
  weft_task_opts_init(&o);
  weft_task *t;
  weft_access bad[] = {{NULL, 4, WEFT_READ},
                       {bufs[0], 0, WEFT_READ},
                       {bufs[0], 4, 0},
                       {bufs[0], 4, 8},
                       {bufs[0], 4, WEFT_WRITE | WEFT_ACCESS_HOST},
                       {(void *)(uintptr_t)-16, 64, WEFT_READ},
                       {(void *)(UINTPTR_MAX - 63), 65, WEFT_READ}};
  weft_task_stats before = {.struct_size = sizeof before};
  EXPECT_OK(weft_task_stats_get(rt, &before));
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    o.accesses = &bad[i];
    o.naccesses = 1;
    t = (weft_task *)1;
    EXPECT_ERR(weft_task_spawn(rt, &t, nothing, NULL, &o), WEFT_EINVAL);
    EXPECT(strstr(weft_last_error_message(), "access 0") != NULL);
  }
  o.accesses = NULL;
  o.naccesses = 1;
  EXPECT_ERR(weft_task_spawn(rt, &t, nothing, NULL, &o), WEFT_EINVAL);
  weft_task_stats after = {.struct_size = sizeof after};
  EXPECT_OK(weft_task_stats_get(rt, &after));
  EXPECT_MSG(after.live == before.live, "a refused spawn left a task");
  EXPECT(t == (weft_task *)1); /* and handed out no handle */
}

/* Ranges that end at the very top of the address space are accepted and
 * ordered (issue 37, an off-by-one refused them): a writer of the top
 * 64 bytes, held until the main thread lets it go, and a writer of the
 * last byte alone, which must wait for it. The records are all a task
 * with no GPU work touches: no memory is there. */
static atomic_int top_go, top_first_done, top_second_ran;

static void top_first(void *arg) {
  (void)arg;
  while (!atomic_load(&top_go))
    weft_yield();
  atomic_store(&top_first_done, 1);
}

static void top_second(void *arg) {
  (void)arg;
  EXPECT_MSG(atomic_load(&top_first_done),
             "the writer of the last byte ran before the writer of the top "
             "64 bytes ended");
  atomic_store(&top_second_ran, 1);
}

static void top_of_memory(weft_runtime *rt) {
  weft_access top64 = {(void *)(UINTPTR_MAX - 63), 64, WEFT_WRITE};
  weft_access last = {(void *)UINTPTR_MAX, 1, WEFT_WRITE};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.naccesses = 1;
  weft_task *a, *b;
  o.accesses = &top64;
  EXPECT_OK(weft_task_spawn(rt, &a, top_first, NULL, &o));
  o.accesses = &last;
  EXPECT_OK(weft_task_spawn(rt, &b, top_second, NULL, &o));
  /* Gives a wrong order time to show: the second would run at once. */
  for (int i = 0; i < 20000 && !atomic_load(&top_second_ran); i++)
    sched_yield();
  atomic_store(&top_go, 1);
  EXPECT_OK(weft_task_join(a));
  EXPECT_OK(weft_task_join(b));
  EXPECT(atomic_load(&top_second_ran));
}

int main(void) {
  weft_runtime_opts ro;
  weft_runtime_opts_init(&ro);
  ro.workers = 4;
  weft_runtime *rt = tt_open(&ro);
  the_rt = rt;
  for (int b = 0; b < NBUF; b++)
    EXPECT_OK(weft_device_alloc(LEN * sizeof(float), (void **)&bufs[b]));
  /* Quick (the sanitizers): the earlier quick sizes once took 6 minutes
   * under compute-sanitizer's memcheck on the H200 (docs/decisions/cuda.md). */
  int quick = tt_quick();
  random_program(rt, quick ? 300 : 1000, 1);
  random_program(rt, quick ? 600 : 20000, 2);
  random_program(rt, quick ? 300 : 3000, 3);
  random_program(rt, quick ? 600 : 5000, HOT + 1);
  random_program(rt, quick ? 600 : 5000, TILED + 1);
  captured_program(rt, quick ? 200 : 500, 4, 3);
  captured_program(rt, quick ? 300 : 5000, 5, 2);
  captured_program(rt, quick ? 600 : 3000, HOT + 2, 2);
  captured_program(rt, quick ? 600 : 3000, TILED + 2, 2);
  captured_refusals(rt);
  host_access(rt);
  concurrent_readers(rt);
  nested(rt);
  followers_hold_no_stack(rt);
  bad_input(rt);
  top_of_memory(rt);
  for (int b = 0; b < NBUF; b++)
    EXPECT_OK(weft_device_free(bufs[b]));
  tt_close(rt);
  chain_hands_streams_on();
  puts("ok");
  return 0;
}
