/* The vocabulary of weft's trace files, in one place for the writer
 * (src/trace_write.c) and the reader (trace/), so that the two cannot drift
 * apart: the Chrome Trace Event fields, the categories that decide an op's
 * kind, the argument keys, the copy directions and the reasons a task was
 * ready. docs/TRACE.md describes the format.
 *
 * Names the reader accepts but weft never writes (the spellings of PyTorch's
 * profiler, Kineto, and of its older releases) are here too, marked "read
 * only", so the whole format the reader understands is on this page. Names
 * marked "written only" are for other viewers (Perfetto, chrome://tracing)
 * and are not interpreted by `weft trace`.
 *
 * Header-only and free of the library's internal names, because the
 * reader (trace/) includes it too. Internal: never installed. */
#ifndef WEFT_TRACE_FORMAT_H
#define WEFT_TRACE_FORMAT_H

/* ---- the file and its events ---- */

#define WEFT_TRF_TRACE_EVENTS "traceEvents" /* the array of events */
#define WEFT_TRF_PH "ph"                    /* the phase */
#define WEFT_TRF_NAME "name"
#define WEFT_TRF_CAT "cat"
#define WEFT_TRF_PID "pid"
#define WEFT_TRF_TID "tid"
#define WEFT_TRF_TS "ts"   /* start, microseconds */
#define WEFT_TRF_DUR "dur" /* duration, microseconds */
#define WEFT_TRF_ARGS "args"

/* The file's other members: the reader takes the rank and the dropped
 * count from them and skips the rest. */
#define WEFT_TRF_SCHEMA_VERSION "schemaVersion"
#define WEFT_TRF_DISPLAY_TIME_UNIT "displayTimeUnit"
#define WEFT_TRF_WEFT "weft" /* {version, backend, dropped_records} */
#define WEFT_TRF_DROPPED_RECORDS "dropped_records"
#define WEFT_TRF_BACKEND "backend" /* in "weft": the runtime's backend */
#define WEFT_TRF_BACKEND_HOST "host"
/* Kineto's device list; "numSms" is the host backend's executor threads
 * per device in weft's traces (their capacity: `weft trace explain`). */
#define WEFT_TRF_DEVICE_PROPERTIES "deviceProperties"
#define WEFT_TRF_NUM_SMS "numSms"
/* Kineto's, read to judge its kernels' "est. achieved occupancy %". */
#define WEFT_TRF_MAX_THREADS_PER_SM "maxThreadsPerMultiprocessor"
#define WEFT_TRF_WARP_SIZE "warpSize"
#define WEFT_TRF_DISTRIBUTED_INFO "distributedInfo" /* {"rank": N, ...} */
#define WEFT_TRF_RANK "rank"
/* Launch arrows: a flow from the API call to the GPU op it queued. */
#define WEFT_TRF_PH_FLOW_START "s"
#define WEFT_TRF_PH_FLOW_END "f"
#define WEFT_TRF_CAT_FLOW "ac2g"
#define WEFT_TRF_ID "id"

/* Phases: the reader analyses these two and counts the rest. */
#define WEFT_TRF_PH_COMPLETE "X"
#define WEFT_TRF_PH_METADATA "M"

/* Metadata ("M") events name processes and threads in args.name. */
#define WEFT_TRF_META_PROCESS_NAME "process_name"
#define WEFT_TRF_META_THREAD_NAME "thread_name"

/* ---- categories: an op's kind ---- */

#define WEFT_TRF_CAT_KERNEL "kernel"
#define WEFT_TRF_CAT_MEMCPY "gpu_memcpy"
#define WEFT_TRF_CAT_MEMSET "gpu_memset"
#define WEFT_TRF_CAT_RUNTIME "cuda_runtime" /* an API call */
#define WEFT_TRF_CAT_TASK "task"            /* a run slice of a weft task */
#define WEFT_TRF_CAT_WAIT "weft_wait"       /* a weft task waiting */
/* Its name says for what: the GPU (weft_sync, an event), or a test of
 * weft_wait_until (something outside weft: an MPI message). */
#define WEFT_TRF_WAIT_GPU "wait: GPU"
#define WEFT_TRF_WAIT_EXTERNAL "wait: weft_wait_until"
/* A user range (weft/range.h): PyTorch's category for record_function, so
 * that HTA and Perfetto show it as they show PyTorch's ranges. */
#define WEFT_TRF_CAT_RANGE "user_annotation"
/* A task's waits go on a lane of the task's own (docs/decisions/tracing.md,
 * "Wait lanes are 31-bit tids of their own"): on the host process, tids
 * from this base up, one per waiting task in order of task id, passing
 * over any tid a thread of the file already has. Written only: the
 * reader takes them as it takes any thread. */
