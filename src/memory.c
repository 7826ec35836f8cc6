/* weft/memory.h: copies, memset, device and pinned allocation, and the
 * memory statistics.
 *
 * weft_copy is asynchronous whatever the host memory.
 *
 * Copies between device memory and pinned memory go straight to the
 * stream. A copy from or to pageable memory would make CUDA block the
 * calling thread for the whole transfer (docs/decisions/memory.md,
 * "Pageable copies are staged by tasks"), so it is staged
 * through pinned blocks in chunks (4 MiB unless stage_chunk_kib says
 * otherwise), a ring of blocks per copy
 * (reused once their transfer is done; sizes at ring_chunks), so a
 * copy of any size holds a bounded amount of pinned memory:
 * - host to device: helper tasks copy chunks into the ring's blocks in
 *   parallel on the workers, at most a ring ahead of the transfers, in
 *   chunk order; the caller queues each chunk's transfer on its stream as
 *   soon as that chunk is staged, so transfers overlap the staging, and
 *   returns once every chunk is staged (the source may then change);
 * - device to host: the transfers into the ring's blocks are queued on the
 *   caller's stream, each followed by a helper task that waits for its
 *   chunk (suspended, polled like any GPU wait) and copies it out; a copy
 *   larger than the ring holds the caller until each further chunk's block
 *   is free again; the caller's next weft_sync() joins the helpers.
 * Either way the caller's stream orders the transfers among its other work,
 * and no thread blocks on the device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checker.h"
#include "clock.h"
#include "data_core.h"
#include "dataflow.h"
#include "door.h"
#include "event_pool.h"
#include "graph_internal.h"
#include "host_copy.h"
#include "host_guard.h"
#include "memory_internal.h"
#include "registry.h"
#include "runtime_state.h"
#include "weft/memory.h"

/* A staging block's bytes (weft_runtime_opts.stage_chunk_kib, weft_init
 * validated it: 64 KiB to 64 MiB; 4 MiB unset). */
static size_t chunk_bytes(const weft_runtime *rt) {
  int kib = rt->opts.stage_chunk_kib > 0 ? rt->opts.stage_chunk_kib : 4096;
  return (size_t)kib << 10;
}

/* Blocks in a copy's ring (weft_runtime_opts.stage_chunks, or by
 * default as follows). To the device: two per worker, so that every
 * worker can stage one while another's waits for its transfer; 8 to 32
 * (32 to 128 MiB). From the device: 64 (256 MiB): a copy up to that size
 * returns at once, and a larger one waits, the caller suspended, for each
 * further chunk's block (ordering forbids queuing those transfers later
 * from elsewhere: the caller's next work on the source must follow
 * them). */
static size_t ring_chunks(const weft_runtime *rt, int to_device) {
  if (rt->opts.stage_chunks > 0) /* weft_init validated it: 2 to 256 */
    return (size_t)rt->opts.stage_chunks;
  if (!to_device)
    return 64;
  size_t r = 2 * (size_t)rt->sched.nworkers;
  return r < 8 ? 8 : r > 32 ? 32 : r;
}

typedef struct weft__stage_job {
  weft_runtime *rt;
  char *host;   /* pageable side */
  char *pinned; /* staging block */
  size_t n;
  /* Host to device: the previous transfer out of this block, to wait for
   * before overwriting it (NULL: none). Device to host: this chunk's
   * transfer into the block. */
  weft__event *ev;
  int last_use; /* device to host: no later chunk reuses the block */
  int rc;
  /* The helper staging the chunk; device to host: and whether it ran (a
   * helper that could not start, with no memory for its stack, never
   * does: whoever joins it then gives back what it would have). */
  weft_task *helper;
  int ran;
} stage_job;

static int spawn_helper(weft__exec *x, weft_task **t, weft_task_fn fn,
                        void *arg) {
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.name = "weft-stage";
  o.device = x->dev;
  o.priority = x->high ? WEFT_PRIORITY_HIGH : WEFT_PRIORITY_NORMAL;
  int rc = weft_task_spawn(x->rt, t, fn, arg, &o);
  if (rc == WEFT_ESTATE) /* named as the call the program made */
    rc = weft__err(rc, "weft_copy: staging a pageable copy: %s",
                   weft_last_error_message());
  return rc;
}

