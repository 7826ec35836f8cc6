/* The host backend's records for the tracer: the issue of each operation
 * ("API call") under the name of the CUDA call that does the same, and the
 * operation itself as the executor ran it, as CUPTI records a GPU's. So
 * traces of the host backend read like CUDA's (launch delay, host waits)
 * and one analysis, weft's or HTA's, serves both. */
#include "host/host_internal.h"
#include "ptrmap.h"
#include "trace.h"

uint64_t weft__host_trace_issue(weft__backend *b, uint64_t *corr,
                                uint64_t *task) {
  if (!weft__trace_on_for(b))
    return 0;
  *corr = weft__trace_next_corr();
  *task = weft__trace_task;
  return weft__clock_ns();
}

const char *weft__host_trace_name(const char *name) {
  return weft__trace_intern(name);
}

void weft__host_trace_api(uint64_t t0, uint64_t corr, uint64_t task,
                          const char *api) {
  weft__trace_rec r = {.start = t0,
                       .end = weft__clock_ns(),
                       .task = task,
                       .corr = corr,
                       .name = api,
                       .lane = weft__trace_thread_lane(),
                       .kind = WEFT__TR_API};
  weft__trace_emit(&r);
}

/* Host memory is all one here; for the trace, a pointer inside a device
 * allocation the core registered is that device's: the device, or -1. */
static int device_of(weft__backend *b, const void *p) {
  weft__alloc_ref r;
  pthread_mutex_lock(&b->lock);
  int dev = weft__ptrmap_lookup(b->allocs, p, &r) == WEFT__PTR_LIVE &&
                    r.info.kind == WEFT__ALLOC_DEVICE
                ? r.info.dev
                : -1;
  pthread_mutex_unlock(&b->lock);
  return dev;
}

uint8_t weft__host_trace_copy_dir(weft__backend *b, void *dst, const void *src,
                                  weft__copy_kind kind) {
  static const uint8_t dirs[2][2] = {{WEFT__TR_HTOH, WEFT__TR_HTOD},
                                     {WEFT__TR_DTOH, WEFT__TR_DTOD}};
  switch (kind) {
  case WEFT__COPY_H2D:
    return WEFT__TR_HTOD;
  case WEFT__COPY_D2H:
    return WEFT__TR_DTOH;
  default: { /* H2H too: the core cannot tell device memory here */
    int from = device_of(b, src), to = device_of(b, dst);
    if (from >= 0 && to >= 0 && from != to)
      return WEFT__TR_PTOP;
    if (kind == WEFT__COPY_D2D)
      return WEFT__TR_DTOD;
    return dirs[from >= 0][to >= 0];
  }
  }
}

void weft__host_trace_ran(const weft__host_stream *s, const weft__host_op *op,
                          uint64_t t0) {
  weft__trace_rec r = {.start = t0,
                       .end = weft__clock_ns(),
                       .task = op->task,
                       .corr = op->corr,
                       .name = op->name,
                       .lane = s->base.id,
                       .dev = (int16_t)s->base.hdr.dev,
                       .graph = op->graph};
  switch (op->kind) {
  case HOP_COPY:
    r.kind = WEFT__TR_MEMCPY;
    r.bytes = op->u.copy.n;
    r.copy = op->copy_dir;
    r.src_pinned = r.dst_pinned = 1; /* nothing here is pageable */
    break;
  case HOP_MEMSET:
    r.kind = WEFT__TR_MEMSET;
    r.bytes = op->u.set.n;
    break;
  case HOP_LAUNCH: {
    weft_dim3 g = op->u.launch.grid, b = op->u.launch.block;
    r.kind = WEFT__TR_KERNEL;
    r.shape = (weft__trace_shape){.grid_x = g.x,
                                  .grid_y = (uint16_t)g.y,
                                  .grid_z = (uint16_t)g.z,
                                  .block_x = (uint16_t)b.x,
                                  .block_y = (uint16_t)b.y,
                                  .block_z = (uint8_t)b.z};
    break;
  }
  default:
    r.kind = WEFT__TR_KERNEL;
    break;
  }
  weft__trace_emit(&r);
}

void weft__host_trace_executor(weft__backend *b) {
  if (weft__trace_on_for(b))
    weft__trace_thread_name("host executor");
}
