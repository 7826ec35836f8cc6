/* Completion flags (on unless WEFT_CUDA_FLAGS=0): a host word the GPU writes
 * with an event's record, so that the wait set learns of a completion by
 * reading memory instead of asking the driver.
 *
 * Why: a cudaEventQuery takes driver locks that launches on other threads
 * need, and the poller queries every waiting event over and over while
 * tasks on other workers launch, so the tasks pay for it on their critical
 * path (docs/decisions/wait-and-poll.md, "Where seed 002's remaining
 * microseconds went"). With a flag, a poll is a load from pinned memory;
 * the record pays one cuStreamWriteValue32 more (behind the work, off the
 * GPU's critical path). On by default: no measured row was worse with them
 * (docs/decisions/wait-and-poll.md, "Completion flags on by default").
 *
 * Only events that the wait set polls get a flag (WEFT__EVENT_POLLED, the
 * runtime's pool). A flag says "done" when it holds the value of the
 * event's latest record: the GPU writes it after everything queued before
 * on the stream (the write's default fence makes that work's results
 * visible first), just before the event itself, so that an event CUDA
 * calls complete always has its flag written. Slots are reused across
 * events, each continuing from its slot's last value, so a late write of
 * an earlier owner never equals a later owner's value; it can at worst
 * hide one, which the query recovers from by asking CUDA every
 * FALLBACK_EVERY misses. That query is also what reports a GPU failure,
 * after which no flag is ever written.
 *
 * The slots are one block of pinned memory made at open: making more
 * later (cudaHostAlloc) would wait for the device, inside a task. Events
 * beyond them go without a flag and are queried as before.
 *
 * cuStreamWriteValue32 is a driver API call: its address comes from the
 * runtime (cudaGetDriverEntryPoint), so weft needs no -lcuda.
 * Where the call is missing or fails, or while weft captures a stream
 * into a graph, the record leaves its flag unarmed and queries ask CUDA. */
#include <cuda.h>
#include <stdlib.h>

#include "cuda_device.h"
#include "cuda_internal.h"
#include "error_internal.h"

/* 64 KiB of pinned memory: a flag for each of the first 16 384 pool
 * events (the pool keeps as many as were ever in use at once). */
enum { SLOTS = 16384, FALLBACK_EVERY = 64 };

typedef CUresult (*write_value_fn)(CUstream, CUdeviceptr, cuuint32_t,
                                   unsigned int);

struct weft__cuda_flags {
  pthread_mutex_t lock;
  write_value_fn write_value;
  uint32_t *words; /* SLOTS, pinned and mapped */
  CUdeviceptr dev; /* their address on the GPU */
  /* Free slots (indices into words) and the value each was left at. */
  uint32_t free[SLOTS];
  uint32_t value[SLOTS];
  size_t nfree;
};

/* The slots, or 0 without them (no flags). */
static int make_slots(struct weft__cuda_flags *f) {
  void *p, *dev;
  /* Portable: any device's stream may write them. Mapped: the GPU can. */
  if (cudaHostAlloc(&p, SLOTS * sizeof(uint32_t),
                    cudaHostAllocPortable | cudaHostAllocMapped) !=
      cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  if (cudaHostGetDevicePointer(&dev, p, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    (void)cudaFreeHost(p);
    return 0;
  }
  f->words = p;
  f->dev = (CUdeviceptr)dev;
  for (uint32_t i = 0; i < SLOTS; i++) {
    f->words[i] = 0;
    f->value[i] = 0;
    f->free[i] = SLOTS - 1 - i;
  }
  f->nfree = SLOTS;
  return 1;
}

/* The driver's cuStreamWriteValue32, or NULL. The runtime's lookup took a
 * version from 12.5 on and a status from 12.0 on. */
static write_value_fn find_write_value(void) {
  void *fn = NULL;
#if CUDART_VERSION >= 12050
  enum cudaDriverEntryPointQueryResult found;
  cudaError_t e = cudaGetDriverEntryPointByVersion(
      "cuStreamWriteValue32", &fn, 12000, cudaEnableDefault, &found);
  if (e == cudaSuccess && found != cudaDriverEntryPointSuccess)
    fn = NULL;
#elif CUDART_VERSION >= 12000
  enum cudaDriverEntryPointQueryResult found;
  cudaError_t e = cudaGetDriverEntryPoint("cuStreamWriteValue32", &fn,
                                          cudaEnableDefault, &found);
  if (e == cudaSuccess && found != cudaDriverEntryPointSuccess)
    fn = NULL;
#else
  cudaError_t e =
      cudaGetDriverEntryPoint("cuStreamWriteValue32", &fn, cudaEnableDefault);
#endif
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    fn = NULL;
  }
  return (write_value_fn)fn;
}

int weft__cuda_completion_open(weft__cuda_backend *b, int off) {
  b->flags = NULL;
  if (off)
    return 0;
  struct weft__cuda_flags *f = calloc(1, sizeof *f);
  if (!f)
    return weft__err(WEFT_ENOMEM, "cuda: cannot allocate the flag table");
  /* Any failure only means the queries of before. */
  f->write_value = find_write_value();
  if (!f->write_value || !make_slots(f)) {
    free(f);
    return 0;
  }
  pthread_mutex_init(&f->lock, NULL);
  b->flags = f;
  return 0;
}

void weft__cuda_completion_close(weft__cuda_backend *b) {
  struct weft__cuda_flags *f = b->flags;
  if (!f)
    return;
  (void)cudaFreeHost(f->words);
  pthread_mutex_destroy(&f->lock);
  free(f);
  b->flags = NULL;
}

void weft__cuda_flag_take(weft__cuda_backend *b, weft__cuda_event *e) {
  struct weft__cuda_flags *f = b->flags;
  e->flag = NULL;
  e->armed = 0;
  if (!f)
    return;
  pthread_mutex_lock(&f->lock);
  if (f->nfree > 0) {
    uint32_t i = f->free[--f->nfree];
    e->flag = f->words + i;
    e->flag_dev = f->dev + i * sizeof(uint32_t);
    e->value = f->value[i];
  }
  pthread_mutex_unlock(&f->lock);
}

void weft__cuda_flag_give(weft__cuda_backend *b, weft__cuda_event *e) {
  struct weft__cuda_flags *f = b->flags;
  if (!e->flag)
    return;
  uint32_t i = (uint32_t)(e->flag - f->words);
  pthread_mutex_lock(&f->lock);
  f->value[i] = e->value;
  f->free[f->nfree++] = i;
  pthread_mutex_unlock(&f->lock);
  e->flag = NULL;
  e->armed = 0;
}

void weft__cuda_flag_arm(weft__cuda_backend *b, weft__cuda_event *e,
                         weft__stream *s) {
  e->armed = 0;
  /* During a capture the write could be recorded into the graph. The
   * driver call acts on the current device's context. */
  if (atomic_load_explicit(&b->captures, memory_order_relaxed) ||
      weft__cuda_set_device(s->hdr.dev) != 0)
    return;
  uint32_t v = e->value + 1;
  if (b->flags->write_value(weft__cuda_stream_of(s), e->flag_dev, v, 0) ==
      CUDA_SUCCESS) {
    e->value = v;
    e->armed = 1;
  }
}

int weft__cuda_flag_query(weft__cuda_event *e) {
  if (__atomic_load_n(e->flag, __ATOMIC_ACQUIRE) == e->value)
    return 1;
  unsigned m = __atomic_add_fetch(&e->misses, 1, __ATOMIC_RELAXED);
  return m % FALLBACK_EVERY == 0 ? -1 : 0;
}
