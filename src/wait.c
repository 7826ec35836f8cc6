/* Waiting for the GPU without blocking a thread: a task waiting on an event
 * joins the wait set and suspends; workers poll the set and make tasks
 * ready as their events complete. No host callbacks: a round trip through
 * cudaLaunchHostFunc is slower than polling (docs/decisions/wait-and-poll.md,
 * "Wake-ups by polling").
 * A poll is the backend's event query: on CUDA a driver call, or with
 * completion flags on a read of host memory (cuda/cuda_completion.c). */
#include <stdio.h>
#include <time.h>

#include "clock.h"
#include "mutex.h"
#include "wait.h"
#include "worker.h"

/* Suspends task t in the wait set until its wait_ev or wait_test is
 * done; returns the outcome. */
static int suspend_waiting(weft_task *t, const char *what) {
  t->state = TASK_SUSPENDED;
  weft__task_stall(t, t->wait_test ? WEFT__STALL_TEST : WEFT__STALL_EVENT,
                   what);
  weft__worker_suspend(t, AFTER_WAIT); /* traced as a wait slice there */
  return t->wait_rc;
}

/* The backend's own query and sync: ev was checked by the caller, and a
 * public event a sync holds may have been destroyed since (doomed, still
 * queryable: weft__event_hold). */
int weft__wait_for_recorded(weft__exec *x, weft__event *ev, const char *what) {
  if (!x->is_task)
    return ev->hdr.bk->ops->event_sync(ev);
  weft_task *t = (weft_task *)((char *)x - offsetof(weft_task, x));
  t->wait_ev = ev;
  return suspend_waiting(t, what);
}

int weft__wait_for_test(weft__exec *x, int (*test)(void *arg), void *arg,
                        const char *what) {
  int rc = test(arg);
  if (rc != WEFT_EAGAIN)
    return rc;
  if (!x->is_task) {
    /* A plain thread has nothing else to run: it calls again, sleeping
     * from 1 us up to 100 us between calls. */
    long ns = 1000;
    while ((rc = test(arg)) == WEFT_EAGAIN) {
      struct timespec ts = {0, ns};
      nanosleep(&ts, NULL);
      if (ns < 100000)
        ns *= 2;
    }
    return rc;
  }
  weft_task *t = (weft_task *)((char *)x - offsetof(weft_task, x));
  weft__wait_test_set(t, test, arg);
  rc = suspend_waiting(t, what);
  weft__wait_test_done(t);
  if (t->wait_cancelled) {
    t->wait_cancelled = 0;
    return weft__err(WEFT_ESTATE,
                     "weft_wait_until: weft_shutdown began while the task "
                     "waited, and its test still said WEFT_EAGAIN (what it "
                     "waits for, an MPI request say, is still active)");
  }
  return rc;
}

int weft__wait_for_event(weft__exec *x, weft__event *ev, const char *what) {
  int rc = ev->hdr.bk->ops->event_query(ev);
  return rc == WEFT_EAGAIN ? weft__wait_for_recorded(x, ev, what) : rc;
}

void weft__wait_test_set(weft_task *t, int (*test)(void *), void *arg) {
  t->wait_ev = NULL;
  t->wait_test = test;
  t->wait_arg = arg;
  t->wait_cancelled = 0;
}

void weft__wait_test_done(weft_task *t) { t->wait_test = NULL; }

void weft__wait_add(weft__wait_set *ws, weft_task *t) {
  pthread_mutex_lock(&ws->lock);
  t->next = ws->head;
  ws->head = t;
  if (!ws->cursor)
    ws->cursor = &ws->head;
  atomic_fetch_add(&ws->n, 1);
  if (t->wait_test)
    atomic_fetch_add(&ws->ntests, 1);
  pthread_mutex_unlock(&ws->lock);
}

/* Makes t, whose wait ended with rc, run again. */
static void wait_over(weft__wait_set *ws, weft_task *t) {
  if (t->state == TASK_FINISHING) {
    weft__task_finalize(t);
  } else {
    weft__mark_ready(t, WEFT_TRF_READY_GPU);
    weft__worker_ready(ws->sched, t);
  }
}

/* Names a slow test on stderr, once per test function. */
static void slow_report(weft__wait_set *ws, const weft_task *t, uint64_t took) {
  pthread_mutex_lock(&ws->slow_lock);
  int seen = 0;
  for (int i = 0; i < ws->nreported && !seen; i++)
    seen = ws->reported[i] == t->wait_test;
  if (!seen && ws->nreported < 8)
    ws->reported[ws->nreported++] = t->wait_test;
  pthread_mutex_unlock(&ws->slow_lock);
  if (!seen)
    fprintf(stderr,
            "weft: a weft_wait_until test of task '%s' (id %llu) took "
            "%.1f ms in one call; a test must return at once (weft/task.h), "
            "and this one held up the workers' polling of every GPU wait "
            "meanwhile: it is polled from a thread of its own from now on\n",
            t->name, (unsigned long long)t->id, (double)took / 1e6);
}

/* The slow tests' thread: calls each test in turn, sleeping from 1 us up
 * to 100 us between rounds that ended none, as a plain thread waits. */
