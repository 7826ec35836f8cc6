/* Workers, run queues with work stealing, and the idle ladder.
 *
 * Each worker thread runs ready tasks from its own queue, then the
 * injection queue, then steals from the others. A worker with nothing to
 * run polls the GPU wait set: one idle worker at a time holds the polling
 * role and climbs a ladder (spin, then short timed sleeps; see
 * poll_ladder) so that a completion is seen within microseconds while the
 * GPU is busy, and an idle runtime burns no core. The others sleep until work
 * arrives. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "scheduler.h"
#include "trace.h"

static _Thread_local weft__worker *tls_worker;
static _Thread_local weft_task *tls_task;

__attribute__((noinline)) weft__worker *weft__worker_self(void) {
  return tls_worker;
}

__attribute__((noinline)) weft_task *weft__task_self(void) { return tls_task; }

/* ---- run queues ---- */

static int rq_init(weft__rq *q) {
  memset(q, 0, sizeof *q);
  return pthread_mutex_init(&q->lock, NULL) ? WEFT_ENOMEM : 0;
}

static void rq_push(weft__rq *q, weft_task *t) {
  int l = t->x.high ? 1 : 0;
  t->next = NULL;
  pthread_mutex_lock(&q->lock);
  if (q->tail[l])
    q->tail[l]->next = t;
  else
    q->head[l] = t;
  q->tail[l] = t;
  atomic_fetch_add(&q->n, 1);
  if (l)
    atomic_fetch_add(&q->n_high, 1);
  pthread_mutex_unlock(&q->lock);
}

/* Pops a task of exactly one level (1 high, 0 normal), or NULL. */
static weft_task *rq_pop_level(weft__rq *q, int l) {
  atomic_int *count = l ? &q->n_high : &q->n;
  if (atomic_load_explicit(count, memory_order_relaxed) == 0)
    return NULL;
  pthread_mutex_lock(&q->lock);
  weft_task *t = q->head[l];
  if (t) {
    q->head[l] = t->next;
    if (!q->head[l])
      q->tail[l] = NULL;
    atomic_fetch_sub(&q->n, 1);
    if (l)
      atomic_fetch_sub(&q->n_high, 1);
  }
  pthread_mutex_unlock(&q->lock);
  return t;
}

/* Pops the oldest task of the highest level queued, or NULL. */
static weft_task *rq_pop(weft__rq *q) {
  weft_task *t = rq_pop_level(q, 1);
  return t ? t : rq_pop_level(q, 0);
}

/* Moves up to max tasks from one queue to another, keeping their order. */
static void rq_transfer(weft__rq *from, weft__rq *to, int max) {
  weft_task *t;
  while (max-- > 0 && (t = rq_pop(from)) != NULL)
    rq_push(to, t);
}

static int work_available(weft_runtime *rt) {
  if (atomic_load(&rt->inject.n))
    return 1;
  for (int i = 0; i < rt->nworkers; i++)
    if (atomic_load(&rt->workers[i].rq.n))
      return 1;
  return 0;
}

static void wake_one(weft_runtime *rt) {
  if (atomic_load(&rt->nparked) > 0) {
    pthread_mutex_lock(&rt->park_lock);
    pthread_cond_signal(&rt->park_cv);
    pthread_mutex_unlock(&rt->park_lock);
  }
}

void weft__sched_ready(weft_runtime *rt, weft_task *t) {
  t->state = TASK_READY;
  weft__worker *w = tls_worker;
  rq_push(w && w->rt == rt ? &w->rq : &rt->inject, t);
  wake_one(rt);
}

/* Takes half of q's tasks (at least one), high priority first, as a list
 * in queue order. Stealing half rather than one spreads a burst of spawns
 * over the workers in a few steals. */
static weft_task *rq_take_half(weft__rq *q, int *count) {
  if (atomic_load_explicit(&q->n, memory_order_relaxed) == 0)
    return NULL;
  weft_task *head = NULL, **tail = &head;
  int taken = 0;
  pthread_mutex_lock(&q->lock);
  int want = (atomic_load(&q->n) + 1) / 2;
  for (int l = 1; l >= 0 && taken < want; l--) {
    while (q->head[l] && taken < want) {
      weft_task *t = q->head[l];
      q->head[l] = t->next;
      if (!q->head[l])
        q->tail[l] = NULL;
      t->next = NULL;
      *tail = t;
      tail = &t->next;
      taken++;
      if (l)
        atomic_fetch_sub(&q->n_high, 1);
    }
  }
  atomic_fetch_sub(&q->n, taken);
  pthread_mutex_unlock(&q->lock);
  *count = taken;
  return head;
}

