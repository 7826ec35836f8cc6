/* Workers, run queues with work stealing, and the idle ladder.
 *
 * Each worker thread runs ready tasks from its own queue, then the
 * injection queue, then steals from the others. A worker with nothing to
 * run polls the GPU wait set: one idle worker at a time holds the polling
 * role and climbs a ladder (spin, then short timed sleeps; see
 * poll_ladder) so that a completion is seen within microseconds while the
 * GPU is busy, and an idle runtime burns no core. The others sleep until work
 * arrives. A plain thread that joins a task works too meanwhile, in one
 * more slot (see "the joining thread works"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "cpus.h"
#include "nvtx.h"
#include "range.h"
#include "runtime_state.h"
#include "trace.h"

/* The run queues: the workers' and the guest slot's. */
static int nqueues(const weft_runtime *rt) { return rt->sched.nworkers + 1; }

/* weft__sched_each asked every worker for a call this one has not made:
 * it must come back to the top of worker_main, not poll or sleep on. */
static int each_pending(const weft__worker *w) {
  return w->index < w->rt->sched.nworkers &&
         atomic_load(&w->rt->sched.each_gen) != w->each_seen;
}

static int work_available(weft_runtime *rt) {
  if (atomic_load(&rt->sched.inject.n))
    return 1;
  for (int i = 0; i < nqueues(rt); i++)
    if (atomic_load(&rt->sched.workers[i].rq.n))
      return 1;
  return 0;
}

static void search_begin(weft__worker *w) {
  if (!w->searching) {
    w->searching = 1;
    atomic_fetch_add(&w->rt->sched.nsearching, 1);
  }
}

/* The worker found work (or gives up). If it was the last searcher and
 * more work waits, another is woken to look, so a burst of spawns spreads
 * one wake-up at a time. */
static void search_end(weft__worker *w, int found) {
  if (!w->searching)
    return;
  w->searching = 0;
  if (atomic_fetch_sub(&w->rt->sched.nsearching, 1) == 1 && found &&
      work_available(w->rt))
    weft__worker_wake(w->home);
}

/* Steals half of a victim's queue: returns the oldest task and queues the
 * rest locally. */
static weft_task *steal(weft__worker *w) {
  weft_runtime *rt = w->rt;
  w->rng = w->rng * 1103515245u + 12345u;
  int n = nqueues(rt);
  int start = (int)((w->rng >> 16) % (unsigned)n);
  for (int i = 0; i < n; i++) {
    int v = (start + i) % n;
    if (v == w->index)
      continue;
    int taken = 0;
    weft_task *list = weft__rq_take_half(&rt->sched.workers[v].rq, &taken);
    if (!list)
      continue;
    weft_task *first = list;
    for (weft_task *t = first->next; t;) {
      weft_task *next = t->next;
      weft__rq_push(&w->rq, t, 0);
      t = next;
    }
    first->next = NULL;
    return first;
  }
  return NULL;
}

/* High-priority tasks first, whether queued here or injected from plain
 * threads; then normal ones, the newest local one first. Once after a high
 * task yields, a normal one first: a yield lets other ready tasks run, and
 * a high task yielding in a loop until a normal one acts would otherwise
 * be picked again for ever (on one worker the runtime hung). */
static weft_task *find_near(weft__worker *w) {
  weft_task *t = NULL;
  if (w->normal_next) {
    w->normal_next = 0;
    t = weft__rq_pop_level(&w->rq, 0, 0);
    if (!t)
      t = weft__rq_pop_level(&w->rt->sched.inject, 0, 1);
    if (t)
      return t;
  }
  t = weft__rq_pop_level(&w->rq, 1, 0);
  if (!t)
    t = weft__rq_pop_level(&w->rt->sched.inject, 1, 1);
  if (!t)
    t = weft__rq_pop_level(&w->rq, 0, 0);
  if (!t)
    t = weft__rq_pop_level(&w->rt->sched.inject, 0, 1);
  return t;
}

/* Then others'. */
static weft_task *find_task(weft__worker *w) {
  weft_task *t = find_near(w);
  return t ? t : steal(w);
}

/* The guest's queue, oldest first, to the injection queue: the workers'
 * now. Returns how many tasks moved. */
static int guest_hand_over(weft__worker *w) {
  int moved = 0;
  for (weft_task *t; (t = weft__rq_pop(&w->rq, 1)) != NULL; moved++)
    weft__rq_push(&w->rt->sched.inject, t, 0);
  return moved;
}

