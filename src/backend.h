/* The backend ops table: the only way the core reaches a device.
 *
 * The core (backend.c) owns handle memory, validation and bookkeeping; a
 * backend implements the ops below and may assume every argument was
 * checked: handles are live and of this backend, sizes are non-zero,
 * pointers non-NULL, launch shapes within the device's limits, priorities
 * clamped to the device's range. Backends translate their own errors into
 * WEFT_E* codes with weft__err_raw(), keeping the raw code and message.
 *
 * Semantics every backend provides (checked by tests/conformance/):
 * - Operations on one stream run in issue order; operations on different
 *   streams are independent and may run at the same time.
 * - An event completes when its stream has passed the point where it was
 *   recorded; re-recording moves that point. An event never recorded counts
 *   as complete for query, sync and waits.
 * - stream_wait_event holds back later work on that stream alone, until the
 *   event's most recent record (as of the wait call) completes.
 * - Streams of higher priority (numerically smaller) are served first when
 *   the device cannot run everything at once.
 * - device_alloc/device_free are stream-ordered: memory freed on a stream is
 *   reused only after the work queued before the free has completed.
 * - Enqueue calls return once queued; only *_sync block the caller. */
#ifndef WEFT__BACKEND_H
#define WEFT__BACKEND_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "pool.h"
#include "ptrmap.h"
#include "trace_order.h"
#include "weft/device.h"
#include "weft/error.h"
#include "weft/kernel.h"

/* Set while weft makes device calls of its own that a backend's watcher of
 * raw calls (CUDA: CUPTI, cuda_checker.c) would otherwise report to weft
 * check: they are reported at weft's level, or are deliberate. */
extern _Thread_local int weft__check_quiet;

/* Devices a runtime uses at most (weft_init refuses more). */
#define WEFT__MAX_DEVICES 64

typedef struct weft__backend weft__backend;
typedef struct weft__stream weft__stream;
typedef struct weft__event weft__event;

/* What a graph capture on a stream has gathered so far (graph.c owns it;
 * the core's copy, memset and launch add to it). */
typedef struct weft__capture {
  const void **ptrs; /* pointers the recorded work uses, for graph refs */
  size_t nptrs, cap;
  int failed; /* first error of a recorded call, or 0 */
  /* A data-flow step's function is running (graph.c): a call refused now
   * fails the capture, not just the call (door.c). */
  int in_step;
  /* Under weft check: what the recorded work reads and writes, checked
   * again at every replay (check.h). */
  struct weft__check_span *spans;
  size_t nspans, cap_spans;
  struct weft__steps *steps; /* data-flow steps inside it (graph.c) */
} weft__capture;

/* A backend's stream struct starts with this. */
enum { WEFT__OK_RANGES = 8 };

struct weft__stream {
  weft__obj hdr;
  int priority; /* clamped to the device's range */
  uint32_t id;  /* small number naming the stream in traces; from 1, the
                   backend's own */
  weft__capture *capture; /* while a graph is captured on it (graph.c) */
  /* While it captures: an event recorded just before, done once the work
   * queued before the capture is (event_pool.c's lock; graph.c). */
  struct weft__event *fence;
  /* Address ranges whose pointers backend.c's launch check found good at
   * the registry's generation ok_gen: a whole allocation, or a pointer
   * alone where weft knows none. A launch whose pointer-sized arguments
   * all lie in them looks nothing up. Written by the stream's holder
   * alone; ok_next is the entry replaced next. */
  uintptr_t ok_lo[WEFT__OK_RANGES], ok_hi[WEFT__OK_RANGES];
  unsigned ok_next;
  uint64_t ok_gen;
  /* In its runtime's pool, leased to nobody (stream_pool.c, under the
   * lifecycle lock). */
  int pooled;
};

enum {
  WEFT__EVENT_TIMING = 1u << 0,   /* elapsed time can be read */
  WEFT__EVENT_BLOCKING = 1u << 1, /* event_sync sleeps rather than spins */
  /* Queried again and again by the wait set: the backend may make its
   * queries cheap at some cost to its records (CUDA: cuda_completion.c). */
  WEFT__EVENT_POLLED = 1u << 2,
};

/* A backend's event struct starts with this. */
struct weft__event {
  weft__obj hdr;
  unsigned flags;
  int recorded;            /* set by the core on the first record */
  weft__trace_mark traced; /* its last record in a trace (trace_order.h) */
  unsigned shares;         /* holders beyond the first (event_pool.c's lock) */
  /* Syncs waiting on it (the backend's lock): a destroy meanwhile only
   * dooms it, and the last of them destroys it (weft__event_hold). */
  unsigned waiters;
  int doomed;
};

