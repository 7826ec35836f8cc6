/* The CUDA backend's objects (backend, device, stream, event) and the
 * functions of the ops table, shared by the files of src/cuda/ only.
 * Calling CUDA is cuda_error.h and cuda_device.h; the CUPTI
 * watchers cuda_watchers.h; cuBLAS's handles cuda_cublas.h. */
#ifndef WEFT__CUDA_INTERNAL_H
#define WEFT__CUDA_INTERNAL_H

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
  uint32_t trace_id; /* CUPTI's id of cs, once asked (cuda_trace.c); 0: not
                        yet */
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

/* cuBLAS workspaces (cuda_workspace.c): makes the workspace of stream s
 * unless it has one (only the task leasing s calls this); 0 or the error,
 * reported. Release frees a backend's at its close. */
int weft__cuda_workspace_for(weft__cuda_stream *s);
void weft__cuda_workspace_release(weft__backend *b);

#endif
