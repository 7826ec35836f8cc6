/* The CUDA backend's streams, events, copies, launches and memory: each op a
 * thin wrapper over one CUDA runtime call. The core has validated every
 * argument (backend.h), so nothing is checked twice here.
 *
 * Which calls make the object's device current: creating streams and events
 * must (CUDA creates them on the current device) and asks CUDA what is
 * current rather than trusting the cache; launches, event records, waits
 * and memsets use the cached set with a retry. Queries, syncs, destroys,
 * copies and stream-ordered allocation take their device from the handle
 * or pointer (the programming guide's "Stream and Event Behavior"; the
 * cudaMallocAsync reference), so they skip it: a worker polling events of
 * several devices must not switch devices on each poll. */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_device.h"
#include "cuda_internal.h"
#include "cuda_watchers.h"
#include "error_internal.h"

static inline cudaEvent_t event_of(weft__event *e) {
  return ((weft__cuda_event *)e)->ev;
}

/* A query's cudaErrorNotReady is an answer, not a failure: no message is
 * recorded. CUDA may still note it as the thread's last error, so it is
 * cleared (as PyTorch does) to keep a user's cudaGetLastError() clean; the
 * cost falls on the not-ready path only, where the caller is about to wait
 * anyway. */
static int query_result(cudaError_t e, const char *call, int line) {
  if (e == cudaSuccess)
    return 0;
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return WEFT_EAGAIN;
  }
  return weft__cuda_error(e, call, __FILE__, line);
}

/* ---- streams ---- */

int weft__cuda_stream_init(weft__backend *b, weft__stream *s) {
  (void)b;
  cudaStream_t cs;
  /* The caller's device is put back: weft_init makes every device's
   * streams on the user's thread (cuda.h: it leaves the device it found). */
  int prev;
  int rc = weft__cuda_use_device(s->hdr.dev, &prev);
  if (rc)
    return rc;
  /* Non-blocking: work on the legacy default stream (a user's plain
   * cudaMemcpy or <<<>>> without a stream) must not serialise tasks. */
  cudaError_t e =
      cudaStreamCreateWithPriority(&cs, cudaStreamNonBlocking, s->priority);
  if (e != cudaSuccess)
    rc =
        weft__cuda_error(e, "cudaStreamCreateWithPriority", __FILE__, __LINE__);
  rc = weft__cuda_put_back(prev, e, rc);
  if (rc) {
    if (e == cudaSuccess)
      (void)cudaStreamDestroy(cs);
    return rc;
  }
  weft__cuda_stream *c = (weft__cuda_stream *)s;
  c->cs = cs;
  c->ws = NULL;
  c->ws_bytes = 0;
  c->ws_made = 0;
  return 0;
}

int weft__cuda_stream_fini(weft__stream *s) {
  /* CUDA returns at once and releases the stream when its queued work is
   * done, which is the contract's "work already queued still completes". */
  WEFT__CUDA_CHECK(cudaStreamDestroy, weft__cuda_stream_of(s));
  return 0;
}

int weft__cuda_stream_sync(weft__stream *s) {
  WEFT__CUDA_CHECK(cudaStreamSynchronize, weft__cuda_stream_of(s));
  return 0;
}

int weft__cuda_stream_query(weft__stream *s) {
  return query_result(cudaStreamQuery(weft__cuda_stream_of(s)),
                      "cudaStreamQuery", __LINE__);
}

int weft__cuda_stream_wait_event(weft__stream *s, weft__event *e) {
  /* A wait on an event never recorded is a no-op in CUDA, as the contract
   * wants. The event may belong to another device. */
  WEFT__CUDA_ON_DEV(s->hdr.dev, cudaStreamWaitEvent, weft__cuda_stream_of(s),
                    event_of(e), cudaEventWaitDefault);
  return 0;
}

/* ---- events ---- */

int weft__cuda_event_init(weft__backend *b, weft__event *e) {
  (void)b;
  /* Timing costs a timestamp write on every record and is off unless asked
   * for; blocking sync makes cudaEventSynchronize sleep instead of spin. */
  unsigned flags = cudaEventDefault;
  if (!(e->flags & WEFT__EVENT_TIMING))
    flags |= cudaEventDisableTiming;
  if (e->flags & WEFT__EVENT_BLOCKING)
    flags |= cudaEventBlockingSync;
  cudaEvent_t ev;
  /* The caller's device is put back, as for streams: making an event
   * queues no work (weft/cuda.h). */
  int prev;
  int rc = weft__cuda_use_device(e->hdr.dev, &prev);
  if (rc)
    return rc;
  cudaError_t ce = cudaEventCreateWithFlags(&ev, flags);
  if (ce != cudaSuccess)
    rc = weft__cuda_error(ce, "cudaEventCreateWithFlags", __FILE__, __LINE__);
  rc = weft__cuda_put_back(prev, ce, rc);
  if (rc) {
    if (ce == cudaSuccess)
      (void)cudaEventDestroy(ev);
    return rc;
  }
  weft__cuda_event *c = (weft__cuda_event *)e;
  c->ev = ev;
  c->flag = NULL;
  c->armed = 0;
  c->misses = 0;
  if (e->flags & WEFT__EVENT_POLLED)
    weft__cuda_flag_take((weft__cuda_backend *)b, c);
  return 0;
}

