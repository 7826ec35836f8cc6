/* A task object and its lifecycle: spawn, join and the task's body in
 * task.c; its end (returned, then done once its GPU work completed) in
 * task_end.c, beneath the scheduler and the wait set, which call it. */
#ifndef WEFT__TASK_OBJECT_H
#define WEFT__TASK_OBJECT_H

#include <stdint.h>

#include "backend.h"
#include "caller.h"
#include "dataflow.h"
#include "fiber.h"
#include "pool.h"
#include "watchdog.h"
#include "weft/task.h"

typedef struct weft_runtime weft_runtime;

typedef enum task_state {
  TASK_READY,     /* in a run queue */
  TASK_RUNNING,   /* on a worker */
  TASK_SUSPENDED, /* waiting: GPU wait set, a join, or task_after */
  TASK_FINISHING, /* function returned; its stream's work still running */
  TASK_DONE
} task_state;

struct weft_task {
  weft__obj hdr; /* magic live from spawn until the object is recycled */
  weft__exec x;
  weft__fiber fiber;
  weft_task_fn fn;
  void *arg;
  char name[32];
  uint64_t id;
  task_state state; /* written by the thread moving the task; informative
                       except FINISHING, which the wait set reads */
  /* Under the lifecycle lock: what waiters and handle checks look at. */
  int handle_gone;        /* joined or detached: the handle is spent */
  int returned;           /* fn returned */
  int done;               /* and its GPU work completed */
  struct weft_task *next; /* run queue or wait-set link */
  struct weft_task *prev; /* run queue: the other end's way */
  /* The run queue holding it, NULL when none; changed under that queue's
   * lock, read without it by a joining thread looking for it in the
   * injection queue (sched.c). */
  struct weft__rq *_Atomic queued_in;
  struct weft_task *waiters; /* tasks waiting for this one to return or end */
  int thread_waiters;        /* plain threads in weft_task_join */
  weft__event *end_ev;       /* recorded on return when work is pending */
  weft__event *wait_ev;      /* what a suspended task waits for */
  /* The task whose waiters list holds this one, NULL when none; under the
   * lifecycle lock. A task waits for one task at a time, so these links
   * form chains, which a wait about to close one into a cycle walks and
   * refuses (weft__task_wait_for). */
  struct weft_task *waiting_for;
  /* Or a test the poll calls instead: set only inside weft_wait_until,
   * NULL otherwise (from spawn on). */
  int (*wait_test)(void *arg);
  void *wait_arg;
  int wait_cancelled; /* its weft_wait_until was ended by weft_shutdown */
  int wait_rc;
  int wait_for_end; /* in waiters: 1 = until DONE, 0 = until returned */
  int detached;     /* frees itself when DONE */
  /* Blocking in a waiters list, under the lifecycle lock: a wake that arrives
   * while the task is still switching out is remembered and applied by the
   * scheduler once it has (no lock is held across the switch: TSan sees
   * each fiber as a thread of its own). */
  int blocking, blocked, wake_pending;
  struct weft_task *all_prev, *all_next; /* every task object of rt */
  /* Runtime latency, while tracing: when and why the task was last made
   * ready; its next run slice reports the delay (trace.h). */
  uint64_t ready_ns;
  uint8_t ready_why; /* WEFT_TRF_READY_* */
  uint8_t yielded;   /* last suspended by weft_yield (sched.c's busy_poll) */
  /* Declared data (follow.c): the earlier tasks to follow before fn runs,
   * and whether to wait for their GPU work on the host too. */
  const void **flow_deps; /* task handles: flow_inline, or malloc'd */
  const void *flow_inline[WEFT__FLOW_INLINE];
  uint32_t nflow_deps;
  uint8_t flow_host;
  weft__stall stall; /* for the watchdog, written only while it is on */
  /* A task following declared data, before its first run, or a data-flow
   * join (task.c), waiting without a stack in the waiters of
   * flow_deps[join_at], until every one of them has returned. */
  uint8_t join_wait;
  uint32_t join_at;
};

/* Notes that t changed state (weft__stall_kind), for the watchdog, when it
 * is on: what is the waiting call's words (EVENT, TEST), and for EVENT and
 * FINISHING the task's stream is read, so only t's fiber or a thread that
 * holds t switched out may note those. */