/* ---- running tasks ---- */

static void task_entry(void *arg) {
  weft__fiber_started();
  weft_task *t = arg;
  t->x.rt->sched.body(t);
  weft__worker_suspend(t, AFTER_EXIT);
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
    if (w->guest_for) {
      /* A task that yields waits for other tasks: on the workers, behind
       * what they have queued and what the guest had; the guest leaves
       * (guest_done). */
      guest_hand_over(w);
      t->state = TASK_READY;
      t->yielded = 1;
      weft__mark_ready(t, WEFT_TRF_READY_YIELD);
      weft__rq_push(&rt->sched.inject, t, 0);
      weft__worker_wake(&rt->sched);
      w->guest_left = 1;
      break;
    }
    /* Tasks injected from plain threads queue behind the yielding one;
     * otherwise a task that yields in a loop would be picked again before
     * them for ever. */
    for (int i = 0; i < 8; i++) {
      weft_task *in = weft__rq_pop(&rt->sched.inject, 1);
      if (!in)
        break;
      weft__rq_push(&w->rq, in, 1);
    }
    /* Likewise a worker whose only task yields looks for others' work
     * first, or it would spin on that task while queues elsewhere wait. */
    if (atomic_load(&w->rq.n) == 0) {
      weft_task *other = steal(w);
      if (other)
        weft__rq_push(&w->rq, other, 1);
    }
    /* Behind everything queued here: the newest-first order would
     * otherwise pick the yielding task again at once. */
    if (t->x.high)
      w->normal_next = 1;
    t->state = TASK_READY;
    t->yielded = 1;
    weft__mark_ready(t, WEFT_TRF_READY_YIELD);
    weft__rq_push(&w->rq, t, 1);
    break;
  case AFTER_WAIT:
    weft__wait_add(&rt->waits, t);
    break;
  case AFTER_BLOCK:
    pthread_mutex_lock(&rt->h.lock);
    t->blocking = 0;
    if (t->wake_pending) {
      t->wake_pending = 0;
      weft__mark_ready(t, WEFT_TRF_READY_JOIN);
      weft__worker_ready(&rt->sched, t);
    } else {
      t->blocked = 1;
    }
    pthread_mutex_unlock(&rt->h.lock);
    break;
  case AFTER_EXIT:
    if (weft__stack_check(t->fiber.stack))
      stack_overflow_abort(t);
    weft__stack_put(&rt->stacks, t->fiber.stack);
    weft__fiber_release(&t->fiber);
    if (weft__task_returned(t))
      weft__wait_add(&rt->waits, t);
    break;
  case AFTER_CALL:
    w->call(w->call_arg);
    weft__worker_ready(&rt->sched, t);
    break;
  case AFTER_NONE:
    break;
  }
  w->after = AFTER_NONE;
}

/* Before a task runs: if other work waits behind it here and nobody is
 * awake to take it, wake a worker. This is the one wake-up on the path of
 * a burst (see "wake-ups" in worker.c). One task queued behind is left to this
 * worker: a GPU task issues its work and suspends within microseconds, and
 * the wake-up (a futex call on this worker's critical path) costs more than
 * it saves (docs/decisions/wait-and-poll.md, "Where seed 002's remaining
 * microseconds went"). A task that computes long leaves its one queued
 * sibling to the sentinel, at most SENTINEL_NS. */
#define WAKE_QUEUED 2
static void help_if_needed(weft__worker *w) {
  if (atomic_load_explicit(&w->rq.n, memory_order_relaxed) >= WAKE_QUEUED)
    weft__worker_wake(w->home);
}

/* The wait of a task that could not start until the tasks it follows
 * have completed (run_task). */
static int deps_done_test(void *arg) {
  return weft__task_deps_done(arg) ? 0 : WEFT_EAGAIN;
}

