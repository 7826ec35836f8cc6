/* A runtime (weft_init): its options and backend, the lock its lifecycle
 * shares, and one part per module, each written by that module's files. */
#ifndef WEFT__RUNTIME_STATE_H
#define WEFT__RUNTIME_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "backend.h"
#include "data_core.h"
#include "mem_pinned.h"
#include "pool.h"
#include "runtime_head.h"
#include "stack.h"
#include "wait.h"
#include "weft/runtime.h"
#include "worker.h"

/* weft_runtime.tasks: written by task.c and task_end.c. */
typedef struct weft__task_table {
  weft__pool pool; /* task objects, under the lifecycle lock */
  weft_task *all;  /* every task object not yet recycled */
  atomic_uint_fast64_t next_id;
  atomic_long nlive; /* spawned and not DONE; changed under lock */
  /* Live tasks placed on each device, for WEFT_DEVICE_ANY (task.c). */
  atomic_int dev_live[WEFT__MAX_DEVICES];
  atomic_uint any_next;
  /* Registered data's say in WEFT_DEVICE_ANY, and its copies started at
   * spawn (data_core.h), or NULL. */
  _Atomic(weft__place_fn) placer;
  _Atomic(weft__prefetch_fn) prefetcher;
  _Atomic(weft__uses_fn) uses;
} weft__task_table;

struct weft_runtime {
  weft__runtime_head h; /* first: weft__head(rt) */
  weft_runtime_opts opts;
  int tracing;

  pthread_cond_t done_cv; /* a task ended: thread joiners and shutdown */
  int closing;            /* weft_shutdown began */
  struct weft__watchdog *watchdog; /* watchdog.c, while it is on */

  weft__sched sched;         /* worker.c, sched.c */
  weft__wait_set waits;      /* wait.c */
  weft__task_table tasks;    /* task.c, task_end.c */
  weft__stack_pool stacks;   /* stack.c */
  weft__pinned_cache pinned; /* mem_pinned.c */
  /* Live graphs (graph.c), under lock: handles are checked against it. */
  struct weft_graph *graphs;
  size_t ngraphs;
  weft__pool graph_pool; /* graph objects, with generations */
  /* Destroyed graphs whose replays were still queued (graph.c). */
  struct weft_graph *retired;
  /* Registered data's evictions (data_evict.c counts, memory.c reports). */
  struct {
    atomic_uint_fast64_t evictions, evicted_bytes, written_back;
  } data;
};

#endif
