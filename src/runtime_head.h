/* What the layers beneath runtime.c read of their runtime: its backend and
 * epoch, the lifecycle lock, and the two parts owned by modules down there
 * (admission's state, the plain threads' contexts, the pooled events and
 * streams). It is
 * the first member of weft_runtime (runtime_state.h), so a runtime's address is
 * its head's; the rest of a runtime is private to the files that own its parts.
 */
#ifndef WEFT__RUNTIME_HEAD_H
#define WEFT__RUNTIME_HEAD_H

#include <pthread.h>
#include <stdint.h>

#include "admission.h"
#include "backend.h"
#include "event_pool.h"
#include "stream_pool.h"

struct weft_runtime;
struct weft__exec;

typedef struct weft__runtime_head {
  weft__backend *bk;
  uint64_t epoch; /* distinguishes runtimes for thread contexts */
  /* The lifecycle lock: tasks' states, the pools, thread contexts, graphs. */
  pthread_mutex_t lock;
  weft__admission_state adm;  /* runtime.c, task.c, task_end.c */
  struct weft__exec *threads; /* plain-thread contexts (caller.c) */
  weft__event_pool events;    /* event_pool.c */
  weft__stream_pool streams;  /* stream_pool.c */
  /* The watchdog is on (watchdog.c): tasks note their changes of state.
   * Set before the workers start, then only read. */
  int watchdog;
  /* What a plain thread's exit does while its runtime lives (caller.c;
   * closing: the runtime is shutting down), set by weft_init: a pointer,
   * so that the caller layer does not call up into the API's staged
   * copies and ranges. */
  void (*thread_end)(struct weft__exec *x, int closing);
} weft__runtime_head;

static inline weft__runtime_head *weft__head(struct weft_runtime *rt) {
  return (weft__runtime_head *)(void *)rt;
}

#endif
