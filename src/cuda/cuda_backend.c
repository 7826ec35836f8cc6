/* The CUDA backend's devices: opening and closing, device properties and
 * device-wide sync, and the ops table
 * that joins these to the stream, event and memory ops of cuda_ops.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_device.h"
#include "cuda_internal.h"
#include "cuda_watchers.h"
#include "error_internal.h"

/* On every task resume, so it must cost nothing when the device is
 * already current: the thread's cached device decides, since asking CUDA
 * would cost every fiber switch a driver call (docs/decisions/cuda.md,
 * "The device is bound from a per-thread cache on resume"). A task
 * that calls cudaSetDevice itself must set it back before it waits or
 * yields. Errors are left for the task's next CUDA call to report. */
static void bind_device(weft__backend *b, int dev) {
  (void)b;
  (void)weft__cuda_set_device(dev);
}

static int current_device(weft__backend *b) {
  (void)b;
  int cur;
  if (cudaGetDevice(&cur) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return cur;
}

/* cudaFuncGetAttributes resolves the function, which under lazy loading
 * (the default since CUDA 12.2) loads it. */
static int kernel_preload(weft__backend *b, int dev, const weft_kernel *k) {
  (void)b;
  struct cudaFuncAttributes attr;
  /* Not the cached set: with a stale cache the lookup succeeds on the
   * thread's real device and loads the kernel there, not on dev. */
  int rc = weft__cuda_use_device(dev, NULL);
  if (rc)
    return rc;
  WEFT__CUDA_CHECK(cudaFuncGetAttributes, &attr, k->cuda);
  return 0;
}

/* Unregistered host memory is pageable; a failed query (an address CUDA
 * has never seen) is too. */
static int ptr_kind(weft__backend *b, const void *p) {
  (void)b;
  struct cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return WEFT__MEM_PAGEABLE;
  }
  switch (a.type) {
  case cudaMemoryTypeHost:
    return WEFT__MEM_PINNED;
  case cudaMemoryTypeDevice:
  case cudaMemoryTypeManaged:
    return WEFT__MEM_DEVICE;
  default:
    return WEFT__MEM_PAGEABLE;
  }
}

/* A freed range of weft's that the driver knows as device memory again
 * was handed out anew (weft__backend_ops.reused). */
static int reused(weft__backend *b, const void *p) {
  return ptr_kind(b, p) == WEFT__MEM_DEVICE;
}

/* ---- opening ---- */

/* Kernels of different streams that can be resident at once, from the CUDA
 * C++ Programming Guide's table of technical specifications per compute
 * capability, row "Maximum number of resident grids per device (Concurrent
 * Kernel Execution)": 128 from 7.0 on; 16 to 128 before, and 32 is the
 * common value there. CUDA 13 supports nothing older than 7.5, so the
 * older rows only matter to older toolkits (docs/decisions/cuda.md,
 * "Resident grids from the programming guide's table"). */
static int resident_grids(int cc_major) { return cc_major >= 7 ? 128 : 32; }

/* Reads what never changes about a device, and makes its default memory
 * pool keep freed memory: with the default release threshold of 0 the pool
 * returns memory to the driver at every synchronisation, and each later
 * cudaMallocAsync pays for a fresh mapping, which costs many times a cached
 * allocation (docs/decisions/memory.md, "The device's memory pool keeps
 * freed memory"). */