#define WEFT_TRF_WAIT_TID_BASE 0x40000000
/* A weft check finding: an instant event ("ph":"i", thread-scoped), name
 * the kind ("race", "implicit sync"), args.message the line printed. */
#define WEFT_TRF_CAT_CHECK "weft_check"
#define WEFT_TRF_PH_INSTANT "i"
#define WEFT_TRF_ARG_MESSAGE "message"
/* implicit-sync findings: how long the call took, in microseconds */
#define WEFT_TRF_ARG_STALL_US "stall_us"
/* A stream told to wait for an event (weft_event_wait, weft_task_after,
 * data flow, a graph's replay): an instant on the calling thread, named
 * WEFT_TRF_NAME_STREAM_WAIT. Its args say which stream waits and for
 * which record: that stream's operations issued up to "recorded at" (µs,
 * as ts). weft_-prefixed keys, so that tools reading "stream" and
 * "device" of GPU ops never take it for one. */
#define WEFT_TRF_CAT_STREAM_WAIT "weft_stream_wait"
#define WEFT_TRF_NAME_STREAM_WAIT "stream wait"
#define WEFT_TRF_ARG_WAIT_DEVICE "weft_device"
#define WEFT_TRF_ARG_WAIT_STREAM "weft_stream"
#define WEFT_TRF_ARG_FOR_DEVICE "weft_waits_for_device"
#define WEFT_TRF_ARG_FOR_STREAM "weft_waits_for_stream"
#define WEFT_TRF_ARG_RECORDED_AT "weft_recorded_at"
/* A stream taken over past the streams made ahead: an instant on the
 * thread whose lease took it, named WEFT_TRF_NAME_TAKEOVER, with the
 * stream (WEFT_TRF_ARG_WAIT_DEVICE, WEFT_TRF_ARG_WAIT_STREAM), the task
 * that took it (WEFT_TRF_ARG_TASK, absent for a plain thread) and the task
 * whose queued work it held (WEFT_TRF_ARG_FROM_TASK): from then on the
 * taker's work there follows that work, an order no one declared. */
#define WEFT_TRF_CAT_TAKEOVER "weft_stream_takeover"
#define WEFT_TRF_NAME_TAKEOVER "stream taken over"
#define WEFT_TRF_ARG_FROM_TASK "weft_from_task"
/* Read only: Kineto's other spellings. The reader compares categories
 * without case, so older releases' capitalised ones ("Kernel") match too. */
#define WEFT_TRF_CAT_MEMCPY_ALT "memcpy"
#define WEFT_TRF_CAT_MEMSET_ALT "memset"
#define WEFT_TRF_CAT_DRIVER "cuda_driver"
#define WEFT_TRF_CAT_RUNTIME_ALT "runtime"
#define WEFT_TRF_CAT_DRIVER_ALT "driver"

/* ---- args ---- */

#define WEFT_TRF_ARG_DEVICE "device" /* GPU ops; default: pid */
#define WEFT_TRF_ARG_STREAM "stream" /* GPU ops; default: tid */
/* Links a GPU op to the API call that launched it. */
#define WEFT_TRF_ARG_CORRELATION "correlation"
#define WEFT_TRF_ARG_BYTES "bytes"         /* copies and memsets */
#define WEFT_TRF_ARG_DIRECTION "direction" /* copies: WEFT_TRF_DIR_* */
#define WEFT_TRF_ARG_TASK "task"           /* the weft task an op belongs to */
#define WEFT_TRF_ARG_TASK_NAME "task_name"
/* GPU ops replayed from a graph: the graph's id (CUPTI's graphId). */
#define WEFT_TRF_ARG_GRAPH "graph id"
#define WEFT_TRF_ARG_NAME "name" /* metadata events: the name given */
/* Task slices after a wake-up: why the task was ready (WEFT_TRF_READY_*)
 * and the microseconds from then to the slice's start. The reader wants
 * both or neither. */
#define WEFT_TRF_ARG_READY_BY "weft_ready_by"
#define WEFT_TRF_ARG_READY_DELAY_US "weft_ready_delay_us"
/* Kernels: the launch's shape, under Kineto's keys ("grid" and "block"
 * are [x, y, z]); the blocks and warps per SM are the grid's averages over
 * the device's SMs, the occupancy the share of an SM's warp slots they
 * take, at most what fits. */
#define WEFT_TRF_ARG_GRID "grid"
#define WEFT_TRF_ARG_BLOCK "block"
#define WEFT_TRF_ARG_REGISTERS "registers per thread"
#define WEFT_TRF_ARG_SHARED_MEMORY "shared memory"
#define WEFT_TRF_ARG_BLOCKS_PER_SM "blocks per SM"
#define WEFT_TRF_ARG_WARPS_PER_SM "warps per SM"
#define WEFT_TRF_ARG_OCCUPANCY "est. achieved occupancy %"
/* weft's: the kernel's blocks that fit on one SM at once (CUDA's
 * occupancy calculator over its registers, shared memory and block
 * size), so that blocks per SM / this is how many times it fills the
 * device (`weft trace explain`, "the GPU was full"). */
