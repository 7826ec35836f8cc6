/* The runtime: one backend, its devices, and (later) the task scheduler. */
#ifndef WEFT_RUNTIME_H
#define WEFT_RUNTIME_H

#include "common.h"
#include "device.h"

WEFT_BEGIN_DECLS

typedef struct weft_runtime weft_runtime;

/* The most devices the host backend emulates (weft_runtime_opts.
 * host_devices). */
#define WEFT_HOST_DEVICES_MAX 16

typedef struct weft_runtime_opts {
  size_t struct_size; /* sizeof(weft_runtime_opts), set by _opts_init */
  /* Which backend to open. WEFT_BACKEND_AUTO (the default) reads the
   * environment variable WEFT_BACKEND (auto|host|cuda) and, for auto, picks
   * CUDA when a device is present. */
  weft_backend_kind backend;
  /* Host backend: executor threads per emulated device, 1 to 1024; 0
   * means the environment variable WEFT_HOST_THREADS (1 to 1024) or,
   * unset, the CPU cores the process may run on (as for workers)
   * shared out between the devices, at least 2 each (max(2, cores) with
   * one device). */
  int host_threads;
  /* Worker threads that run tasks, 1 to 1024; 0 means the environment
   * variable WEFT_WORKERS (1 to 1024) or, unset, the number of CPU cores
   * the process may run on (its affinity mask, and its control groups'
   * CPU quota rounded up: under taskset, a container's cpuset or CPU
   * limit, or an MPI launcher that binds each rank to a core, fewer than
   * the machine's). */
  int workers;
  /* Bytes of each task's fiber stack (rounded up to pages; a guard page
   * below it catches overflow); 0 means 64 KiB. */
  size_t stack_size;
  /* Records a trace of every GPU operation, task run and wait, written at
   * weft_shutdown as Chrome Trace Event JSON (Perfetto opens it; `weft
   * trace report` analyses it); weft_init empties the file, so a run that
   * never shuts down leaves it empty. NULL reads the environment variable
   * WEFT_TRACE; unset means no tracing. In an MPI job (the launcher's
   * rank variables) the file records the rank, %r in the path is replaced
   * by it, and without %r each rank writes path-rankN (before a .json
   * ending), so that ranks never share a file. */
  const char *trace_path;
  /* Host backend: devices it emulates, 1 to 16, each with its own
   * streams, memory, executor threads and device_sync; 0
   * means the environment variable WEFT_HOST_DEVICES (1 to 16) or, unset,
   * 1. The CUDA backend has the devices it has. */
  int host_devices;
  /* weft check (docs/GUIDE.md, "Checking"): 1 reports races between
   * tasks, undeclared accesses, stale registered data, implicit
   * synchronisations and default-stream work on stderr, 0 does not; -1
   * (the default) reads the environment variable WEFT_CHECK (0 or 1; unset
   * means 0). Off, it costs a NULL test per call. */
  int check;
  /* Pinned staging of a copy from or to pageable memory (weft_copy): the
   * blocks (stage_chunk_kib each) one copy may hold, 2 to 256, reused as
   * its transfers finish; 0 means the environment variable
   * WEFT_STAGE_CHUNKS (2 to 256) or, unset, two per worker (8 to 32) to
   * the device and 64 from it. A copy to pageable memory larger than its
   * blocks holds the caller (suspended) until the rest fits. */
  int stage_chunks;
  /* Priority-aware admission: while any WEFT_PRIORITY_HIGH task lives, a
   * normal-priority task keeps at most this many of its operations queued
   * and unfinished on its stream, and its next operation waits (the task
   * suspended, never a thread) until the oldest finishes or no high task
   * is left; so a high task's work meets at most that much of others'
   * ahead of it on the device, where stream priority alone orders only
   * blocks not yet started. While a high task runs on a worker, a normal
   * task's next operation also waits for it to stop running (1 ms at
   * most), so that the two do not contend in the driver as they issue.
   * 1 to 64; 0 is off; -1 (the default) reads the environment variable
   * WEFT_ADMISSION (0 to 64; unset means 1). The cost: the held tasks'
   * throughput while high tasks live, and an event recorded per operation
   * then; nothing while no high-priority task lives. */
  int admission;
  /* Streams made at weft_init for each device, of normal priority (a
   * WEFT_PRIORITY_HIGH task's stream is made when first needed), that
   * tasks and plain threads lease before any is made on demand; 1 to
   * 65536; 0 means the environment variable WEFT_STREAMS (1 to 65536)
   * or, unset, 32. Past this many streams of a device and priority, a
   * task that needs one takes over the stream of the task that returned
   * longest ago with GPU work still queued (or of a write-back of
   * registered data waiting for its copy), which then runs before its
   * own, and a stream is made only when there is none (not under weft
   * check): on CUDA a stream made while the GPU works can wait for all
   * its queued work, and every thread's CUDA calls with it
   * (docs/decisions/cuda.md, "Streams past those made ahead are taken
   * over"). Set it to the tasks that hold a stream at once in a program
   * whose GPU work waits for other tasks, as a kernel spinning on a flag
   * that a later task sets does: behind it, a taken-over stream or one
   * being made can wait for ever. */
  int streams;
  /* The watchdog: a thread that looks at every task a quarter of this
   * many milliseconds apart and, on stderr, names each task that has made
   * no progress (not run, not ended, not moved on from one wait to the
   * next) for longer, with what it waits for: GPU work on a stream, a
   * join, weft_task_after, a task it follows by declared data, a
   * weft_wait_until test (weft_wait_until_named says which, as an MPI
   * request), admission, or a worker to run it; once per stall. 1 to
   * 86 400 000 (a day); 0 is off; -1 (the default) reads the environment
   * variable WEFT_WATCHDOG (seconds, decimals allowed: 0.001 to 86400; 0
   * or unset means off). Off, it costs a branch where a task changes
   * state; on, a clock read there too, and a look at every task under the
   * runtime's lock each quarter of the limit. */
  int watchdog_ms;
  /* Data that moves itself (weft/data.h): the bytes of registered data's
   * instances each device may hold; past it, a task that needs a new
   * instance first evicts ones that no running task holds, those the
   * tasks spawned will use last first (weft/data.h), writing back those
   * whose only valid copy they are. 0
   * means the environment variable WEFT_DATA_LIMIT (bytes, or with a K,
   * M or G suffix for powers of 1024) or, unset, no limit: the device's
   * memory (an allocation that fails for want of it evicts too). */
  size_t data_limit;
  /* Data that moves itself: 1, a task spawned declaring a read of
   * registered data starts the copy of it to its device at the spawn,
   * where the room is free, rather than when it runs (weft/data.h,
   * "Copies at spawn"); 0, copies start at weft_data_get. -1 (the
   * default) reads the environment variable WEFT_DATA_PREFETCH (0 or 1;
   * unset means 0). weft check turns it off. */
  int data_prefetch;
  /* Pinned staging's block, the chunk a pageable copy moves at a time, in
   * KiB: 64 to 65 536 (64 MiB); 0 means the environment variable
   * WEFT_STAGE_CHUNK_KIB (64 to 65536) or, unset, 4096 (4 MiB). Smaller
   * blocks hold less pinned memory (stage_chunks of them a copy) and
   * start a copy's first transfer sooner, but pay a transfer's fixed cost
   * more often (docs/decisions/memory.md). */
  int stage_chunk_kib;
} weft_runtime_opts;

