/* The watchdog (weft_runtime_opts.watchdog_ms, WEFT_WATCHDOG): a thread of
 * its own, started only when it is on, that names on stderr every task
 * that has not changed state for longer than the limit, and what it waits
 * for. Tasks note each change of state in their stall record; with the
 * watchdog off a note is one branch (docs/decisions/reliability.md, "A
 * wait that can never end is refused, one that has not ended is named"). */
#ifndef WEFT__WATCHDOG_H
#define WEFT__WATCHDOG_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

struct weft_runtime;

/* What a task is doing, as its last note said. */
typedef enum weft__stall_kind {
  WEFT__STALL_RUNNING = 1, /* on a worker: never reported */
  WEFT__STALL_READY,       /* queued, not yet taken by a worker */
  WEFT__STALL_EVENT,       /* in the wait set, for GPU work */
  WEFT__STALL_TEST,        /* in the wait set, for a test (weft_wait_until) */
  WEFT__STALL_JOIN,        /* in weft_task_join, for waiting_for's end */
  WEFT__STALL_AFTER,       /* in weft_task_after, for waiting_for's return */
  WEFT__STALL_FOLLOW,      /* following waiting_for by declared data */
  WEFT__STALL_FINISHING    /* returned; its stream's work still runs */
} weft__stall_kind;

/* A task's stall record, written by whoever moves the task (its own fiber,
 * its scheduler, a waker) and read by the watchdog's thread as a seqlock:
 * since is 0 while the rest is rewritten, then the time of the change.
 * Atomics, for the reads race with the writes by design. */
typedef struct weft__stall {
  atomic_uint_fast64_t since; /* CLOCK_MONOTONIC ns of the change; 0: none */
  atomic_int kind;            /* weft__stall_kind */
  atomic_int dev;             /* EVENT, FINISHING: the task's device */
  atomic_uint stream;         /* and its stream's id (0: none) */
  _Atomic(const char *) what; /* EVENT, TEST: the waiting call's words */
  /* The watchdog's own: the since it last reported (its lock held). */
  uint64_t reported;
} weft__stall;

/* The stall records' clock: CLOCK_MONOTONIC_COARSE where there is one, a
 * few ns a read against some 20 for the precise clock, with a resolution
 * (1 to 4 ms) below any limit worth setting; tasks read it at every
 * change of state while the watchdog is on. */
static inline uint64_t weft__stall_clock(void) {
  struct timespec ts;
#ifdef CLOCK_MONOTONIC_COARSE
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
  clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Starts the watchdog of rt (rt->h.watchdog set, limit_ms > 0): 0, or
 * WEFT_ENOMEM reported. */
int weft__watchdog_start(struct weft_runtime *rt, int limit_ms);
/* Stops and frees it (none started: nothing). */
void weft__watchdog_stop(struct weft_runtime *rt);
/* The stalls it has reported so far (0 when off), for tests. */
uint64_t weft__watchdog_reports(struct weft_runtime *rt);

#endif
