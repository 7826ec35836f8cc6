/* scale: the scheduler under load, always on the host backend (what is
 * measured is weft's own bookkeeping, which a GPU would only hide).
 *
 * - waits: N tasks (100 000; 10 000 under --quick) each wait on their own
 *   stream behind a closed gate (a host kernel spinning on a flag, its
 *   completion event waited for by every task's stream), queue a memset
 *   and weft_sync; timed from the first spawn until all N have suspended in
 *   weft_sync. The gate then opens and all are joined. Target: <= 1 s for
 *   100 000, i.e. a poll's cost independent of how many tasks wait.
 * - tree: a binary fork-join tree of 2^20 - 1 tasks (2^16 - 1), each node
 *   spawning two children and joining them: time, and the most tasks alive
 *   at once. Work-first order keeps that O(depth x workers); the notes give
 *   the peak RSS growth. Target: the 1M-task tree under 500 MB.
 * - dag: N tasks (100 000; 5 000), task i following two random earlier
 *   tasks with weft_task_after, then a memset and a sync; one sample is one
 *   whole DAG. Target: the slowest run <= 2 x the median. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"

/* A host-backend runtime, whatever --backend says; traced only under
 * WEFT_TRACE, and only the first (bench_trace_claim). */
static int open_host(bench_ctx *c, weft_runtime **rt) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_HOST;
  o.trace_path = bench_trace_claim(c);
  return weft_init(rt, &o);
}

/* ---- waits ---- */

typedef struct waits_bench {
  weft_runtime *rt;
  weft_event *gate_done;
  int *dev; /* N ints, one per task */
  atomic_int entered;
  atomic_int rc;
} waits_bench;

typedef struct waits_job {
  waits_bench *wb;
  int i;
} waits_job;

/* Spins (sleeping 50 us at a time) until *flag is set. */
static void gate_host(const weft_kernel_ctx *k, void **args) {
  (void)k;
  atomic_int *flag = *(atomic_int **)args[0];
  struct timespec ts = {0, 50000};
  while (!atomic_load(flag))
    nanosleep(&ts, NULL);
}

static const weft_kernel gate_kernel = {
    .host = gate_host, .name = "scale_gate", WEFT_KERNEL_ARGS(atomic_int *)};

static void waiter(void *arg) {
  waits_job *j = arg;
  waits_bench *wb = j->wb;
  int e = weft_event_wait(wb->gate_done);
  if (!e)
    e = weft_memset(&wb->dev[j->i], 0, sizeof(int));
  atomic_fetch_add(&wb->entered, 1);
  if (!e)
    e = weft_sync();
  if (e)
    atomic_store(&wb->rc, e);
}

static int waits_sample(bench_ctx *c, int n, double *ms) {
  waits_bench wb = {0};
  atomic_int open = 0;
  waits_job *jobs = malloc((size_t)n * sizeof *jobs);
  weft_task **t = malloc((size_t)n * sizeof *t);
  int rc = 0, spawned = 0;
  if (!jobs || !t) {
    rc = bench_fail(c, "out of memory");
    goto out;
  }
  BENCH_TRY(c, open_host(c, &wb.rt));
  if ((rc = weft_device_alloc((size_t)n * sizeof(int), (void **)&wb.dev)) ||
      (rc = weft_event_create(&wb.gate_done))) {
    rc = bench_fail_weft(c, rc, "setup");
    goto close;
  }
  atomic_int *flag = &open;
  void *args[] = {&flag};
  if ((rc = weft_launch(&gate_kernel, WEFT_DIM1(1), WEFT_DIM1(1), 0, args)) ||
      (rc = weft_event_record(wb.gate_done))) {
    rc = bench_fail_weft(c, rc, "gate");
    goto close;
  }
  uint64_t t0 = bench_now_ns();
  for (; spawned < n; spawned++) {
    jobs[spawned] = (waits_job){&wb, spawned};
    int e = weft_task_spawn(wb.rt, &t[spawned], waiter, &jobs[spawned], NULL);
    if (e) {
      rc = bench_fail_weft(c, e, "weft_task_spawn");
      break;
    }
  }
  struct timespec pause = {0, 20000};
  while (rc == 0 && atomic_load(&wb.entered) < n)
    nanosleep(&pause, NULL);
  *ms = (double)(bench_now_ns() - t0) / 1e6;
  atomic_store(&open, 1);
  for (int i = 0; i < spawned; i++) {
    int e = weft_task_join(t[i]);
    if (e && rc == 0)
      rc = bench_fail_weft(c, e, "weft_task_join");
  }
  if (rc == 0 && atomic_load(&wb.rc))
    rc = bench_fail_weft(c, atomic_load(&wb.rc), "a waiting task");
close:
  atomic_store(&open, 1); /* the gate never outlives the runtime */
  if (wb.gate_done)
    weft_event_destroy(&wb.gate_done);
  if (wb.dev)
    weft_device_free(wb.dev);
  weft_sync();
  if (weft_shutdown(wb.rt) && rc == 0)
    rc = bench_fail(c, "weft_shutdown failed");
out:
  free(jobs);
  free(t);
  return rc;
}

