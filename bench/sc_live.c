/* live: the memory of many live tasks.
 *
 * Spawns N tasks (100 000; 10 000 under --quick) that each count
 * themselves in and then yield in a loop until released, so all N are
 * suspended mid-function at once. The memory they take is the process's
 * resident set (VmRSS) once all N are in, less what it was before the
 * first spawn, with freed heap handed back (malloc_trim) before each
 * reading. Reported in MiB and in bytes per task. Baseline: one pthread per
 * task, default attributes, measured with 1000 threads parked on a
 * condition variable and scaled to N. No warm-up, since nothing here is
 * timed but the spawning, and at most 3 repeats: the memory varies little,
 * and making and unmapping 100 000 stacks takes seconds on some machines.
 * Target: N = 100 000 in < 2 GiB. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct live {
  bench_ctx *c;
  weft_runtime *rt;
  long n;
  weft_task **h;
  atomic_long started, finished;
  atomic_int release;
  size_t rss0, rss1;
  size_t unguarded; /* stacks without a guard page, all tasks live */
  double ms;
} live;

static void parked_task(void *arg) {
  live *l = arg;
  atomic_fetch_add(&l->started, 1);
  while (!atomic_load_explicit(&l->release, memory_order_relaxed))
    weft_yield();
  atomic_fetch_add(&l->finished, 1);
}

static int read_rss(bench_ctx *c, size_t *rss) {
  size_t peak;
  bench_trim();
  if (bench_rss(rss, &peak) != 0)
    return bench_fail(c, "cannot read VmRSS from /proc/self/status");
  return 0;
}

/* Spawned tasks that ended without running: a task whose stack cannot be
 * mapped ends at once with ENOMEM, which its join reports. Until release,
 * no started task ends, so these are the spawned ones no longer live. */
static long never_started(live *l, long spawned) {
  weft_task_stats st = {.struct_size = sizeof st};
  if (weft_task_stats_get(l->rt, &st) != 0)
    return 0;
  long alive = (long)st.live - 1; /* less the driver */
  return spawned - alive;
}

static void read_max_map_count(char *buf, size_t len) {
  snprintf(buf, len, "?");
  FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
  if (f) {
    if (fgets(buf, (int)len, f))
      buf[strcspn(buf, "\n")] = '\0';
    fclose(f);
  }
}

/* Spawns the N tasks from a task, so that they start on the workers' own
 * queues, and yields until every one has run. */
static void driver(void *arg) {
  live *l = arg;
  bench_ctx *c = l->c;
  long spawned = 0, lost = 0;
  if (read_rss(c, &l->rss0) == 0) {
    uint64_t t0 = bench_now_ns();
    for (; spawned < l->n; spawned++) {
      int e = weft_task_spawn(l->rt, &l->h[spawned], parked_task, l, NULL);
      if (e) {
        bench_fail_weft(c, e, "weft_task_spawn");
        break;
      }
    }
    while (spawned == l->n && atomic_load(&l->started) < l->n &&
           (lost = never_started(l, spawned)) + atomic_load(&l->started) < l->n)
      weft_yield();
    l->ms = (double)(bench_now_ns() - t0) / 1e6;
    if (lost == 0 && spawned == l->n && read_rss(c, &l->rss1) == 0) {
      weft_task_stats st = {.struct_size = sizeof st};
      if (weft_task_stats_get(l->rt, &st) == 0)
        l->unguarded = (size_t)st.stacks_unguarded;
    }
  }
  atomic_store(&l->release, 1);
  char why[256] = "";
  for (long i = 0; i < spawned; i++) {
    int e = weft_task_join(l->h[i]);
    if (e && !why[0])
      snprintf(why, sizeof why, "%s: %s", weft_err_name(e),
               weft_last_error_message());
  }
  if (lost > 0) {
    char maps[32];
    read_max_map_count(maps, sizeof maps);
    bench_fail(c,
               "only %ld of %ld tasks could start; %ld ended at once (%s); "
               "vm.max_map_count is %s, and a guarded stack takes two "
               "mappings",
               (long)atomic_load(&l->started), l->n, lost, why, maps);
  } else if (why[0]) {
    bench_fail(c, "weft_task_join: %s", why);
  }
}

/* One repeat: bytes of RSS the N live tasks add, how long spawning all of
 * them took until every one had run, and how many stacks went without a
 * guard page. */
