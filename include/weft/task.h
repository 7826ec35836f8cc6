/* Tasks: ordinary C functions run as fibers on the runtime's workers.
 *
 * Each task gets its own non-blocking stream on its first GPU operation, so
 * independent tasks overlap on the GPU without the program creating a
 * stream. Waiting for the GPU (weft_sync, weft_event_sync, weft_task_join)
 * suspends the task; its worker thread runs other tasks meanwhile. */
#ifndef WEFT_TASK_H
#define WEFT_TASK_H

#include "common.h"
#include "dataflow.h"
#include "runtime.h"

WEFT_BEGIN_DECLS

typedef struct weft_task weft_task;
typedef void (*weft_task_fn)(void *arg);

enum { WEFT_DEVICE_INHERIT = -1, WEFT_DEVICE_ANY = -2 };

typedef enum weft_priority {
  WEFT_PRIORITY_NORMAL = 0,
  /* Runs before normal tasks on its worker and gets a stream of the
   * device's greatest priority. */
  WEFT_PRIORITY_HIGH = 1
} weft_priority;

typedef struct weft_task_opts {
  size_t struct_size;     /* sizeof(weft_task_opts), set by _opts_init */
  const char *name;       /* copied (31 bytes kept); for traces and errors */
  weft_priority priority; /* default WEFT_PRIORITY_NORMAL */
  /* The device the task's GPU work goes to: an ordinal, WEFT_DEVICE_INHERIT
   * (the default: its spawner's device; device 0 from a plain thread that
   * has none), or WEFT_DEVICE_ANY (weft picks the device whose valid
   * instances hold the most bytes of the registered data the task
   * declares, weft/data.h, as they stand at spawn; with none, the device
   * with the fewest live tasks placed on it, ties going round in turn). */
  int device;
  /* What the task reads and writes, for ordering it after the earlier
   * tasks of its spawner that conflict (weft/dataflow.h); copied at
   * spawn. Default none: no ordering. */
  const weft_access *accesses;
  size_t naccesses;
} weft_task_opts;

/* Fills *opts with the defaults; NULL is ignored.
 * Errors: none. Context: any thread; never blocks. */
WEFT_API void weft_task_opts_init(weft_task_opts *opts);

/* Starts fn(arg) as a task. opts may be NULL. *task receives a handle that
 * must be passed to weft_task_join or weft_task_detach exactly once; task
 * may be NULL to detach at once. The fiber stack is taken when the task
 * first runs; if none can be had, fn never runs and the join returns
 * WEFT_ENOMEM. With accesses, from a caller capturing a graph, fn runs at
 * once as a step of the graph and *task is set to NULL (weft/dataflow.h).
 * Errors: WEFT_EINVAL (rt or fn NULL, bad opts->struct_size or priority,
 * an access with a NULL pointer, no bytes, bytes past the end of memory,
 * or a mode not WEFT_READ, WEFT_WRITE or WEFT_RW with WEFT_ACCESS_HOST
 * only beside WEFT_READ; accesses NULL with naccesses > 0),
 * WEFT_ENODEV (bad device), WEFT_ENOMEM, WEFT_ESTATE (the runtime is
 * shutting down: weft_shutdown is waiting; in a capture, a step refused),
 * WEFT_EINVAL (in a capture, a step placed on another device; accesses
 * declared by a task or thread of another runtime).
 * Context: any thread; never blocks (a step runs fn, which may yield). */
WEFT_API int weft_task_spawn(weft_runtime *rt, weft_task **task,
                             weft_task_fn fn, void *arg,
                             const weft_task_opts *opts);

/* Waits until test(arg) returns something other than WEFT_EAGAIN, and
 * returns that (0 for done, or the caller's own error code). From a task
 * it suspends: the runtime calls test from the poll loop that watches the
 * GPU, in batches, on whichever worker polls (never two calls at once for
 * one wait), and the worker runs other tasks meanwhile; so a task waiting
 * for something outside weft (an MPI request, weft/mpi.h) frees its worker
 * as a GPU wait does. On a plain thread it calls test again and again,
 * sleeping 1 to 100 us between calls. test must neither block nor switch
 * (no weft calls that wait), and may run on any thread. A test that takes
 * longer than 1 ms in one call is named on stderr (once per test function)
 * and polled from then on by a thread of weft's own, as a plain thread's
 * is, so that it holds up no other wait. Once weft_shutdown
 * has begun, a task's wait whose test is not done ends with WEFT_ESTATE
 * (what it waits for may never come; the shutdown would wait for ever).
 * Errors: test's, WEFT_EINVAL (test NULL), WEFT_ESTATE (no runtime).
 * Context: a task or plain thread of a runtime; may switch. */
WEFT_API int weft_wait_until(int (*test)(void *arg), void *arg);

