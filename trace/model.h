/* A trace in memory: the operations of a Chrome Trace Event file (as written
 * by weft's tracer or by PyTorch's profiler, Kineto), classified into GPU
 * kernels, copies and memsets, CUDA API calls, weft task run slices and
 * waits. docs/TRACE.md describes the fields read.
 *
 * The loader is strict about syntax (json.h) and about the types of the
 * fields it uses, and liberal about everything else: unknown keys, unknown
 * event phases ("s", "f", "i", ...) and unknown categories are passed over
 * or kept as "other". */
#ifndef WEFT_TRACE_MODEL_H
#define WEFT_TRACE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

/* An absent integer field (correlation, task). */
#define TRACE_NONE INT64_MIN

typedef enum trace_op_kind {
  TRACE_OP_KERNEL,  /* cat "kernel" */
  TRACE_OP_MEMCPY,  /* cat "gpu_memcpy" */
  TRACE_OP_MEMSET,  /* cat "gpu_memset" */
  TRACE_OP_RUNTIME, /* cat "cuda_runtime" or "cuda_driver": an API call */
  TRACE_OP_TASK,    /* cat "task": one run slice of a weft task */
  TRACE_OP_WAIT,    /* cat "weft_wait": a weft task waiting */
  TRACE_OP_RANGE,   /* cat "user_annotation": a user range (range.h) */
  TRACE_OP_OTHER,
  TRACE_OP_NKINDS
} trace_op_kind;

typedef enum trace_copy_dir {
  TRACE_COPY_NONE, /* not a copy */
  TRACE_COPY_HTOD,
  TRACE_COPY_DTOH,
  TRACE_COPY_DTOD,
  TRACE_COPY_HTOH,
  TRACE_COPY_PTOP,  /* from one device's memory to another's */
  TRACE_COPY_OTHER, /* arrays, or unknown */
  TRACE_COPY_NDIRS
} trace_copy_dir;

/* The host side of a copy, from Kineto's "(Pageable -> Device)" names. */
typedef enum trace_host_mem {
  TRACE_MEM_UNKNOWN,
  TRACE_MEM_PAGEABLE,
  TRACE_MEM_PINNED
} trace_host_mem;

/* Why a weft task was ready before a run slice (args.weft_ready_by): the
 * trace format's kinds, with its numbers (WEFT_TRF_READY_KINDS in
 * format/trace_format.h), plus "other" for names this reader does not
 * know. */
#define TRACE_READY_ENUM(kind, name, what)                                     \
  TRACE_READY_##kind = WEFT_TRF_READY_##kind,
typedef enum trace_ready_kind {
  TRACE_READY_NONE = WEFT_TRF_READY_NONE,
  WEFT_TRF_READY_KINDS(TRACE_READY_ENUM)     /* the format's kinds, then: */
  TRACE_READY_OTHER = WEFT_TRF_READY_NKINDS, /* a name not in the list */
  TRACE_READY_NKINDS
} trace_ready_kind;
#undef TRACE_READY_ENUM

trace_ready_kind trace_ready_kind_of(const char *name);
const char *trace_ready_kind_name(trace_ready_kind kind);

typedef struct trace_op {
  double ts, dur;      /* microseconds; dur >= 0 */
  int64_t correlation; /* args.correlation, or TRACE_NONE */
  int64_t bytes;       /* args.bytes, or -1 */
  int64_t task;        /* args.task, or TRACE_NONE */
  int64_t graph;       /* GPU ops: args["graph id"], or TRACE_NONE */
  uint32_t name, cat;  /* string ids (trace_model_str) */
  uint32_t task_name;  /* args.task_name, or 0 ("") */
  uint32_t lane;       /* GPU ops: index in gpu_lanes; API calls, tasks and
                          waits: index in threads; other: TRACE_NO_OP */
  uint32_t launch;     /* GPU ops: index of the API call with the same
                          correlation, or TRACE_NO_OP */
  uint32_t track;      /* index in tracks: the event's own (pid, tid) */
  uint8_t kind;        /* trace_op_kind */
  uint8_t copy;        /* trace_copy_dir */
  uint8_t host_mem;    /* trace_host_mem */
  uint8_t ready_by;    /* task slices: trace_ready_kind */
  /* Kernels: how many times its blocks fill every SM of the device at
   * once (args "blocks per SM" over "weft_resident_blocks_per_sm"; from
   * Kineto's "est. achieved occupancy %" only when above 1), or 0 when
   * the trace does not say; and the hardware channel it was submitted
   * on, plus one (args.weft_hw_channel), or 0. */
  float fill;
  uint32_t channel;
  double ready_delay; /* task slices: args.weft_ready_delay_us */
} trace_op;

#define TRACE_NO_OP UINT32_MAX

/* One GPU stream: device = args.device (else pid), stream = args.stream
 * (else tid, or the number in a tid like "stream 7"). */
typedef struct trace_gpu_lane {
  int64_t device, stream;
  size_t nops;
} trace_gpu_lane;

/* A pid or tid: JSON allows either a number or a string. */
typedef struct trace_id {
  int64_t num;
  uint32_t str; /* string id when is_str */
  int is_str;
} trace_id;

/* One CPU thread with API calls, task slices or waits, with the names from
 * "M" metadata events when given. */
typedef struct trace_thread {
  trace_id pid, tid;
  uint32_t name;         /* thread_name, or 0 */
  uint32_t process_name; /* process_name, or 0 */
  size_t nops;
} trace_thread;

/* One of weft check's implicit synchronisations (an instant of category
 * weft_check named "implicit sync"): the call ran over [start, end] (end
 * the instant, start end - args.stall_us, or end when not given). */