static int weft_round(bench_ctx *c, long n, weft_task **h, double *bytes,
                      double *ms, size_t *unguarded) {
  live *l = calloc(1, sizeof *l);
  if (!l)
    return bench_fail(c, "out of memory");
  l->c = c;
  l->n = n;
  l->h = h;
  int rc = bench_runtime_open(c, 0, &l->rt);
  if (rc == 0)
    rc = bench_in_task(c, l->rt, driver, l);
  if (bench_runtime_close(c, &l->rt) || bench_failed(c))
    rc = BENCH_FAIL;
  if (rc == 0 && atomic_load(&l->finished) != n)
    rc = bench_fail(c, "%ld of %ld tasks finished",
                    (long)atomic_load(&l->finished), n);
  *bytes = l->rss1 > l->rss0 ? (double)(l->rss1 - l->rss0) : 0.0;
  *ms = l->ms;
  *unguarded = l->unguarded;
  free(l);
  return rc;
}

/* ---- the baseline: threads parked on a condition variable ---- */

typedef struct parked {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  long started;
  int release;
} parked;

static void *parked_thread(void *arg) {
  parked *p = arg;
  pthread_mutex_lock(&p->mu);
  p->started++;
  pthread_cond_broadcast(&p->cv);
  while (!p->release)
    pthread_cond_wait(&p->cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

static int thread_round(bench_ctx *c, long k, pthread_t *th, double *bytes) {
  parked p = {.started = 0, .release = 0};
  pthread_mutex_init(&p.mu, NULL);
  pthread_cond_init(&p.cv, NULL);
  size_t rss0 = 0, rss1 = 0;
  int rc = read_rss(c, &rss0);
  long made = 0;
  for (; rc == 0 && made < k; made++)
    if (pthread_create(&th[made], NULL, parked_thread, &p) != 0)
      rc = bench_fail(c, "pthread_create failed after %ld threads", made);
  pthread_mutex_lock(&p.mu);
  while (p.started < made)
    pthread_cond_wait(&p.cv, &p.mu);
  pthread_mutex_unlock(&p.mu);
  if (rc == 0)
    rc = read_rss(c, &rss1);
  pthread_mutex_lock(&p.mu);
  p.release = 1;
  pthread_cond_broadcast(&p.cv);
  pthread_mutex_unlock(&p.mu);
  for (long i = 0; i < made; i++)
    pthread_join(th[i], NULL);
  pthread_cond_destroy(&p.cv);
  pthread_mutex_destroy(&p.mu);
  *bytes = rss1 > rss0 ? (double)(rss1 - rss0) : 0.0;
  return rc;
}

static int run(bench_ctx *c) {
  long n = bench_size(c, 100000, 10000);
  long k = bench_size(c, 1000, 200);
  int reps = bench_repeat(c) < 3 ? bench_repeat(c) : 3;
  weft_task **h = calloc((size_t)n, sizeof *h);
  pthread_t *th = calloc((size_t)k, sizeof *th);
  bench_samples *s = calloc(6, sizeof *s); /* MiB, B/task, ms; threads */
  int rc = h && th && s ? 0 : bench_fail(c, "out of memory");
  size_t unguarded = 0;
  for (int r = 0; rc == 0 && r < reps; r++) {
    double bytes = 0, ms = 0;
    rc = weft_round(c, n, h, &bytes, &ms, &unguarded);
    if (rc == 0) {
      bench_samples_add(&s[0], bytes / 1048576.0);
      bench_samples_add(&s[1], bytes / (double)n);
      bench_samples_add(&s[2], ms);
    }
  }
  for (int r = 0; rc == 0 && r < reps; r++) {
    double bytes = 0;
    rc = thread_round(c, k, th, &bytes);
    if (rc == 0) {
      bench_samples_add(&s[3], bytes / 1048576.0 * (double)n / (double)k);
      bench_samples_add(&s[4], bytes / (double)k);
    }
  }
  if (rc == 0)
    rc = bench_report(c, "weft: N live tasks, RSS added", "MiB", &s[0], 0,
                      "N = %ld; target < 2048 MiB for 100000", n);
  if (rc == 0)
    rc = bench_report(
        c, "weft: per live task", "B/task", &s[1], 0,
        "64 KiB stacks reserved, touched pages counted; %zu of %ld stacks "
        "had no guard page (vm.max_map_count)",
        unguarded, n);
  if (rc == 0)
    rc = bench_report(c, "weft: spawn N until all have run", "ms", &s[2], 0,
                      "%.2f us per task: stack mapping and first run "
                      "included",
                      bench_stats_of(&s[2]).median * 1e3 / (double)n);
  if (rc == 0)
    rc = bench_report(c, "pthread per task, scaled to N", "MiB", &s[3],
                      BENCH_BASELINE, "%ld parked threads measured", k);
  if (rc == 0)
    rc = bench_report(c, "pthread per task", "B/task", &s[4], BENCH_BASELINE,
                      "user-space RSS only; each thread also holds kernel "
                      "memory");
  free(h);
  free(th);
  free(s);
  return rc;
}

const bench_scenario bench_sc_live = {
    "live", "memory of 100 000 live suspended tasks vs a pthread each", run};
