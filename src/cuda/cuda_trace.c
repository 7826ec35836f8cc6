/* Tracing on CUDA through CUPTI's activity API: kernels, copies, memsets
 * and runtime calls are recorded by the driver with GPU timestamps and
 * delivered in buffers; each task's id is pushed as an external
 * correlation id while it runs, so every GPU record names its task (the
 * NVTX ranges for Nsight Systems are the scheduler's, nvtx.h). CUPTI's
 * records are converted to the tracer's (trace.h) as the buffers arrive. */
#include <cuda_occupancy.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cuda_watchers.h"
#include "error_internal.h"
#include "trace.h"

#define BUF_SIZE ((size_t)8 << 20)

static int64_t clock_offset; /* tracer clock - CUPTI clock, ns */

/* The devices' limits for CUDA's occupancy calculator, read when tracing
 * starts (CUPTI's buffers arrive on a thread that should not call CUDA);
 * computeMajor 0: not read, the kernels' resident blocks left unsaid. */
static cudaOccDeviceProp occ_dev[WEFT__MAX_DEVICES];

static void read_devices(void) {
  int n = 0;
  memset(occ_dev, 0, sizeof occ_dev);
  if (cudaGetDeviceCount(&n) != cudaSuccess)
    return;
  for (int d = 0; d < n && d < WEFT__MAX_DEVICES; d++) {
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess)
      continue;
    occ_dev[d] = (cudaOccDeviceProp){
        .computeMajor = p.major,
        .computeMinor = p.minor,
        .maxThreadsPerBlock = p.maxThreadsPerBlock,
        .maxThreadsPerMultiprocessor = p.maxThreadsPerMultiProcessor,
        .regsPerBlock = p.regsPerBlock,
        .regsPerMultiprocessor = p.regsPerMultiprocessor,
        .warpSize = p.warpSize,
        .sharedMemPerBlock = p.sharedMemPerBlock,
        .sharedMemPerMultiprocessor = p.sharedMemPerMultiprocessor,
        .numSms = p.multiProcessorCount,
        .sharedMemPerBlockOptin = p.sharedMemPerBlockOptin,
        .reservedSharedMemPerBlock = p.reservedSharedMemPerBlock};
  }
}

static uint32_t clamp_u(int64_t v, uint32_t max) {
  return v < 0 ? 0 : v > max ? max : (uint32_t)v;
}

/* The launch's shape, and how many of its blocks fit on one SM at once
 * by CUDA's occupancy calculator (0 when it cannot say). */
static void kernel_shape(const CUpti_ActivityKernel10 *k,
                         weft__trace_shape *s) {
  s->grid_x = clamp_u(k->gridX, UINT32_MAX);
  s->grid_y = (uint16_t)clamp_u(k->gridY, UINT16_MAX);
  s->grid_z = (uint16_t)clamp_u(k->gridZ, UINT16_MAX);
  s->block_x = (uint16_t)clamp_u(k->blockX, UINT16_MAX);
  s->block_y = (uint16_t)clamp_u(k->blockY, UINT16_MAX);
  s->block_z = (uint8_t)clamp_u(k->blockZ, UINT8_MAX);
  s->regs = (uint8_t)clamp_u(k->registersPerThread, UINT8_MAX);
  s->smem = clamp_u((int64_t)k->staticSharedMemory + k->dynamicSharedMemory,
                    UINT32_MAX);
  if (k->channelType != CUPTI_CHANNEL_TYPE_INVALID)
    s->channel = k->channelID + 1;
  if (k->deviceId >= WEFT__MAX_DEVICES || !occ_dev[k->deviceId].computeMajor)
    return;
  const cudaOccDeviceProp *dev = &occ_dev[k->deviceId];
  int64_t threads = (int64_t)k->blockX * k->blockY * k->blockZ;
  if (threads <= 0 || threads > dev->maxThreadsPerBlock)
    return;
  /* It was launched, so its block size and shared memory were allowed. */
  cudaOccFuncAttributes fn = {
      .maxThreadsPerBlock = dev->maxThreadsPerBlock,
      .numRegs = k->registersPerThread,
      .sharedSizeBytes =
          (size_t)(k->staticSharedMemory > 0 ? k->staticSharedMemory : 0),
      .partitionedGCConfig = PARTITIONED_GC_OFF,
      .shmemLimitConfig = s->smem > dev->sharedMemPerBlock
                              ? FUNC_SHMEM_LIMIT_OPTIN
                              : FUNC_SHMEM_LIMIT_DEFAULT,
      .maxDynamicSharedSizeBytes =
          (size_t)(k->dynamicSharedMemory > 0 ? k->dynamicSharedMemory : 0),
      .numBlockBarriers = 1};
  cudaOccDeviceState state = {.cacheConfig = CACHE_PREFER_NONE,
                              .carveoutConfig = SHAREDMEM_CARVEOUT_DEFAULT};
  cudaOccResult res;
  if (cudaOccMaxActiveBlocksPerMultiprocessor(
          &res, dev, &fn, &state, (int)threads, fn.maxDynamicSharedSizeBytes) ==
      CUDA_OCC_SUCCESS)
    s->resident =
        (uint16_t)clamp_u(res.activeBlocksPerMultiprocessor, UINT16_MAX);
}