static int read_device(int dev, weft__cuda_device *d, int *prev) {
  weft_device_info *info = &d->info;
  int rc = weft__cuda_use_device(dev, prev);
  if (rc)
    return rc;

  /* Only the name needs the whole property struct; every number comes
   * from cudaDeviceGetAttribute, which reads one cached value. */
  struct cudaDeviceProp prop;
  WEFT__CUDA_CHECK(cudaGetDeviceProperties, &prop, dev);
  memcpy(info->name, prop.name, sizeof info->name - 1);
  info->name[sizeof info->name - 1] = '\0';

  const struct {
    enum cudaDeviceAttr attr;
    int *out;
  } attrs[] = {
      {cudaDevAttrComputeCapabilityMajor, &info->cc_major},
      {cudaDevAttrComputeCapabilityMinor, &info->cc_minor},
      {cudaDevAttrMultiProcessorCount, &info->multiprocessors},
      {cudaDevAttrAsyncEngineCount, &info->copy_engines},
      {cudaDevAttrConcurrentKernels, &info->concurrent_kernels},
      {cudaDevAttrMaxThreadsPerBlock, &info->max_threads_per_block},
      {cudaDevAttrMaxThreadsPerMultiProcessor, &info->max_threads_per_sm},
      {cudaDevAttrUnifiedAddressing, &info->unified_addressing},
      {cudaDevAttrMemoryPoolsSupported, &d->pools},
  };
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
    WEFT__CUDA_CHECK(cudaDeviceGetAttribute, attrs[i].out, attrs[i].attr, dev);
  /* The range is the current device's, hence use_device above. */
  WEFT__CUDA_CHECK(cudaDeviceGetStreamPriorityRange, &info->priority_least,
                   &info->priority_greatest);
  WEFT__CUDA_CHECK(cudaDriverGetVersion, &info->driver_version);
  WEFT__CUDA_CHECK(cudaRuntimeGetVersion, &info->runtime_version);
  info->backend = WEFT_BACKEND_CUDA;
  info->ordinal = dev;
  info->max_resident_grids = resident_grids(info->cc_major);

  /* Without pool support (some virtualised GPUs) device_alloc falls back to
   * cudaMalloc and cudaFree. */
  if (d->pools) {
    uint64_t keep = UINT64_MAX;
    WEFT__CUDA_CHECK(cudaDeviceGetDefaultMemPool, &d->pool, dev);
    WEFT__CUDA_CHECK(cudaMemPoolSetAttribute, d->pool,
                     cudaMemPoolAttrReleaseThreshold, &keep);
  }
  return 0;
}

static int cuda_open(weft__backend *base, const weft__backend_config *cfg) {
  /* Every task has its own stream, so more streams are live at once than
   * CUDA's default 8 hardware work queues; streams sharing a queue get
   * false dependencies (docs/decisions/cuda.md, "32 hardware work
   * queues"). Takes effect only if this is the process's first CUDA call;
   * a value the user set is kept. */
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  weft__cuda_backend *b = (weft__cuda_backend *)base;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  /* Whatever the reason (no driver, a stub library, no GPU), the answer to
   * the caller is the same: this backend has no device. */
  if (e != cudaSuccess)
    return weft__cuda_error_as(WEFT_ENODEV, e, "cudaGetDeviceCount", __FILE__,
                               __LINE__);
  if (n <= 0)
    return weft__err(WEFT_ENODEV, "cudaGetDeviceCount: no CUDA device");

  weft__cuda_device *devs = calloc((size_t)n, sizeof *devs);
  if (!devs)
    return weft__err(WEFT_ENOMEM, "cuda: cannot allocate the device table");
  /* Reading devices switches the current one; weft_init runs on the user's
   * thread, which should find its device as it left it. */
  int prev = -1, rc = 0;
  for (int d = 0; d < n && rc == 0; d++)
    rc = read_device(d, &devs[d], d == 0 ? &prev : NULL);
  if (prev >= 0 && rc != WEFT_ELOST) {
    int rc2 = weft__cuda_set_device(prev);
    if (rc == 0)
      rc = rc2;
  }
  if (rc) {
    free(devs);
    return rc;
  }
  if ((rc = weft__cuda_completion_open(b, cfg->cuda_no_flags)) != 0) {
    free(devs);
    return rc;
  }
  b->ndev = n;
  b->devs = devs;
  return 0;
}

static void cuda_close(weft__backend *base) {
  weft__cuda_backend *b = (weft__cuda_backend *)base;
  /* Hand the memory weft's frees left cached in the default pools back to
   * the driver; only memory no allocation uses is released. close cannot
   * fail, and a failure here loses nothing but cached memory, so the
   * result is ignored. */
  for (int d = 0; d < b->ndev; d++)
    if (b->devs[d].pools)
      (void)cudaMemPoolTrimTo(b->devs[d].pool, 0);
  weft__cuda_completion_close(b);
  free(b->devs);
  b->devs = NULL;
  b->ndev = 0;
}

/* ---- devices ---- */

static int cuda_device_count(weft__backend *base, int *count) {
  *count = ((weft__cuda_backend *)base)->ndev;
  return 0;
}