/* weft_wait_until, saying what the test waits for: the watchdog's report
 * (weft_runtime_opts.watchdog_ms) names a task stalled in this wait by
 * what, e.g. "an MPI request (weft_mpi_wait)". what is not copied: it must
 * outlive the wait (a string literal does); NULL says "a test".
 * Errors and context: weft_wait_until's. */
WEFT_API int weft_wait_until_named(int (*test)(void *arg), void *arg,
                                   const char *what);

/* The device the calling task's GPU work goes to (weft_task_opts.device as
 * placed), or a plain thread's (0 unless it said otherwise); a negative
 * error if no runtime is open (WEFT_ESTATE).
 * Context: any thread; never blocks. */
WEFT_API int weft_task_device(void);

/* Waits until the task's function returned and the GPU work it queued has
 * completed, then frees the task: the handle is stale from then on, and
 * only weft_task_after still takes it (a no-op; a stale handle never
 * names a later task). In a task this yields; on a plain thread
 * it blocks, and meanwhile runs the joined task itself if it still waits
 * to start in the queue of tasks spawned by plain threads, resuming it
 * after its GPU waits, so that no thread's
 * wake-up lies between spawn, run and return (one plain thread at a time
 * per runtime does this; what the task spawns queues there too, for the
 * workers to steal, and a task that yields goes back to them). Returns the
 * task's first error found after the call that caused it had returned
 * (weft/error.h: a GPU operation that failed on the device, say; 0 if none),
 * with its message as "task 'name': ..."; the task is joined all the same.
 * A join that would never end is refused: when the task joined waits,
 * itself or through a chain of tasks each waiting for the next (in
 * weft_task_join, weft_task_after, or following by declared data), for
 * the calling task, the call fails with WEFT_EDEADLK, names the tasks of
 * the cycle, and changes nothing (the task may still be joined).
 * Errors: WEFT_EINVAL (NULL; from a task, a task of another runtime: a plain
 * thread may join any), WEFT_EHANDLE (already joined or detached), WEFT_ESTATE
 * (a task joining itself), WEFT_EDEADLK (a cycle of waits, above), or any
 * code as the task's error. Context: any thread; may switch. */
WEFT_API int weft_task_join(weft_task *task);

/* Lets the task free itself when it completes (at once if it has). A task
 * may detach itself.
 * Errors: WEFT_EINVAL (NULL), WEFT_EHANDLE (already joined or detached).
 * Context: any thread; never blocks. */
WEFT_API int weft_task_detach(weft_task *task);

/* Lets other ready tasks run (after a high-priority task's yield, a ready
 * normal task runs first); returns at once on a plain thread.
 * Errors: none. Context: any thread; may switch. */
WEFT_API void weft_yield(void);

/* The calling task, or NULL on a plain thread.
 * Errors: none. Context: any thread; never blocks. */
WEFT_API weft_task *weft_task_self(void);

/* The name of task, as given at spawn or "task-<id>" ("" for NULL), valid
 * while the handle is; weft_task_name(weft_task_self()) is the calling
 * task's ("" on a plain thread).
 * Errors: none. Context: any thread; never blocks. */
WEFT_API const char *weft_task_name(const weft_task *task);

/* Counts of a runtime's tasks, fiber stacks and streams, as of the call. */
typedef struct weft_task_stats {
  size_t struct_size; /* set to sizeof(weft_task_stats) */
  /* Spawned and not yet done (a task is done once its GPU work is),
   * joined or not. */
  uint64_t live;
  uint64_t stacks_in_use; /* fiber stacks of started, unfinished tasks */
  /* Stacks mapped without a guard page (their overflow is found by a
   * canary instead): past an eighth of vm.max_map_count guarded stacks. */
  uint64_t stacks_unguarded;
  /* Streams the runtime holds for tasks and plain threads, leased or free
   * to lease: the weft_runtime_opts.streams made at weft_init, per device,
   * and those made since because more were in use at once. A task holds
   * its stream until its GPU work is done, after it returns too (unless a
   * task that follows it by declared data, or past the streams made ahead
   * any task, takes it over); more than were made ahead means some were
   * made while the GPU worked, where CUDA can make the maker wait
   * (docs/ENV.md, WEFT_STREAMS). Filled only when
   * struct_size covers it (a caller built before it was added gets the
   * rest). */
  uint64_t streams;
  /* Leases that took over a stream holding another task's queued work,
   * past the streams made ahead (docs/ENV.md, WEFT_STREAMS): the work
   * queued there later waits for that task's, an order no one declared
   * (`weft trace explain` shows what it cost). Filled only when
   * struct_size covers it. */
  uint64_t streams_taken_over;
} weft_task_stats;

/* Fills *out. Errors: WEFT_EINVAL (NULL, or out->struct_size smaller than
 * this struct up to stacks_unguarded, or larger than sizeof). Context: any
 * thread; never blocks. */
WEFT_API int weft_task_stats_get(weft_runtime *rt, weft_task_stats *out);

WEFT_END_DECLS

#endif
