/* weft check on CUDA: raw CUDA runtime calls made inside a task, seen
 * through CUPTI's callback API, so that calls a task makes directly (or a
 * library makes for it through the runtime) are checked as weft's own are.
 *
 * Reported from a task: calls that wait for the whole device (cudaMalloc,
 * cudaFree, cudaMallocHost, cudaHostAlloc, cudaFreeHost, synchronous
 * cudaMemcpy/cudaMemcpy2D/cudaMemset, cudaDeviceSynchronize, cache
 * configuration changes, a cudaMemcpyAsync to or from pageable host memory,
 * which holds the thread), and work queued on the legacy default stream
 * (stream 0), which weft_sync does not wait for and which serialises with
 * every blocking stream. weft's own calls of these (a pinned-cache miss,
 * weft_device_sync, cuBLAS's workspace) are either reported at weft's level
 * or deliberate, and run with weft__check_quiet set. CUPTI takes one
 * subscriber per process: under another tool (Nsight, compute-sanitizer)
 * these calls go unchecked, and weft check says so. */
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>

#include "checker.h"
#include "clock.h"
#include "cuda_watchers.h"

/* The one subscription CUPTI allows a process, and the backend that holds
 * it: with two checked runtimes open, the second's subscribe fails, and its
 * stop must leave the first's subscription alone. Under the lock: two
 * runtimes may start and stop on different threads. */
static pthread_mutex_t sub_lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_SubscriberHandle sub;
static const weft__backend *subscribed;

enum { SYNC, DEFAULT_STREAM };

static const struct {
  CUpti_CallbackId id;
  int kind;
  const char *what;
} watched[] = {
    {CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, SYNC,
     "it waits for the device; weft_device_alloc is stream-ordered"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, SYNC,
     "it waits for the whole device; weft_device_free is stream-ordered"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020, SYNC,
     "page-locked allocation waits for the device; weft_pinned_alloc "
     "caches blocks"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020, SYNC,
     "page-locked allocation waits for the device; weft_pinned_alloc "
     "caches blocks"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020, SYNC,
     "freeing page-locked memory waits for the device"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, SYNC,
     "a synchronous copy blocks the thread, not just the task; weft_copy "
     "suspends only the task"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020, SYNC,
     "a synchronous copy blocks the thread, not just the task"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, SYNC,
     "cudaMemset is synchronous on the legacy stream; weft_memset is not"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, SYNC,
     "it waits for every stream of the device; weft_sync waits for this "
     "task's alone"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSetCacheConfig_v3020, SYNC,
     "a cache configuration change waits for the device"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaFuncSetCacheConfig_v3020, SYNC,
     "a cache configuration change can wait for the device"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, DEFAULT_STREAM,
     "a launch on the legacy default stream: weft_sync does not wait for it "
     "and it serialises with every blocking stream; launch on "
     "weft_cuda_stream()"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, DEFAULT_STREAM,
     "a copy on the legacy default stream: weft_sync does not wait for it; "
     "use weft_copy or weft_cuda_stream()"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, DEFAULT_STREAM,
     "a memset on the legacy default stream: weft_sync does not wait for "
     "it; use weft_memset or weft_cuda_stream()"},
};
#define NWATCHED (sizeof watched / sizeof watched[0])

/* Whether p is host memory CUDA has not page-locked: a copy from or to it
 * holds the calling thread (device to pageable returns only once the copy
 * is done). cudaPointerGetAttributes is not watched, so asking raises no
 * callback of ours. */
static int pageable(const void *p) {
  struct cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return 1;
  }
  return a.type == cudaMemoryTypeUnregistered;
}

static const char pageable_copy[] =
    "with pageable host memory cudaMemcpyAsync holds the thread (to "
    "pageable memory until the copy is done), and so every task of this "
    "worker; weft_copy stages pageable copies through pinned buffers and "
    "suspends only the task";

/* The stream a watched asynchronous call was given. */
static cudaStream_t stream_arg(CUpti_CallbackId id, const void *params) {
  switch (id) {
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    return ((const cudaLaunchKernel_v7000_params *)params)->stream;
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
    return ((const cudaMemcpyAsync_v3020_params *)params)->stream;
  case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
    return ((const cudaMemsetAsync_v3020_params *)params)->stream;
  default:
    return NULL;
  }
}

static void CUPTIAPI on_call(void *arg, CUpti_CallbackDomain domain,
                             CUpti_CallbackId id, const void *data) {
  const CUpti_CallbackData *cd = data;
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API || weft__check_quiet)
    return;
  if (cd->callbackSite == CUPTI_API_ENTER) {
    *cd->correlationData = weft__clock_ns();
    return;
  }
  for (size_t i = 0; i < NWATCHED; i++) {
    if (watched[i].id != id)
      continue;
    uint64_t ns = weft__clock_ns() - *cd->correlationData;
    if (watched[i].kind == DEFAULT_STREAM) {
      cudaStream_t s = stream_arg(id, cd->functionParams);
      if (s != NULL && s != cudaStreamLegacy) {
        const cudaMemcpyAsync_v3020_params *c = cd->functionParams;
        if (id == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020 &&
            cd->functionReturnValue &&
            *(const cudaError_t *)cd->functionReturnValue == cudaSuccess &&
            (pageable(c->src) || pageable(c->dst)))
          weft__check_cuda_call(arg, cd->functionName, pageable_copy, ns, 0);
        return;
      }
    }
    weft__check_cuda_call(arg, cd->functionName, watched[i].what,
                          watched[i].kind == SYNC ? ns : 0,
                          watched[i].kind == DEFAULT_STREAM);
    return;
  }
}

void weft__cuda_check_start(weft__backend *b) {
  pthread_mutex_lock(&sub_lock);
  int other = subscribed != NULL;
  CUptiResult r =
      other ? CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
            : cuptiSubscribe(&sub, (CUpti_CallbackFunc)on_call, b->check);
  if (r == CUPTI_SUCCESS) {
    subscribed = b;
    for (size_t i = 0; i < NWATCHED; i++)
      cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, watched[i].id);
  }
  pthread_mutex_unlock(&sub_lock);
  if (r != CUPTI_SUCCESS) {
    const char *why = NULL;
    cuptiGetResultString(r, &why);
    fprintf(stderr,
            "weft check: CUPTI is not available (%s%s): raw CUDA calls "
            "inside tasks are not checked (weft's own calls still are)\n",
            why ? why : "?",
            other ? "; another checked runtime of this process holds it" : "");
  }
}

void weft__cuda_check_stop(weft__backend *b) {
  pthread_mutex_lock(&sub_lock);
  if (subscribed == b) {
    cuptiUnsubscribe(sub);
    subscribed = NULL;
  }
  pthread_mutex_unlock(&sub_lock);
}