/* Steals half of a victim's queue: returns the first task and queues the
 * rest locally. */
static weft_task *steal(weft__worker *w) {
  weft_runtime *rt = w->rt;
  w->rng = w->rng * 1103515245u + 12345u;
  int start = (int)((w->rng >> 16) % (unsigned)rt->nworkers);
  for (int i = 0; i < rt->nworkers; i++) {
    int v = (start + i) % rt->nworkers;
    if (v == w->index)
      continue;
    int n = 0;
    weft_task *list = rq_take_half(&rt->workers[v].rq, &n);
    if (!list)
      continue;
    weft_task *first = list;
    for (weft_task *t = first->next; t;) {
      weft_task *next = t->next;
      rq_push(&w->rq, t);
      t = next;
    }
    return first;
  }
  return NULL;
}

/* High-priority tasks first, whether queued here or injected from plain
 * threads; then normal ones; then others' work. */
static weft_task *find_task(weft__worker *w) {
  weft_task *t = rq_pop_level(&w->rq, 1);
  if (!t)
    t = rq_pop_level(&w->rt->inject, 1);
  if (!t)
    t = rq_pop(&w->rq);
  if (!t)
    t = rq_pop(&w->rt->inject);
  if (!t)
    t = steal(w);
  return t;
}

/* ---- running tasks ---- */

static void task_entry(void *arg) {
  weft__fiber_started();
  weft_task *t = arg;
  t->fn(t->arg);
  /* Copies into pageable memory the task queued finish before it does. */
  if (t->x.npending) {
    int rc = weft__exec_join_pending(&t->x);
    if (rc)
      weft__exec_fail(&t->x, rc);
  }
  weft__sched_suspend(t, AFTER_EXIT);
  abort(); /* an exited task is never resumed */
}

static void stack_overflow_abort(weft_task *t) {
  fprintf(stderr,
          "weft: task '%s' overflowed its %zu-byte fiber stack (canary "
          "overwritten); raise weft_runtime_opts.stack_size\n",
          t->name, t->fiber.stack->size);
  abort();
}

static void after_switch_do(weft__worker *w, weft_task *t) {
  weft_runtime *rt = w->rt;
  switch (w->after) {
  case AFTER_YIELD:
    /* Tasks injected from plain threads queue behind the yielding one;
     * otherwise a task that yields in a loop would be picked again before
     * them for ever. */
    rq_transfer(&rt->inject, &w->rq, 8);
    /* Likewise a worker whose only task yields looks for others' work
     * first, or it would spin on that task while queues elsewhere wait. */
    if (atomic_load(&w->rq.n) == 0) {
      weft_task *other = steal(w);
      if (other)
        rq_push(&w->rq, other);
    }
    weft__sched_ready(rt, t);
    break;
  case AFTER_WAIT:
    pthread_mutex_lock(&rt->wait_lock);
    t->next = rt->waits;
    rt->waits = t;
    atomic_fetch_add(&rt->nwaits, 1);
    pthread_mutex_unlock(&rt->wait_lock);
    break;
  case AFTER_BLOCK:
    pthread_mutex_lock(&rt->lock);
    t->blocking = 0;
    if (t->wake_pending) {
      t->wake_pending = 0;
      weft__sched_ready(rt, t);
    } else {
      t->blocked = 1;
    }
    pthread_mutex_unlock(&rt->lock);
    break;
  case AFTER_EXIT:
    if (weft__stack_check(t->fiber.stack))
      stack_overflow_abort(t);
    weft__stack_put(&rt->stacks, t->fiber.stack);
    weft__fiber_release(&t->fiber);
    weft__task_returned(t);
    break;
  case AFTER_CALL:
    w->call(w->call_arg);
    weft__sched_ready(rt, t);
    break;
  case AFTER_NONE:
    break;
  }
  w->after = AFTER_NONE;
}