/* Fills *opts with the defaults; NULL is ignored.
 * Errors: none. Context: any thread; never blocks. */
WEFT_API void weft_runtime_opts_init(weft_runtime_opts *opts);

/* Opens a runtime. opts may be NULL for the defaults; a struct_size
 * smaller than today's (an older struct) is accepted. On success *rt is the
 * new runtime: the calling thread's calls use it from now on unless the
 * thread already uses another open runtime, and it is the one threads new
 * to weft take; on failure *rt is untouched.
 * Under WEFT_BACKEND_AUTO any failure to open CUDA (not only a missing
 * device) falls back to the host backend.
 * Errors: WEFT_EINVAL (rt NULL; bad struct_size, backend, thread count or
 * stack_size, which must lie in 16 KiB .. 1 GiB; a trace path too long
 * for a file name (4 KiB with the rank's suffix); a watchdog_ms out of
 * range; a WEFT_BACKEND, WEFT_WORKERS, WEFT_HOST_THREADS, WEFT_WATCHDOG,
 * WEFT_DATA_LIMIT or other variable's value (docs/ENV.md) that is not valid,
 * named in the message; backend names are case-insensitive), WEFT_ESTATE
 * (called from a task), WEFT_ENODEV (the chosen backend is not built or has no
 * device), WEFT_ENOMEM, WEFT_EBUSY (tracing while another runtime traces),
 * WEFT_EIO (the trace file cannot be written: checked here, not at shutdown),
 * device errors.
 * Context: plain thread only; blocks the worker (the calling thread) while
 * the backend opens and the worker threads start. */