/* ---- tree ---- */

typedef struct tree_bench {
  weft_runtime *rt;
  atomic_long alive, max_alive, nodes;
  atomic_int rc;
} tree_bench;

typedef struct tree_node {
  tree_bench *tb;
  int depth;
} tree_node;

static void node(void *arg) {
  tree_node *me = arg;
  tree_bench *tb = me->tb;
  long a = atomic_fetch_add(&tb->alive, 1) + 1;
  long m = atomic_load(&tb->max_alive);
  while (a > m && !atomic_compare_exchange_weak(&tb->max_alive, &m, a))
    ;
  atomic_fetch_add(&tb->nodes, 1);
  if (me->depth > 1) {
    tree_node kids[2] = {{tb, me->depth - 1}, {tb, me->depth - 1}};
    weft_task *t[2];
    int made = 0;
    for (; made < 2; made++)
      if (weft_task_spawn(tb->rt, &t[made], node, &kids[made], NULL)) {
        atomic_store(&tb->rc, -1);
        break;
      }
    for (int i = 0; i < made; i++)
      if (weft_task_join(t[i]))
        atomic_store(&tb->rc, -1);
  }
  atomic_fetch_sub(&tb->alive, 1);
}

static int tree_sample(bench_ctx *c, int depth, double *ms, long *max_alive,
                       size_t *rss_growth) {
  tree_bench tb = {0};
  BENCH_TRY(c, open_host(c, &tb.rt));
  size_t rss0 = 0, peak0 = 0, rss1 = 0, peak1 = 0;
  bench_trim();
  /* VmHWM is the process's peak so far: what the waits (or an earlier
   * scenario) reached would hide the tree's own growth. Reset it to the
   * RSS now (Linux >= 4.0), so that the peak after is the tree's; where it
   * cannot be reset, the peak after less the RSS now can only overstate
   * the growth, never hide it. */
  FILE *cr = fopen("/proc/self/clear_refs", "w");
  if (cr) {
    (void)fputs("5", cr);
    (void)fclose(cr);
  }
  bench_rss(&rss0, &peak0);
  tree_node root = {&tb, depth};
  weft_task *t;
  uint64_t t0 = bench_now_ns();
  int rc = weft_task_spawn(tb.rt, &t, node, &root, NULL);
  if (rc == 0)
    rc = weft_task_join(t);
  *ms = (double)(bench_now_ns() - t0) / 1e6;
  bench_rss(&rss1, &peak1);
  *rss_growth = peak1 > rss0 ? peak1 - rss0 : 0;
  *max_alive = atomic_load(&tb.max_alive);
  int sd = weft_shutdown(tb.rt);
  if (rc)
    return bench_fail_weft(c, rc, "tree root");
  if (atomic_load(&tb.rc))
    return bench_fail(c, "tree: a spawn or join failed");
  if (atomic_load(&tb.nodes) != (1L << depth) - 1)
    return bench_fail(c, "tree: %ld nodes ran, expected %ld",
                      atomic_load(&tb.nodes), (1L << depth) - 1);
  return sd ? bench_fail_weft(c, sd, "weft_shutdown") : 0;
}

/* ---- dag ---- */

typedef struct dag_bench {
  weft_runtime *rt;
  weft_task **t;
  int *dev;
  int (*deps)[2];
  atomic_int rc;
} dag_bench;

typedef struct dag_job {
  dag_bench *db;
  int i;
} dag_job;

static void dag_task(void *arg) {
  dag_job *j = arg;
  dag_bench *db = j->db;
  int e = 0;
  for (int k = 0; k < 2 && !e; k++)
    if (db->deps[j->i][k] >= 0)
      e = weft_task_after(db->t[db->deps[j->i][k]]);
  if (!e)
    e = weft_memset(&db->dev[j->i], 0, sizeof(int));
  if (!e)
    e = weft_sync();
  if (e)
    atomic_store(&db->rc, e);
}