/* A staged copy's host half: weft_copy's check reported it already. Into
 * a pinned block (to the device), stores that bypass the caches; out of
 * one, memcpy, since the program reads its data next. */
static void stage_copy(void *dst, const void *src, size_t n, int to_block) {
  weft__guard_quiet++;
  if (to_block)
    weft__copy_for_dma(dst, src, n);
  else
    memcpy(dst, src, n);
  weft__guard_quiet--;
}

static void stage_in(void *arg) {
  stage_job *j = arg;
  if (j->ev &&
      (j->rc = weft__wait_for_event(
           weft__caller_self(), j->ev,
           "a staged copy's transfer (its pinned block's last use)")) != 0)
    return;
  stage_copy(j->pinned, j->host, j->n, 1);
}

/* Gives back a device-to-host chunk's event, and its block on the block's
 * last use. */
static void out_done(stage_job *j) {
  weft__event_pool_put(j->rt, j->ev);
  if (j->last_use)
    weft__pinned_cache_free(&j->rt->pinned, j->pinned);
}

static void stage_out(void *arg) {
  stage_job *j = arg;
  weft__exec *x = weft__caller_self();
  j->rc = weft__wait_for_event(x, j->ev, "a staged copy's transfer");
  if (j->rc == 0)
    stage_copy(j->host, j->pinned, j->n, 0);
  out_done(j);
  j->ran = 1;
}

/* Joins a device-to-host chunk's helper and frees its job: the helper's
 * failure, or the chunk's. */
static int finish_out(stage_job *j) {
  int rc = weft_task_join(j->helper);
  if (!j->ran)
    out_done(j);
  if (!rc)
    rc = j->rc;
  free(j);
  return rc;
}

/* Frees the staging block once the stream has passed the transfer. */
static void release_block(weft__exec *x, weft__stream *s, void *block,
                          size_t n) {
  weft__pinned_cache_use(&x->rt->pinned, block, n, s);
  weft__pinned_cache_free(&x->rt->pinned, block);
}

/* Starts staging chunk i of src (n bytes in all) into ring slot j, whose
 * block and event (after the block's last transfer; NULL before the
 * first) stay the slot's. */
static int start_in(weft__exec *x, stage_job *j, const char *src, size_t n,
                    size_t i) {
  size_t chunk = chunk_bytes(x->rt), off = i * chunk;
  j->host = (char *)src + off;
  j->n = n - off < chunk ? n - off : chunk;
  j->rc = 0;
  return spawn_helper(x, &j->helper, stage_in, j);
}

static int staged_in(weft__exec *x, weft__stream *s, char *dst, const char *src,
                     size_t n) {
  weft_runtime *rt = x->rt;
  size_t chunk = chunk_bytes(rt), nchunks = (n + chunk - 1) / chunk;
  if (nchunks == 1) { /* small: stage here, no task needed */
    void *b;
    int rc = weft__pinned_cache_alloc(&rt->pinned, n, &b);
    if (rc)
      return rc;
    stage_copy(b, src, n, 1);
    rc = weft__copy(s, dst, b, n, WEFT__COPY_H2D);
    release_block(x, s, b, n);
    return rc;
  }
  /* The ring: slot k serves chunks k, k + r, ... */
  size_t r = nchunks < ring_chunks(rt, 1) ? nchunks : ring_chunks(rt, 1);
  stage_job *slot = calloc(r, sizeof *slot);
  int rc = slot ? 0 : weft__err(WEFT_ENOMEM, "weft_copy: no memory");
  for (size_t k = 0; !rc && k < r; k++) {
    slot[k].rt = rt;
    rc = weft__pinned_cache_alloc(&rt->pinned, chunk, (void **)&slot[k].pinned);
  }
  size_t started = 0;
  while (!rc && started < r &&
         (rc = start_in(x, &slot[started], src, n, started)) == 0)
    started++;
  /* In chunk order: wait for the chunk's staging, queue its transfer and
   * an event after it, start the chunk that reuses the slot. After a
   * failure the helpers running are still joined and every block is
   * released, so nothing leaks; the transfers already queued stay. */
  for (size_t i = 0; slot && i < nchunks && slot[i % r].helper; i++) {
    stage_job *j = &slot[i % r];
    int jr = weft_task_join(j->helper);
    j->helper = NULL;
    if (!rc)
      rc = jr ? jr : j->rc;
    if (!rc)
      rc = weft__copy(s, dst + i * chunk, j->pinned, j->n, WEFT__COPY_H2D);
    if (!rc && started < nchunks) { /* chunk started = i + r: this slot */
      if (!j->ev)
        rc = weft__event_pool_get(rt, x->dev, 0, &j->ev);
      if (!rc)
        rc = weft__event_record(j->ev, s);
      if (!rc)
        rc = start_in(x, j, src, n, started);
      if (!rc)
        started++;
    }
  }
  for (size_t k = 0; slot && k < r; k++) {
    if (slot[k].ev)
      weft__event_pool_put(rt, slot[k].ev);
    if (slot[k].pinned)
      release_block(x, s, slot[k].pinned, chunk);
  }
  free(slot);
  return rc;
}

