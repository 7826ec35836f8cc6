/* Priority-aware admission (weft_runtime_opts.admission): while any
 * high-priority task lives, a normal-priority task keeps at most `depth`
 * of its operations queued and unfinished on its stream; its next one
 * waits, the task suspended, until the oldest finishes or no high task is
 * left. Stream priority orders only the blocks waiting to start, so a
 * normal task that queued hundreds of kernels first keeps the device's
 * queue full ahead of the high task's work; holding the rest on the host
 * leaves the device little of it to finish first. */
#ifndef WEFT__ADMISSION_H
#define WEFT__ADMISSION_H

#include <stdatomic.h>

#include "backend.h"

struct weft__exec;

/* The most operations in flight the policy can be given, and its depth
 * unless weft_runtime_opts.admission or WEFT_ADMISSION says otherwise. */
#define WEFT__ADMISSION_MAX 64
#define WEFT__ADMISSION_DEFAULT 1

typedef struct weft__admission weft__admission;

/* weft_runtime.adm: what the policy reads on every issue. */
typedef struct weft__admission_state {
  atomic_int depth;      /* 0: off (runtime.c) */
  atomic_int nhigh_live; /* high-priority tasks alive (task.c, task_end.c) */
  /* High-priority tasks running on a worker now (sched.c's run_task): while
   * one issues, a held normal task issues nothing either. */
  atomic_int nhigh_running;
  /* The wait set's: weft_shutdown began, and a held task goes on. */
  const atomic_int *cancel;
} weft__admission_state;

/* Before x queues an operation on s (weft__caller_get, which checked that
 * the policy is on, x a normal-priority task and a high one alive): while
 * a high-priority task runs, waits for it to stop, 1 ms at most (the two
 * would contend for the driver's issue path); then notes what x queued since
 * its last operation and, past the depth, waits. 0, or the wait's error. */
int weft__admit(weft__admission_state *st, struct weft__exec *x,
                weft__stream *s);

/* The task's record goes back (its events to the pool) when it returns. */
void weft__admission_free(struct weft__exec *x);

#endif