#define WEFT_TRF_ARG_RESIDENT "weft_resident_blocks_per_sm"
/* weft's: the hardware channel (queue) the driver submitted a kernel on,
 * as CUPTI says; streams that share one run their kernels in turn. */
#define WEFT_TRF_ARG_CHANNEL "weft_hw_channel"
/* Written only, under Kineto's key: copies and memsets. */
#define WEFT_TRF_ARG_BANDWIDTH "memory bandwidth (GB/s)"

/* ---- copies ---- */

/* Copy directions, as args.direction and inside copy names. The reader
 * compares args.direction without case. */
#define WEFT_TRF_DIR_HTOD "HtoD"
#define WEFT_TRF_DIR_DTOH "DtoH"
#define WEFT_TRF_DIR_DTOD "DtoD"
#define WEFT_TRF_DIR_HTOH "HtoH"
#define WEFT_TRF_DIR_PTOP "PtoP"   /* device to another device, as Kineto */
#define WEFT_TRF_DIR_OTHER "other" /* peer-to-peer, arrays, unknown */
/* Read only: the spellings of other tools. */
#define WEFT_TRF_DIR_HTOD_ALT "H2D"
#define WEFT_TRF_DIR_DTOH_ALT "D2H"
#define WEFT_TRF_DIR_DTOD_ALT "D2D"
#define WEFT_TRF_DIR_HTOH_ALT "H2H"

/* A copy is named as Kineto names it, "Memcpy HtoD (Pageable -> Device)":
 * the direction, then each side's memory. A trace without args.direction
 * gives the reader the direction from the name, and the name alone says
 * whether the host memory was pageable. */
#define WEFT_TRF_NAME_MEMCPY_FMT "Memcpy %s (%s -> %s)"
#define WEFT_TRF_MEM_DEVICE "Device"
#define WEFT_TRF_MEM_PAGEABLE "Pageable"
#define WEFT_TRF_MEM_PINNED "Pinned"
/* Written only: a memset's name, and a task slice's when the task has no
 * name. */
#define WEFT_TRF_NAME_MEMSET "Memset (Device)"
#define WEFT_TRF_NAME_TASK "task"

/* ---- why a task was ready (args.weft_ready_by) ---- */

/* The ready kinds, once: X(KIND, name written, what it measures). The list
 * generates the format's numbering (WEFT_TRF_READY_*, after NONE = 0), the
 * tracer's (WEFT__TR_READY_* in src/trace.h), the reader's (TRACE_READY_*
 * in trace/model.h), the names written and read, and the report's labels.
 * A new kind goes at the end, so that the numbers stay. */
#define WEFT_TRF_READY_KINDS(X)                                                \
  X(SPAWN, "spawn", "spawn -> first run")                                      \
  X(GPU, "gpu", "GPU done seen -> resumed")                                    \
  X(JOIN, "join", "task ended -> joiner runs")                                 \
  X(YIELD, "yield", "yield -> resumed")

#define WEFT_TRF_READY_ENUM(kind, name, what) WEFT_TRF_READY_##kind,
enum {
  WEFT_TRF_READY_NONE = 0,
  WEFT_TRF_READY_KINDS(WEFT_TRF_READY_ENUM) /* the list's kinds, then: */
  WEFT_TRF_READY_NKINDS
};
#undef WEFT_TRF_READY_ENUM

/* The name written for a WEFT_TRF_READY_* kind, or NULL for NONE and for
 * numbers outside the list. */
static inline const char *weft_trf_ready_name(int kind) {
  switch (kind) {
#define WEFT_TRF_READY_NAME(kind, name, what)                                  \
  case WEFT_TRF_READY_##kind:                                                  \
    return name;
    WEFT_TRF_READY_KINDS(WEFT_TRF_READY_NAME)
#undef WEFT_TRF_READY_NAME
  }
  return NULL;
}

/* What the delay before a slice of a WEFT_TRF_READY_* kind measures, for
 * the report's table, or NULL for NONE and for numbers outside the list. */
static inline const char *weft_trf_ready_what(int kind) {
  switch (kind) {
#define WEFT_TRF_READY_WHAT(kind, name, what)                                  \
  case WEFT_TRF_READY_##kind:                                                  \
    return what;
    WEFT_TRF_READY_KINDS(WEFT_TRF_READY_WHAT)
#undef WEFT_TRF_READY_WHAT
  }
  return NULL;
}

#endif
