/* The host backend's stream, event, copy, launch and memory operations:
 * each builds an operation and queues it on its stream. */
#include <stdlib.h>
#include <string.h>

#include "error_internal.h"
#include "host/host_internal.h"
#include "ptrmap.h"

#define HS(s) ((weft__host_stream *)(s))
#define HE(e) ((weft__host_event *)(e))

static weft__host_op *op_new(host_op_kind kind, size_t extra) {
  weft__host_op *op = calloc(1, sizeof *op + extra);
  if (op) {
    op->kind = kind;
    op->size = sizeof *op + extra;
  }
  return op;
}

static int no_memory(const char *call) {
  return weft__err(WEFT_ENOMEM, "%s: out of host memory", call);
}

/* ---- streams ---- */

static int stream_init(weft__backend *b, weft__stream *s) {
  weft__host_stream *hs = HS(s);
  hs->state = HOST_IDLE;
  /* Out of the range, a priority is clamped to it, as CUDA does (it would
   * otherwise index past the executor's levels). */
  if (s->priority > WEFT__HOST_PRIO_LEAST)
    s->priority = WEFT__HOST_PRIO_LEAST;
  if (s->priority < WEFT__HOST_PRIO_GREATEST)
    s->priority = WEFT__HOST_PRIO_GREATEST;
  hs->level = WEFT__HOST_PRIO_LEAST - s->priority;
  return 0;
}

/* Waits until every operation queued before the call has completed. */
static int stream_sync(weft__stream *s) {
  weft__host_stream *hs = HS(s);
  weft__host_backend *hb = weft__host_of(s->hdr.bk);
  pthread_mutex_lock(&hb->mu);
  uint64_t target = hs->submitted;
  while (hs->completed < target)
    pthread_cond_wait(&hb->progress, &hb->mu);
  pthread_mutex_unlock(&hb->mu);
  return 0;
}

/* Unlike cudaStreamDestroy this waits for queued work, because the
 * stream's memory is recycled once the call returns. */
static int stream_fini(weft__stream *s) { return stream_sync(s); }

static int stream_query(weft__stream *s) {
  weft__host_stream *hs = HS(s);
  weft__host_backend *hb = weft__host_of(s->hdr.bk);
  pthread_mutex_lock(&hb->mu);
  int done = hs->completed == hs->submitted;
  pthread_mutex_unlock(&hb->mu);
  return done ? 0 : WEFT_EAGAIN;
}

static int stream_wait_event(weft__stream *s, weft__event *e) {
  weft__host_backend *hb = weft__host_of(s->hdr.bk);
  weft__host_op *op = op_new(HOP_WAIT, 0);
  if (!op)
    return no_memory("weft_event_wait");
  pthread_mutex_lock(&hb->mu);
  weft__host_rec *r = HE(e)->last;
  if (r)
    r->refs++;
  pthread_mutex_unlock(&hb->mu);
  if (!r) { /* never recorded: nothing to wait for, as in CUDA */
    free(op);
    return 0;
  }
  op->u.rec = r;
  weft__host_enqueue(HS(s), op);
  return 0;
}

/* ---- events ---- */

static int event_init(weft__backend *b, weft__event *e) { return 0; }

static int event_fini(weft__event *e) {
  weft__host_backend *hb = weft__host_of(e->hdr.bk);
  pthread_mutex_lock(&hb->mu);
  weft__host_rec_release(HE(e)->last);
  HE(e)->last = NULL;
  pthread_mutex_unlock(&hb->mu);
  return 0;
}

static int event_record(weft__event *e, weft__stream *s) {
  weft__host_backend *hb = weft__host_of(s->hdr.bk);
  weft__host_op *op = op_new(HOP_RECORD, 0);
  weft__host_rec *r = calloc(1, sizeof *r);
  if (!op || !r) {
    free(op);
    free(r);
    return no_memory("weft_event_record");
  }
  r->refs = 2; /* the event's and the operation's */
  op->u.rec = r;
  pthread_mutex_lock(&hb->mu);
  weft__host_rec_release(HE(e)->last);
  HE(e)->last = r;
  pthread_mutex_unlock(&hb->mu);
  weft__host_enqueue(HS(s), op);
  return 0;
}

