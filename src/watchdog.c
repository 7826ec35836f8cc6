/* The watchdog (watchdog.h): a thread that looks at every task a quarter
 * of the limit apart and names, once per stall, each that has stayed in
 * one state past the limit, with what it waits for. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime_state.h"
#include "watchdog.h"

struct weft__watchdog {
  weft_runtime *rt;
  uint64_t limit_ns;
  pthread_t thread;
  pthread_mutex_t lock; /* stop and the condition variable */
  pthread_cond_t cv;
  int stop;
  /* Reports written so far, for tests (weft_internal.h). */
  atomic_uint_fast64_t reports;
};

/* A consistent copy of t's stall record, or 0 while a note is written or
 * when there is none yet (watchdog.h: since works as a seqlock's count). */
static uint64_t stall_read(weft__stall *s, int *kind, const char **what,
                           int *dev, unsigned *stream) {
  uint64_t since = atomic_load_explicit(&s->since, memory_order_acquire);
  if (!since)
    return 0;
  *kind = atomic_load_explicit(&s->kind, memory_order_relaxed);
  *what = atomic_load_explicit(&s->what, memory_order_relaxed);
  *dev = atomic_load_explicit(&s->dev, memory_order_relaxed);
  *stream = atomic_load_explicit(&s->stream, memory_order_relaxed);
  atomic_thread_fence(memory_order_acquire);
  return atomic_load_explicit(&s->since, memory_order_relaxed) == since ? since
                                                                        : 0;
}

/* What t waits for, in words, into buf; 0 when there is nothing to say
 * (running, or just woken). The lifecycle lock held: waiting_for is
 * stable and names a live task. */
static int describe(weft_task *t, int kind, const char *what, int dev,
                    unsigned stream, char *buf, size_t size) {
  weft_task *o = t->waiting_for;
  switch (kind) {
  case WEFT__STALL_READY:
    snprintf(buf, size,
             "it is ready to run, and no worker has taken it (every worker "
             "busy with tasks that do not yield?)");
    return 1;
  case WEFT__STALL_EVENT:
    snprintf(buf, size,
             "it waits in %s for GPU work on stream %u of device %d to "
             "complete",
             what ? what : "a GPU wait", stream, dev);
    return 1;
  case WEFT__STALL_TEST:
    snprintf(buf, size,
             "it waits in weft_wait_until for %s; the test still "
             "says WEFT_EAGAIN",
             what ? what : "a test");
    return 1;
  case WEFT__STALL_JOIN:
  case WEFT__STALL_AFTER:
  case WEFT__STALL_FOLLOW:
    if (!o) /* woken, not yet noted ready */
      return 0;
    snprintf(buf, size, "it waits %s task '%s' (id %llu) %s",
             kind == WEFT__STALL_JOIN    ? "in weft_task_join for"
             : kind == WEFT__STALL_AFTER ? "in weft_task_after for"
                                         : "for",
             o->name, (unsigned long long)o->id,
             kind == WEFT__STALL_JOIN ? "to complete"
             : kind == WEFT__STALL_AFTER
                 ? "to return"
                 : "to return or complete: it follows that task by "
                   "declared data");
    return 1;
  case WEFT__STALL_FINISHING:
    snprintf(buf, size,
             "its function returned; its GPU work on stream %u of device "
             "%d has not completed",
             stream, dev);
    return 1;
  default:
    return 0;
  }
}

/* Appends line to *out (grown as needed); a line that finds no memory is
 * written at once instead. */
static void add_line(char **out, size_t *len, size_t *cap, const char *line) {
  size_t n = strlen(line);
  if (*len + n + 1 > *cap) {
    size_t c = (*cap ? *cap * 2 : 4096) + n;
    char *p = realloc(*out, c);
    if (!p) {
      fputs(line, stderr);
      return;
    }
    *out = p;
    *cap = c;
  }
  memcpy(*out + *len, line, n + 1);
  *len += n;
}

/* One look at every task. The lines are made under the lifecycle lock
 * (they name the tasks waited for, alive only while it is held) and
 * written after it. */
static void scan(struct weft__watchdog *wd) {
  weft_runtime *rt = wd->rt;
  char *out = NULL;
  size_t len = 0, cap = 0;
  uint64_t now = weft__stall_clock();
  pthread_mutex_lock(&rt->h.lock);
  for (weft_task *t = rt->tasks.all; t; t = t->all_next) {
    int kind = 0, dev = 0;
    unsigned stream = 0;
    const char *what = NULL;
    uint64_t since =
        t->done ? 0 : stall_read(&t->stall, &kind, &what, &dev, &stream);
    if (!since || since == t->stall.reported || now < since ||
        now - since < wd->limit_ns)
      continue;
    char why[384], line[512];
    if (!describe(t, kind, what, dev, stream, why, sizeof why))
      continue;
    t->stall.reported = since;
    snprintf(line, sizeof line,
             "weft watchdog: task '%s' (id %llu) has made no progress for "
             "%.1f s: %s\n",
             t->name, (unsigned long long)t->id, (double)(now - since) / 1e9,
             why);
    add_line(&out, &len, &cap, line);
    atomic_fetch_add(&wd->reports, 1);
  }
  pthread_mutex_unlock(&rt->h.lock);
  if (out) {
    fputs(out, stderr);
    fflush(stderr);
    free(out);
  }
}

static void *watchdog_main(void *arg) {
  struct weft__watchdog *wd = arg;
  /* A quarter of the limit apart: a stall is named between 1 and 1.25
   * limits after it began. */
  uint64_t period = wd->limit_ns / 4;
  pthread_mutex_lock(&wd->lock);
  while (!wd->stop) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + period;
    ts.tv_sec += (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    int rc = 0;
    while (!wd->stop && rc != ETIMEDOUT)
      rc = pthread_cond_timedwait(&wd->cv, &wd->lock, &ts);
    if (wd->stop)
      break;
    pthread_mutex_unlock(&wd->lock);
    scan(wd);
    pthread_mutex_lock(&wd->lock);
  }
  pthread_mutex_unlock(&wd->lock);
  return NULL;
}

int weft__watchdog_start(weft_runtime *rt, int limit_ms) {
  struct weft__watchdog *wd = calloc(1, sizeof *wd);
  if (!wd)
    goto fail;
  wd->rt = rt;
  wd->limit_ns = (uint64_t)limit_ms * 1000000u;
  if (pthread_mutex_init(&wd->lock, NULL))
    goto fail_lock;
  if (pthread_cond_init(&wd->cv, NULL))
    goto fail_cv;
  if (pthread_create(&wd->thread, NULL, watchdog_main, wd))
    goto fail_thread;
  rt->watchdog = wd;
  return 0;
fail_thread:
  pthread_cond_destroy(&wd->cv);
fail_cv:
  pthread_mutex_destroy(&wd->lock);
fail_lock:
  free(wd);
fail:
  return weft__err(WEFT_ENOMEM, "weft_init: cannot start the watchdog");
}

void weft__watchdog_stop(weft_runtime *rt) {
  struct weft__watchdog *wd = rt->watchdog;
  if (!wd)
    return;
  pthread_mutex_lock(&wd->lock);
  wd->stop = 1;
  pthread_cond_signal(&wd->cv);
  pthread_mutex_unlock(&wd->lock);
  pthread_join(wd->thread, NULL);
  pthread_cond_destroy(&wd->cv);
  pthread_mutex_destroy(&wd->lock);
  free(wd);
  rt->watchdog = NULL;
}

uint64_t weft__watchdog_reports(weft_runtime *rt) {
  return rt->watchdog ? atomic_load(&rt->watchdog->reports) : 0;
}