static void run_task(weft__worker *w, weft_task *t) {
  if (!t->fiber.stack) {
    weft__stack *s = weft__stack_get(&w->rt->stacks);
    if (!s || weft__fiber_make(&t->fiber, s, task_entry, t) != 0) {
      if (s)
        weft__stack_put(&w->rt->stacks, s);
      /* The task cannot start: it ends at once, reporting why. */
      t->x.first_err = weft__err(
          WEFT_ENOMEM, "weft: no memory for the stack of task '%s'", t->name);
      weft__task_returned(t);
      return;
    }
  }
  t->state = TASK_RUNNING;
  w->cur = t;
  if (w->rt->bk->ops->bind_device)
    w->rt->bk->ops->bind_device(w->rt->bk, t->x.dev);
  tls_task = t;
  weft__err_cur = &t->x.errinfo;
  weft__fiber_set_current_stack(t->fiber.stack, t->name);
  int traced = atomic_load_explicit(&weft__trace_on, memory_order_relaxed);
  uint64_t t0 = 0;
  if (traced) {
    const struct weft__backend_ops *ops = w->rt->bk->ops;
    weft__trace_task = t->id;
    if (ops->trace_task) /* once per resume, not per launch */
      ops->trace_task(w->rt->bk, t->id, t->name);
    t0 = weft__trace_now();
  }
  weft__fiber_switch(&w->sched, &t->fiber, 0);
  if (traced) {
    weft__trace_rec r = {.start = t0,
                         .end = weft__trace_now(),
                         .task = t->id,
                         .lane = weft__trace_thread_lane(),
                         .kind = WEFT__TR_TASK};
    weft__trace_emit(&r);
    weft__trace_task = 0;
    if (w->rt->bk->ops->trace_task)
      w->rt->bk->ops->trace_task(w->rt->bk, 0, NULL);
  }
  weft__fiber_set_current_stack(NULL, NULL);
  weft__err_cur = NULL;
  tls_task = NULL;
  w->cur = NULL;
#ifndef NDEBUG
  if (t->fiber.stack && weft__stack_check(t->fiber.stack))
    stack_overflow_abort(t);
#endif
  after_switch_do(w, t);
}

void weft__call_on_thread_stack(void (*fn)(void *), void *arg) {
  weft_task *t = weft__task_self();
  if (!t) {
    fn(arg);
    return;
  }
  weft__worker *w = weft__worker_self();
  w->call = fn;
  w->call_arg = arg;
  weft__sched_suspend(t, AFTER_CALL);
}

void weft__sched_suspend(weft_task *t, after_switch after) {
  weft__worker *w = weft__worker_self();
  w->after = after;
  weft__fiber_switch(&t->fiber, &w->sched, after == AFTER_EXIT);
}

/* ---- idling ---- */