typedef struct trace_sync {
  double start, end;
  int64_t task;     /* args.task, or TRACE_NONE */
  uint32_t message; /* args.message, or 0 */
} trace_sync;

/* A stream told to wait for an event (an instant of category
 * weft_stream_wait): from ts on, the operations of (device, stream) wait
 * for those of (for_device, for_stream) issued up to recorded. */
typedef struct trace_stream_wait {
  double ts, recorded;
  int64_t device, stream, for_device, for_stream;
  int64_t task; /* the task that made the wait, or TRACE_NONE */
} trace_stream_wait;

/* A stream taken over (an instant of category weft_stream_takeover):
 * from ts on, task's operations on (device, stream) follow those that
 * task from queued there, an order no one declared. */
typedef struct trace_takeover {
  double ts;
  int64_t device, stream;
  int64_t task, from; /* task: TRACE_NONE for a plain thread */
} trace_takeover;

/* The (pid, tid) of an "X" event as written, whatever its kind: the
 * track Perfetto draws it on, whose slices must nest. */
typedef struct trace_track {
  trace_id pid, tid;
} trace_track;

/* The first event whose numeric pid or tid does not fit in 32 bits
 * (signed or unsigned), which Perfetto's JSON importer cuts to 32. */
typedef struct trace_wide_id {
  size_t count; /* such events */
  uint32_t name;
  int has_ts;
  double ts;
  int64_t pid, tid;
} trace_wide_id;

typedef struct trace_model {
  trace_op *ops; /* sorted by ts, ties in file order */
  size_t nops;
  trace_gpu_lane *gpu_lanes; /* sorted by device, then stream */
  size_t ngpu_lanes;
  trace_thread *threads; /* sorted by pid, then tid */
  size_t nthreads;
  trace_track *tracks; /* every X event's (pid, tid), in first-seen order */
  size_t ntracks;
  size_t count[TRACE_OP_NKINDS]; /* ops of each kind */

  /* Events read, by phase: "X" (complete), "M" (metadata), and the rest,
   * which are counted and ignored. */
  size_t events, complete, metadata, ignored;
  /* weft check's findings (instant events of cat weft_check), by kind. */
  size_t checks, check_races, check_syncs;
  double check_stall_us; /* summed stall_us of the implicit syncs */
  trace_sync *syncs;     /* the implicit syncs, in file order */
  size_t nsyncs, cap_syncs;
  /* The stream waits, in file order; weft_header: the file has weft's
   * header object (a weft trace, which records every wait weft makes). */
  trace_stream_wait *swaits;
  size_t nswaits, cap_swaits;
  int weft_header;
  trace_takeover *takeovers; /* in file order */
  size_t ntakeovers, cap_takeovers;

  /* What `weft trace check` looks at beyond the ops: the rank of a
   * top-level "distributedInfo" (-1 if none), and the ids of the launch
   * flows (cat "ac2g"): starts ("ph":"s") and ends ("ph":"f"), in file
   * order. */
  int64_t rank;
  /* 1 when the file is a bare array of events, not an object with a
   * "traceEvents" member (HTA reads only the latter). */
  int bare_array;
  trace_wide_id wide;
  /* weft's traces: the records the tracer dropped for want of memory
   * ("weft": {"dropped_records": N}); -1 when the file does not say. */
  int64_t dropped;
  /* weft's header says the host backend ("weft": {"backend": "host"}), and
   * its devices' executor threads (the first device's deviceProperties
   * "numSms"; 0 when not given): ops beyond them wait, whatever kind. */
  int host_backend;
  int64_t executors;
  /* The first device's warp slots per SM (deviceProperties
   * "maxThreadsPerMultiprocessor" / "warpSize"), or 0. */
  int64_t warps_per_sm;
  int64_t *flow_starts, *flow_ends;
  size_t nflow_starts, nflow_ends, cap_flow_starts, cap_flow_ends;

  /* Interned strings, all NUL-terminated: id 0 is "". */
  char *strings;
  size_t strings_len, strings_cap;
  size_t *string_offsets;
  size_t nstrings, string_offsets_cap;
  uint32_t *string_table; /* open addressing: string id + 1, or 0 */
  size_t string_table_cap;
} trace_model;

/* Where a load failed: a message naming the byte offset. */
typedef struct trace_error {
  char message[320];
} trace_error;

/* Loads the trace in buf[0, len) into m, which the caller frees with
 * trace_model_free (also after a failure). Returns 0, or -1 with the reason
 * in err. buf is not kept. */
int trace_model_load(trace_model *m, const void *buf, size_t len,
                     trace_error *err);

/* Reads the file at path ("-" for standard input) and loads it. */
int trace_model_load_file(trace_model *m, const char *path, trace_error *err);

void trace_model_free(trace_model *m);

/* The string with id (0 is ""). */
const char *trace_model_str(const trace_model *m, uint32_t id);

/* 1 for kernels, copies and memsets: the operations that run on a GPU. */
int trace_op_is_gpu(const trace_op *op);

/* "kernel", "memcpy", "memset", "runtime", "task", "wait", "range",
 * "other". */
const char *trace_op_kind_name(trace_op_kind kind);

/* "HtoD", "DtoH", "DtoD", "HtoH", "other" ("" for TRACE_COPY_NONE). */
const char *trace_copy_dir_name(trace_copy_dir dir);

/* Writes a thread's label into out: its thread_name, else "pid P tid T". */
void trace_thread_label(const trace_model *m, const trace_thread *t, char *out,
                        size_t size);

#endif
