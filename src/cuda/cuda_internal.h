/* The CUDA backend's objects, its error translation and the calling
 * thread's current device. Shared by the files of src/cuda/ only. */
#ifndef WEFT__CUDA_INTERNAL_H
#define WEFT__CUDA_INTERNAL_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdatomic.h>

#include "backend.h"
#include "weft/runtime.h"

/* What the backend keeps of one device: the properties that never change,
 * read once at open, and whether stream-ordered allocation works there. */
typedef struct weft__cuda_device {
  weft_device_info info; /* everything but the memory figures */
  int pools;             /* cudaDevAttrMemoryPoolsSupported */
  cudaMemPool_t pool;    /* the default pool, when pools */
} weft__cuda_device;

typedef struct weft__cuda_backend {
  struct weft__backend base;
  int ndev;
  weft__cuda_device *devs;        /* ndev entries */
  struct weft__cuda_flags *flags; /* completion flags, NULL: off */
  /* Graph captures under way (cuda_graph.c): while any is, a stream that
   * joined one through an event wait may be capturing without weft
   * knowing which, so no completion flag is written (cuda_completion.c). */
  atomic_int captures;
} weft__cuda_backend;

typedef struct weft__cuda_stream {
  weft__stream base;
  cudaStream_t cs;
  /* weft_cublas()'s workspace for this stream (cuda_cublas.c), made on
   * the stream's first call; only the task leasing the stream touches
   * them. ws NULL with ws_made: cuBLAS's default. */
  void *ws;
  size_t ws_bytes;
  int ws_made;
} weft__cuda_stream;

static inline cudaStream_t weft__cuda_stream_of(weft__stream *s) {
  return ((weft__cuda_stream *)s)->cs;
}

typedef struct weft__cuda_event {
  weft__event base;
  cudaEvent_t ev;
  /* Its completion flag (cuda_completion.c), WEFT__EVENT_POLLED events only:
   * the host word, its device address, the latest record's value, and
   * whether that record armed it. */
  uint32_t *flag;
  unsigned long long flag_dev;
  uint32_t value;
  int armed;
  unsigned misses; /* flag reads that saw it pending */
} weft__cuda_event;

/* ---- completion flags (cuda_completion.c) ---- */

int weft__cuda_completion_open(weft__cuda_backend *b, int off);
void weft__cuda_completion_close(weft__cuda_backend *b);
/* Gives e a flag, or none (e->flag NULL) when flags are unavailable. */
void weft__cuda_flag_take(weft__cuda_backend *b, weft__cuda_event *e);
void weft__cuda_flag_give(weft__cuda_backend *b, weft__cuda_event *e);
/* Just before e's record on s: queues the flag's write, the record to
 * follow it (so that a complete event has its flag written). */
void weft__cuda_flag_arm(weft__cuda_backend *b, weft__cuda_event *e,
                         weft__stream *s);
/* An armed flag: 1 done, 0 pending, -1 pending but ask CUDA now. */
int weft__cuda_flag_query(weft__cuda_event *e);

/* ---- errors (cuda_error.c) ---- */

/* Translates a failed CUDA call into a WEFT_E* code, records the CUDA name
 * and message with file and line, and returns the code. The one place CUDA
 * errors are translated. cudaErrorNotReady from a query is an answer, not a
 * failure: callers test for it before coming here. */
int weft__cuda_error(cudaError_t e, const char *call, const char *file,
                     int line) __attribute__((cold));

/* The same with the code chosen by the caller, for calls whose every
 * failure means one thing (cudaGetDeviceCount failing means no device). */
int weft__cuda_error_as(int code, cudaError_t e, const char *call,
                        const char *file, int line) __attribute__((cold));

/* 1 for the errors that destroy the context: every later CUDA call in the
 * process fails with the same error. */
int weft__cuda_is_sticky(cudaError_t e);

/* Runs fn(...) and returns the translated error from the calling function
 * when it fails; fn's name goes into the message as written. */
