/* The caller's context (an exec): the task or plain thread that issues GPU
 * work, with its leased stream, device and first error. Found by
 * weft__caller_self/weft__caller_get (caller.c); public calls reach it through
 * the door (door.h). */
#ifndef WEFT__CALLER_H
#define WEFT__CALLER_H

#include <stdatomic.h>
#include <stdint.h>

#include "backend.h"
#include "error_internal.h"
#include "runtime_head.h"
#include "weft/dataflow.h"

typedef struct weft__exec weft__exec;

/* Whoever issues GPU work: a task, or a plain thread. */
struct weft__exec {
  struct weft_runtime *rt;
  weft__backend *bk;    /* rt's backend */
  weft__stream *stream; /* leased on the first GPU operation */
  /* Listed while its stream may be taken over by a lease (stream_pool.h). */
  weft__stream_lender lender;
  /* Work may have been queued on stream since a weft_sync last saw it
   * idle: set whenever the stream is handed out (weft__caller_stream), so a
   * task that ends right after a sync skips asking the device. */
  int unsynced;
  int dev;
  int high;        /* priority: stream from the greatest-priority pool */
  int pending_err; /* first error not yet returned by weft_sync */
  int first_err;   /* first error of the task's life, for join */
  int first_raw;
  char *first_msg; /* its message (malloc'd: failures are rare) */
  int is_task;
  weft__errinfo errinfo; /* weft_last_error_message() while it runs */
  /* The chunks of this exec's staged copies to pageable memory whose
   * helper tasks still run (memory.c); joined by weft_sync and when a task
   * returns. */
  struct weft__stage_job **pending;
  int npending, cap_pending;
  struct weft__exec *next;   /* runtime's list of plain-thread contexts */
  struct weft__vc *check_vc; /* weft check: what it has seen (checker.c) */
  struct weft__flow *flow;   /* its spawns' declared data (dataflow.c) */
  /* Under weft check: the task's own declared accesses, which its GPU
   * operations on tracked memory must keep within (checker.c). */
  weft_access *decl;
  uint32_t ndecl;
  /* Under weft check: the task declared accesses, but there was no memory
   * to copy them, so its operations are not held to any. */
  int decl_lost;
  /* Under weft check: registered data's own copy through a handle's host
   * memory is being issued (caller_declare.h). */
  int data_own_copy;
  /* Priority-aware admission (admission.c): what a normal-priority task
   * has in flight; NULL until the policy first holds it. */
  struct weft__admission *adm;
  /* Set by weft_graph_begin (graph.c) while a capture is open on stream:
   * how to drop it when a plain thread or its runtime ends first. A
   * pointer, so that this layer does not call up into the graph API. */
  void (*drop_capture)(weft__exec *x, const char *why);
  atomic_int dead; /* a plain thread's, after its runtime shut down */
  /* Its open user ranges, innermost last (range.h); malloc'd. */
  struct weft__range *ranges;
  int nranges, cap_ranges;
};

/* The calling exec: the running task's, else the plain thread's if it has
 * one, else NULL. Not inlined: a fiber can resume on another thread, and a
 * cached thread-local address would then name the old thread's variable. */
weft__exec *weft__caller_self(void);

/* The refusal of a call that would wait or allocate inside a graph
 * capture, for one that learns it only later than its door (a copy into
 * pageable memory): 0, or WEFT_ESTATE reported if x is capturing. */
int weft__caller_refuse_in_capture(const weft__exec *x, const char *call,
                                   const char *why);
/* The exec of the calling task or thread, made for a plain thread on its
 * first call, or NULL with WEFT_ESTATE recorded when no runtime is open. */
weft__exec *weft__caller_get(const char *call);
/* weft_init, rt registered open: a plain thread that uses no open runtime
 * uses rt from now on. Returns 0 or what weft__caller_get_failed reports. */
int weft__caller_adopt(struct weft_runtime *rt);
/* What a failed weft__caller_get recorded: WEFT_ESTATE (no runtime) or
 * WEFT_ENOMEM (no memory for a plain thread's context). */
static inline int weft__caller_get_failed(void) {
  return weft__err_slot()->code;
}

/* Records a failure of a GPU operation against x and returns rc. */
int weft__caller_fail(weft__exec *x, int rc);
/* Leases a stream for x from the runtime's pool (or makes one). A failure
 * is reported (weft_last_error_message) but not recorded against x: the
 * caller decides whether x failed. */
int weft__caller_lease(weft__exec *x, weft__stream **out);
/* The exec's stream, leased on first use; a failed lease fails x. */
static inline int weft__caller_stream(weft__exec *x, weft__stream **out) {
  x->unsynced = 1;
  if (x->stream) {
    *out = x->stream;
    return 0;
  }
  int rc = weft__caller_lease(x, out);
  return rc ? weft__caller_fail(x, rc) : 0;
}
/* Returns x's stream to its pool (a capture still open on it is dropped
 * first, through x->drop_capture). */
void weft__caller_release_stream(weft__exec *x);
/* Shutdown: the runtime's plain-thread contexts die with it. */
void weft__caller_threads_release(struct weft_runtime *rt);

/* ---- what a caller did, told to weft check (checker.h) ----
 * The one way the public calls report to the checker, which they need not
 * know: each does nothing while weft check is off. The checker is the
 * runtime's of the stream or event named, else the caller's. */

/* x issues an operation on s. */
void weft__caller_issues(weft__exec *x, weft__stream *s);
/* x has seen s's work up to now complete, or e's, or device dev's. */
void weft__caller_synced(weft__exec *x, weft__stream *s);
void weft__caller_event_synced(weft__exec *x, weft__event *e);
void weft__caller_device_synced(weft__exec *x, int dev);
/* x joined done; stream s follows done (weft_task_after). done NULL: a
 * task that completed and is gone (checker.h says what stands in). */
void weft__caller_joined(weft__exec *x, weft__exec *done);
void weft__caller_follows(weft__stream *s, weft__exec *done);
/* child starts with what parent (NULL: nothing) has seen. */
void weft__caller_spawned(weft__exec *parent, weft__exec *child);
/* x allocated p (n bytes; pinned or device memory), or is freeing it. */
void weft__caller_allocated(weft__exec *x, const void *p, size_t n, int pinned);
void weft__caller_freeing(weft__exec *x, const void *p);
/* x asked for p itself (weft_device_alloc, weft_pinned_alloc): in a task,
 * its own scratch, unless registered data allocates an instance
 * (data_own_copy). */
void weft__caller_made(weft__exec *x, const void *p);
/* Whether weft check runs and a task besides x is alive: asked before a
 * call that may wait for the whole device, for the next. */
int weft__caller_others_alive(const weft__exec *x);
/* x, a task, made a call (call) that waits for more than its own stream
 * (what: why; ns: how long it took, 0 if not measured; alive: what
 * weft__caller_others_alive said before it). */
void weft__caller_implicit_sync(weft__exec *x, const char *call,
                                const char *what, uint64_t ns, int alive);
/* x's context goes away: its clock with it. */
void weft__caller_gone(weft__exec *x);

#endif
