/* A runtime (weft_init): its options and backend, the lock its lifecycle
 * shares, and one part per module, each written by that module's files. */
#ifndef WEFT__RUNTIME_STATE_H
#define WEFT__RUNTIME_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "backend.h"
#include "mem_pinned.h"
#include "pool.h"
#include "stack.h"
#include "stream_pool.h"
#include "trace.h"
#include "wait.h"
#include "weft/runtime.h"
#include "worker.h"

/* weft_runtime.tasks: written by task.c and task_end.c. */
typedef struct weft__task_table {
  weft__pool pool; /* task objects, under rt->lock */
  weft_task *all;  /* every task object not yet recycled */
  atomic_uint_fast64_t next_id;
  atomic_long nlive;     /* spawned and not DONE; changed under lock */
  atomic_int nhigh_live; /* of which high priority (admission.c) */
  /* Live tasks placed on each device, for WEFT_DEVICE_ANY (task.c). */
  atomic_int dev_live[WEFT__MAX_DEVICES];
  atomic_uint any_next;
} weft__task_table;

struct weft_runtime {
  weft_runtime_opts opts;
  weft__backend *bk;
  uint64_t epoch; /* distinguishes runtimes for thread contexts */
  int tracing;
  /* Priority-aware admission (admission.h): the depth, 0 for off. */
  atomic_int admission;

  /* The lifecycle lock: tasks' states, the pools, thread contexts, graphs. */
  pthread_mutex_t lock;
  pthread_cond_t done_cv; /* a task ended: thread joiners and shutdown */
  int closing;            /* weft_shutdown began */

  weft__sched sched;         /* worker.c, sched.c */
  weft__wait_set waits;      /* wait.c */
  weft__task_table tasks;    /* task.c, task_end.c */
  weft__stream_pool pools;   /* stream_pool.c */
  weft__exec *threads;       /* plain-thread contexts (caller.c) */
  weft__stack_pool stacks;   /* stack.c */
  weft__pinned_cache pinned; /* mem_pinned.c */
  /* Live graphs (graph.c), under lock: handles are checked against it. */
  struct weft_graph *graphs;
  size_t ngraphs;
  weft__pool graph_pool; /* graph objects, with generations */
};

/* Notes when and why t was made ready, for the trace's runtime-latency
 * figures; nothing when not tracing. */
static inline void weft__mark_ready(weft_task *t, int why) {
  if (weft__trace_on_for(t->x.rt->bk)) {
    t->ready_ns = weft__trace_now();
    t->ready_why = (uint8_t)why;
  }
}

#endif