static void park(weft_runtime *rt, long timeout_ns) {
  pthread_mutex_lock(&rt->park_lock);
  atomic_fetch_add(&rt->nparked, 1);
  /* Counted as parked before the re-check: a task made ready after it is
   * seen by weft__sched_ready's nparked load, which then signals. */
  if (!work_available(rt) && !atomic_load(&rt->stop)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += timeout_ns;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(&rt->park_cv, &rt->park_lock, &ts);
  }
  atomic_fetch_sub(&rt->nparked, 1);
  pthread_mutex_unlock(&rt->park_lock);
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The polling role: poll the wait set until something becomes ready.
 *
 * Without completion reports (CUDA) the poller spins for up to 5 ms, then
 * sleeps between polls, 50 us doubling to 200 us. Spinning costs one core
 * at most, since one worker at a time holds the role, and it is what a raw
 * CUDA thread does in cudaStreamSynchronize under the default schedule.
 * The first ladder (spin 50 us, then 50 us doubling to 1 ms) saw a 2 ms
 * wait up to 1 ms late: on the H200, a task waiting for 2.3 ms batches
 * reached 0.61 x the raw loop's throughput, 100 blocking 4 MiB copies took
 * 2 x as long as raw, and seed 002's 140 us iteration took 198 us. Past
 * 5 ms the 200 us step bounds the lateness at 4 % of the wait.
 *
 * A backend that reports completions (the host backend) wakes the sleeper
 * at once, so there the poller spins only 50 us before it parks: spinning
 * would take a core from the executor threads that run the kernels.
 * sched_yield is not used: on a busy machine it can give the core away for
 * a whole time slice. */
static void poll_ladder(weft__worker *w) {
  weft_runtime *rt = w->rt;
  long sleep_ns = 50000;
  long max_sleep_ns = rt->bk->ops->set_completion_hook ? 1000000 : 200000;
  uint64_t spin_ns = rt->bk->ops->set_completion_hook ? 50000 : 5000000;
  uint64_t spin_until = now_ns() + spin_ns;
  for (;;) {
    if (weft__wait_poll(rt) > 0 || work_available(rt) ||
        atomic_load(&rt->stop) || atomic_load(&rt->nwaits) == 0)
      return;
    if (now_ns() < spin_until) {
      /* A few pauses between polls: pause takes ~140 cycles on recent
       * Intel cores, and each pause delays noticing a completion. */
      for (int i = 0; i < 8; i++)
        cpu_relax();
    } else {
      park(rt, sleep_ns);
      if (sleep_ns < max_sleep_ns)
        sleep_ns = sleep_ns * 2 < max_sleep_ns ? sleep_ns * 2 : max_sleep_ns;
    }
  }
}

static void *worker_main(void *arg) {
  weft__worker *w = arg;
  weft_runtime *rt = w->rt;
  tls_worker = w;
#ifdef __linux__
  /* Linux stretches a timed sleep by up to the thread's timer slack (50 us
   * by default), as much as the ladder's first step: keep it to 1 us. */
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
#endif
  weft__fiber_init_thread(&w->sched);
  char name[32];
  snprintf(name, sizeof name, "worker %d", w->index);
  weft__trace_thread_name(name);
  weft__fiber_thread_altstack(&w->altstack);
  unsigned ran = 0;
  while (!atomic_load(&rt->stop)) {
    weft_task *t = find_task(w);
    if (t) {
      run_task(w, t);
      /* Busy workers still poll now and then, so GPU waiters are not
       * starved while every worker has tasks to run. */
      if ((++ran & 15) == 0 && atomic_load(&rt->nwaits))
        weft__wait_poll(rt);
      continue;
    }
    if (atomic_load(&rt->nwaits) > 0) {
      int expected = 0;
      if (atomic_compare_exchange_strong(&rt->poller, &expected, 1)) {
        poll_ladder(w);
        atomic_store(&rt->poller, 0);
        /* Hand the role on if waits remain while this worker goes to
         * run what it found. */
        if (atomic_load(&rt->nwaits) > 0)
          wake_one(rt);
        continue;
      }
    }
    park(rt, 100 * 1000000L);
  }
  weft__fiber_thread_altstack_free(w->altstack);
  weft__fiber_fini_thread(&w->sched);
  tls_worker = NULL;
  return NULL;
}

static int default_workers(void) {
  const char *env = getenv("WEFT_WORKERS");
  if (env && *env) {
    char *end;
    long n = strtol(env, &end, 10);
    if (*end == '\0' && n > 0 && n <= 4096)
      return (int)n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

/* The backend saw an event complete: wake the workers sleeping in the
 * polling ladder, if any task waits. */
static void on_completion(void *arg) {
  weft_runtime *rt = arg;
  if (atomic_load(&rt->nwaits) > 0 && atomic_load(&rt->nparked) > 0) {
    pthread_mutex_lock(&rt->park_lock);
    pthread_cond_broadcast(&rt->park_cv);
    pthread_mutex_unlock(&rt->park_lock);
  }
}

int weft__sched_start(weft_runtime *rt) {
  int n = rt->opts.workers > 0 ? rt->opts.workers : default_workers();
  int rc = WEFT_ENOMEM;
  rt->workers = calloc((size_t)n, sizeof *rt->workers);
  if (!rt->workers)
    return weft__err(rc, "weft_init: out of memory");
  weft__fiber_install_overflow_handler();
  int made = 0;
  for (; made < n; made++) {
    weft__worker *w = &rt->workers[made];
    w->rt = rt;
    w->index = made;
    w->rng = 0x9e3779b9u * (unsigned)(made + 1);
    if (rq_init(&w->rq))
      break;
  }
  rt->nworkers = made;
  if (made < n)
    goto fail;
  int started = 0;
  for (; started < n; started++)
    if (pthread_create(&rt->workers[started].thread, NULL, worker_main,
                       &rt->workers[started]) != 0)
      break;
  if (started < n) {
    rt->nworkers = started; /* stop joins only the ones running */
    weft__sched_stop(rt);
    return weft__err(rc, "weft_init: cannot start worker thread %d", started);
  }
  if (rt->bk->ops->set_completion_hook)
    rt->bk->ops->set_completion_hook(rt->bk, on_completion, rt);
  return 0;
fail:
  for (int i = 0; i < made; i++)
    pthread_mutex_destroy(&rt->workers[i].rq.lock);
  free(rt->workers);
  rt->workers = NULL;
  rt->nworkers = 0;
  return weft__err(rc, "weft_init: out of memory");
}

void weft__sched_stop(weft_runtime *rt) {
  if (rt->bk->ops->set_completion_hook)
    rt->bk->ops->set_completion_hook(rt->bk, NULL, NULL);
  atomic_store(&rt->stop, 1);
  pthread_mutex_lock(&rt->park_lock);
  pthread_cond_broadcast(&rt->park_cv);
  pthread_mutex_unlock(&rt->park_lock);
  for (int i = 0; i < rt->nworkers; i++)
    pthread_join(rt->workers[i].thread, NULL);
  for (int i = 0; i < rt->nworkers; i++)
    pthread_mutex_destroy(&rt->workers[i].rq.lock);
  free(rt->workers);
  rt->workers = NULL;
  rt->nworkers = 0;
}