/* CUPTI's clock, when it takes it: the tracer's own, so runtime calls and
 * user ranges on one thread nest exactly (an offset measured once was
 * off by tens of nanoseconds, enough for Perfetto to drop a slice). */
static uint64_t CUPTIAPI tracer_clock(void) { return weft__clock_ns(); }

static const CUpti_ActivityKind kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};

static int cupti_fail(CUptiResult r, const char *call) {
  const char *msg = "?";
  cuptiGetResultString(r, &msg);
  return weft__err_raw(WEFT_EDEVICE, (int)r, "%s: %s", call, msg);
}

/* CUPTI keeps a buffer per thread (its default) and asks for it on the
 * thread's first record, inside the call that made it; unless told the
 * buffer comes zeroed, it zeroes all BUF_SIZE there, which delays every
 * worker's first traced task (docs/decisions/tracing.md, "Every worker's
 * first traced task started milliseconds late").
 * A fresh anonymous mapping is zero already and costs no pass over it: its
 * pages fault in as records fill them. */
static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size,
                                      size_t *max_records) {
  void *p = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  *buf = p == MAP_FAILED ? NULL : p;
  *size = *buf ? BUF_SIZE : 0;
  *max_records = 0;
  /* Without a buffer CUPTI drops what it holds, at least the record that
   * asked: counted, so that weft_shutdown reports the trace short. */
  if (!*buf)
    weft__trace_count_dropped(1);
}

static uint64_t gpu_ns(uint64_t t) {
  return (uint64_t)((int64_t)t + clock_offset);
}