WEFT_API int weft_init(weft_runtime **rt, const weft_runtime_opts *opts);

/* Waits for every task (joined or not, detached included) to complete,
 * then closes the runtime and frees everything it owns; handles of tasks
 * never joined become invalid. While it waits, spawns are refused with
 * WEFT_ESTATE, those of running tasks too, and with them the calls that
 * spawn helper tasks: weft_map_chunks, weft_copy to pageable memory and
 * weft_copy of more than one staging block (stage_chunk_kib) from it.
 * Returns WEFT_EBUSY, and closes nothing, while events or allocations
 * made through it are still live (it has waited for the tasks all the
 * same).
 * Errors: WEFT_EINVAL (rt NULL), WEFT_EHANDLE (rt is not an open runtime:
 * shut down already, or never opened), WEFT_ESTATE (called from a task),
 * WEFT_EBUSY, WEFT_EIO (the trace file could not be written; the runtime
 * is closed all the same, and a second shutdown of it is WEFT_EHANDLE),
 * WEFT_ENOMEM (the trace is written and valid, but records were dropped
 * for want of memory: the message and the file's "dropped_records" say
 * how many; the runtime is closed all the same).
 * No other thread may be inside a weft call on this runtime while it shuts
 * down (a plain thread's weft_copy or weft_sync, say): its context and
 * stream are released under it. Finish or join such threads first.
 * Context: plain thread only; blocks the worker (the calling thread) until
 * every task has completed, and when tracing for a device-wide sync. */
WEFT_API int weft_shutdown(weft_runtime *rt);

/* The backend the runtime opened; WEFT_BACKEND_AUTO for NULL or a runtime
 * not open.
 * Errors: none. Context: any thread; never blocks. */
WEFT_API weft_backend_kind weft_runtime_backend(const weft_runtime *rt);

/* The runtime the calling task belongs to, or the one a plain thread's
 * weft calls use (the first it used or opened while that is open, else the
 * newest open); NULL when none is open.
 * Errors: NULL, with WEFT_ESTATE recorded. Context: any thread; never
 * blocks. */
WEFT_API weft_runtime *weft_runtime_current(void);

/* Sets rt's priority-aware admission depth from now on
 * (weft_runtime_opts.admission: 1 to 64, 0 off); a task held by it sees
 * the change at once (0 releases it).
 * Errors: WEFT_EINVAL (rt NULL, depth out of range), WEFT_EHANDLE (rt not
 * open). Context: any thread or task; never blocks. */
WEFT_API int weft_runtime_set_admission(weft_runtime *rt, int depth);

/* Number of devices of the runtime's backend (the host backend: those it
 * emulates, weft_runtime_opts.host_devices, 1 by default).
 * Errors: WEFT_EINVAL (NULL argument), WEFT_EHANDLE (rt not open).
 * Context: any thread; never blocks. */
WEFT_API int weft_device_count(weft_runtime *rt, int *count);

/* Properties of device dev; the memory figures are read now, the rest at
 * weft_init. *info is written only on success.
 * Errors: WEFT_EINVAL (NULL argument), WEFT_ENODEV (no such device), device
 * errors. Context: any thread; never blocks. */
WEFT_API int weft_device_get_info(weft_runtime *rt, int dev,
                                  weft_device_info *info);

/* Whether a weft_copy between memory of devices dev and peer goes device to
 * device (*direct = 1: CUDA peer access is possible between them, or the
 * host backend's emulated devices, whose memory is the host's) or is
 * staged through host memory by the driver (0). Either way such copies
 * work; a kernel is never given another device's memory (weft_launch
 * refuses it). dev == peer: 1.
 * Errors: WEFT_EINVAL (NULL argument), WEFT_ENODEV (no such device),
 * device errors. Context: any thread; never blocks. */
WEFT_API int weft_device_peer(weft_runtime *rt, int dev, int peer, int *direct);

WEFT_END_DECLS

#endif
