/* The GPU wait set (wait.c): tasks suspended on an event or on a test,
 * polled a batch at a time by the workers; a plain thread blocks instead. */
#ifndef WEFT__WAIT_H
#define WEFT__WAIT_H

#include <pthread.h>
#include <stdatomic.h>

#include "backend.h"
#include "task_object.h"

/* weft_runtime.waits: written by wait.c alone. */
typedef struct weft__wait_set {
  weft__backend *bk;
  struct weft__sched *sched; /* where tasks done waiting go */
  pthread_mutex_t lock;
  weft_task *head;
  weft_task **cursor; /* &head or &(a waiting task)->next */
  atomic_int n;
  /* Of which waits for a test (weft_wait_until): no backend reports
   * their completion, so the poller must look for it (sched.c). */
  atomic_int ntests;
  /* weft_shutdown began: weft_wait_until's waits end with WEFT_ESTATE,
   * since what they wait for is outside weft and may never come. Atomic:
   * the poll reads it without the lock. */
  atomic_int cancel;
  /* Tests found slow (one call took longer than WEFT__TEST_SLOW_NS) leave
   * the set for a thread of their own, started on the first, which polls
   * them as a plain thread polls its test: a slow test then holds up no
   * worker and no GPU wait (docs/decisions/wait-and-poll.md, "A slow test
   * is moved off the workers"). Under slow_lock. */
  pthread_mutex_t slow_lock;
  pthread_cond_t slow_cv;
  weft_task *slow;
  pthread_t slow_thread;
  int slow_started, slow_stop;
  int (*reported[8])(void *); /* slow tests already named on stderr */
  int nreported;
} weft__wait_set;

/* A test call longer than this is slow. */
#define WEFT__TEST_SLOW_NS 1000000u

/* The set's locks; sched: where tasks done waiting go. 0 or WEFT_ENOMEM. */
int weft__wait_init(weft__wait_set *ws, struct weft__sched *sched);
/* Stops the slow tests' thread (none wait by then) and frees the locks. */
void weft__wait_fini(weft__wait_set *ws);

/* Waits for ev: suspends a task (polled by the workers), blocks a thread.
 * ev is not checked here: the caller's own, or a public event it checked
 * and holds (weft__event_hold). what: the waiting call's words for the
 * watchdog's report (a string that outlives the wait, e.g. "weft_sync"). */
int weft__wait_for_event(weft__exec *x, weft__event *ev, const char *what);
/* The same for an event just recorded, which is not queried first (it is
 * almost always pending then: a CUDA call spent for nothing). */
int weft__wait_for_recorded(weft__exec *x, weft__event *ev, const char *what);
/* weft_wait_until for x: calls test(arg) until it says other than
 * WEFT_EAGAIN, from the wait set's poll for a task (which suspends
 * meanwhile), in a sleeping loop for a plain thread. what: as above. */
int weft__wait_for_test(weft__exec *x, int (*test)(void *arg), void *arg,
                        const char *what);
/* Adds t, whose wait_ev or wait_test is set, to the wait set; a test is
 * counted in ntests while it is there. */
void weft__wait_add(weft__wait_set *ws, weft_task *t);
/* Makes t's wait one on test(arg) instead of an event, until the waiter
 * takes it back (weft__wait_test_done). */
void weft__wait_test_set(weft_task *t, int (*test)(void *), void *arg);
void weft__wait_test_done(weft_task *t);
/* Polls up to batch waiting tasks' events, going round the set from where
 * the last poll stopped, so a poll costs the same however many tasks wait.
 * Returns the number made ready. */
int weft__wait_poll(weft__wait_set *ws, int batch);
/* The poller's batch, and a busy worker's between two tasks, which polls
 * on the path of its next task and so looks at fewer
 * (docs/decisions/wait-and-poll.md, "The wait set is polled in batches
 * from a cursor"). */
#define WEFT__POLL_BATCH 64
#define WEFT__POLL_BATCH_BUSY 4

#endif