static int event_query(weft__event *e) {
  weft__host_backend *hb = weft__host_of(e->hdr.bk);
  pthread_mutex_lock(&hb->mu);
  weft__host_rec *r = HE(e)->last;
  int done = !r || r->done;
  pthread_mutex_unlock(&hb->mu);
  return done ? 0 : WEFT_EAGAIN;
}

static int event_sync(weft__event *e) {
  weft__host_backend *hb = weft__host_of(e->hdr.bk);
  pthread_mutex_lock(&hb->mu);
  weft__host_rec *r = HE(e)->last;
  if (r) {
    r->refs++; /* a re-record while we wait must not free it */
    while (!r->done)
      pthread_cond_wait(&hb->progress, &hb->mu);
    weft__host_rec_release(r);
  }
  pthread_mutex_unlock(&hb->mu);
  return 0;
}

static int event_elapsed(weft__event *start, weft__event *end, float *ms) {
  weft__host_backend *hb = weft__host_of(start->hdr.bk);
  pthread_mutex_lock(&hb->mu);
  weft__host_rec *a = HE(start)->last, *z = HE(end)->last;
  int done = a && z && a->done && z->done;
  double v = done ? ((double)z->t_ns - (double)a->t_ns) / 1e6 : 0.0;
  pthread_mutex_unlock(&hb->mu);
  if (!done)
    return WEFT_EAGAIN;
  *ms = (float)v;
  return 0;
}

/* ---- work ---- */

/* Tracing (host_trace.c): the issue of op, under the name of the CUDA
 * call that does the same; 0 when not traced. */
static uint64_t trace_begin(weft__stream *s, weft__host_op *op,
                            const char *name) {
  uint64_t t0 = weft__host_trace_issue(s->hdr.bk, &op->corr, &op->task);
  if (t0)
    op->name = name ? weft__host_trace_name(name) : NULL;
  return t0;
}

static int copy(weft__stream *s, void *dst, const void *src, size_t n,
                weft__copy_kind kind) {
  weft__host_op *op = op_new(HOP_COPY, 0);
  if (!op)
    return no_memory("weft_copy");
  op->u.copy.dst = dst;
  op->u.copy.src = src;
  op->u.copy.n = n;
  if (HS(s)->capturing) { /* replays are traced: know the direction now */
    op->copy_dir = weft__host_trace_copy_dir(s->hdr.bk, dst, src, kind);
    weft__host_capture_op(HS(s), op);
    return 0;
  }
  uint64_t t0 = trace_begin(s, op, NULL);
  if (t0)
    op->copy_dir = weft__host_trace_copy_dir(s->hdr.bk, dst, src, kind);
  uint64_t corr = op->corr, task = op->task;
  weft__host_enqueue(HS(s), op);
  if (t0)
    weft__host_trace_api(t0, corr, task, "cudaMemcpyAsync");
  return 0;
}

