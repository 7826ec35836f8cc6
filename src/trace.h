/* The tracer: records every GPU operation, task run slice and wait, and
 * exports them as a Chrome Trace Event JSON file laid out like PyTorch's
 * profiler (Kineto) output, which Perfetto opens and `weft trace` reads.
 *
 * Off unless WEFT_TRACE=path or weft_runtime_opts.trace_path is set; then
 * one runtime at a time is traced. Records land in per-thread buffers
 * without locks (each thread writes only its own); full buffers are
 * chained, and everything is written out at weft_shutdown. GPU operations
 * come from the backend: the host backend's executor records them as it
 * runs them; the CUDA backend gets them from CUPTI's activity API, with
 * each task's id attached as an external correlation id.
 *
 * trace_record.c keeps the buffers and implements what is declared here;
 * trace_write.c writes the file at weft__trace_close. */
#ifndef WEFT__TRACE_H
#define WEFT__TRACE_H

#include <stdatomic.h>
#include <stdint.h>

#include "clock.h"
#include "weft/device.h"

#include "trace_format.h"

/* What a record is; each kind is written with its category
 * (trace_write.c). */
typedef enum weft__trace_kind {
  WEFT__TR_KERNEL,
  WEFT__TR_MEMCPY,
  WEFT__TR_MEMSET,
  WEFT__TR_API,   /* the host-side call that queued a GPU op */
  WEFT__TR_TASK,  /* a run slice of a task on a worker thread */
  WEFT__TR_WAIT,  /* a task suspended waiting for the GPU */
  WEFT__TR_CHECK, /* a weft check finding: an instant (name: its kind) */
  WEFT__TR_RANGE, /* a user range (weft/range.h), written at its pop */
  /* A stream told to wait for an event (trace_order.h): an instant on the
   * calling thread; dev and corr: the waiting stream's device and trace
   * id; bytes: the awaited record's (device << 32 | stream); ready: when
   * that record was made. */
  WEFT__TR_SWAIT,
  /* A stream taken over at a lease (trace_order.h): an instant on the
   * calling thread; dev and corr: the stream's device and trace id; task:
   * the taker; bytes: the task whose queued work it held. */
  WEFT__TR_TAKEOVER,
  WEFT__TR_NKINDS
} weft__trace_kind;

enum { /* copy directions, as CUPTI numbers them */
       WEFT__TR_HTOD = 1,
       WEFT__TR_DTOH = 2,
       WEFT__TR_DTOD = 8,
       WEFT__TR_HTOH = 9,
       WEFT__TR_PTOP = 10, /* between two devices' memory */
};

/* A kernel's launch, as CUPTI records it (zeros where the backend does
 * not say): grid and block, registers a thread, shared memory a block
 * (static and dynamic), the blocks that fit on one SM at once, and the
 * hardware channel (queue) the driver submitted it on, plus one (0: not
 * known). */
typedef struct weft__trace_shape {
  uint32_t grid_x;
  uint16_t grid_y, grid_z;
  uint16_t block_x, block_y;
  uint8_t block_z, regs; /* at most 64 and 255 */
  uint16_t resident;
  uint32_t smem;
  uint32_t channel;
} weft__trace_shape;

typedef struct weft__trace_rec {
  uint64_t start, end; /* ns on the tracer's clock (CLOCK_MONOTONIC) */
  uint64_t task;       /* task id; 0 for none */
  uint64_t corr;       /* correlation between an API record and its op */
  union {
    struct {
      uint64_t bytes;
      uint64_t ready;     /* task slices: when the task was made ready, or 0 */
      const char *detail; /* checks: the finding's message (interned) */
    };
    weft__trace_shape shape; /* kernels */
  };
  const char *name; /* static, or interned with weft__trace_intern */
  uint32_t lane;    /* GPU kinds: stream id; CPU kinds: thread lane */
  int16_t dev;
  uint8_t kind;
  uint8_t copy; /* WEFT__TR_HTOD.. for memcpys */
  uint8_t src_pinned, dst_pinned;
  uint8_t why;    /* task slices: WEFT_TRF_READY_* */
  uint32_t graph; /* GPU kinds: the graph the op was replayed from, or 0 */
} weft__trace_rec;

/* 1 while a trace is being recorded; checked before any tracing work. */
extern atomic_int weft__trace_on;
/* The backend of the runtime that traces (one at a time). Records are made
 * only for it: another runtime's tasks and operations stay out of the file,
 * and its threads never write into the tracer's buffers, which the tracing
 * runtime's shutdown frees (a second runtime's workers once wrote into them
 * after that). CUPTI (src/cuda/) records every CUDA operation of the
 * process, as any CUPTI-based profiler does. */
extern void *_Atomic weft__trace_owner;

/* 1 if records of owner's (a backend's) work are to be made now. */
static inline int weft__trace_on_for(const void *owner) {
  return atomic_load_explicit(&weft__trace_on, memory_order_relaxed) &&
         atomic_load_explicit(&weft__trace_owner, memory_order_relaxed) ==
             owner;
}
/* The task running on this thread (0 when none), for records made by the
 * code it calls. Set by the scheduler on every resume. */
extern _Thread_local uint64_t weft__trace_task;

/* The rank and job size an MPI launcher gave this process (environment:
 * Open MPI, PMIx, PMI, Slurm), else 0 and 1. */
void weft__trace_rank(int *rank, int *size);
/* The trace file of this rank: path with every %r replaced by the rank;
 * in a job of several ranks a path without %r gets -rankN before a .json
 * ending (or at its end). 0, or WEFT_ERANGE when out is too small. */
int weft__trace_rank_path(const char *path, char *out, size_t len);

/* Starts recording to path the work of owner (a backend), named backend in
 * the file, whose ndev devices devs describes (copied). WEFT_EBUSY if
 * another runtime traces. */
int weft__trace_open(const char *path, const char *backend, void *owner,
                     const weft_device_info *devs, int ndev);
/* Writes the file and stops recording. Every thread that recorded must
 * be idle. Returns 0, WEFT_EIO (not written) or WEFT_ENOMEM (written,
 * records dropped for want of memory). */
int weft__trace_close(void);

/* Appends a copy of r to the calling thread's buffer (dropped and counted
 * when out of memory). No lock: each thread writes only its own buffer. */
void weft__trace_emit(const weft__trace_rec *r);
/* Appends records from any thread, under the tracer's lock (the CUPTI
 * buffer callback delivers thousands at a time). */
void weft__trace_emit_batch(const weft__trace_rec *r, size_t n);
/* Counts n records lost before they reached the tracer (a backend's own
 * buffers: CUPTI's drops), so that the trace and weft_shutdown say so. */
void weft__trace_count_dropped(uint64_t n);
/* The tracer's copy of s (NULL: ""), which lives until the trace is
 * written: records never hold a caller's pointer. Equal strings share one
 * copy, and a thread passing the same pointer again (a launch's kernel
 * name) finds it without the lock. "?" when out of memory. */
const char *weft__trace_intern(const char *s);
/* The lane of the calling thread's CPU records (see trace_record.c). */
uint32_t weft__trace_thread_lane(void);
void weft__trace_thread_name(const char *name);
uint64_t weft__trace_next_corr(void);
/* Remembers a task's name for the trace. */
void weft__trace_task_name(uint64_t id, const char *name);
/* Maps a backend correlation id to the task that issued it (CUPTI). */
void weft__trace_corr_task(uint64_t corr, uint64_t task);

#endif