static inline void weft__task_stall(struct weft_task *t, int kind,
                                    const char *what) {
  if (!weft__head(t->x.rt)->watchdog)
    return;
  weft__stall *s = &t->stall;
  atomic_store_explicit(&s->since, 0, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&s->kind, kind, memory_order_relaxed);
  atomic_store_explicit(&s->what, what, memory_order_relaxed);
  if (kind == WEFT__STALL_EVENT || kind == WEFT__STALL_FINISHING) {
    atomic_store_explicit(&s->dev, t->x.dev, memory_order_relaxed);
    atomic_store_explicit(&s->stream, t->x.stream ? t->x.stream->id : 0,
                          memory_order_relaxed);
  }
  atomic_store_explicit(&s->since, weft__stall_clock(), memory_order_release);
}

/* The task whose exec x is. */
static inline weft_task *weft__task_of_exec(weft__exec *x) {
  return (weft_task *)((char *)x - offsetof(weft_task, x));
}

/* ---- task.c ---- */

/* What a task's fiber runs: follows the tasks its declared data depends
 * on, runs fn, then ends what only the task's own context may end (its
 * admission record, an open capture, staged copies) before it exits. The
 * scheduler is given it at start (weft__sched_start). */
void weft__task_body(weft_task *t);
/* The task a public handle names, for call; NULL with *rc the error,
 * reported, when the handle is NULL or not live (joined, detached, its
 * object reused: pool.h's generations). */
weft_task *weft__task_of(const weft_task *h, const char *call, int *rc);
/* Suspends the calling task (the lifecycle lock held) until other returns
 * (until_end 0) or completes (1); on a plain thread, blocks. Returns with
 * the lock held: 0, or WEFT_EDEADLK reported for call (its name, for the
 * message) without waiting when other waits for the calling task, itself
 * or through a chain of tasks, so that neither could end. kind says why
 * it waits, for the watchdog: WEFT__STALL_JOIN, _AFTER or _FOLLOW. */
int weft__task_wait_for(weft_runtime *rt, weft_task *other, int until_end,
                        int kind, const char *call);

/* ---- task_end.c ---- */

/* The scheduler ran the task's body to its end (or could not start it):
 * finish it. Returns 1 when its GPU work is still queued: the caller then
 * adds it to the wait set (weft__wait_add), which finalizes it later. */
int weft__task_returned(weft_task *t);
/* Runs when a task's GPU work has completed (or it had none). */
void weft__task_finalize(weft_task *t);
/* Recycles the task object (the lifecycle lock held): joined, or detached and
 * done. */
void weft__task_free(weft_runtime *rt, weft_task *t);
/* 1 if handle h still names a live task, other (its object; the lifecycle lock
 * held). A handle joined or detached since names a task that completed:
 * its object is dead or already someone else's (pool.h's generations
 * tell). */
int weft__task_live(const weft_task *h, const weft_task *other);
/* 1 when every task t follows by declared data has completed. */
int weft__task_deps_done(weft_task *t);
/* A task following declared data, a join among them (rt->lock held):
 * waits, without a stack, in the waiters of the first of its tasks from
 * join_at on that has not returned; with none left, it is made ready, and
 * following them then suspends nothing. */
void weft__task_join_advance(weft_runtime *rt, weft_task *j);
/* The same for a task about to start (its first run, the lock not held):
 * 1 if it waits so, and its wake makes it ready again; 0 to start it now
 * (every one returned, or a wait would close a cycle). */
int weft__task_park_for_deps(weft_task *t);
/* 1 if from waits, directly or through a chain of waiting tasks, for to
 * (rt->lock held); the walk stops after as many links as live tasks, in
 * case one went stale. */
int weft__task_waits_for(weft_runtime *rt, const weft_task *from,
                         const weft_task *to);
/* Gives task exec x, which has no stream yet, the stream of other, a task
 * x follows that has returned and whose work is still queued (it finishes
 * when its end event completes), if it suits (device, priority pool);
 * returns whether it did. x's work must come after other's anyway, so the
 * stream's own order is the wait, and no false dependency is added;
 * without it every task of a chain would hold a stream until its work was
 * done, a stream per task in flight (docs/decisions/dataflow.md, "A
 * data-flow run holds a stream per task in flight"). Not
 * under weft check, whose clocks follow each lease. Runtime lock held; x a
 * task's. */
int weft__task_take_stream(weft__exec *x, weft_task *other);

#endif