static int cuda_device_info(weft__backend *base, int dev,
                            weft_device_info *info) {
  weft__cuda_backend *b = (weft__cuda_backend *)base;
  weft_device_info out = b->devs[dev].info;
  /* Free memory is the only figure that changes, and cudaMemGetInfo answers
   * for the current device; put back the caller's device afterwards. */
  int prev = 0;
  int rc = weft__cuda_use_device(dev, &prev);
  if (rc)
    return rc;
  cudaError_t e = cudaMemGetInfo(&out.memory_free, &out.memory_total);
  if (e != cudaSuccess)
    rc = weft__cuda_error(e, "cudaMemGetInfo", __FILE__, __LINE__);
  rc = weft__cuda_put_back(prev, e, rc);
  if (rc == 0)
    *info = out;
  return rc;
}

static void *native_stream(weft__stream *s) { return weft__cuda_stream_of(s); }

static int cuda_device_peer(weft__backend *base, int dev, int peer,
                            int *direct) {
  (void)base;
  int can = 0;
  cudaError_t e = cudaDeviceCanAccessPeer(&can, dev, peer);
  if (e != cudaSuccess)
    return weft__cuda_error(e, "cudaDeviceCanAccessPeer", __FILE__, __LINE__);
  *direct = can != 0;
  return 0;
}

static int cuda_device_sync(weft__backend *base, int dev) {
  (void)base;
  /* Not the cached set: with a stale cache this would wait for the wrong
   * device and succeed. */
  int rc = weft__cuda_use_device(dev, NULL);
  if (rc)
    return rc;
  weft__check_quiet++; /* weft_device_sync reports itself */
  cudaError_t e = cudaDeviceSynchronize();
  weft__check_quiet--;
  if (e != cudaSuccess)
    return weft__cuda_error(e, "cudaDeviceSynchronize", __FILE__, __LINE__);
  return 0;
}

const struct weft__backend_ops weft__cuda_ops = {
    .kind = WEFT_BACKEND_CUDA,
    .name = "cuda",
    .backend_size = sizeof(weft__cuda_backend),
    .stream_size = sizeof(weft__cuda_stream),
    .event_size = sizeof(weft__cuda_event),

    .open = cuda_open,
    .close = cuda_close,
    .device_count = cuda_device_count,
    .device_info = cuda_device_info,
    .bind_device = bind_device,
    .current_device = current_device,
    .kernel_preload = kernel_preload,
    .ptr_kind = ptr_kind,
    .reused = reused,
    .release_libraries = weft__cuda_workspace_release,
    .trace_start = weft__cuda_trace_start,
    .trace_stop = weft__cuda_trace_stop,
    .trace_task = weft__cuda_trace_task,
    .trace_stream_id = weft__cuda_trace_stream_id,
    .device_sync = cuda_device_sync,
    .native_stream = native_stream,
    .check_start = weft__cuda_check_start,
    .check_stop = weft__cuda_check_stop,
    .capture_begin = weft__cuda_capture_begin,
    .capture_end = weft__cuda_capture_end,
    .graph_launch = weft__cuda_graph_launch,
    .graph_counts = weft__cuda_graph_counts,
    .graph_destroy = weft__cuda_graph_destroy,
    .capture_forks = 1,
    .device_peer = cuda_device_peer,

    .stream_init = weft__cuda_stream_init,
    .stream_fini = weft__cuda_stream_fini,
    .stream_sync = weft__cuda_stream_sync,
    .stream_query = weft__cuda_stream_query,
    .stream_wait_event = weft__cuda_stream_wait_event,

    .event_init = weft__cuda_event_init,
    .event_fini = weft__cuda_event_fini,
    .event_record = weft__cuda_event_record,
    .event_query = weft__cuda_event_query,
    .event_sync = weft__cuda_event_sync,
    .event_elapsed = weft__cuda_event_elapsed,

    .copy = weft__cuda_copy,
    .memset = weft__cuda_memset,
    .launch = weft__cuda_launch,

    .device_alloc = weft__cuda_device_alloc,
    .device_free = weft__cuda_device_free,
    .pinned_alloc = weft__cuda_pinned_alloc,
    .pinned_free = weft__cuda_pinned_free,
};