int weft__cuda_event_fini(weft__event *e) {
  /* Like streams, a pending event is released once it completes. */
  weft__cuda_flag_give((weft__cuda_backend *)e->hdr.bk, (weft__cuda_event *)e);
  WEFT__CUDA_CHECK(cudaEventDestroy, event_of(e));
  return 0;
}

int weft__cuda_event_record(weft__event *e, weft__stream *s) {
  /* The flag's write goes first: once CUDA calls the event complete, the
   * flag is written too, so that a query after cudaEventSynchronize (the
   * pinned cache's last reclaim) never reads a stale "pending". */
  weft__cuda_event *c = (weft__cuda_event *)e;
  if (c->flag)
    weft__cuda_flag_arm((weft__cuda_backend *)s->hdr.bk, c, s);
  WEFT__CUDA_ON_DEV(s->hdr.dev, cudaEventRecord, event_of(e),
                    weft__cuda_stream_of(s));
  return 0;
}

int weft__cuda_event_query(weft__event *e) {
  weft__cuda_event *c = (weft__cuda_event *)e;
  if (c->armed) {
    int f = weft__cuda_flag_query(c);
    if (f >= 0)
      return f ? 0 : WEFT_EAGAIN;
  }
  /* An event never recorded answers cudaSuccess, i.e. complete. */
  return query_result(cudaEventQuery(event_of(e)), "cudaEventQuery", __LINE__);
}

int weft__cuda_event_sync(weft__event *e) {
  WEFT__CUDA_CHECK(cudaEventSynchronize, event_of(e));
  return 0;
}

int weft__cuda_event_elapsed(weft__event *start, weft__event *end, float *ms) {
  float t;
  /* cudaErrorNotReady (either event pending) becomes WEFT_EAGAIN. */
  WEFT__CUDA_CHECK(cudaEventElapsedTime, &t, event_of(start), event_of(end));
  *ms = t;
  return 0;
}

/* ---- work on a stream ---- */

/* A host-to-host copy run by CUDA's callback thread in stream order:
 * cudaMemcpyAsync between host buffers is synchronous with respect to the
 * host (it would block the caller until the stream drained). */
typedef struct host_copy {
  void *dst;
  const void *src;
  size_t n;
} host_copy;

static void CUDART_CB run_host_copy(void *arg) {
  host_copy *c = arg;
  memmove(c->dst, c->src, c->n);
  free(c);
}

static int copy_host_to_host(weft__stream *s, void *dst, const void *src,
                             size_t n) {
  host_copy *c = malloc(sizeof *c);
  if (!c)
    return weft__err(WEFT_ENOMEM, "weft_copy: out of memory");
  *c = (host_copy){dst, src, n};
  cudaError_t e = cudaLaunchHostFunc(weft__cuda_stream_of(s), run_host_copy, c);
  if (e != cudaSuccess) {
    free(c);
    return weft__cuda_error(e, "cudaLaunchHostFunc", __FILE__, __LINE__);
  }
  return 0;
}

int weft__cuda_copy(weft__stream *s, void *dst, const void *src, size_t n,
                    weft__copy_kind kind) {
  if (kind == WEFT__COPY_H2H)
    return copy_host_to_host(s, dst, src, n);
  static const enum cudaMemcpyKind kinds[] = {
      [WEFT__COPY_DEFAULT] = cudaMemcpyDefault,
      [WEFT__COPY_H2D] = cudaMemcpyHostToDevice,
      [WEFT__COPY_D2H] = cudaMemcpyDeviceToHost,
      [WEFT__COPY_D2D] = cudaMemcpyDeviceToDevice,
      [WEFT__COPY_H2H] = cudaMemcpyHostToHost,
  };
  WEFT__CUDA_CHECK(cudaMemcpyAsync, dst, src, n, kinds[kind],
                   weft__cuda_stream_of(s));
  return 0;
}