static int memset_op(weft__stream *s, void *dst, int value, size_t n) {
  weft__host_op *op = op_new(HOP_MEMSET, 0);
  if (!op)
    return no_memory("weft_memset");
  op->u.set.dst = dst;
  op->u.set.value = value;
  op->u.set.n = n;
  if (weft__host_capture_op(HS(s), op))
    return 0;
  uint64_t t0 = trace_begin(s, op, NULL);
  uint64_t corr = op->corr, task = op->task;
  weft__host_enqueue(HS(s), op);
  if (t0)
    weft__host_trace_api(t0, corr, task, "cudaMemsetAsync");
  return 0;
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Parameter values and the shared-memory scratch live in the operation's
 * own allocation: copied now, as CUDA copies kernelParams at launch. */
static int launch(weft__stream *s, const weft_kernel *k, weft_dim3 grid,
                  weft_dim3 block, size_t shmem, void **args) {
  size_t extra = 0;
  for (unsigned i = 0; i < k->nargs; i++)
    extra += align16(k->arg_size[i]);
  const char *name = k->name ? k->name : "kernel";
  if (shmem > ((size_t)1 << 30))
    return weft__err(WEFT_EINVAL, "weft_launch %s: %zu bytes of shared memory",
                     name, shmem);
  /* A graph keeps its launches beyond this call, and the caller may free
   * the kernel's name meanwhile: a captured launch keeps a copy, after
   * its extras and outside size, so that replays (which intern it) and
   * an update's shape check see only the launch. */
  size_t name_bytes = HS(s)->capturing ? strlen(name) + 1 : 0;
  /* The arguments start on a 16-byte line (calloc's alignment), as a
   * kernel's would: a vector type read through its pointer needs it. */
  size_t head = align16(sizeof(weft__host_op)) - sizeof(weft__host_op);
  weft__host_op *op =
      op_new(HOP_LAUNCH, head + extra + align16(shmem) + name_bytes);
  if (!op)
    return no_memory("weft_launch");
  op->size -= name_bytes;
  unsigned char *buf = (unsigned char *)op + align16(sizeof *op);
  for (unsigned i = 0; i < k->nargs; i++) {
    memcpy(buf, args[i], k->arg_size[i]);
    op->u.launch.argv[i] = buf;
    buf += align16(k->arg_size[i]);
  }
  op->u.launch.fn = k->host;
  op->u.launch.grid = grid;
  op->u.launch.block = block;
  op->u.launch.shared = shmem ? buf : NULL;
  if (HS(s)->capturing) {
    op->name = memcpy((char *)op + op->size, name, name_bytes);
    weft__host_capture_op(HS(s), op);
    return 0;
  }
  uint64_t t0 = trace_begin(s, op, name);
  uint64_t corr = op->corr, task = op->task;
  weft__host_enqueue(HS(s), op);
  if (t0)
    weft__host_trace_api(t0, corr, task, "cudaLaunchKernel");
  return 0;
}

/* ---- memory ---- */

/* "Device" memory is host memory. Sizes beyond physical memory are refused
 * up front, as a GPU refuses more than it has. */
static int host_alloc(weft__backend *b, size_t n, size_t extra, size_t align,
                      void **out, const char *call) {
  /* The caller's n, not n + extra (weft's own header), in the messages. */
  if (n > b->info[0].memory_total || n > SIZE_MAX - extra)
    return weft__err(WEFT_ENOMEM, "%s: %zu bytes exceed the %zu of memory",
                     call, n, b->info[0].memory_total);
  void *p = NULL;
  if (posix_memalign(&p, align, n + extra) != 0)
    return weft__err(WEFT_ENOMEM, "%s: cannot allocate %zu bytes", call, n);
  *out = p;
  return 0;
}

/* The smallest cached block that fits with at most 1/8 to spare, else a
 * new one. A block freed on a stream is cached when the stream passes the
 * free, so reuse by any stream is safe from then on. */
static int device_alloc(weft__stream *s, size_t n, void **out) {
  weft__host_backend *hb = weft__host_of(s->hdr.bk);
  pthread_mutex_lock(&hb->mu);
  weft__host_block **best = NULL;
  for (weft__host_block **pp = &hb->cached; *pp; pp = &(*pp)->next)
    if ((*pp)->size >= n && (*pp)->size - n <= n / 8 &&
        (!best || (*pp)->size < (*best)->size))
      best = pp;
  weft__host_block *b = best ? *best : NULL;
  if (b) {
    *best = b->next;
    hb->cached_bytes -= b->size;
  }
  pthread_mutex_unlock(&hb->mu);
  if (!b) {
    void *p = NULL;
    int rc = host_alloc(s->hdr.bk, n, WEFT__HOST_BLOCK_HDR, 256, &p,
                        "weft_device_alloc");
    if (rc)
      return rc;
    b = p;
    b->size = n;
  }
  *out = (char *)b + WEFT__HOST_BLOCK_HDR;
  return 0;
}

/* Stream-ordered: the memory is released when the stream passes the free. */
static int device_free(weft__stream *s, void *p) {
  weft__host_op *op = op_new(HOP_FREE, 0);
  if (!op) {
    /* No memory for the queued free: wait for the stream to pass this
     * point instead, then release the block now. A failed free would keep
     * the allocation registered, and weft_shutdown refusing for ever. */
    int rc = stream_sync(s);
    if (rc)
      return rc;
    weft__host_backend *hb = weft__host_of(s->hdr.bk);
    pthread_mutex_lock(&hb->mu);
    weft__host_block_release(hb, p);
    pthread_mutex_unlock(&hb->mu);
    return 0;
  }
  op->u.ptr = p;
  weft__host_enqueue(HS(s), op);
  return 0;
}

static int pinned_alloc(weft__backend *b, size_t n, void **out) {
  return host_alloc(b, n, 0, 64, out, "weft_pinned_alloc");
}

static int pinned_free(weft__backend *b, void *p) {
  free(p);
  return 0;
}

/* The process's pageable host backends, for ptr_kind: memory pinned or
 * allocated by one runtime is the same kind in another, as CUDA's
 * pointer attributes are the process's. Lock order: this, then a
 * backend's lock. */
static pthread_mutex_t pageable_lock = PTHREAD_MUTEX_INITIALIZER;
static weft__host_backend *pageable_list;

void weft__host_pageable_join(weft__host_backend *hb) {
  pthread_mutex_lock(&pageable_lock);
  hb->next_pageable = pageable_list;
  pageable_list = hb;
  pthread_mutex_unlock(&pageable_lock);
}

void weft__host_pageable_leave(weft__host_backend *hb) {
  pthread_mutex_lock(&pageable_lock);
  for (weft__host_backend **p = &pageable_list; *p; p = &(*p)->next_pageable)
    if (*p == hb) {
      *p = hb->next_pageable;
      break;
    }
  pthread_mutex_unlock(&pageable_lock);
}

/* Whether p lies in a live allocation of b: 1 and its kind, or 0. */
static int alloc_kind(weft__backend *b, const void *p, int *kind) {
  weft__alloc_ref r;
  pthread_mutex_lock(&b->lock);
  int found = weft__ptrmap_lookup(b->allocs, p, &r) == WEFT__PTR_LIVE;
  pthread_mutex_unlock(&b->lock);
  if (found)
    *kind =
        r.info.kind == WEFT__ALLOC_DEVICE ? WEFT__MEM_DEVICE : WEFT__MEM_PINNED;
  return found;
}

/* Host memory is all one here and nothing needs staging: every pointer
 * is as good as pinned. With WEFT_HOST_PAGEABLE=1 (for tests of the
 * core's staging, memory.c) memory is told apart as CUDA would: inside a
 * live device allocation (of any runtime of the process) is device
 * memory, inside a pinned one pinned, the rest pageable. */
static int ptr_kind(weft__backend *b, const void *p) {
  if (!weft__host_of(b)->pageable)
    return WEFT__MEM_PINNED;
  int kind = WEFT__MEM_PAGEABLE;
  if (alloc_kind(b, p, &kind))
    return kind;
  pthread_mutex_lock(&pageable_lock);
  for (weft__host_backend *o = pageable_list; o; o = o->next_pageable)
    if (&o->base != b && alloc_kind(&o->base, p, &kind))
      break;
  pthread_mutex_unlock(&pageable_lock);
  return kind;
}

const struct weft__backend_ops weft__host_ops = {
    .kind = WEFT_BACKEND_HOST,
    .name = "host",
    .backend_size = sizeof(weft__host_backend),
    .stream_size = sizeof(weft__host_stream),
    .event_size = sizeof(weft__host_event),
    .open = weft__host_open,
    .close = weft__host_close,
    .device_count = weft__host_device_count,
    .device_info = weft__host_device_info,
    .device_sync = weft__host_device_sync,
    .set_completion_hook = weft__host_set_completion_hook,
    .stream_init = stream_init,
    .stream_fini = stream_fini,
    .stream_sync = stream_sync,
    .stream_query = stream_query,
    .stream_wait_event = stream_wait_event,
    .event_init = event_init,
    .event_fini = event_fini,
    .event_record = event_record,
    .event_query = event_query,
    .event_sync = event_sync,
    .event_elapsed = event_elapsed,
    .copy = copy,
    .ptr_kind = ptr_kind,
    .memset = memset_op,
    .launch = launch,
    .capture_begin = weft__host_capture_begin,
    .capture_end = weft__host_capture_end,
    .graph_launch = weft__host_graph_launch,
    .graph_counts = weft__host_graph_counts,
    .graph_destroy = weft__host_graph_destroy,
    .device_alloc = device_alloc,
    .device_free = device_free,
    .pinned_alloc = pinned_alloc,
    .pinned_free = pinned_free,
};
