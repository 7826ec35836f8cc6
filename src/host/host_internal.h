/* The host backend: streams are ordered queues of operations executed by a
 * pool of CPU threads, with the same semantics as CUDA streams.
 *
 * One mutex guards all queue state. A stream is at any moment IDLE (nothing
 * queued), READY (in a priority run queue), RUNNING (an executor thread is
 * executing its head operation) or BLOCKED (its head waits on an event).
 * At most one thread runs a stream, which gives in-stream order; different
 * streams run on different threads, which gives cross-stream concurrency.
 * Event records and waits never occupy a thread: they are settled under the
 * lock as soon as they reach the head of their stream. */
#ifndef WEFT__HOST_INTERNAL_H
#define WEFT__HOST_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "backend.h"
#include "weft/runtime.h"

/* Priorities 0 (least) .. -5 (greatest), as on current NVIDIA GPUs. */
#define WEFT__HOST_PRIO_LEAST 0
#define WEFT__HOST_PRIO_GREATEST (-5)
#define WEFT__HOST_LEVELS 6

typedef enum host_state {
  HOST_IDLE,
  HOST_READY,
  HOST_RUNNING,
  HOST_BLOCKED
} host_state;

/* One recording of an event. Reference-counted: the event holds its latest
 * record, and each queued record or wait operation holds the one it names,
 * so destroying or re-recording an event never invalidates queued work. */
typedef struct weft__host_rec {
  int refs;
  int done;
  uint64_t t_ns; /* CLOCK_MONOTONIC when the stream passed it */
  /* Streams whose head waits for this record, linked through their link
   * field: completing the record releases exactly these, so a completion
   * costs what it releases, not a scan of every blocked stream. */
  struct weft__host_stream *waiters;
} weft__host_rec;

typedef enum host_op_kind {
  HOP_COPY,
  HOP_MEMSET,
  HOP_LAUNCH,
  HOP_RECORD,
  HOP_WAIT,
  HOP_FREE
} host_op_kind;

typedef struct weft__host_op {
  struct weft__host_op *next;
  host_op_kind kind;
  size_t size;    /* bytes of the op and its extras: a graph's recorded
                     operations are copied to replay them (a captured
                     launch's name follows, outside size) */
  uint32_t graph; /* the graph a replayed operation came from, or 0 */
  /* Tracing: set when the op was queued while tracing was on; name is
   * the tracer's copy (weft__trace_intern), or a captured launch's own. */
  uint64_t corr, task;
  const char *name;
  uint64_t seq; /* its place among its device's operations (enqueue) */
  uint8_t copy_dir;
  union {
    struct {
      void *dst;
      const void *src;
      size_t n;
    } copy;
    struct {
      void *dst;
      int value;
      size_t n;
    } set;
    struct {
      weft_host_fn fn;
      weft_dim3 grid, block;
      void *shared;
      void *argv[WEFT_KERNEL_MAX_ARGS];
    } launch;
    weft__host_rec *rec; /* HOP_RECORD, HOP_WAIT */
    void *ptr;           /* HOP_FREE */
  } u;
} weft__host_op;

typedef struct weft__host_stream {
  weft__stream base; /* base.id names it in traces */
  weft__host_op *head, *tail;
  host_state state;
  int level; /* run-queue level: 0 least .. WEFT__HOST_LEVELS-1 greatest */
  uint64_t submitted, completed;
  struct weft__host_stream *link; /* run queue, a record's waiters, or
                                     the released list */
  /* While a graph is captured (host_graph.c): copies, memsets and
   * launches are appended here instead of queued. */
  int capturing;
  weft__host_op *cap_head, *cap_tail;
} weft__host_stream;

typedef struct weft__host_event {
  weft__event base;
  weft__host_rec *last; /* latest record, or NULL if never recorded */
} weft__host_event;

/* A device_sync waiting: the operations of its device queued before it
 * (sequence numbers up to target) still to complete. On the waiter's
 * stack, under mu. */
typedef struct host_dev_sync {
  struct host_dev_sync *next;
  uint64_t target, remaining;
} host_dev_sync;

typedef struct host_queue {
  weft__host_stream *head, *tail;
} host_queue;