static void *slow_poller(void *arg) {
  weft__wait_set *ws = arg;
  long ns = 1000;
  pthread_mutex_lock(&ws->slow_lock);
  while (!ws->slow_stop) {
    if (!ws->slow) {
      pthread_cond_wait(&ws->slow_cv, &ws->slow_lock);
      continue;
    }
    weft_task *list = ws->slow, *keep = NULL;
    ws->slow = NULL;
    pthread_mutex_unlock(&ws->slow_lock);
    int ended = 0;
    while (list) {
      weft_task *t = list;
      list = t->next;
      int rc = t->wait_test(t->wait_arg);
      if (rc == WEFT_EAGAIN && atomic_load(&ws->cancel)) {
        rc = WEFT_ESTATE; /* weft_shutdown, as in the poll */
        t->wait_cancelled = 1;
      }
      if (rc == WEFT_EAGAIN) {
        t->next = keep;
        keep = t;
        continue;
      }
      t->wait_rc = rc;
      wait_over(ws, t);
      ended++;
    }
    if (keep && !ended) {
      struct timespec ts = {0, ns};
      nanosleep(&ts, NULL);
      if (ns < 100000)
        ns *= 2;
    } else {
      ns = 1000;
    }
    pthread_mutex_lock(&ws->slow_lock);
    while (keep) {
      weft_task *t = keep;
      keep = t->next;
      t->next = ws->slow;
      ws->slow = t;
    }
  }
  pthread_mutex_unlock(&ws->slow_lock);
  return NULL;
}

/* Hands the tasks of list to the slow tests' thread, started if need be;
 * if it cannot be, they go back to the set. */
static void slow_add(weft__wait_set *ws, weft_task *list) {
  pthread_mutex_lock(&ws->slow_lock);
  if (!ws->slow_started &&
      pthread_create(&ws->slow_thread, NULL, slow_poller, ws) == 0)
    ws->slow_started = 1;
  int started = ws->slow_started;
  while (started && list) {
    weft_task *t = list;
    list = t->next;
    t->next = ws->slow;
    ws->slow = t;
  }
  pthread_cond_signal(&ws->slow_cv);
  pthread_mutex_unlock(&ws->slow_lock);
  while (list) { /* no thread: polled by the workers after all */
    weft_task *t = list;
    list = t->next;
    weft__wait_add(ws, t);
  }
}

int weft__wait_init(weft__wait_set *ws, struct weft__sched *sched) {
  ws->sched = sched;
  if (weft__mutex_init(&ws->lock))
    return WEFT_ENOMEM;
  if (pthread_mutex_init(&ws->slow_lock, NULL)) {
    pthread_mutex_destroy(&ws->lock);
    return WEFT_ENOMEM;
  }
  if (pthread_cond_init(&ws->slow_cv, NULL)) {
    pthread_mutex_destroy(&ws->slow_lock);
    pthread_mutex_destroy(&ws->lock);
    return WEFT_ENOMEM;
  }
  return 0;
}

void weft__wait_fini(weft__wait_set *ws) {
  if (ws->slow_started) {
    pthread_mutex_lock(&ws->slow_lock);
    ws->slow_stop = 1;
    pthread_cond_signal(&ws->slow_cv);
    pthread_mutex_unlock(&ws->slow_lock);
    pthread_join(ws->slow_thread, NULL);
    ws->slow_started = 0;
  }
  pthread_cond_destroy(&ws->slow_cv);
  pthread_mutex_destroy(&ws->slow_lock);
  pthread_mutex_destroy(&ws->lock);
}

/* The cursor is a link: &ws->head or the next field of a task still in
 * the set. Removing the task a link points to leaves the link valid, and
 * adding at the head changes no task's next, so it stays valid across
 * both; only the poll, under the lock, moves it. */
int weft__wait_poll(weft__wait_set *ws, int batch) {
  if (atomic_load(&ws->n) == 0 || pthread_mutex_trylock(&ws->lock) != 0)
    return 0;
  weft_task *done = NULL, *slow = NULL;
  int ntests = 0, nslow = 0;
  int n = 0, looked = 0, wrapped = 0;
  const struct weft__backend_ops *ops = ws->bk->ops;
  weft_task **pp = ws->cursor ? ws->cursor : &ws->head;
  weft_task *first = *pp; /* where this poll began: stop on meeting it */
  while (looked < batch) {
    if (wrapped && *pp == first)
      break;
    if (!*pp) {
      if (wrapped || !ws->head)
        break;
      wrapped = 1; /* round to the head, once */
      pp = &ws->head;
      continue;
    }
    weft_task *t = *pp;
    looked++;
    int rc;
    if (t->wait_test) {
      uint64_t t0 = weft__clock_ns();
      rc = t->wait_test(t->wait_arg);
      uint64_t took = weft__clock_ns() - t0;
      if (took > WEFT__TEST_SLOW_NS) {
        slow_report(ws, t, took);
        if (rc == WEFT_EAGAIN && !atomic_load(&ws->cancel)) {
          *pp = t->next; /* off to the slow tests' thread */
          ntests++;
          nslow++;
          t->next = slow;
          slow = t;
          continue;
        }
      }
    } else {
      rc = ops->event_query(t->wait_ev);
    }
    if (rc == WEFT_EAGAIN && t->wait_test && atomic_load(&ws->cancel)) {
      rc = WEFT_ESTATE; /* weft_shutdown: no waiting on for the outside */
      t->wait_cancelled = 1;
    }
    if (rc == WEFT_EAGAIN) {
      pp = &t->next;
      continue;
    }
    *pp = t->next;
    ntests += t->wait_test != NULL;
    t->wait_rc = rc;
    /* A GPU failure is the task's; a test's outcome is its caller's. */
    if (rc && !t->wait_test)
      weft__caller_fail(&t->x, rc);
    t->next = done;
    done = t;
    n++;
  }
  ws->cursor = pp;
  atomic_fetch_sub(&ws->n, n + nslow);
  if (ntests)
    atomic_fetch_sub(&ws->ntests, ntests);
  pthread_mutex_unlock(&ws->lock);
  if (slow)
    slow_add(ws, slow);
  while (done) {
    weft_task *t = done;
    done = t->next;
    wait_over(ws, t);
  }
  return n;
}