static int pending_add(weft__exec *x, stage_job *j) {
  if (x->npending == x->cap_pending) {
    int cap = x->cap_pending ? x->cap_pending * 2 : 16;
    stage_job **v = realloc(x->pending, (size_t)cap * sizeof *v);
    if (!v)
      return WEFT_ENOMEM;
    x->pending = v;
    x->cap_pending = cap;
  }
  x->pending[x->npending++] = j;
  return 0;
}

/* Chunk i of a device-to-host copy into block b: its transfer, an event
 * after it, and the helper that waits for it and copies it out (freeing
 * b if last_use), in *job (finish_out joins it). On failure b is left to
 * the caller. */
static int chunk_out(weft__exec *x, weft__stream *s, char *dst, const char *src,
                     size_t n, size_t i, char *b, int last_use,
                     stage_job **job) {
  weft_runtime *rt = x->rt;
  size_t chunk = chunk_bytes(rt), off = i * chunk;
  stage_job *j = calloc(1, sizeof *j);
  if (!j)
    return weft__err(WEFT_ENOMEM, "weft_copy: no memory");
  *j = (stage_job){.rt = rt,
                   .host = dst + off,
                   .pinned = b,
                   .n = n - off < chunk ? n - off : chunk,
                   .last_use = last_use};
  int rc = weft__copy(s, b, src + off, j->n, WEFT__COPY_D2H);
  if (!rc)
    weft__pinned_cache_use(&rt->pinned, b, j->n, s);
  if (!rc)
    rc = weft__event_pool_get(rt, x->dev, 0, &j->ev);
  if (!rc && (rc = weft__event_record(j->ev, s)) != 0)
    weft__event_pool_put(rt, j->ev);
  if (!rc && (rc = spawn_helper(x, &j->helper, stage_out, j)) != 0)
    weft__event_pool_put(rt, j->ev);
  if (rc) {
    free(j);
    return rc;
  }
  *job = j;
  return 0;
}

static int staged_out(weft__exec *x, weft__stream *s, char *dst,
                      const char *src, size_t n) {
  weft_runtime *rt = x->rt;
  size_t chunk = chunk_bytes(rt), nchunks = (n + chunk - 1) / chunk;
  size_t r = ring_chunks(rt, 0);
  if (r > nchunks)
    r = nchunks;
  char **blocks = calloc(r, sizeof *blocks);
  stage_job **jobs = calloc(r, sizeof *jobs);
  int rc = blocks && jobs ? 0 : weft__err(WEFT_ENOMEM, "weft_copy: no memory");
  size_t i = 0;
  for (; !rc && i < nchunks; i++) {
    size_t k = i % r;
    if (jobs[k]) {
      /* The slot's block is free once its helper copied it out: the one
       * wait on the caller, only for copies larger than the ring. */
      int jr = finish_out(jobs[k]);
      jobs[k] = NULL;
      if (jr) {
        rc = jr;
        break;
      }
    } else if ((rc = weft__pinned_cache_alloc(&rt->pinned,
                                              nchunks == 1 ? n : chunk,
                                              (void **)&blocks[k])) != 0) {
      break;
    }
    int last = i + r >= nchunks;
    rc = chunk_out(x, s, dst, src, n, i, blocks[k], last, &jobs[k]);
    if (!rc && last)
      blocks[k] = NULL; /* its helper frees it */
  }
  /* Done: the helpers still running (one per slot, each freeing its
   * block) finish at the caller's next weft_sync. Failed: they finish
   * here, and the blocks still the copy's are freed. */
  for (size_t k = 0; k < r && jobs; k++) {
    if (!jobs[k])
      continue;
    if (rc || pending_add(x, jobs[k]) != 0)
      finish_out(jobs[k]);
  }
  for (size_t k = 0; k < r && blocks; k++)
    if (blocks[k])
      weft__pinned_cache_free(&rt->pinned, blocks[k]);
  free(blocks);
  free(jobs);
  return rc;
}