typedef struct weft__host_backend {
  struct weft__backend base;
  pthread_mutex_t mu;
  /* Each emulated device has executor threads of its own, so that one
   * device's work (a kernel spinning on a flag) never holds up
   * another's, as on separate GPUs: its ready streams and the condition
   * its threads wait on. */
  pthread_cond_t work[WEFT_HOST_DEVICES_MAX];
  pthread_cond_t progress; /* syncs wait here; broadcast on completions */
  host_queue ready[WEFT_HOST_DEVICES_MAX][WEFT__HOST_LEVELS];
  /* Streams whose wait was satisfied by a record that just completed,
   * still to be moved on (linked through link). */
  weft__host_stream *released;
  int stopping;
  int nthreads;       /* per device */
  int nstarted;       /* threads running, for stop */
  pthread_t *threads; /* nthreads x ndev, device by device */
  struct host_executor *exec;
  uint64_t submitted, completed; /* over all streams */
  int ndev;                      /* emulated devices */
  /* WEFT_HOST_PAGEABLE=1: ptr_kind tells memory apart as CUDA would, so
   * that the core's staging of pageable copies runs here (tests). */
  int pageable;
  /* The other pageable host backends of the process (host_ops.c's
   * ptr_kind): pinned memory is the process's, as CUDA's is. */
  struct weft__host_backend *next_pageable;
  /* Per device, for device_sync (an op counts on its stream's device). */
  uint64_t dev_submitted[WEFT_HOST_DEVICES_MAX];
  uint64_t dev_completed[WEFT_HOST_DEVICES_MAX];
  /* The device syncs waiting, per device: a count alone cannot tell an
   * operation queued before a sync from one queued after it. */
  host_dev_sync *dev_syncs[WEFT_HOST_DEVICES_MAX];
  void (*hook)(void *); /* called when event records complete */
  void *hook_arg;
  /* "Device" memory freed by streams, kept for reuse as a GPU's
   * stream-ordered pool keeps it: fresh host memory costs a page fault per
   * page on first touch. Under mu. */
  struct weft__host_block *cached;
  size_t cached_bytes;
} weft__host_backend;

/* The header in front of each block of host-backend device memory. */
typedef struct weft__host_block {
  struct weft__host_block *next; /* while cached */
  size_t size;                   /* usable bytes after the header */
} weft__host_block;

#define WEFT__HOST_BLOCK_HDR 256 /* keeps the 256-byte alignment */
#define WEFT__HOST_CACHE_MAX ((size_t)1 << 30)

/* Returns a freed block to the cache (or to the system past its limit).
 * mu held. */
void weft__host_block_release(weft__host_backend *hb, void *p);
void weft__host_cache_drain(weft__host_backend *hb);

static inline weft__host_backend *weft__host_of(weft__backend *b) {
  return (weft__host_backend *)b;
}

uint64_t weft__host_now_ns(void);

/* Backend and device entry points (host_backend.c). */
int weft__host_open(weft__backend *b, const weft__backend_config *cfg);
void weft__host_close(weft__backend *b);
int weft__host_device_count(weft__backend *b, int *count);
int weft__host_device_info(weft__backend *b, int dev, weft_device_info *info);
int weft__host_device_sync(weft__backend *b, int dev);
void weft__host_set_completion_hook(weft__backend *b, void (*fn)(void *),
                                    void *arg);

/* Graphs (host_graph.c): the recorded operations, copied and queued again
 * on each replay. */
typedef struct weft__host_graph {
  weft__host_op *ops; /* the recorded operations, in order */
  size_t nops, nkernels, ncopies;
  uint32_t id;          /* names its operations in traces */
  weft__host_rec *last; /* the latest replay's end (under mu) */
} weft__host_graph;

/* 1 if s is capturing: then op, built as for queueing, is appended to the
 * capture instead (and belongs to it). */
int weft__host_capture_op(weft__host_stream *s, weft__host_op *op);
int weft__host_capture_begin(weft__stream *s);
int weft__host_capture_end(weft__stream *s, void **g);
int weft__host_graph_launch(weft__stream *s, void *g);
void weft__host_graph_counts(void *g, size_t *ops, size_t *kernels,
                             size_t *copies);
void weft__host_graph_destroy(weft__backend *b, void *g);

/* Executor (host_exec.c). */
int weft__host_exec_start(weft__host_backend *hb, int nthreads);
void weft__host_exec_stop(weft__host_backend *hb);
/* Appends op to s and makes progress where possible. Takes the lock. */
void weft__host_enqueue(weft__host_stream *s, weft__host_op *op);
void weft__host_rec_release(weft__host_rec *r); /* lock held */

/* host_trace.c: the tracer's records of the host backend's work. */
/* 0 when b's runtime is not traced; else the issue's start time, with a
 * new correlation id and the issuing task in *corr and *task. */
uint64_t weft__host_trace_issue(weft__backend *b, uint64_t *corr,
                                uint64_t *task);
/* The tracer's own copy of an operation's name (the caller's may be
 * freed before the trace is written). */
const char *weft__host_trace_name(const char *name);
/* After the enqueue: the issue's record, named api (a CUDA call's name). */
void weft__host_trace_api(uint64_t t0, uint64_t corr, uint64_t task,
                          const char *api);
/* A copy's direction as the trace names it (CUPTI's numbers). */
uint8_t weft__host_trace_copy_dir(weft__backend *b, void *dst, const void *src,
                                  weft__copy_kind kind);
/* The executor ran op of s, from t0 to now. */
void weft__host_trace_ran(const weft__host_stream *s, const weft__host_op *op,
                          uint64_t t0);
/* The calling thread is an executor of b: its lane's name, if b's work
 * is traced (another runtime's trace names none of b's threads). */
void weft__host_trace_executor(weft__backend *b);

/* Adds / removes hb among the process's pageable host backends. */
void weft__host_pageable_join(weft__host_backend *hb);
void weft__host_pageable_leave(weft__host_backend *hb);

#endif
