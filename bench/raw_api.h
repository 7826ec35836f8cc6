/* The raw baselines' API: streams, events, launches and copies written by
 * hand, as a careful programmer writes them without weft's tasks. Each
 * scenario writes its raw baseline once, in its sc_<name>.c, against these
 * calls.
 *
 * On a runtime of the CUDA backend they are the CUDA runtime itself: a raw
 * stream is a cudaStream_t made non-blocking on device 0 (weft's device 0),
 * a raw event a cudaEvent_t, and raw_launch calls cudaLaunchKernel on the
 * descriptor's __global__ function, so weft and the baseline run the very
 * same kernels. On the host backend they are its own streams and events
 * (weft/host.h). A build without CUDA has only the second; a CUDA build
 * has both, because without a GPU it runs on the host backend (the demo
 * does, on any machine), and picks per object, by the runtime it was made
 * for: one branch per call.
 *
 * Every call returns 0 or an error: a cudaError_t (positive) or a WEFT_E*
 * code (negative). RAW_TRY turns a failure into the scenario's failure
 * (bench_fail) with the call, the error's name and text, and the line;
 * raw_describe writes the same into a buffer. */
#ifndef WEFT_BENCH_RAW_API_H
#define WEFT_BENCH_RAW_API_H

#include <stdio.h>

#include "bench.h"
#include "weft.h"

#ifdef WEFT_BENCH_CUDA
#include <cuda_runtime_api.h>
#define RAW_CUDA(x) x
#else
#define RAW_CUDA(x)
#endif

typedef struct raw_stream {
  weft_host_stream *hs; /* NULL on CUDA */
  RAW_CUDA(cudaStream_t cs;)
} raw_stream;

typedef struct raw_event {
  weft_host_event *he; /* NULL on CUDA */
  RAW_CUDA(cudaEvent_t ce;)
} raw_event;

static inline int raw_on_cuda(weft_runtime *rt) {
  return weft_runtime_backend(rt) == WEFT_BACKEND_CUDA;
}

/* 1 if s is a CUDA stream (then s.cs is it). */
static inline int raw_is_cuda(raw_stream s) { return s.hs == NULL; }

/* Makes device (weft's numbering, which is CUDA's) the calling thread's
 * current one, as raw CUDA code does before it issues work for a device:
 * cudaSetDevice on CUDA, nothing on the host backend (its streams know
 * their device). */
static inline int raw_set_device(weft_runtime *rt, int device) {
#ifdef WEFT_BENCH_CUDA
  if (raw_on_cuda(rt))
    return cudaSetDevice(device);
#endif
  (void)rt;
  (void)device;
  return 0;
}

/* A non-blocking stream on the given device; the calling thread's current
 * device is that one afterwards. */
static inline int raw_stream_create_on(weft_runtime *rt, int device,
                                       int priority, raw_stream *s) {
  *s = (raw_stream){0};
#ifdef WEFT_BENCH_CUDA
  if (raw_on_cuda(rt)) {
    int e = cudaSetDevice(device);
    if (e)
      return e;
    return cudaStreamCreateWithPriority(&s->cs, cudaStreamNonBlocking,
                                        priority);
  }
#endif
  return weft_host_stream_create(rt, device, priority, &s->hs);
}

static inline int raw_stream_create(weft_runtime *rt, int priority,
                                    raw_stream *s) {
  return raw_stream_create_on(rt, 0, priority, s);
}

/* Waits for the stream's work, then frees it. */
static inline int raw_stream_destroy(raw_stream *s) {
#ifdef WEFT_BENCH_CUDA
  if (!s->hs) {
    int e = s->cs ? cudaStreamSynchronize(s->cs) : 0;
    int d = s->cs ? cudaStreamDestroy(s->cs) : 0;
    s->cs = NULL;
    return e ? e : d;
  }
#endif
  return s->hs ? weft_host_stream_destroy(&s->hs) : 0;
}

static inline int raw_stream_sync(raw_stream s) {
#ifdef WEFT_BENCH_CUDA
  if (!s.hs)
    return cudaStreamSynchronize(s.cs);
#endif
  return weft_host_stream_sync(s.hs);
}