/* Converts one CUPTI record; returns 0 if it is not one weft keeps. */
static int convert(CUpti_Activity *a, weft__trace_rec *r) {
  memset(r, 0, sizeof *r);
  switch (a->kind) {
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
  case CUPTI_ACTIVITY_KIND_KERNEL: {
    CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)a;
    r->kind = WEFT__TR_KERNEL;
    r->start = gpu_ns(k->start);
    r->end = gpu_ns(k->end);
    r->dev = (int16_t)k->deviceId;
    r->lane = k->streamId;
    r->corr = k->correlationId;
    r->graph = k->graphId;
    r->name = weft__trace_intern(k->name);
    kernel_shape(k, &r->shape);
    return 1;
  }
  case CUPTI_ACTIVITY_KIND_MEMCPY: {
    CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)a;
    r->kind = WEFT__TR_MEMCPY;
    r->start = gpu_ns(m->start);
    r->end = gpu_ns(m->end);
    r->dev = (int16_t)m->deviceId;
    r->lane = m->streamId;
    r->corr = m->correlationId;
    r->graph = m->graphId;
    r->bytes = m->bytes;
    r->copy = m->copyKind;
    r->src_pinned = m->srcKind != CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    r->dst_pinned = m->dstKind != CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    return 1;
  }
  case CUPTI_ACTIVITY_KIND_MEMSET: {
    CUpti_ActivityMemset4 *m = (CUpti_ActivityMemset4 *)a;
    r->kind = WEFT__TR_MEMSET;
    r->start = gpu_ns(m->start);
    r->end = gpu_ns(m->end);
    r->dev = (int16_t)m->deviceId;
    r->lane = m->streamId;
    r->corr = m->correlationId;
    r->graph = m->graphId;
    r->bytes = m->bytes;
    return 1;
  }
  case CUPTI_ACTIVITY_KIND_RUNTIME: {
    CUpti_ActivityAPI *api = (CUpti_ActivityAPI *)a;
    const char *name = NULL;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, api->cbid, &name) !=
            CUPTI_SUCCESS ||
        !name)
      name = "cudaRuntime";
    r->kind = WEFT__TR_API;
    r->start = gpu_ns(api->start);
    r->end = gpu_ns(api->end);
    r->lane = api->threadId;
    r->corr = api->correlationId;
    r->name = name; /* CUPTI's static table */
    return 1;
  }
  case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
    CUpti_ActivityExternalCorrelation *x =
        (CUpti_ActivityExternalCorrelation *)a;
    if (x->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
      weft__trace_corr_task(x->correlationId, x->externalId);
    return 0;
  }
  default:
    return 0;
  }
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream,
                                      uint8_t *buf, size_t size, size_t valid) {
  (void)size;
  weft__trace_rec batch[256];
  size_t n = 0;
  CUpti_Activity *a = NULL;
  while (cuptiActivityGetNextRecord(buf, valid, &a) == CUPTI_SUCCESS) {
    if (convert(a, &batch[n]) && ++n == sizeof batch / sizeof batch[0]) {
      weft__trace_emit_batch(batch, n);
      n = 0;
    }
  }
  if (n)
    weft__trace_emit_batch(batch, n);
  size_t lost = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &lost) == CUPTI_SUCCESS &&
      lost)
    weft__trace_count_dropped(lost);
  munmap(buf, BUF_SIZE);
}

int weft__cuda_trace_start(weft__backend *b) {
  (void)b;
  read_devices();
  CUptiResult r = cuptiActivityRegisterTimestampCallback(tracer_clock);
  clock_offset = 0;
  if (r != CUPTI_SUCCESS) {
    /* A CUPTI that refuses the clock: its own, shifted by the offset read
     * between two reads of the tracer's clock. */
    uint64_t gpu, before = weft__clock_ns();
    r = cuptiGetTimestamp(&gpu);
    if (r != CUPTI_SUCCESS)
      return cupti_fail(r, "cuptiGetTimestamp");
    uint64_t after = weft__clock_ns();
    clock_offset = (int64_t)(before + (after - before) / 2) - (int64_t)gpu;
  }
  /* buffer_requested's buffers come zeroed: CUPTI need not clear them. A
   * CUPTI that does not know the attribute clears them itself, as before. */
  uint8_t zeroed = 1;
  size_t zsize = sizeof zeroed;
  (void)cuptiActivitySetAttribute(
      CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zsize, &zeroed);
  r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS)
    return cupti_fail(r, "cuptiActivityRegisterCallbacks");
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    r = cuptiActivityEnable(kinds[i]);
    if (r != CUPTI_SUCCESS) {
      while (i-- > 0)
        cuptiActivityDisable(kinds[i]);
      return cupti_fail(r, "cuptiActivityEnable");
    }
  }
  return 0;
}

void weft__cuda_trace_stop(weft__backend *b) {
  (void)b;
  cuptiActivityFlushAll(1);
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    cuptiActivityDisable(kinds[i]);
  cuptiActivityFlushAll(1);
}

void weft__cuda_trace_task(weft__backend *b, uint64_t id, const char *name) {
  (void)b;
  (void)name;
  if (id) {
    cuptiActivityPushExternalCorrelationId(
        CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
  } else {
    uint64_t last;
    cuptiActivityPopExternalCorrelationId(
        CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
  }
}