typedef enum weft__copy_kind {
  WEFT__COPY_DEFAULT = 0, /* inferred from the pointers (unified addressing) */
  WEFT__COPY_H2D,
  WEFT__COPY_D2H,
  WEFT__COPY_D2D,
  WEFT__COPY_H2H,
} weft__copy_kind;

enum {
  WEFT__MEM_PAGEABLE = 1, /* ordinary host memory: copies would block */
  WEFT__MEM_PINNED,       /* page-locked host memory */
  WEFT__MEM_DEVICE,       /* device or managed memory */
};

typedef struct weft__backend_config {
  int host_threads; /* host backend executor threads; 0 = default */
  int host_devices; /* host backend devices, >= 1 */
  /* CUDA: no completion flags, every wait asks the driver
   * (WEFT_CUDA_FLAGS=0; src/cuda/cuda_completion.c). */
  int cuda_no_flags;
} weft__backend_config;

struct weft__backend_ops {
  weft_backend_kind kind;
  const char *name;
  size_t backend_size; /* bytes of the backend's struct (starts with
                          struct weft__backend) */
  size_t stream_size;  /* bytes of its stream struct */
  size_t event_size;   /* bytes of its event struct */

  /* Opens the backend in the zeroed memory the core allocated. On failure it
   * releases everything it took. WEFT_ENODEV when no device is usable. */
  int (*open)(weft__backend *b, const weft__backend_config *cfg);
  /* Releases everything; the core has checked nothing is live. */
  void (*close)(weft__backend *b);

  int (*device_count)(weft__backend *b, int *count);
  int (*device_info)(weft__backend *b, int dev, weft_device_info *info);
  /* Waits for all work on the device, every stream. */
  int (*device_sync)(weft__backend *b, int dev);
  /* Optional: makes dev the calling thread's current device. The scheduler
   * calls it whenever a task resumes, since fibers move between threads and
   * code in the task (a <<<>>> launch) relies on the current device. */
  void (*bind_device)(weft__backend *b, int dev);
  /* Optional, with bind_device: the calling thread's current device, or
   * -1 if it cannot be told; a plain thread that ran tasks (the guest slot,
   * sched.c) binds it again after. */
  int (*current_device)(weft__backend *b);

  /* hdr.dev and priority are set. Non-blocking with respect to any default
   * stream. */
  int (*stream_init)(weft__backend *b, weft__stream *s);
  /* Work already queued still completes. */
  int (*stream_fini)(weft__stream *s);
  int (*stream_sync)(weft__stream *s);
  /* 0 when all queued work completed, else WEFT_EAGAIN. */
  int (*stream_query)(weft__stream *s);
  int (*stream_wait_event)(weft__stream *s, weft__event *e);

  int (*event_init)(weft__backend *b, weft__event *e); /* hdr.dev, flags set */
  int (*event_fini)(weft__event *e);
  int (*event_record)(weft__event *e, weft__stream *s);
  /* 0 when complete, else WEFT_EAGAIN. */
  int (*event_query)(weft__event *e);
  int (*event_sync)(weft__event *e);
  /* Both recorded, completed, timing-enabled and of one device (checked by
   * the core except completion: WEFT_EAGAIN when either is pending). */
  int (*event_elapsed)(weft__event *start, weft__event *end, float *ms);

  int (*copy)(weft__stream *s, void *dst, const void *src, size_t n,
              weft__copy_kind kind);
  int (*memset)(weft__stream *s, void *dst, int value, size_t n);
  /* The kernel has the function this backend needs. args holds k->nargs
   * pointers to parameter values, copied before launch returns. */
  int (*launch)(weft__stream *s, const weft_kernel *k, weft_dim3 grid,
                weft_dim3 block, size_t shmem, void **args);

  /* Optional: asks the backend to call fn(arg) whenever an event record
   * completes, from whatever thread sees it, so that sleeping workers wake
   * for it. fn must be cheap and must not call back into the backend. */
  void (*set_completion_hook)(weft__backend *b, void (*fn)(void *), void *arg);

  /* Optional: tracing. trace_start begins recording GPU operations into
   * the tracer (trace.h) and trace_stop flushes and ends it; trace_task
   * tells which task (id, name) runs on the calling thread from now on, 0
   * when none, so GPU records can name it. */
  int (*trace_start)(weft__backend *b);
  void (*trace_stop)(weft__backend *b);
  void (*trace_task)(weft__backend *b, uint64_t id, const char *name);
  /* Optional: the number a trace gives stream s's operations (CUDA:
   * CUPTI's stream id); without it, s->id. */
  uint32_t (*trace_stream_id)(weft__stream *s);

