/* The current stream, and waiting for it.
 *
 * Every GPU operation a task issues goes to its own stream, leased from a
 * per-device, per-priority pool on the first operation and returned when
 * the task's GPU work has completed. A plain thread gets a stream of its
 * own the same way, from the runtime it first used or opened (a thread
 * new to weft takes the most recently opened), so the same calls work in
 * tasks and threads. */
#ifndef WEFT_STREAM_H
#define WEFT_STREAM_H

#include "common.h"
#include "task.h"

WEFT_BEGIN_DECLS

typedef struct weft_stream weft_stream;

/* The calling task's (or thread's) stream, leased on first use; NULL with
 * the error recorded when there is no runtime or no stream could be made.
 * Costs a thread-local read once leased.
 * Errors: NULL, with WEFT_ESTATE (no runtime), WEFT_ENOMEM or a device
 * error recorded. Context: any thread; never blocks. */
WEFT_API weft_stream *weft_stream_current(void);

/* Waits for the work queued so far on the current stream, and nothing
 * else: other tasks' streams keep running. In a task the wait suspends the
 * task; on a plain thread it blocks. It also waits for the helper tasks of
 * weft_copy to pageable memory. Returns 0, or the first error found since
 * the last weft_sync in work this task (or thread) queued: a GPU operation
 * that failed on the device, a staged copy's helper (weft/error.h). Errors
 * the calls returned at once are not reported again.
 * Errors: WEFT_ESTATE (no runtime), that earlier error, or WEFT_ENOMEM and
 * device errors of the wait itself.
 * Context: any thread; may switch. */
WEFT_API int weft_sync(void);

/* Waits for all work on the current device (device 0 on a plain thread),
 * every stream of every task. Explicit and rarely needed: weft_sync is the
 * usual wait. It blocks the calling thread (in a task: its worker) for the
 * whole wait.
 * Errors: WEFT_ESTATE (no runtime), device errors.
 * Context: any thread; blocks the worker. */
WEFT_API int weft_device_sync(void);

/* Orders the current stream after all GPU work of another task, on the
 * device, without waiting for that work on the host. If the other task's
 * function is still running, the caller first waits (yielding) for it to
 * return, so that all of its work is queued. No-op for a task whose work
 * already completed, joined or detached since included (its handle may be
 * kept for this), and then the caller needs no stream of its own. A task
 * that has no stream yet, following one whose work is still queued,
 * continues on that task's stream (its order is then the wait): a chain
 * of tasks holds one stream, not one per task in flight.
 * Errors: WEFT_EINVAL (other NULL, or a task of another runtime),
 * WEFT_ESTATE (the task itself, or no runtime), WEFT_EDEADLK (other waits,
 * itself or through a chain of tasks, for the calling task, so that
 * neither would return: refused, changing nothing; weft_task_join says
 * more), WEFT_ENOMEM, device errors.
 * Context: any thread; may switch (until the other task's function has
 * returned). */
WEFT_API int weft_task_after(weft_task *other);

WEFT_END_DECLS

#endif