static inline int raw_stream_wait(raw_stream s, raw_event ev) {
#ifdef WEFT_BENCH_CUDA
  if (!s.hs)
    return cudaStreamWaitEvent(s.cs, ev.ce, 0);
#endif
  return weft_host_stream_wait_event(s.hs, ev.he);
}

static inline int raw_launch(raw_stream s, const weft_kernel *k, weft_dim3 g,
                             weft_dim3 b, void **args) {
#ifdef WEFT_BENCH_CUDA
  if (!s.hs) {
    if (!k->cuda)
      return cudaErrorInvalidDeviceFunction;
    dim3 grid = {g.x, g.y, g.z}, block = {b.x, b.y, b.z};
    return cudaLaunchKernel(k->cuda, grid, block, args, 0, s.cs);
  }
#endif
  return weft_host_launch(s.hs, k, g, b, args);
}

/* The direction of a copy, as the raw CUDA code names it (the driver then
 * need not look the pointers up). */
typedef enum raw_dir { RAW_H2D, RAW_D2H } raw_dir;

static inline int raw_copy(raw_stream s, void *dst, const void *src, size_t n,
                           raw_dir dir) {
#ifdef WEFT_BENCH_CUDA
  if (!s.hs)
    return cudaMemcpyAsync(
        dst, src, n,
        dir == RAW_H2D ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s.cs);
#endif
  (void)dir;
  return weft_host_copy(s.hs, dst, src, n);
}

/* An event of the given device, recorded on its streams only; the
 * calling thread's current device is that one afterwards. */
static inline int raw_event_create_on(weft_runtime *rt, int device, int timing,
                                      raw_event *ev) {
  *ev = (raw_event){0};
#ifdef WEFT_BENCH_CUDA
  if (raw_on_cuda(rt)) {
    int e = cudaSetDevice(device);
    if (e)
      return e;
    return cudaEventCreateWithFlags(&ev->ce, timing ? cudaEventDefault
                                                    : cudaEventDisableTiming);
  }
#endif
  return weft_host_event_create(rt, device, timing, &ev->he);
}

static inline int raw_event_create(weft_runtime *rt, int timing,
                                   raw_event *ev) {
  return raw_event_create_on(rt, 0, timing, ev);
}

static inline int raw_event_destroy(raw_event *ev) {
#ifdef WEFT_BENCH_CUDA
  if (!ev->he) {
    int e = ev->ce ? cudaEventDestroy(ev->ce) : 0;
    ev->ce = NULL;
    return e;
  }
#endif
  return ev->he ? weft_host_event_destroy(&ev->he) : 0;
}

static inline int raw_event_record(raw_event ev, raw_stream s) {
#ifdef WEFT_BENCH_CUDA
  if (!s.hs)
    return cudaEventRecord(ev.ce, s.cs);
#endif
  return weft_host_event_record(ev.he, s.hs);
}

/* 0 when done, 1 while pending, else the error. */
static inline int raw_event_query(raw_event ev) {
#ifdef WEFT_BENCH_CUDA
  if (!ev.he) {
    cudaError_t e = cudaEventQuery(ev.ce);
    return e == cudaErrorNotReady ? 1 : (int)e;
  }
#endif
  int e = weft_host_event_query(ev.he);
  return e == WEFT_EAGAIN ? 1 : e;
}

static inline int raw_event_sync(raw_event ev) {
#ifdef WEFT_BENCH_CUDA
  if (!ev.he)
    return cudaEventSynchronize(ev.ce);
#endif
  return weft_host_event_sync(ev.he);
}

static inline int raw_elapsed_ms(raw_event a, raw_event b, float *ms) {
#ifdef WEFT_BENCH_CUDA
  if (!a.he)
    return cudaEventElapsedTime(ms, a.ce, b.ce);
#endif
  return weft_host_event_elapsed_ms(a.he, b.he, ms);
}

