/* Memory and copies on the current stream. */
#ifndef WEFT_MEMORY_H
#define WEFT_MEMORY_H

#include "common.h"

WEFT_BEGIN_DECLS

/* Queues a copy of bytes from src to dst on the current stream; the
 * direction is inferred from the pointers. Returns once queued; the data is
 * there after weft_sync(), and src and dst must stay valid and untouched
 * until then. Pinned memory (weft_pinned_alloc or cudaHostAlloc) is copied
 * by the device directly. Pageable host memory (malloc, the stack) is
 * staged through pinned blocks in chunks of 4 MiB (weft_runtime_opts.
 * stage_chunk_kib), in parallel on the worker
 * threads, so the copy stays asynchronous and, once the pinned cache holds
 * the staging blocks, neither the caller's thread nor a worker blocks on the
 * device; a pageable destination is written by helper tasks that the
 * caller's next weft_sync() waits for. One copy holds at most
 * weft_runtime_opts.stage_chunks blocks (by default 8 to 32 to the device,
 * 2 per worker, and 64 from it), reusing each once its transfer is done:
 * from a pageable source the call returns once every chunk is staged (a
 * timing, not leave to change the source: the rule above holds on every
 * path, and the host backend, whose memory is all pinned, reads it
 * later), and a copy larger than its blocks also waits for its earlier
 * chunks' transfers (behind the work queued before it on the stream); to a
 * pageable destination it returns at once, unless larger than its blocks:
 * then it waits until all but that many chunks are out. bytes 0 does
 * nothing.
 * Errors: WEFT_ESTATE (no runtime; or, while the runtime shuts down, a
 * helper task refused), WEFT_EINVAL (dst or src NULL; bytes past the end
 * of memory, or of a device allocation that dst or src is the start of:
 * a pointer inside an allocation is not looked up, keeping it in bounds is
 * the caller's), WEFT_ENOMEM (staging blocks included), device errors.
 * Context: any thread; may switch (a pageable source of more than a chunk:
 * the call joins the tasks that stage it; a copy larger than its blocks);
 * blocks the worker on CUDA when a staging block misses the pinned cache
 * (see weft_pinned_alloc). */
WEFT_API int weft_copy(void *dst, const void *src, size_t bytes);

/* Queues setting bytes of dst to value on the current stream: device or
 * pinned memory weft allocated (the device sets it; host memory that
 * malloc gave is the program's to memset). bytes 0 does nothing.
 * Errors: WEFT_ESTATE (no runtime), WEFT_EINVAL (dst NULL, or not memory
 * weft allocated; bytes past the end as for weft_copy), WEFT_ENOMEM,
 * device errors.
 * Context: any thread; never blocks. */
WEFT_API int weft_memset(void *dst, int value, size_t bytes);

/* Allocates device memory ordered on the current stream: usable at once by
 * work queued later on the same stream.
 * Errors: WEFT_ESTATE (no runtime), WEFT_EINVAL (ptr NULL, bytes 0),
 * WEFT_ENOMEM, device errors.
 * Context: any thread; never blocks, except on a CUDA device without
 * memory pools, where it falls back to cudaMalloc and blocks the worker. */
WEFT_API int weft_device_alloc(size_t bytes, void **ptr);

/* Frees device memory ordered on the current stream: work queued before
 * still sees it. NULL is ignored (but needs a runtime). On failure the
 * memory stays allocated.
 * Errors: WEFT_ESTATE (no runtime), WEFT_EINVAL (not from
 * weft_device_alloc, or already freed), WEFT_EBUSY (a live graph uses
 * it), WEFT_ENOMEM, device errors.
 * Context: any thread; never blocks, except on a CUDA device without
 * memory pools, where cudaFree waits for the whole device: it then blocks
 * the worker. */
WEFT_API int weft_device_free(void *ptr);