int weft__memory_join_pending(weft__exec *x) {
  int rc = 0;
  for (int i = 0; i < x->npending; i++) {
    int r = finish_out(x->pending[i]);
    if (!rc)
      rc = r;
  }
  x->npending = 0;
  return rc;
}

int weft_copy(void *dst, const void *src, size_t bytes) {
  weft__caller c;
  int rc = weft__door("weft_copy", WEFT__DOOR_ISSUE, NULL, &c);
  if (rc)
    return rc;
  weft__exec *x = c.x;
  weft__stream *s = c.s;
  if (bytes == 0)
    return 0;
  if (!dst || !src)
    return weft__err(WEFT_EINVAL, "weft_copy: %s is NULL", dst ? "src" : "dst");
  /* Here, not only in weft__copy: staging copies in chunks no longer at
   * the start of the allocation, and the pinned cache below records the
   * stream's use of a block, which a refused call must not do. */
  rc = weft__check_extent(x->rt->h.bk, dst, src, bytes, "weft_copy");
  /* Within the blocks weft_pinned_alloc gave, not only their chunks; the
   * stream's use of them noted. */
  int dst_pinned = 0, src_pinned = 0;
  if (!rc)
    rc = weft__pinned_cache_copy(&x->rt->pinned, dst, src, bytes, s,
                                 "weft_copy", &dst_pinned, &src_pinned);
  if (rc)
    return rc;
  const struct weft__backend_ops *ops = x->rt->h.bk->ops;
  int src_kind = src_pinned      ? WEFT__MEM_PINNED
                 : ops->ptr_kind ? ops->ptr_kind(x->rt->h.bk, src)
                                 : WEFT__MEM_PINNED;
  int dst_kind = dst_pinned      ? WEFT__MEM_PINNED
                 : ops->ptr_kind ? ops->ptr_kind(x->rt->h.bk, dst)
                                 : WEFT__MEM_PINNED;
  int pageable =
      src_kind == WEFT__MEM_PAGEABLE || dst_kind == WEFT__MEM_PAGEABLE;
  if (pageable && (rc = weft__caller_refuse_in_capture(
                       x, "weft_copy",
                       "a copy to or from pageable memory is staged through "
                       "pinned buffers and waits for the GPU; use pinned "
                       "memory (weft_pinned_alloc)")) != 0)
    return rc;
  int in = src_kind == WEFT__MEM_PAGEABLE && dst_kind == WEFT__MEM_DEVICE;
  int out = src_kind == WEFT__MEM_DEVICE && dst_kind == WEFT__MEM_PAGEABLE;
  /* Staged: the operations touch the pinned buffers, so weft check sees
   * the host side here (registered data's host memory); the other paths'
   * operations touch it themselves. */
  if ((in || out) && x->rt->h.bk->check)
    weft__check_host(x->rt->h.bk->check, "weft_copy",
                     (weft__check_span[]){{dst, bytes, 1}, {src, bytes, 0}}, 2);
  if (in)
    rc = staged_in(x, s, dst, src, bytes);
  else if (out)
    rc = staged_out(x, s, dst, src, bytes);
  else if (src_kind != WEFT__MEM_DEVICE && dst_kind != WEFT__MEM_DEVICE)
    rc = weft__copy(s, dst, src, bytes, WEFT__COPY_H2H);
  else
    rc = weft__copy(s, dst, src, bytes, WEFT__COPY_DEFAULT);
  return rc;
}

