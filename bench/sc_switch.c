/* switch: what one task handing its worker to another costs.
 *
 * Two tasks on a runtime with one worker take turns with weft_yield; the
 * cost per switch is the time of the exchange over the number of yields.
 * Each weft_yield is two fiber switches (task to scheduler, scheduler to
 * the next task) and a run-queue push and pop. Baseline: two threads
 * taking turns through a mutex and a condition variable, the cheapest
 * handoff the OS offers, per handoff. (A bare fiber switch pair, without
 * the scheduler, measured 22-30 ns on the machines so far; it needs the
 * internals, which the benchmarks do not touch.) Target: <= 50 ns per
 * switch. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"

/* ---- two tasks taking turns ---- */

typedef struct pingpong {
  bench_ctx *c;
  weft_runtime *rt;
  long n;      /* yields per task and repeat */
  int last;    /* the task that ran last: 1 leader, 2 partner */
  long misses; /* a task saw itself run twice in a row */
  int done;    /* the leader returned */
  bench_samples s;
} pingpong;

static void partner(void *arg) {
  pingpong *p = arg;
  for (long i = 0; i < p->n; i++) {
    if (p->last != 1)
      p->misses++;
    p->last = 2;
    weft_yield();
  }
}

/* Spawns its partner, which lands on this worker's queue, then the two
 * alternate. From before the leader's first yield to after its last, both
 * tasks yield n times: 2n switches. */
static void rounds(pingpong *p) {
  for (int r = 0; r <= bench_repeat(p->c); r++) {
    weft_task *t;
    int rc = weft_task_spawn(p->rt, &t, partner, p, NULL);
    if (rc) {
      bench_fail_weft(p->c, rc, "weft_task_spawn(partner)");
      return;
    }
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < p->n; i++) {
      if (i > 0 && p->last != 2)
        p->misses++;
      p->last = 1;
      weft_yield();
    }
    uint64_t t1 = bench_now_ns();
    if ((rc = weft_task_join(t)) != 0) {
      bench_fail_weft(p->c, rc, "weft_task_join(partner)");
      return;
    }
    if (r > 0) /* the first round warms up */
      bench_samples_add(&p->s, (double)(t1 - t0) / (2.0 * (double)p->n));
  }
}

/* The rounds, then done set, whatever happened. */
static void leader(void *arg) {
  pingpong *p = arg;
  rounds(p);
  __atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
}

/* ---- the baseline: a condition-variable handoff between threads ---- */

typedef struct cvpp {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int turn; /* 0 or 1: whose move it is */
  long n;   /* handoffs per thread */
  long moves[2];
} cvpp;

typedef struct cv_arg {
  cvpp *p;
  int me;
} cv_arg;

static void *cv_player(void *arg) {
  cv_arg *a = arg;
  cvpp *p = a->p;
  pthread_mutex_lock(&p->mu);
  for (long i = 0; i < p->n; i++) {
    while (p->turn != a->me)
      pthread_cond_wait(&p->cv, &p->mu);
    p->moves[a->me]++;
    p->turn = !a->me;
    pthread_cond_signal(&p->cv);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

static int cv_round(bench_ctx *c, long n, double *ns_per) {
  cvpp p = {.n = n, .turn = 0};
  pthread_mutex_init(&p.mu, NULL);
  pthread_cond_init(&p.cv, NULL);
  cv_arg a[2] = {{&p, 0}, {&p, 1}};
  pthread_t th[2];
  /* Player 1 waits for player 0, which is started second: the window
   * opens just before the first move can happen. */
  int rc = pthread_create(&th[1], NULL, cv_player, &a[1]);
  uint64_t t0 = bench_now_ns();
  if (rc == 0 && (rc = pthread_create(&th[0], NULL, cv_player, &a[0])) != 0)
    pthread_join(th[1], NULL);
  if (rc == 0) {
    pthread_join(th[0], NULL);
    pthread_join(th[1], NULL);
  }
  uint64_t t1 = bench_now_ns();
  pthread_cond_destroy(&p.cv);
  pthread_mutex_destroy(&p.mu);
  if (rc)
    return bench_fail(c, "pthread_create failed");
  if (p.moves[0] != n || p.moves[1] != n)
    return bench_fail(c, "condvar ping-pong: %ld and %ld moves, expected %ld",
                      p.moves[0], p.moves[1], n);
  *ns_per = (double)(t1 - t0) / (2.0 * (double)n);
  return 0;
}

static int run(bench_ctx *c) {
  long n = bench_size(c, 200000, 20000);
  long cv_n = bench_size(c, 20000, 3000);

  pingpong *p = calloc(1, sizeof *p);
  if (!p)
    return bench_fail(c, "out of memory");
  p->c = c;
  p->n = n;
  int rc = bench_runtime_open(c, 1, &p->rt);
  /* The leader is waited for by its flag before the join: a joining thread
   * runs tasks itself (the guest slot), and taking the yielded leader back
   * from the injection queue it would run it beside the worker's partner,
   * two threads for the one worker this measures. */
  weft_task *lt = NULL;
  if (rc == 0 && (rc = weft_task_spawn(p->rt, &lt, leader, p, NULL)) != 0)
    rc = bench_fail_weft(c, rc, "weft_task_spawn(leader)");
  while (rc == 0 && !__atomic_load_n(&p->done, __ATOMIC_ACQUIRE))
    nanosleep(&(struct timespec){0, 100000}, NULL);
  if (lt) {
    int e = weft_task_join(lt);
    if (e && rc == 0)
      rc = bench_fail_weft(c, e, "weft_task_join(leader)");
  }
  if (bench_runtime_close(c, &p->rt) || bench_failed(c))
    rc = BENCH_FAIL;
  if (rc == 0 && p->misses)
    rc = bench_fail(c,
                    "the two tasks did not alternate: %ld of %ld yields "
                    "resumed without the other task running",
                    p->misses, 2 * n * (bench_repeat(c) + 1));
  if (rc == 0)
    rc = bench_report(c, "weft_yield ping-pong, 1 worker", "ns", &p->s, 0,
                      "per switch, %ld switches per repeat; target <= 50 ns",
                      2 * n);

  bench_samples *bs = calloc(1, sizeof *bs);
  if (rc == 0 && !bs)
    rc = bench_fail(c, "out of memory");
  for (int r = 0; rc == 0 && r <= bench_repeat(c); r++) {
    double v = 0;
    rc = cv_round(c, cv_n, &v);
    if (rc == 0 && r > 0)
      bench_samples_add(&bs[0], v);
  }
  if (rc == 0)
    rc = bench_report(c, "pthread condvar ping-pong", "ns", &bs[0],
                      BENCH_BASELINE, "per handoff, %ld handoffs per repeat",
                      2 * cv_n);
  free(bs);
  free(p);
  return rc;
}

const bench_scenario bench_sc_switch = {
    "switch", "fiber context switch: two tasks ping-pong with weft_yield", run};