static int dag_sample(bench_ctx *c, int n, unsigned seed, double *ms) {
  dag_bench db = {0};
  dag_job *jobs = malloc((size_t)n * sizeof *jobs);
  db.t = malloc((size_t)n * sizeof *db.t);
  db.deps = malloc((size_t)n * sizeof *db.deps);
  int rc = 0;
  if (!jobs || !db.t || !db.deps) {
    rc = bench_fail(c, "out of memory");
    goto out;
  }
  for (int i = 0; i < n; i++)
    for (int k = 0; k < 2; k++) {
      seed = seed * 1103515245u + 12345u;
      db.deps[i][k] = i > 0 ? (int)((seed >> 8) % (unsigned)i) : -1;
    }
  if ((rc = open_host(c, &db.rt)) != 0) {
    rc = bench_fail_weft(c, rc, "weft_init");
    goto out;
  }
  if ((rc = weft_device_alloc((size_t)n * sizeof(int), (void **)&db.dev))) {
    rc = bench_fail_weft(c, rc, "weft_device_alloc");
    weft_shutdown(db.rt);
    goto out;
  }
  weft_sync();
  uint64_t t0 = bench_now_ns();
  int spawned = 0;
  for (; spawned < n; spawned++) {
    jobs[spawned] = (dag_job){&db, spawned};
    if ((rc = weft_task_spawn(db.rt, &db.t[spawned], dag_task, &jobs[spawned],
                              NULL)) != 0) {
      rc = bench_fail_weft(c, rc, "weft_task_spawn");
      break;
    }
  }
  /* Task j follows earlier tasks by handle: join the latest first, so no
   * handle is spent while a later task may still name it. */
  for (int i = spawned - 1; i >= 0; i--) {
    int e = weft_task_join(db.t[i]);
    if (e && rc == 0)
      rc = bench_fail_weft(c, e, "weft_task_join");
  }
  *ms = (double)(bench_now_ns() - t0) / 1e6;
  if (rc == 0 && atomic_load(&db.rc))
    rc = bench_fail_weft(c, atomic_load(&db.rc), "a DAG task");
  weft_device_free(db.dev);
  weft_sync();
  if (weft_shutdown(db.rt) && rc == 0)
    rc = bench_fail(c, "weft_shutdown failed");
out:
  free(jobs);
  free(db.t);
  free(db.deps);
  return rc;
}

static int run(bench_ctx *c) {
  int nw = (int)bench_size(c, 100000, 10000);
  int depth = (int)bench_size(c, 20, 16);
  int nd = (int)bench_size(c, 100000, 5000);
  bench_samples waits = {0}, tree = {0}, alive = {0}, dag = {0};
  size_t growth = 0;
  for (int r = 0; r <= bench_repeat(c); r++) {
    double ms = 0;
    long max_alive = 0;
    size_t g = 0;
    if (waits_sample(c, nw, &ms))
      return BENCH_FAIL;
    if (r > 0)
      bench_samples_add(&waits, ms);
    if (tree_sample(c, depth, &ms, &max_alive, &g))
      return BENCH_FAIL;
    if (r > 0) {
      bench_samples_add(&tree, ms);
      bench_samples_add(&alive, (double)max_alive);
    }
    if (g > growth)
      growth = g;
    if (dag_sample(c, nd, 0x5eedu + (unsigned)r, &ms))
      return BENCH_FAIL;
    if (r > 0)
      bench_samples_add(&dag, ms);
  }
  bench_stats w = bench_stats_of(&waits), d = bench_stats_of(&dag);
  char name[96];
  snprintf(name, sizeof name, "%d tasks into weft_sync (host)", nw);
  int rc = bench_report(
      c, name, "ms", &waits, 0,
      "all suspended behind a closed gate; target <= 1000 ms for 100000 (%s)",
      nw < 100000        ? "--quick size"
      : w.median <= 1000 ? "met"
                         : "MISSED");
  if (rc == 0) {
    snprintf(name, sizeof name, "fork-join tree, %ld tasks (host)",
             (1L << depth) - 1);
    rc = bench_report(c, name, "ms", &tree, 0,
                      "binary, each node joins its two children; peak RSS "
                      "growth %.1f MiB, target < 500 MiB for 2^20 - 1 (%s)",
                      (double)growth / (1 << 20),
                      depth < 20              ? "--quick size"
                      : growth < (500u << 20) ? "met"
                                              : "MISSED");
  }
  if (rc == 0)
    rc = bench_report(c, "fork-join tree: most tasks alive at once", "tasks",
                      &alive, 0,
                      "work-first order keeps it O(depth x "
                      "workers); depth %d",
                      depth);
  if (rc == 0) {
    snprintf(name, sizeof name, "random weft_task_after DAG, %d tasks (host)",
             nd);
    rc = bench_report(c, name, "ms", &dag, 0,
                      "2 random earlier tasks each; slowest run %.2f x the "
                      "median, target <= 2 (%s)",
                      d.max / d.median,
                      d.max <= 2 * d.median ? "met" : "MISSED");
  }
  return rc;
}

const bench_scenario bench_sc_scale = {
    "scale",
    "the scheduler under load (host backend): 100 000 waiting tasks, a 1M-task "
    "fork-join tree, a 100 000-task weft_task_after DAG",
    run};