static void run_task(weft__worker *w, weft_task *t) {
  if (t->wait_test == deps_done_test) /* back from that wait */
    weft__wait_test_done(t);
  if (!t->fiber.stack) {
    /* Declared data: it starts once the tasks it follows have returned,
     * holding no stack meanwhile (docs/decisions/dataflow.md, "A task
     * waits for the tasks it follows before it has a stack"). */
    if (t->join_at < t->nflow_deps && weft__task_park_for_deps(t))
      return;
    weft__stack *s = weft__stack_get(&w->rt->stacks);
    if (!s || weft__fiber_make(&t->fiber, s, task_entry, t) != 0) {
      if (s)
        weft__stack_put(&w->rt->stacks, s);
      /* Declared data: the tasks after this one follow it alone, so it
       * may end only once those it follows have. It waits for them in the
       * wait set (no stack needed), then tries for a stack again. */
      if (t->flow_deps && !weft__task_deps_done(t)) {
        weft__wait_test_set(t, deps_done_test, t);
        t->state = TASK_SUSPENDED;
        weft__task_stall(t, WEFT__STALL_TEST,
                         "the tasks it follows by declared data, with no "
                         "memory for its stack until they end");
        weft__wait_add(&w->rt->waits, t);
        return;
      }
      /* The task cannot start: it ends at once, reporting why. */
      t->x.first_err = weft__err(
          WEFT_ENOMEM, "weft: no memory for the stack of task '%s'", t->name);
      if (weft__task_returned(t))
        weft__wait_add(&w->rt->waits, t);
      return;
    }
  }
  help_if_needed(w);
  t->state = TASK_RUNNING;
  weft__task_stall(t, WEFT__STALL_RUNNING, NULL);
  t->yielded = 0;
  w->cur = t;
  if (w->rt->h.bk->ops->bind_device)
    w->rt->h.bk->ops->bind_device(w->rt->h.bk, t->x.dev);
  weft__task_tls = t;
  weft__err_cur = &t->x.errinfo;
  weft__fiber_set_current_stack(t->fiber.stack, t->name);
  int traced = weft__trace_on_for(w->rt->h.bk);
  uint64_t t0 = 0, ready = t->ready_ns;
  uint8_t why = t->ready_why;
  t->ready_ns = 0;
  t->ready_why = WEFT_TRF_READY_NONE;
  if (traced) {
    const struct weft__backend_ops *ops = w->rt->h.bk->ops;
    weft__trace_task = t->id;
    if (ops->trace_task) /* once per resume, not per launch */
      ops->trace_task(w->rt->h.bk, t->id, t->name);
    t0 = weft__clock_ns();
  }
  weft__nvtx_push(t->name);
  weft__range_nvtx_resume(&t->x);
  atomic_int *high = t->x.high ? &w->rt->h.adm.nhigh_running : NULL;
  if (high) /* admission holds normal tasks' issue meanwhile */
    atomic_fetch_add_explicit(high, 1, memory_order_relaxed);
  weft__fiber_switch(&w->sched, &t->fiber, 0);
  if (high)
    atomic_fetch_sub_explicit(high, 1, memory_order_relaxed);
  weft__range_nvtx_suspend(&t->x);
  weft__nvtx_pop();
  if (traced) {
    weft__trace_rec r = {.start = t0,
                         .end = weft__clock_ns(),
                         .task = t->id,
                         .lane = weft__trace_thread_lane(),
                         .kind = WEFT__TR_TASK,
                         .ready = ready && ready <= t0 ? ready : 0,
                         .why = ready && ready <= t0 ? why : 0};
    weft__trace_emit(&r);
    weft__trace_task = 0;
    if (w->rt->h.bk->ops->trace_task)
      w->rt->h.bk->ops->trace_task(w->rt->h.bk, 0, NULL);
  }
  weft__fiber_set_current_stack(NULL, NULL);
  weft__err_cur = NULL;
  weft__task_tls = NULL;
  w->cur = NULL;
  /* An unguarded stack (past the map budget, stack.c) overflows without a
   * fault; its canary is checked at every switch, before another task can
   * run on what the overflow overwrote. A guarded one returns at once. */
  if (t->fiber.stack && weft__stack_check(t->fiber.stack))
    stack_overflow_abort(t);
  after_switch_do(w, t);
}

/* ---- idling ---- */

/* Sleeps until woken or timeout_ns passes, unless work is queued or the
 * runtime stops. Returns 1 if a waker popped this worker (it is then
 * counted as searching). */