/* A hand-written CUDA graph: what is issued on s between raw_graph_begin
 * and raw_graph_end, captured (cudaStreamBeginCapture, the global mode of
 * CUDA's own examples) and instantiated; raw_graph_launch is one
 * cudaGraphLaunch. CUDA only: the host backend's raw streams have no
 * graphs (WEFT_ENOTSUP), so scenarios offer the raw graph rows on CUDA. */
typedef struct raw_graph {
  RAW_CUDA(cudaGraphExec_t exec;)
  int made;
} raw_graph;

static inline int raw_graph_begin(raw_stream s) {
#ifdef WEFT_BENCH_CUDA
  if (!s.hs)
    return cudaStreamBeginCapture(s.cs, cudaStreamCaptureModeGlobal);
#endif
  (void)s;
  return WEFT_ENOTSUP;
}

static inline int raw_graph_end(raw_stream s, raw_graph *g) {
  *g = (raw_graph){0};
#ifdef WEFT_BENCH_CUDA
  if (!s.hs) {
    cudaGraph_t graph;
    int e = cudaStreamEndCapture(s.cs, &graph);
    if (e)
      return e;
    e = cudaGraphInstantiate(&g->exec, graph, 0);
    cudaGraphDestroy(graph);
    g->made = e == 0;
    return e;
  }
#endif
  (void)s;
  return WEFT_ENOTSUP;
}

static inline int raw_graph_launch(raw_stream s, raw_graph g) {
#ifdef WEFT_BENCH_CUDA
  if (!s.hs)
    return cudaGraphLaunch(g.exec, s.cs);
#endif
  (void)s;
  (void)g;
  return WEFT_ENOTSUP;
}

static inline int raw_graph_destroy(raw_graph *g) {
  int e = 0;
#ifdef WEFT_BENCH_CUDA
  if (g->made)
    e = cudaGraphExecDestroy(g->exec);
#endif
  *g = (raw_graph){0};
  return e;
}

/* Page-locked memory without a cache: cudaMallocHost/cudaFreeHost on CUDA,
 * the host backend's own allocation there. */
static inline int raw_pinned_alloc(weft_runtime *rt, size_t n, void **p) {
#ifdef WEFT_BENCH_CUDA
  if (raw_on_cuda(rt))
    return cudaMallocHost(p, n);
#endif
  return weft_host_pinned_alloc(rt, n, p);
}

static inline int raw_pinned_free(weft_runtime *rt, void *p) {
#ifdef WEFT_BENCH_CUDA
  if (raw_on_cuda(rt))
    return cudaFreeHost(p);
#endif
  return weft_host_pinned_free(rt, p);
}

/* What "raw CUDA" or "raw host ops" means in row names (from the
 * scenario's backend: its runtime may be closed when rows are named). */
static inline const char *raw_label(weft_backend_kind backend) {
  return backend == WEFT_BACKEND_CUDA ? "raw CUDA" : "raw host ops";
}

/* "call: NAME: text (line N)" for error e of call. */
static inline void raw_describe(int e, const char *call, int line, char *buf,
                                size_t len) {
#ifdef WEFT_BENCH_CUDA
  if (e > 0) {
    snprintf(buf, len, "raw CUDA: %s: %s: %s (line %d)", call,
             cudaGetErrorName((cudaError_t)e),
             cudaGetErrorString((cudaError_t)e), line);
    return;
  }
#endif
  const char *msg = weft_last_error_message();
  snprintf(buf, len, "raw host: %s: %s: %s (line %d)", call, weft_err_name(e),
           *msg ? msg : weft_strerror(e), line);
}

static inline int raw_fail(bench_ctx *c, int e, const char *call, int line) {
  char why[512];
  raw_describe(e, call, line, why, sizeof why);
  return bench_fail(c, "%s", why);
}

/* Returns BENCH_FAIL from the enclosing function, after bench_fail, if call
 * fails; c is the scenario's bench_ctx. */
#define RAW_TRY(c, call)                                                       \
  do {                                                                         \
    int e_ = (call);                                                           \
    if (e_ != 0)                                                               \
      return raw_fail((c), e_, #call, __LINE__);                               \
  } while (0)

#endif