/* Page-locked host memory, from a cache: blocks up to 1 MiB round up to a
 * power of two and come from shared 2 MiB chunks; larger ones round up to
 * 64 KiB and are reused for requests they fit with at most 1/8 to spare. A
 * freed block that a weft_copy used is reused only once that copy (and all
 * work queued before it on the copying stream) completed, so freeing right
 * after queuing a copy is safe. Only weft_copy's use by the block's own
 * runtime is tracked: a block that a kernel or weft_memset uses, or that
 * a task of another runtime copies, must not be freed before that work's
 * weft_sync. A copy or memset past the bytes a block was asked for is
 * refused (WEFT_EINVAL), though its chunk goes on.
 * On CUDA, pinning new memory (a cache miss) and unpinning it
 * (weft_mem_trim) wait for the whole device, as cudaHostAlloc and
 * cudaFreeHost do: allocate what a hot path needs once up front, and trim
 * while the device is idle. Hits and frees never wait for the device (a
 * free records an event on each stream that used the block). The cache's
 * lock is held across cudaHostAlloc and cudaFreeHost, so weft_copy,
 * weft_pinned_free and weft_mem_stats_get on other threads wait while a
 * miss or a trim is in progress.
 * Errors: WEFT_EINVAL (ptr NULL, bytes 0), WEFT_ENOMEM (over 2^48 bytes, or
 * nothing could be pinned, even after trimming the cache), WEFT_ESTATE (no
 * runtime).
 * Context: any thread; a hit never blocks; on CUDA a miss blocks the
 * worker (cudaHostAlloc, and cudaFreeHost of the trim after a failed one). */
WEFT_API int weft_pinned_alloc(size_t bytes, void **ptr);
/* Frees a block of weft_pinned_alloc. NULL is ignored (but needs a
 * runtime).
 * Errors: WEFT_EINVAL for a pointer weft_pinned_alloc did not return (an
 * interior pointer too) or a block already freed; WEFT_EBUSY (a live graph
 * uses it); WEFT_ESTATE (no runtime).
 * Context: any thread; never blocks, except when no event can be made or
 * recorded on a stream that used the block: it then waits for that stream,
 * which blocks the worker. */
WEFT_API int weft_pinned_free(void *ptr);

typedef struct weft_runtime weft_runtime;

typedef struct weft_mem_stats {
  size_t struct_size;      /* set to sizeof(weft_mem_stats) */
  size_t pinned_reserved;  /* pinned bytes held from the system */
  size_t pinned_in_use;    /* bytes of blocks handed out (rounded sizes) */
  size_t pinned_requested; /* bytes asked for by those blocks */
  size_t pinned_pending;   /* freed, waiting for a stream to pass its use */
  size_t pinned_cached;    /* free for reuse */
  size_t pinned_blocks;    /* blocks handed out */
  uint64_t pinned_hits;    /* allocations served from the cache */
  uint64_t pinned_misses;  /* allocations that pinned new memory */
  size_t device_allocs;    /* live weft_device_alloc blocks */
  size_t device_bytes;     /* and their bytes */
  /* Registered data (weft/data.h): instances evicted to make room, their
   * bytes, and the bytes of those written back to the host first. */
  uint64_t data_evictions;
  uint64_t data_evicted_bytes;
  uint64_t data_written_back;
} weft_mem_stats;

/* Fills *out, whose struct_size the caller sets to sizeof(weft_mem_stats)
 * (a larger value is accepted).
 * Errors: WEFT_EINVAL (rt or out NULL, or struct_size too small),
 * WEFT_EHANDLE (rt not open).
 * Context: any thread; never blocks (it takes the pinned cache's lock: see
 * weft_pinned_alloc). */
WEFT_API int weft_mem_stats_get(weft_runtime *rt, weft_mem_stats *out);

/* Returns cached pinned memory that no block in use shares to the system;
 * freed blocks still waiting for a stream's use are kept.
 * Errors: WEFT_EINVAL (rt NULL), WEFT_EHANDLE (rt not open); failures to
 * unpin are not reported.
 * Context: any thread; on CUDA blocks the worker (cudaFreeHost waits for
 * the device). */
WEFT_API int weft_mem_trim(weft_runtime *rt);

WEFT_END_DECLS

#endif