  /* Optional: weft check (check.h) on, b->check set: the backend watches
   * what the core cannot see (CUDA: raw runtime calls inside tasks), until
   * check_stop. */
  void (*check_start)(weft__backend *b);
  void (*check_stop)(weft__backend *b);

  /* Optional: the stream as the backend's own API names it (CUDA: its
   * cudaStream_t), for libraries bound to it (weft/library.h); without
   * it, the weft__stream itself. */
  void *(*native_stream)(weft__stream *s);

  /* Optional: releases what library integrations cached (cuBLAS handles)
   * at shutdown, while the device is still open. */
  void (*release_libraries)(weft__backend *b);

  /* Optional: what memory p points to (WEFT__MEM_*). Without it, every
   * pointer can be copied asynchronously as it is (the host backend). */
  int (*ptr_kind)(weft__backend *b, const void *p);
  /* Optional: 1 if p, in device memory weft freed, is live device memory
   * again, handed out by the driver to someone else (CUDA: a pool or the
   * program's own allocation), so that it is not refused as freed. Called
   * with the backend's lock held. Without it, the backend tells the core
   * when freed memory goes back to the system (weft__backend_forget). */
  int (*reused)(weft__backend *b, const void *p);

  /* Optional: loads the kernel's code now. CUDA loads kernels lazily, at
   * their first launch, and loading may wait for kernels running on other
   * streams; preloading keeps a first launch from waiting on them. */
  int (*kernel_preload)(weft__backend *b, int dev, const weft_kernel *k);

  /* Optional: graphs (weft/graph.h); without them weft_graph_begin is
   * WEFT_ENOTSUP. The core has checked the capture rules. capture_begin
   * starts recording s's work: copy, memset and launch on s are recorded,
   * not run, until capture_end stops it, into a new graph (*g, the
   * backend's) when *g is NULL, else into *g in place (same shape, else
   * WEFT_EINVAL and *g unchanged). On failure no graph is made, and the
   * capture is over all the same. graph_launch queues one replay of g on
   * s, after any earlier replay of g; graph_destroy frees g once the
   * replays queued have run. */
  int (*capture_begin)(weft__stream *s);
  int (*capture_end)(weft__stream *s, void **g);
  int (*graph_launch)(weft__stream *s, void *g);
  void (*graph_counts)(void *g, size_t *ops, size_t *kernels, size_t *copies);
  void (*graph_destroy)(weft__backend *b, void *g);
  /* Optional (absent: every pair direct, as the host backend's emulated
   * devices are): whether copies between dev and peer (dev != peer, both
   * valid) go device to device. */
  int (*device_peer)(weft__backend *b, int dev, int peer, int *direct);
  /* 1: other streams may join a capture (an event recorded on it and
   * waited for there), and the captured graph keeps their branches and
   * the edges between them (CUDA). 0: a capture is one stream's list, and
   * a data-flow step inside it runs on that stream (the host backend). */
  int capture_forks;

  int (*device_alloc)(weft__stream *s, size_t n, void **out);
  int (*device_free)(weft__stream *s, void *p);
  int (*pinned_alloc)(weft__backend *b, size_t n, void **out);
  int (*pinned_free)(weft__backend *b, void *p);
};

/* The registry of allocations (ptrmap.h) and its kinds of entry. */
enum { WEFT__ALLOC_DEVICE = 1, WEFT__ALLOC_PINNED = 2 };

/* A backend's struct starts with this. */
struct weft__backend {
  const struct weft__backend_ops *ops;
  pthread_mutex_t lock; /* pools and the allocation registry */
  weft__pool streams, events;
  weft__ptrmap *allocs; /* device and pinned allocations, freed ones too */
  /* Freed device ranges remembered in allocs, mirrored for a launch to
   * skip its lookups without the lock while there are none. */
  atomic_size_t nfreed;
  /* Bumped, under lock, whenever the registry changes what a lookup would
   * answer (an allocation made, freed or forgotten). */
  atomic_uint_fast64_t gen;
  struct weft__checker *check; /* weft check (check.h), or NULL: off */
  int ndev;
  weft_device_info *info; /* ndev entries, read at open */
  /* The last stream id given, under lock: ids are this backend's (one per
   * runtime), so weft check's clocks, indexed by them, stay as small as
   * the runtime's own streams, however many runtimes a process opens. */
  uint32_t last_stream_id;
};

/* Backends built into this library, NULL-terminated. */
extern const struct weft__backend_ops *const weft__backends[];

/* ---- the core's entry points: validate, then call the backend ---- */

/* The calling thread's current device, or -1 when the backend binds none
 * or cannot tell: what a plain thread that ran tasks is bound to again. */
