/* Error codes. Every weft call that returns an int returns 0 or one of
 * these negative codes (weft_event_query's WEFT_EAGAIN is an answer, not a
 * failure), and records the failure's detail for weft_last_error_message().
 *
 * Terms of the "Errors:" lines:
 * - "no runtime" (WEFT_ESTATE): a plain thread has no runtime to use (none
 *   is open, or the one opened last was shut down); a thread whose first
 *   weft call cannot allocate its context gets WEFT_ENOMEM instead;
 * - inside a graph capture, the calls weft/graph.h lists as refused
 *   return WEFT_ESTATE, whether or not their own line repeats it;
 * - "device errors": a failed backend call: WEFT_EDEVICE, WEFT_ELOST after
 *   a CUDA error that destroyed the context, or WEFT_ENOMEM, WEFT_EINVAL,
 *   WEFT_EHANDLE, WEFT_ENODEV or WEFT_ENOTSUP where CUDA's error means that;
 * - a call that works on the current stream leases it on first use, which
 *   can fail with WEFT_ENOMEM or a device error;
 * - every call taking a weft_runtime * returns WEFT_EHANDLE for one that
 *   is not open (never opened, or shut down) and WEFT_EINVAL for NULL
 *   (weft_runtime_backend answers WEFT_BACKEND_AUTO). The handles of a
 *   runtime's tasks and events die with it: after weft_shutdown they must
 *   not be used (they are not checked: their memory is gone).
 *
 * A failed call changes nothing: outputs stay untouched and nothing leaks.
 * The exceptions:
 * - An error found after the call returned is kept for later: a GPU
 *   operation that failed on the device (a kernel's fault, a copy's), a
 *   staged copy's helper task, and the failures of weft_device_sync, of
 *   weft_sync's wait and (in a task) of weft_event_sync's. The caller's
 *   next weft_sync returns the first such error since the last weft_sync,
 *   and weft_task_join the task's first. An error a call returns at once
 *   (argument errors, ENOMEM, a launch refused) is the caller's to handle
 *   and is not reported again.
 * - weft_copy, weft_memset, weft_launch, weft_device_alloc,
 *   weft_device_free and weft_event_record lease the
 *   current stream before they check
 *   their arguments, and weft_cuda_stream, weft_cublas and
 *   weft_cublas_workspace before they check the backend; the stream stays
 *   leased until the task ends or the thread exits.
 * - weft_copy from pageable memory to the device of more than a chunk that
 *   fails while queuing the chunks' transfers leaves the transfers of the
 *   chunks before the failing one queued: that part of dst is written.
 * - weft_copy from the device to pageable memory that fails on a chunk
 *   leaves the earlier chunks queued, with the helper tasks that copy them
 *   into dst; the next weft_sync (or the task's end) waits for them.
 * - weft_map_chunks: chunks finished before the failure, and those the
 *   other map tasks had in flight, are written to out. When a map task
 *   cannot be spawned, the started ones still process all their chunks.
 * - weft_task_join returning the task's own error has joined and freed it.
 * - weft_shutdown returning WEFT_EBUSY has first waited for every task, and
 *   refused the spawns made meanwhile. Returning WEFT_EIO (trace file not
 *   written), WEFT_ENOMEM (trace written with records dropped) or the
 *   backend's WEFT_EBUSY, it has closed the runtime.
 * - weft_event_destroy failing in the backend has destroyed the event and
 *   set *ev to NULL all the same.
 * - weft_cublas_workspace sets *ptr to NULL and *bytes to 0 before any
 *   failure but a NULL argument.
 * - weft_init, when it tries CUDA (auto included), sets the environment
 *   variable CUDA_DEVICE_MAX_CONNECTIONS to 32 unless it is set, and
 *   initialises CUDA in the process, whether it then succeeds or not. */
#ifndef WEFT_ERROR_H
#define WEFT_ERROR_H

#include "common.h"

WEFT_BEGIN_DECLS

/* One list generates the enum, weft_strerror() and weft_err_name(). */
#define WEFT_ERRNO_MAP(X)                                                      \
  X(EINVAL, -1, "invalid argument")                                            \
  X(ENOMEM, -2, "out of memory")                                               \
  X(ENOTSUP, -3, "operation not supported by this backend")                    \
  X(ENODEV, -4, "no such device or backend")                                   \
  X(EBUSY, -5, "resource busy: work or objects still live")                    \
  X(EAGAIN, -6, "operation not complete yet")                                  \
  X(EHANDLE, -7, "invalid or destroyed handle")                                \
  X(EDEVICE, -8, "device operation failed")                                    \
  X(ELOST, -9, "device context lost; every later GPU call fails")              \
  X(ESTATE, -10, "call not valid in the current state")                        \
  X(ERANGE, -11, "value out of range")                                         \
  X(EIO, -12, "input/output error")                                            \
  X(EFORMAT, -13, "malformed input")                                           \
  X(EDEADLK, -14, "the wait would never end: tasks waiting for each other")

typedef enum weft_errno {
#define WEFT__ERR_ENUM(name, value, text) WEFT_##name = (value),
  WEFT_ERRNO_MAP(WEFT__ERR_ENUM)
#undef WEFT__ERR_ENUM
} weft_errno;

/* Human-readable text for an error code ("success" for 0, "unknown error"
 * for others). Never NULL; static storage.
 * Errors: none. Context: any thread; never blocks. */
WEFT_API const char *weft_strerror(int err);

/* The code's name without prefix, e.g. "EINVAL" ("OK" for 0, "UNKNOWN"
 * for others). Never NULL; static storage.
 * Errors: none. Context: any thread; never blocks. */
WEFT_API const char *weft_err_name(int err);

/* Details of the most recent failure on the calling thread (or, inside a
 * task, the calling task): which call failed, where, and for device errors
 * the backend's own error name and message, e.g.
 * "cudaMallocAsync: cudaErrorMemoryAllocation: out of memory (src/cuda/...)".
 * Empty string when nothing failed yet. Success does not clear it. The
 * string stays valid until the next failing weft call on this thread or
 * task (a task's, no longer than the task lives).
 * Errors: none. Context: any thread; never blocks. */
WEFT_API const char *weft_last_error_message(void);

/* The WEFT_E* code of that failure, 0 when nothing failed yet: for the
 * calls that return NULL on failure (weft_cublas(), weft_cuda_stream()).
 * Errors: none. Context: any thread; never blocks. */
WEFT_API int weft_last_error(void);

/* The backend's raw error code of that failure (a cudaError_t value on the
 * CUDA backend), or 0 when the failure did not come from the backend.
 * Errors: none. Context: any thread; never blocks. */
WEFT_API int weft_last_error_raw(void);

/* Records a failure as weft's own calls do, for libraries built on weft
 * (weft/mpi.h): weft_last_error_message() then returns the formatted text
 * (printf format) and weft_last_error_raw() raw (the library's own code,
 * or 0). Returns code, so that `return weft_error_set(...)` reports and
 * fails in one.
 * Errors: none. Context: any thread; never blocks. */
WEFT_API int weft_error_set(int code, int raw, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

WEFT_END_DECLS

#endif