int weft_memset(void *dst, int value, size_t bytes) {
  weft__caller c;
  int rc = weft__door("weft_memset", WEFT__DOOR_ISSUE, NULL, &c);
  if (rc)
    return rc;
  if (dst && bytes)
    rc = weft__pinned_cache_extent(&c.x->rt->pinned, dst, bytes, "weft_memset",
                                   "dst");
  if (!rc)
    rc = weft__memset(c.s, dst, value, bytes);
  return rc;
}

int weft_device_alloc(size_t bytes, void **ptr) {
  weft__caller c;
  int rc =
      weft__door("weft_device_alloc", WEFT__DOOR_ISSUE | WEFT__DOOR_NO_CAPTURE,
                 "allocate before the capture", &c);
  if (rc)
    return rc;
  rc = weft__device_alloc(c.s, bytes, ptr);
  if (rc == 0)
    weft__caller_made(c.x, *ptr);
  return rc;
}

int weft_device_free(void *ptr) {
  weft__caller c;
  int rc =
      weft__door("weft_device_free", WEFT__DOOR_ISSUE | WEFT__DOOR_NO_CAPTURE,
                 "free after the capture", &c);
  if (rc)
    return rc;
  size_t size =
      ptr && c.x->flow ? weft__device_alloc_size(c.s->hdr.bk, ptr) : 0;
  if (ptr && (rc = weft__graph_before_free(c.x, c.s, ptr)) != 0)
    return rc;
  rc = weft__device_free(c.s, ptr);
  if (rc == 0 && size) /* a new allocation there is new data */
    weft__flow_forget(c.x, ptr, size);
  return rc;
}

int weft_pinned_alloc(size_t bytes, void **ptr) {
  weft__caller c;
  int entered = weft__door("weft_pinned_alloc", 0, NULL, &c);
  if (entered)
    return entered;
  weft__exec *x = c.x;
  if (!x->bk->check)
    return weft__pinned_cache_alloc(&x->rt->pinned, bytes, ptr);
  weft__pinned_stats before, after;
  weft__pinned_cache_stats(&x->rt->pinned, &before);
  int alive = weft__caller_others_alive(x);
  uint64_t t0 = weft__clock_ns();
  int rc = weft__pinned_cache_alloc(&x->rt->pinned, bytes, ptr);
  uint64_t ns = weft__clock_ns() - t0;
  weft__pinned_cache_stats(&x->rt->pinned, &after);
  if (rc == 0) {
    weft__caller_allocated(x, *ptr, bytes, 1);
    weft__caller_made(x, *ptr);
  }
  /* On CUDA a miss allocates page-locked memory (cudaHostAlloc), which
   * waits for the whole device; the host backend's does not. */
  if (rc == 0 && x->is_task && after.misses > before.misses &&
      x->bk->ops->kind == WEFT_BACKEND_CUDA)
    weft__caller_implicit_sync(
        x, "weft_pinned_alloc",
        "a pinned-cache miss allocates page-locked memory (cudaHostAlloc), "
        "which waits for the whole device; allocate before the tasks start, "
        "or free and reuse blocks of this size",
        ns, alive);
  return rc;
}

int weft_pinned_free(void *ptr) {
  weft__caller c;
  int rc = weft__door("weft_pinned_free", WEFT__DOOR_NO_CAPTURE,
                      "freeing records events on the streams that used the "
                      "block; free after the capture",
                      &c);
  if (rc)
    return rc;
  weft__exec *x = c.x;
  if (ptr) /* before: see weft_device_free */
    weft__caller_freeing(x, ptr);
  size_t size =
      ptr && x->flow ? weft__pinned_cache_size(&x->rt->pinned, ptr) : 0;
  rc = weft__pinned_cache_free(&x->rt->pinned, ptr);
  if (rc == 0 && size)
    weft__flow_forget(x, ptr, size);
  return rc;
}