int weft__cuda_memset(weft__stream *s, void *dst, int value, size_t n) {
  WEFT__CUDA_ON_DEV(s->hdr.dev, cudaMemsetAsync, dst, value, n,
                    weft__cuda_stream_of(s));
  return 0;
}

/* The failure path of launch, out of line so the hot path stays a cached
 * device check and one call: retries once if the cache was stale, else
 * names the kernel in the message. */
__attribute__((cold, noinline)) static int
launch_failed(weft__stream *s, const weft_kernel *k, dim3 g, dim3 bl,
              size_t shmem, void **args, cudaError_t e) {
  if (weft__cuda_device_was_stale(s->hdr.dev, e)) {
    e = cudaLaunchKernel(k->cuda, g, bl, args, shmem, weft__cuda_stream_of(s));
    if (e == cudaSuccess)
      return 0;
  }
  char call[160];
  snprintf(call, sizeof call,
           "cudaLaunchKernel(%s, grid %u,%u,%u, block "
           "%u,%u,%u, shmem %zu)",
           k->name ? k->name : "unnamed kernel", g.x, g.y, g.z, bl.x, bl.y,
           bl.z, shmem);
  return weft__cuda_error(e, call, __FILE__, __LINE__);
}

int weft__cuda_launch(weft__stream *s, const weft_kernel *k, weft_dim3 grid,
                      weft_dim3 block, size_t shmem, void **args) {
  int rc = weft__cuda_set_device(s->hdr.dev);
  if (__builtin_expect(rc != 0, 0))
    return rc;
  /* dim3 is a plain struct in C; its C++ constructors are not there. */
  dim3 g, bl;
  g.x = grid.x;
  g.y = grid.y;
  g.z = grid.z;
  bl.x = block.x;
  bl.y = block.y;
  bl.z = block.z;
  cudaError_t e =
      cudaLaunchKernel(k->cuda, g, bl, args, shmem, weft__cuda_stream_of(s));
  if (__builtin_expect(e == cudaSuccess, 1))
    return 0;
  return launch_failed(s, k, g, bl, shmem, args, e);
}

/* ---- memory ---- */

static inline const weft__cuda_device *device_of(weft__stream *s) {
  return &((weft__cuda_backend *)s->hdr.bk)->devs[s->hdr.dev];
}

int weft__cuda_device_alloc(weft__stream *s, size_t n, void **out) {
  void *p;
  if (device_of(s)->pools) {
    /* From the default pool of the stream's device, kept cached at open. */
    WEFT__CUDA_CHECK(cudaMallocAsync, &p, n, weft__cuda_stream_of(s));
  } else {
    int rc = weft__cuda_use_device(s->hdr.dev, NULL);
    if (rc)
      return rc;
    WEFT__CUDA_CHECK(cudaMalloc, &p, n);
  }
  *out = p;
  return 0;
}

int weft__cuda_device_free(weft__stream *s, void *p) {
  /* cudaFree waits for the whole device, which over-fulfils the
   * stream-ordered contract on devices without pools. */
  if (device_of(s)->pools)
    WEFT__CUDA_CHECK(cudaFreeAsync, p, weft__cuda_stream_of(s));
  else
    WEFT__CUDA_CHECK(cudaFree, p);
  return 0;
}

int weft__cuda_pinned_alloc(weft__backend *b, size_t n, void **out) {
  (void)b;
  void *p;
  /* Portable: pinned for every device, not just the thread's current one;
   * the backend's pinned memory serves all its devices. */
  weft__check_quiet++; /* weft check reports the miss itself */
  cudaError_t e = cudaHostAlloc(&p, n, cudaHostAllocPortable);
  weft__check_quiet--;
  if (e != cudaSuccess)
    return weft__cuda_error(e, "cudaHostAlloc", __FILE__, __LINE__);
  *out = p;
  return 0;
}

int weft__cuda_pinned_free(weft__backend *b, void *p) {
  (void)b;
  weft__check_quiet++;
  cudaError_t e = cudaFreeHost(p);
  weft__check_quiet--;
  if (e != cudaSuccess)
    return weft__cuda_error(e, "cudaFreeHost", __FILE__, __LINE__);
  return 0;
}

/* The id CUPTI's records give s's operations, asked once per stream (a
 * stream is used by its holder alone). Streams weft makes are never
 * per-thread default streams. */
uint32_t weft__cuda_trace_stream_id(weft__stream *s) {
  weft__cuda_stream *c = (weft__cuda_stream *)s;
  uint32_t id = 0;
  if (!c->trace_id && cuptiGetStreamIdEx(NULL, c->cs, 0, &id) == CUPTI_SUCCESS)
    c->trace_id = id;
  return c->trace_id;
}