#define WEFT__CUDA_CHECK(fn, ...)                                              \
  do {                                                                         \
    cudaError_t e_ = fn(__VA_ARGS__);                                          \
    if (__builtin_expect(e_ != cudaSuccess, 0))                                \
      return weft__cuda_error(e_, #fn, __FILE__, __LINE__);                    \
  } while (0)

/* ---- the calling thread's current device (cuda_backend.c) ----
 *
 * The CUDA runtime's current device is per OS thread, and a kernel launch
 * fails unless its stream's device is current. cudaSetDevice on every launch
 * would cost more than the launch budget allows, so each thread remembers
 * the device weft last made current. The cache goes stale when code on the
 * thread calls cudaSetDevice itself (a user's task, a library); the hot
 * calls notice because CUDA then fails them, and WEFT__CUDA_ON_DEV resyncs
 * and retries once. Calls that would instead act silently on the wrong
 * device (creating streams and events, device-wide sync and queries) do not
 * trust the cache and use weft__cuda_use_device. */
extern _Thread_local int weft__cuda_cur_dev; /* -1: not known yet */

int weft__cuda_set_device_slow(int dev) __attribute__((cold));

/* Makes dev current unless the cache says it already is. */
static inline int weft__cuda_set_device(int dev) {
  if (__builtin_expect(weft__cuda_cur_dev == dev, 1))
    return 0;
  return weft__cuda_set_device_slow(dev);
}

/* Makes dev current after asking CUDA which device is, and refreshes the
 * cache. *prev, when not NULL, receives the device that was current so the
 * caller can put it back. */
int weft__cuda_use_device(int dev, int *prev);
/* After a call that ended in e and rc, on a device weft__cuda_use_device
 * made current: makes prev current again (unless e is sticky, when CUDA
 * can do nothing) and returns rc, or the put-back's failure. */
int weft__cuda_put_back(int prev, cudaError_t e, int rc);

/* After a call on dev failed with e: if the thread's real device was not dev
 * (the cache was stale), makes dev current, clears CUDA's record of the
 * failure and returns 1 so the caller retries. Else 0. Never touches CUDA
 * after a sticky error. */
int weft__cuda_device_was_stale(int dev, cudaError_t e) __attribute__((cold));

/* Runs fn(...), which needs dev current, returning the translated error from
 * the calling function on failure. A failure caused by a stale cache is
 * retried once with the right device; a failed call enqueued nothing, so
 * the retry cannot duplicate work. */
#define WEFT__CUDA_ON_DEV(dev, fn, ...)                                        \
  do {                                                                         \
    int rc_ = weft__cuda_set_device(dev);                                      \
    if (__builtin_expect(rc_ != 0, 0))                                         \
      return rc_;                                                              \
    cudaError_t e_ = fn(__VA_ARGS__);                                          \
    if (__builtin_expect(e_ != cudaSuccess, 0)) {                              \
      if (weft__cuda_device_was_stale(dev, e_))                                \
        e_ = fn(__VA_ARGS__);                                                  \
      if (e_ != cudaSuccess)                                                   \
        return weft__cuda_error(e_, #fn, __FILE__, __LINE__);                  \
    }                                                                          \
  } while (0)

/* ---- weft check (cuda_checker.c) ---- */

void weft__cuda_check_start(weft__backend *b);
void weft__cuda_check_stop(weft__backend *b);

/* ---- graphs (cuda_graph.c) ---- */

int weft__cuda_capture_begin(weft__stream *s);
int weft__cuda_capture_end(weft__stream *s, void **g);
int weft__cuda_graph_launch(weft__stream *s, void *g);
void weft__cuda_graph_counts(void *g, size_t *ops, size_t *kernels,
                             size_t *copies);
void weft__cuda_graph_destroy(weft__backend *b, void *g);

/* ---- the ops (cuda_ops.c) ---- */

int weft__cuda_stream_init(weft__backend *b, weft__stream *s);
int weft__cuda_stream_fini(weft__stream *s);
int weft__cuda_stream_sync(weft__stream *s);
int weft__cuda_stream_query(weft__stream *s);
int weft__cuda_stream_wait_event(weft__stream *s, weft__event *e);

int weft__cuda_event_init(weft__backend *b, weft__event *e);
int weft__cuda_event_fini(weft__event *e);
int weft__cuda_event_record(weft__event *e, weft__stream *s);
int weft__cuda_event_query(weft__event *e);
int weft__cuda_event_sync(weft__event *e);
int weft__cuda_event_elapsed(weft__event *start, weft__event *end, float *ms);

int weft__cuda_copy(weft__stream *s, void *dst, const void *src, size_t n,
                    weft__copy_kind kind);
int weft__cuda_memset(weft__stream *s, void *dst, int value, size_t n);
int weft__cuda_launch(weft__stream *s, const weft_kernel *k, weft_dim3 grid,
                      weft_dim3 block, size_t shmem, void **args);

int weft__cuda_device_alloc(weft__stream *s, size_t n, void **out);
int weft__cuda_device_free(weft__stream *s, void *p);
int weft__cuda_pinned_alloc(weft__backend *b, size_t n, void **out);
int weft__cuda_pinned_free(weft__backend *b, void *p);

/* cuBLAS handles cached per thread (cuda_cublas.c): weft_cublas and
 * weft_cublas_workspace (weft/cuda.h, cuda_api.c) are these. */
cublasHandle_t weft__cuda_cublas(void);
int weft__cuda_cublas_warm(weft_runtime *rt);
int weft__cuda_cublas_workspace(void **ptr, size_t *bytes);
/* cuBLAS workspaces (cuda_workspace.c): makes the workspace of stream s
 * unless it has one (only the task leasing s calls this); 0 or the error,
 * reported. Release frees a backend's at its close. */
int weft__cuda_workspace_for(weft__cuda_stream *s);
void weft__cuda_workspace_release(weft__backend *b);

/* Tracing through CUPTI (cuda_trace.c). */
int weft__cuda_trace_start(weft__backend *b);
void weft__cuda_trace_stop(weft__backend *b);
void weft__cuda_trace_task(weft__backend *b, uint64_t id, const char *name);

#endif
