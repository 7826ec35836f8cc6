/* Completion flags: a host word the GPU writes behind an event's record,
 * so that the wait set learns of a completion by reading memory instead
 * of asking the driver.
 *
 * Why: a cudaEventQuery costs 1.3 us on the H200 and takes driver locks
 * that launches on other threads need (an empty launch 3.95 us alone, 4.65
 * us beside a thread querying events, docs/NOTES.md). The poller queries
 * every waiting event over and over while tasks on other workers launch,
 * so seed 002's tasks paid for it on their critical path. With a flag, a
 * poll is a load from pinned memory; the record pays one
 * cuStreamWriteValue32 more (behind the work, off the GPU's critical path).
 *
 * Only events that the wait set polls get a flag (WEFT__EVENT_POLLED, the
 * runtime's pool). A flag says "done" when it holds the value of the
 * event's latest record: the GPU writes it after everything queued before
 * on the stream (the write's default fence makes that work's results
 * visible first). Slots are reused across events, each continuing from
 * its slot's last value, so a late write of an earlier owner never equals
 * a later owner's value; it can at worst hide one, which the query below
 * recovers from by asking CUDA every FALLBACK_EVERY misses. That query is
 * also what reports a GPU failure, after which no flag is ever written.
 *
 * cuStreamWriteValue32 is a driver API call: its address comes from the
 * runtime (cudaGetDriverEntryPointByVersion), so weft needs no -lcuda.
 * Where the call is missing or fails, or while weft captures the stream
 * into a graph, the record leaves its flag unarmed and queries ask CUDA. */
#include <cuda.h>
#include <stdlib.h>

#include "check.h"
#include "cuda_internal.h"
#include "error_internal.h"

enum { SLAB_SLOTS = 1024, FALLBACK_EVERY = 64 };

typedef CUresult (*write_value_fn)(CUstream, CUdeviceptr, cuuint32_t,
                                   unsigned int);

struct weft__cuda_flags {
  pthread_mutex_t lock;
  write_value_fn write_value; /* NULL: no flags, queries ask CUDA */
  void **slabs;               /* pinned, mapped: SLAB_SLOTS words each */
  size_t nslabs;
  /* Free slots and the value each was left at. */
  struct free_slot {
    uint32_t *word;
    CUdeviceptr dev;
    uint32_t value;
  } * free;
  size_t nfree, cap_free;
};

static int grow(struct weft__cuda_flags *f);

int weft__cuda_flags_open(weft__cuda_backend *b) {
  struct weft__cuda_flags *f = calloc(1, sizeof *f);
  if (!f)
    return weft__err(WEFT_ENOMEM, "cuda: cannot allocate the flag table");
  pthread_mutex_init(&f->lock, NULL);
  void *fn = NULL;
  enum cudaDriverEntryPointQueryResult found;
  /* Any failure to find it only means slower polls. */
  if (cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &fn, 12000,
                                       cudaEnableDefault,
                                       &found) == cudaSuccess &&
      found == cudaDriverEntryPointSuccess)
    f->write_value = (write_value_fn)fn;
  (void)cudaGetLastError();
  /* The first slab now, outside any task: most programs never need a
   * second. Without it, no flags. */
  if (f->write_value && grow(f) != 0)
    f->write_value = NULL;
  b->flags = f;
  return 0;
}

void weft__cuda_flags_close(weft__cuda_backend *b) {
  struct weft__cuda_flags *f = b->flags;
  if (!f)
    return;
  for (size_t i = 0; i < f->nslabs; i++)
    (void)cudaFreeHost(f->slabs[i]);
  free(f->slabs);
  free(f->free);
  pthread_mutex_destroy(&f->lock);
  free(f);
  b->flags = NULL;
}

/* A new slab's slots onto the free list; under f->lock. 0, or -1 when
 * memory is short (the event then goes without a flag). */
static int grow(struct weft__cuda_flags *f) {
  /* Room for every slot there will be: all may be given back at once. */
  size_t total = (f->nslabs + 1) * SLAB_SLOTS;
  if (total > f->cap_free) {
    size_t cap = f->cap_free ? f->cap_free * 2 : SLAB_SLOTS;
    while (cap < total)
      cap *= 2;
    struct free_slot *p = realloc(f->free, cap * sizeof *p);
    if (!p)
      return -1;
    f->free = p;
    f->cap_free = cap;
  }
  void **slabs = realloc(f->slabs, (f->nslabs + 1) * sizeof *slabs);
  if (!slabs)
    return -1;
  f->slabs = slabs;
  /* Portable: any device's stream may write it. Mapped: the GPU can. */
  void *slab;
  if (cudaHostAlloc(&slab, SLAB_SLOTS * sizeof(uint32_t),
                    cudaHostAllocPortable | cudaHostAllocMapped) !=
      cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  void *dev;
  if (cudaHostGetDevicePointer(&dev, slab, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    (void)cudaFreeHost(slab);
    return -1;
  }
  f->slabs[f->nslabs++] = slab;
  uint32_t *words = slab;
  for (size_t i = 0; i < SLAB_SLOTS; i++) {
    words[i] = 0;
    f->free[f->nfree++] = (struct free_slot){
        words + i, (CUdeviceptr)dev + i * sizeof(uint32_t), 0};
  }
  return 0;
}

void weft__cuda_flag_take(weft__cuda_backend *b, weft__cuda_event *e) {
  struct weft__cuda_flags *f = b->flags;
  e->flag = NULL;
  e->armed = 0;
  if (!f || !f->write_value)
    return;
  pthread_mutex_lock(&f->lock);
  /* Growing waits for the device (cudaHostAlloc) and may happen inside
   * a task, when more events wait at once than ever before: weft's own
   * call, not one for weft check to report. */
  int ok = f->nfree > 0;
  if (!ok) {
    weft__check_quiet++;
    ok = grow(f) == 0;
    weft__check_quiet--;
  }
  if (ok) {
    struct free_slot s = f->free[--f->nfree];
    e->flag = s.word;
    e->flag_dev = s.dev;
    e->value = s.value;
  }
  pthread_mutex_unlock(&f->lock);
}

void weft__cuda_flag_give(weft__cuda_backend *b, weft__cuda_event *e) {
  struct weft__cuda_flags *f = b->flags;
  if (!e->flag)
    return;
  pthread_mutex_lock(&f->lock);
  /* The list has room for every slot ever made (grow). */
  f->free[f->nfree++] = (struct free_slot){e->flag, e->flag_dev, e->value};
  pthread_mutex_unlock(&f->lock);
  e->flag = NULL;
}

void weft__cuda_flag_arm(weft__cuda_backend *b, weft__cuda_event *e,
                         weft__stream *s) {
  e->armed = 0;
  /* During a capture the write could be recorded into the graph. */
  if (atomic_load_explicit(&b->captures, memory_order_relaxed))
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