int weft_mem_stats_get(weft_runtime *rt, weft_mem_stats *out) {
  int rc = weft__registry_check(rt, "weft_mem_stats_get");
  if (rc)
    return rc;
  if (!out)
    return weft__err(WEFT_EINVAL, "weft_mem_stats_get: out is NULL");
  if (out->struct_size < sizeof *out)
    return weft__err(WEFT_EINVAL, "weft_mem_stats_get: set out->struct_size "
                                  "to sizeof(weft_mem_stats)");
  weft__pinned_stats p;
  weft__pinned_cache_stats(&rt->pinned, &p);
  weft__backend_counts c;
  weft__backend_get_counts(rt->h.bk, &c);
  out->pinned_reserved = p.reserved;
  out->pinned_in_use = p.in_use;
  out->pinned_requested = p.requested;
  out->pinned_pending = p.pending;
  out->pinned_cached = p.reserved - p.in_use - p.pending;
  out->pinned_blocks = p.blocks_in_use;
  out->pinned_hits = p.hits;
  out->pinned_misses = p.misses;
  out->device_allocs = c.device_allocs;
  out->device_bytes = c.device_bytes;
  out->data_evictions = atomic_load(&rt->data.evictions);
  out->data_evicted_bytes = atomic_load(&rt->data.evicted_bytes);
  out->data_written_back = atomic_load(&rt->data.written_back);
  return 0;
}

size_t weft__data_limit(const weft_runtime *rt) { return rt->opts.data_limit; }

int weft__data_prefetch_on(const weft_runtime *rt) {
  return rt->opts.data_prefetch == 1 && !rt->h.bk->check;
}

void weft__data_set_check_hook(weft_runtime *rt, weft__stale_fn fn) {
  if (rt->h.bk->check)
    weft__check_set_stale(rt->h.bk->check, fn, rt);
}

int weft__data_event_create(weft_event **ev) {
  weft__caller c;
  int rc = weft__door("weft_data_get", 0, NULL, &c);
  weft__event *e;
  if (rc == 0 && (rc = weft__event_create(c.bk, c.dev, 0, &e)) == 0)
    *ev = (weft_event *)weft__handle_of(&e->hdr);
  return rc;
}

int weft__data_event_done(weft_event *ev) {
  weft__event *e = (weft__event *)weft__handle_obj(ev);
  return weft__handle_live(ev, &e->hdr) && weft__event_query(e) == 0;
}

int weft__data_check_fd(const weft_runtime *rt) {
  return rt->h.bk->check ? weft__check_fd(rt->h.bk->check) : -1;
}

void weft__data_check_cpu_access(const weft_runtime *rt, const void *base,
                                 size_t bytes, int dev) {
  if (!rt->h.bk->check)
    return;
  char msg[160];
  snprintf(msg, sizeof msg,
           "a CPU access to registered data at %p (%zu bytes), whose valid "
           "copy is on device %d",
           base, bytes, dev);
  weft__check_printed(rt->h.bk->check, "stale", msg);
}

void weft__data_evicted(weft_runtime *rt, size_t bytes, size_t written_back) {
  atomic_fetch_add(&rt->data.evictions, 1);
  atomic_fetch_add(&rt->data.evicted_bytes, bytes);
  atomic_fetch_add(&rt->data.written_back, written_back);
}

int weft_mem_trim(weft_runtime *rt) {
  int rc0 = weft__registry_check(rt, "weft_mem_trim");
  if (rc0)
    return rc0;
  weft__exec *x = rt->h.bk->check ? weft__caller_self() : NULL;
  uint64_t t0 = x && x->is_task && rt->h.bk->ops->kind == WEFT_BACKEND_CUDA
                    ? weft__clock_ns()
                    : 0;
  int alive = t0 && weft__caller_others_alive(x);
  weft__pinned_cache_trim(&rt->pinned);
  if (t0) /* cudaFreeHost, like cudaHostAlloc, waits for the device */
    weft__caller_implicit_sync(x, "weft_mem_trim",
                               "freeing page-locked memory (cudaFreeHost) "
                               "waits for the whole device; trim from a "
                               "plain thread while the GPU is idle",
                               weft__clock_ns() - t0, alive);
  return 0;
}