static int park(weft__worker *w, long timeout_ns) {
  weft_runtime *rt = w->rt;
  pthread_mutex_lock(&rt->sched.park_lock);
  w->woken = 0;
  w->parked = 1;
  w->park_next = rt->sched.parked;
  rt->sched.parked = w;
  atomic_fetch_add(&rt->sched.nparked, 1);
  /* Counted as parked before the re-check: work made ready after it is
   * seen by the waker's nparked load, which then wakes this worker. */
  if (!work_available(rt) && !atomic_load(&rt->sched.stop) &&
      !each_pending(w)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += timeout_ns;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    while (!w->woken && !atomic_load(&rt->sched.stop))
      if (pthread_cond_timedwait(&w->park_cv, &rt->sched.park_lock, &ts) != 0)
        break;
  }
  if (w->parked) { /* not popped by a waker: leave the stack */
    weft__worker **pp = &rt->sched.parked;
    while (*pp != w)
      pp = &(*pp)->park_next;
    *pp = w->park_next;
    w->parked = 0;
    atomic_fetch_sub(&rt->sched.nparked, 1);
  }
  int woken = w->woken;
  w->woken = 0;
  pthread_mutex_unlock(&rt->sched.park_lock);
  return woken;
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
 * Longer sleeps saw waits of a few hundred us to a few ms up to a whole
 * sleep late; past the spin the 200 us cap keeps the lateness a small part
 * of the wait (docs/decisions/wait-and-poll.md, "On CUDA the poller spins
 * 5 ms").
 *
 * A backend that reports completions (the host backend) wakes the sleeper
 * at once, so there the poller spins only 50 us before it parks: spinning
 * would take a core from the executor threads that run the kernels. Its
 * sleeps still stop at 200 us while a weft_wait_until test waits (nobody
 * reports those); only the sleep is capped, since spinning the CUDA
 * ladder's 5 ms for them measured worse with oversubscribed ranks
 * (docs/decisions/wait-and-poll.md, "Sleeps capped while a weft_wait_until
 * test waits").
 * sched_yield is not used between polls (on a busy machine it can give the
 * core away for a whole time slice) except where the runtime's threads
 * share one CPU (weft__spin_pause), where the pause would hold it from the
 * very threads the poller waits for.
 *
 * The guest (a joining plain thread) never parks: it returns when the
 * task it waits for is there, and returns 0 once its spin is over. */
static int guest_done(const weft__worker *w);
static int guest_has_work(weft__worker *w);

static int poll_ladder(weft__worker *w) {
  weft_runtime *rt = w->rt;
  long sleep_ns = 50000;
  int hook = rt->h.bk->ops->set_completion_hook != NULL;
  long max_sleep_ns = hook ? 1000000 : 200000;
  uint64_t spin_ns = hook ? 50000 : 5000000;
  uint64_t spin_until = now_ns() + spin_ns;
  for (;;) {
    /* Nothing reports what weft_wait_until waits for (an MPI message):
     * with such waits the sleeps stop at 200 us, as without a hook. */
    if (hook && max_sleep_ns > 200000 && atomic_load(&rt->waits.ntests))
      max_sleep_ns = 200000;
    if (weft__wait_poll(&rt->waits, WEFT__POLL_BATCH) > 0 ||
        (w->guest_for ? guest_has_work(w)
                      : work_available(rt) || each_pending(w)) ||
        atomic_load(&rt->sched.stop) || atomic_load(&rt->waits.n) == 0)
      return 1;
    int spinning = now_ns() < spin_until;
    if (w->guest_for) { /* it spins only, and only while it waits */
      if (guest_done(w))
        return 1;
      if (!spinning)
        return 0;
    }
    if (spinning) {
      /* A few pauses between polls: pause takes ~140 cycles on recent
       * Intel cores, and each pause delays noticing a completion. */
      weft__spin_pause(rt->sched.one_cpu, 8);
    } else {
      /* Asleep, the poller is not searching: work made ready meanwhile
       * must wake it (or another). */
      search_end(w, 0);
      if (park(w, sleep_ns) == 0)
        search_begin(w);
      if (sleep_ns < max_sleep_ns)
        sleep_ns = sleep_ns * 2 < max_sleep_ns ? sleep_ns * 2 : max_sleep_ns;
    }
  }
}

/* Work is made ready without waking anyone when its worker will get to it
 * (see "wake-ups" in worker.c), and GPU waits go unpolled while the worker that
 * last polled runs what it found. So that neither can wait long behind a task
 * that computes without yielding, one parked worker, the sentinel, sleeps
 * at most this long while tasks are alive, and looks for work when it
 * wakes. It costs one wake-up a millisecond, and none once no task lives. */
#define SENTINEL_NS (1000 * 1000L)
/* Busy workers poll the wait set too, so GPU waiters are not starved
 * while every worker has tasks to run; a poll costs one batch at most. It
 * comes before a task that yielded (a task that yields in a loop is
 * waiting for something, perhaps for a wait this poll would end), and
 * before any other task only if no worker has polled between tasks for
 * BUSY_POLL_NS. An event query slows launches on other threads meanwhile,
 * so polling before every task would put queries of events just recorded
 * on the critical path of the tasks about to queue more work, while with
 * the bound alone a wait beside yielding tasks could be seen a whole bound
 * late (docs/decisions/wait-and-poll.md, "Where seed 002's remaining
 * microseconds went"). The bound keeps a stream of fresh tasks from
 * starving waits. */
#define BUSY_POLL_NS (50 * 1000u)

static void busy_poll(weft__worker *w, const weft_task *next) {
  weft_runtime *rt = w->rt;
  if (atomic_load(&rt->waits.n) == 0 || atomic_load(&rt->sched.poller) != 0)
    return;
  uint64_t now = now_ns();
  if (!next->yielded &&
      now - atomic_load(&rt->sched.busy_polled_ns) < BUSY_POLL_NS)
    return;
  atomic_store(&rt->sched.busy_polled_ns, now);
  weft__wait_poll(&rt->waits, WEFT__POLL_BATCH_BUSY);
}
#define IDLE_PARK_NS (100 * 1000000L)

/* The last idle worker looks for work this long before it parks: with
 * the join's watch (task.c), a spawn+join from a plain thread then needs
 * neither of its two futex wake-ups (docs/decisions/scheduler.md, "Short
 * watches before sleeping"). */
#define IDLE_SPIN_NS (20 * 1000u)

/* A worker about to park while no other looks for work keeps looking a
 * while, counted as searching, so that work arriving meanwhile needs no
 * wake-up. Returns 1 if it saw work (or waits without a poller). */
static int idle_spin(weft__worker *w) {
  weft_runtime *rt = w->rt;
  if (atomic_load(&rt->sched.nsearching) > (w->searching ? 1 : 0))
    return 0;
  search_begin(w);
  uint64_t until = now_ns() + IDLE_SPIN_NS;
  do {
    for (int i = 0; i < 16; i++) {
      if (work_available(rt) || atomic_load(&rt->sched.stop) ||
          each_pending(w) ||
          (atomic_load(&rt->waits.n) > 0 &&
           atomic_load(&rt->sched.poller) == 0))
        return 1;
      weft__spin_pause(rt->sched.one_cpu, 1);
    }
  } while (now_ns() < until);
  return 0;
}

static void *worker_main(void *arg) {
  weft__worker *w = arg;
  weft_runtime *rt = w->rt;
  weft__worker_tls = w;
#ifdef __linux__
  /* Linux stretches a timed sleep by up to the thread's timer slack (50 us
   * by default), as much as the ladder's first step: keep it to 1 us. */
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
#endif
  weft__fiber_init_thread(&w->sched);
  char name[32];
  snprintf(name, sizeof name, "worker %d", w->index);
  if (rt->tracing)
    weft__trace_thread_name(name);
  /* Without it the overflow handler cannot run on a full stack; the
   * runtime still works, so this is said rather than refused. */
  if (weft__fiber_thread_altstack(&w->altstack) != 0)
    fprintf(stderr,
            "weft: worker %d: no memory for a signal stack; a task that "
            "overflows its stack on this worker will not be named\n",
            w->index);
  while (!atomic_load(&rt->sched.stop)) {
    unsigned gen = atomic_load(&rt->sched.each_gen);
    if (gen != w->each_seen) { /* weft__sched_each */
      w->each_seen = gen;
      rt->sched.each_fn(rt->sched.each_arg);
      atomic_fetch_sub(&rt->sched.each_left, 1);
    }
    weft_task *t = find_task(w);
    if (t) {
      search_end(w, 1);
      busy_poll(w, t);
      run_task(w, t);
      continue;
    }
    if (atomic_load(&rt->waits.n) > 0) {
      int expected = 0;
      if (atomic_compare_exchange_strong(&rt->sched.poller, &expected, 1)) {
        search_begin(w);
        atomic_store(&rt->sched.polling, w);
        (void)poll_ladder(w);
        atomic_store(&rt->sched.polling, NULL);
        atomic_store(&rt->sched.poller, 0);
        /* Waits may remain: nobody is woken to take the role over (that
         * cost a wake-up per completion); this worker takes it again once
         * idle, busy workers poll between tasks, and the sentinel covers
         * a long task. */
        continue;
      }
    }
    if (idle_spin(w))
      continue;
    search_end(w, 0);
    long timeout = IDLE_PARK_NS;
    int sentinel = 0;
    if (atomic_load(&rt->tasks.nlive) > 0) {
      int expected = 0;
      sentinel =
          atomic_compare_exchange_strong(&rt->sched.sentinel, &expected, 1);
      if (sentinel)
        timeout = SENTINEL_NS;
    }
    park(w, timeout);
    if (sentinel)
      atomic_store(&rt->sched.sentinel, 0);
  }
  search_end(w, 0);
  weft__fiber_thread_altstack_free(w->altstack);
  weft__fiber_fini_thread(&w->sched);
  weft__worker_tls = NULL;
  return NULL;
}

/* ---- the joining thread works ----
 *
 * A plain thread that joins a task would otherwise sleep twice on the
 * task's path: the task's spawn wakes a parked worker, and the task's end
 * wakes the joiner: a cost on every spawn+join that raw CUDA, issuing from
 * the same thread, does not pay (docs/decisions/scheduler.md, "Saturation's
 * last 1-2 % was a fixed cost a run").
 *
 * So the joiner fills the guest slot, one plain thread at a time, and works
 * there as a worker does, with two limits. It takes the task it waits for
 * from the injection queue (a plain thread's spawn puts it there) but
 * steals nothing, so a join never waits behind another thread's long task
 * and a worker's queue stays in its priority order (taking the joined task
 * from a worker's queue ran a normal task of a one-worker runtime beside
 * a high one the worker had yet to pick, tasks.priority). What the tasks
 * it runs spawn or wake stays on its queue, newest first, which the
 * workers steal from, as from a worker's: sending those to the workers
 * would cost a wake-up a spawn (the entry named above, rule (1)).
 * Between slices it polls the GPU wait set when no
 * worker does, spinning as the poll ladder does (5 ms on CUDA, 50 us with
 * completion reports) and never parking. It leaves as soon as what it
 * waits for is there, when a task it runs yields (the workers take that
 * task, behind what the guest had queued), when its polling spin ends, or
 * after GUEST_WATCH_NS with nothing to run while a worker polls (as a
 * plain join watches); then what it has queued goes to the injection
 * queue with a worker woken, and the caller sleeps as before. */
#define GUEST_WATCH_NS (20 * 1000u)

static int guest_done(const weft__worker *w) {
  const weft_task *o = w->guest_for;
  if (w->guest_left)
    return 1;
  return w->guest_end ? __atomic_load_n(&o->done, __ATOMIC_ACQUIRE)
                      : __atomic_load_n(&o->returned, __ATOMIC_ACQUIRE);
}

/* Work for the guest itself (guest_find's): the workers' work is theirs;
 * returning to look at it would make the guest poll in a tight loop
 * (docs/decisions/scheduler.md, "Saturation's last 1-2 % was a fixed cost
 * a run", rule (2)). */
static int guest_has_work(weft__worker *w) {
  return atomic_load_explicit(&w->rq.n, memory_order_relaxed) > 0 ||
         atomic_load_explicit(&w->guest_for->queued_in, memory_order_relaxed) ==
             &w->rt->sched.inject;
}

/* What the guest may run: its own queue (what the tasks it runs spawned
 * or woke, what its polling made ready), or what it waits for from the
 * injection queue, where a plain thread's spawn puts it. A worker's queue
 * is left alone:
 * that worker runs it next in the order its priorities say (taking it
 * from there ran a normal task of a one-worker runtime beside a high one
 * the worker had yet to pick, tasks.priority). */
static weft_task *guest_find(weft__worker *w) {
  weft_task *t = weft__rq_pop(&w->rq, 0);
  if (t)
    return t;
  weft_task *o = w->guest_for;
  weft__rq *inject = &w->rt->sched.inject;
  return atomic_load_explicit(&o->queued_in, memory_order_relaxed) == inject &&
                 weft__rq_take(inject, o)
             ? o
             : NULL;
}

/* One step of its work: 1 to go on, 0 to leave. */
static int guest_step(weft__worker *w, uint64_t *idle_since, int *ran) {
  weft_runtime *rt = w->rt;
  weft_task *t = guest_find(w);
  if (t) {
    run_task(w, t);
    *ran = 1;
    *idle_since = 0;
    return 1;
  }
  uint64_t now = now_ns();
  if (!*idle_since)
    *idle_since = now;
  int none = 0;
  if (atomic_load(&rt->waits.n) > 0 &&
      atomic_compare_exchange_strong(&rt->sched.poller, &none, 1)) {
    atomic_store(&rt->sched.polling, w);
    int more = poll_ladder(w);
    atomic_store(&rt->sched.polling, NULL);
    atomic_store(&rt->sched.poller, 0);
    /* Its spin is over: the worker that next idles takes the role. */
    if (!more && atomic_load(&rt->waits.n) > 0)
      weft__worker_wake(&rt->sched);
    return more;
  }
  /* A worker polls, or the task runs elsewhere: watched a while, as a
   * plain join watches, then slept for. */
  if (now - *idle_since > GUEST_WATCH_NS)
    return 0;
  weft__spin_pause(rt->sched.one_cpu, 16);
  return 1;
}

int weft__sched_guest(weft_runtime *rt, weft_task *other, int until_end) {
  int free_slot = 0;
  if (weft__worker_tls ||
      !atomic_compare_exchange_strong(&rt->sched.guest, &free_slot, 1))
    return 0;
  /* Stop is read after taking the slot: a shutdown stores stop, then
   * waits for the slot to be free, so one of the two sees the other. */
  if (atomic_load(&rt->sched.stop)) {
    atomic_store(&rt->sched.guest, 0);
    return 0;
  }
  weft__worker *w = &rt->sched.workers[rt->sched.nworkers];
  int dev = weft__backend_current_device(rt->h.bk);
  weft__errinfo *err = weft__err_cur;
  weft__fiber_init_thread(&w->sched);
  weft__fiber_guest_altstack();
  w->guest_for = other;
  w->guest_end = until_end;
  weft__worker_tls = w;
  uint64_t idle_since = 0;
  int ran = 0;
  while (!guest_done(w) && !atomic_load(&rt->sched.stop) &&
         guest_step(w, &idle_since, &ran))
    ;
  weft__worker_tls = NULL;
  w->guest_for = NULL;
  w->guest_left = 0;
  /* What it queued and did not run: the workers' now. */
  if (guest_hand_over(w))
    weft__worker_wake(&rt->sched);
  weft__err_cur = err;
  /* The tasks bound their devices; the thread's own is put back. */
  if (ran && dev >= 0)
    rt->h.bk->ops->bind_device(rt->h.bk, dev);
  atomic_store(&rt->sched.guest, 0);
  return 1;
}

/* The backend saw an event complete: wake the poller if it sleeps in the
 * ladder, or a worker if waits have no poller. */
static void on_completion(void *arg) {
  weft_runtime *rt = arg;
  if (atomic_load(&rt->waits.n) == 0 || atomic_load(&rt->sched.nparked) == 0)
    return;
  weft__worker *p = atomic_load(&rt->sched.polling);
  pthread_mutex_lock(&rt->sched.park_lock);
  if (p && p->parked) {
    weft__worker **pp = &rt->sched.parked;
    while (*pp && *pp != p)
      pp = &(*pp)->park_next;
    if (*pp)
      weft__worker_unpark(&rt->sched, pp, p);
    pthread_mutex_unlock(&rt->sched.park_lock);
    return;
  }
  pthread_mutex_unlock(&rt->sched.park_lock);
  if (!p)
    weft__worker_wake(&rt->sched);
}

static void stop_workers(weft_runtime *rt, int running);

/* Lets the workers get on: a task caller yields (so that its own worker
 * gets to the call too), a thread sleeps a little. */
static void each_wait(weft_task *self) {
  if (self) {
    weft__worker_suspend(self, AFTER_YIELD);
  } else {
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
}

void weft__sched_each(weft_runtime *rt, void (*fn)(void *), void *arg) {
  weft_task *self = weft__worker_task();
  for (int idle = 0;
       !atomic_compare_exchange_weak(&rt->sched.each_busy, &idle, 1); idle = 0)
    each_wait(self);
  rt->sched.each_fn = fn;
  rt->sched.each_arg = arg;
  atomic_store(&rt->sched.each_left, rt->sched.nworkers);
  atomic_fetch_add(&rt->sched.each_gen, 1);
  /* Parked workers would see it at their next wake-up only. */
  pthread_mutex_lock(&rt->sched.park_lock);
  while (rt->sched.parked)
    weft__worker_unpark(&rt->sched, &rt->sched.parked, rt->sched.parked);
  pthread_mutex_unlock(&rt->sched.park_lock);
  while (atomic_load(&rt->sched.each_left) > 0)
    each_wait(self);
  atomic_store(&rt->sched.each_busy, 0);
}

int weft__sched_start(weft_runtime *rt, void (*body)(weft_task *t)) {
  rt->sched.body = body;
  /* weft_init validated WEFT_WORKERS into opts.workers; 0: a worker per
   * core the process may run on. The machine's count instead would put
   * all the workers on the one core a launcher such as Open MPI binds a
   * rank to (docs/decisions/scheduler.md, "Workers per available core"). */
  int cpus = weft__cpus_available();
  rt->sched.one_cpu = cpus == 1;
  int n = rt->opts.workers > 0 ? rt->opts.workers : cpus;
  int rc = WEFT_ENOMEM;
  /* n workers, then the guest slot (its context is made here too, so a
   * joining thread allocates nothing). */
  rt->sched.workers = calloc((size_t)n + 1, sizeof *rt->sched.workers);
  if (!rt->sched.workers)
    return weft__err(rc, "weft_init: out of memory");
  weft__fiber_install_overflow_handler();
  int made = 0;
  for (; made <= n; made++) {
    weft__worker *w = &rt->sched.workers[made];
    w->rt = rt;
    w->home = &rt->sched;
    w->index = made;
    w->rng = 0x9e3779b9u * (unsigned)(made + 1);
    if (weft__rq_init(&w->rq))
      break;
    if (pthread_cond_init(&w->park_cv, NULL)) {
      weft__rq_fini(&w->rq);
      break;
    }
    if (weft__fiber_prepare_thread(&w->sched)) {
      pthread_cond_destroy(&w->park_cv);
      weft__rq_fini(&w->rq);
      break;
    }
  }
  if (made <= n)
    goto fail;
  rt->sched.nworkers = n;
  int started = 0;
  for (; started < n; started++)
    if (pthread_create(&rt->sched.workers[started].thread, NULL, worker_main,
                       &rt->sched.workers[started]) != 0)
      break;
  if (started < n) {
    stop_workers(rt, started);
    return weft__err(rc, "weft_init: cannot start worker thread %d", started);
  }
  if (rt->h.bk->ops->set_completion_hook)
    rt->h.bk->ops->set_completion_hook(rt->h.bk, on_completion, rt);
  return 0;
fail:
  for (int i = 0; i < made; i++) {
    weft__rq_fini(&rt->sched.workers[i].rq);
    pthread_cond_destroy(&rt->sched.workers[i].park_cv);
    weft__fiber_fini_thread(&rt->sched.workers[i].sched);
  }
  free(rt->sched.workers);
  rt->sched.workers = NULL;
  return weft__err(rc, "weft_init: out of memory");
}

/* Stops and joins the first `running` workers and waits for a guest to
 * leave, then frees every slot's parts; a worker that never started (and
 * the guest slot) had its context prepared but never freed it itself.
 * nworkers stays as it was until the threads are joined: running workers
 * read it (and every worker's queue) while they look for work. */
static void stop_workers(weft_runtime *rt, int running) {
  atomic_store(&rt->sched.stop, 1);
  /* Only a thread waiting for a task of this runtime can be the guest,
   * and it sees stop within one of its steps. */
  while (atomic_load(&rt->sched.guest)) {
    struct timespec ts = {0, 10000};
    nanosleep(&ts, NULL);
  }
  pthread_mutex_lock(&rt->sched.park_lock);
  for (int i = 0; i < running; i++)
    pthread_cond_signal(&rt->sched.workers[i].park_cv);
  pthread_mutex_unlock(&rt->sched.park_lock);
  for (int i = 0; i < running; i++)
    pthread_join(rt->sched.workers[i].thread, NULL);
  for (int i = 0; i < nqueues(rt); i++) {
    weft__rq_fini(&rt->sched.workers[i].rq);
    pthread_cond_destroy(&rt->sched.workers[i].park_cv);
    if (i >= running)
      weft__fiber_fini_thread(&rt->sched.workers[i].sched);
  }
  free(rt->sched.workers);
  rt->sched.workers = NULL;
  rt->sched.nworkers = 0;
}

void weft__sched_stop(weft_runtime *rt) {
  if (rt->h.bk->ops->set_completion_hook)
    rt->h.bk->ops->set_completion_hook(rt->h.bk, NULL, NULL);
  stop_workers(rt, rt->sched.nworkers);
}