static inline int weft__backend_current_device(weft__backend *b) {
  const struct weft__backend_ops *ops = b->ops;
  return ops->bind_device && ops->current_device ? ops->current_device(b) : -1;
}

/* Opens a backend of the given kind; AUTO picks CUDA when it has a device.
 * Reads WEFT_BACKEND only if kind is AUTO and use_env is set. */
int weft__backend_open(weft_backend_kind kind, int use_env,
                       const weft__backend_config *cfg, weft__backend **out);
/* WEFT_EBUSY (closing nothing) while streams, events or allocations live. */
int weft__backend_close(weft__backend *b);

int weft__stream_create(weft__backend *b, int dev, int priority,
                        weft__stream **out);
/* Sets *s to NULL on success. */
int weft__stream_destroy(weft__stream **s);
int weft__stream_sync(weft__stream *s);
int weft__stream_query(weft__stream *s);
int weft__stream_wait_event(weft__stream *s, weft__event *e);
/* Tells the trace that a lease took s over with task from's work queued
 * on it (trace_order.h); nothing while nothing is traced. */
void weft__stream_trace_takeover(weft__stream *s, uint64_t from);

int weft__event_create(weft__backend *b, int dev, unsigned flags,
                       weft__event **out);
int weft__event_destroy(weft__event **e);
/* A sync's hold on e while it waits (weft_event_sync): a destroy from
 * another thread meanwhile leaves e queryable until the last hold goes,
 * which then finishes it. Hold fails (WEFT_EHANDLE) on a destroyed e. */
int weft__event_hold(weft__event *e, const char *call);
int weft__event_unhold(weft__event *e);
int weft__event_record(weft__event *e, weft__stream *s);
int weft__event_query(weft__event *e);
int weft__event_sync(weft__event *e);
/* 0 if e is live and was recorded at least once; else the error (for
 * call), reported: WEFT_ESTATE for an event never recorded. */
int weft__event_recorded(weft__event *e, const char *call);
int weft__event_elapsed(weft__event *start, weft__event *end, float *ms);

/* The size of the live device allocation p starts, or 0. */
size_t weft__device_alloc_size(weft__backend *b, const void *p);
/* The backend gave [p, p + n) back to the system (the host backend's
 * blocks past its cache): what the registry remembers freed there goes.
 * Inline: the backends sit beneath backend.c. */
static inline void weft__backend_registry_changed(weft__backend *b);
static inline void weft__backend_forget(weft__backend *b, const void *p,
                                        size_t n) {
  pthread_mutex_lock(&b->lock);
  weft__ptrmap_forget(b->allocs, p, n);
  weft__backend_registry_changed(b);
  pthread_mutex_unlock(&b->lock);
}
/* Lock held, after any change to the registry: its freed ranges' count
 * mirrored, and its generation bumped (what launches' caches check). */
static inline void weft__backend_registry_changed(weft__backend *b) {
  atomic_store_explicit(&b->nfreed, weft__ptrmap_nfreed(b->allocs),
                        memory_order_relaxed);
  atomic_fetch_add_explicit(&b->gen, 1, memory_order_release);
}
/* 0 if n bytes at dst, and at src unless it is NULL (a memset), neither
 * wrap around the address space, nor lie in device memory freed before,
 * nor run past the end of the allocation weft made that they start in
 * (looked up by any address inside); a memset's dst must be memory weft
 * allocated where the backend cannot tell memory apart (the host's).
 * Else WEFT_EINVAL, reported for call, naming the pointer and what it
 * lies in. */
int weft__check_extent(weft__backend *b, const void *dst, const void *src,
                       size_t n, const char *call);
int weft__copy(weft__stream *s, void *dst, const void *src, size_t n,
               weft__copy_kind kind);
int weft__memset(weft__stream *s, void *dst, int value, size_t n);
int weft__launch(weft__stream *s, const weft_kernel *k, weft_dim3 grid,
                 weft_dim3 block, size_t shmem, void **args);

int weft__kernel_preload(weft__backend *b, int dev, const weft_kernel *k);
int weft__device_alloc(weft__stream *s, size_t n, void **out);
int weft__device_free(weft__stream *s, void *p);
int weft__pinned_alloc(weft__backend *b, size_t n, void **out);
int weft__pinned_free(weft__backend *b, void *p);
int weft__device_sync(weft__backend *b, int dev);

/* Live object counts, for leak checks in tests. */
typedef struct weft__backend_counts {
  size_t streams, events, device_allocs, pinned_allocs;
  size_t device_bytes;
} weft__backend_counts;
void weft__backend_get_counts(weft__backend *b, weft__backend_counts *out);

#endif
