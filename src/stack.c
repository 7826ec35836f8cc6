/* Fiber stacks in slabs.
 *
 * A stack per mmap cost two system calls per task, and munmap's TLB
 * shootdowns take the mmap lock against every other thread
 * (docs/decisions/scheduler.md, "Fiber stacks in slabs"). A slab maps up to
 * 64 stacks at once and is unmapped only when all of them are free and
 * enough other free stacks remain, so the calls fall by the slab's size.
 *
 * Each guarded stack costs two kernel mappings (the stack and its guard);
 * the kernel allows vm.max_map_count (65530 by default) per process, and
 * malloc, thread stacks and the CUDA driver need mappings too. So at most
 * an eighth of the limit goes to guarded stacks; stacks beyond that run
 * with a canary at their low end instead (docs/decisions/memory.md, "Guard
 * pages within a budget"). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mutex.h"
#include "stack.h"
#include "weft/error.h"

#define SLAB_BYTES (4u << 20) /* aim: a slab maps about this much */
#define SLAB_MAX 64

struct weft__stack_slab {
  weft__stack_slab *next, *prev;           /* every slab */
  weft__stack_slab *part_next, *part_prev; /* slabs with a free stack */
  int in_partial;
  void *map;
  size_t map_size;
  weft__stack *free;
  unsigned nfree, n, nguarded;
};

static size_t page_size(void) {
  static size_t ps;
  if (!ps)
    ps = (size_t)sysconf(_SC_PAGESIZE);
  return ps;
}

size_t weft__stack_guards_max = SIZE_MAX;

static size_t guard_budget(void) {
  long limit = 65530;
  FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
  if (f) {
    if (fscanf(f, "%ld", &limit) != 1)
      limit = 65530;
    fclose(f);
  }
  size_t n = limit > 0 ? (size_t)limit / 8 : 0;
  return n < weft__stack_guards_max ? n : weft__stack_guards_max;
}

int weft__stack_pool_init(weft__stack_pool *p, size_t stack_size) {
  memset(p, 0, sizeof *p);
  size_t ps = page_size();
  p->stack_size = (stack_size + ps - 1) & ~(ps - 1);
  p->stride = p->stack_size + ps;
  size_t n = SLAB_BYTES / p->stride;
  p->per_slab = n < 1 ? 1 : n > SLAB_MAX ? SLAB_MAX : (unsigned)n;
  p->max_free = 1024;
  p->guard_budget = guard_budget();
  return weft__mutex_init(&p->lock) ? WEFT_ENOMEM : 0;
}

/* ---- lists (lock held) ---- */

static void partial_add(weft__stack_pool *p, weft__stack_slab *sl) {
  /* At the tail: gets take the oldest partial slab first, so slabs freed
   * later drain completely and can be unmapped. */
  sl->part_next = NULL;
  sl->part_prev = NULL;
  if (p->partial) {
    weft__stack_slab *tail = p->partial->part_prev;
    tail->part_next = sl;
    sl->part_prev = tail;
  } else {
    p->partial = sl;
    sl->part_prev = sl; /* the head's prev is the tail */
  }
  p->partial->part_prev = sl;
  sl->in_partial = 1;
}

static void partial_remove(weft__stack_pool *p, weft__stack_slab *sl) {
  if (sl == p->partial) {
    p->partial = sl->part_next;
    if (p->partial)
      p->partial->part_prev = sl->part_prev;
  } else {
    sl->part_prev->part_next = sl->part_next;
    if (sl->part_next)
      sl->part_next->part_prev = sl->part_prev;
    else
      p->partial->part_prev = sl->part_prev;
  }
  sl->in_partial = 0;
}

static void slabs_remove(weft__stack_pool *p, weft__stack_slab *sl) {
  if (sl->prev)
    sl->prev->next = sl->next;
  else
    p->slabs = sl->next;
  if (sl->next)
    sl->next->prev = sl->prev;
}

/* ---- slabs ---- */

/* Maps a slab of p->per_slab stacks, all free; guards as many as the
 * budget allows. Called unlocked, except for the budget counts. */
static weft__stack_slab *slab_new(weft__stack_pool *p) {
  size_t ps = page_size();
  weft__stack_slab *sl = calloc(1, sizeof *sl);
  if (!sl)
    return NULL;
  sl->n = p->per_slab;
  sl->map_size = (size_t)sl->n * p->stride;
  sl->map =
      mmap(NULL, sl->map_size, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (sl->map == MAP_FAILED) {
    free(sl);
    return NULL;
  }
  pthread_mutex_lock(&p->lock);
  size_t room = p->guard_budget > p->guarded ? p->guard_budget - p->guarded : 0;
  unsigned want = room < sl->n ? (unsigned)room : sl->n;
  p->guarded += want;
  pthread_mutex_unlock(&p->lock);
  /* Last stack first, so the free list hands out the lowest one first. */
  for (unsigned i = sl->n; i-- > 0;) {
    char *base = (char *)sl->map + (size_t)i * p->stride;
    /* The bookkeeping lives at the stack's top: the mapping holds all. */
    weft__stack *s = (weft__stack *)(base + p->stride - sizeof(weft__stack));
    s->slab = sl;
    s->lo = base + ps;
    s->size = (size_t)((char *)s - (char *)s->lo);
    s->guarded = i < want && mprotect(base, ps, PROT_NONE) == 0;
    sl->nguarded += (unsigned)s->guarded;
    s->next = sl->free;
    sl->free = s;
  }
  sl->nfree = sl->n;
  pthread_mutex_lock(&p->lock);
  p->guarded -= want - sl->nguarded;
  p->unguarded += sl->n - sl->nguarded;
  pthread_mutex_unlock(&p->lock);
  return sl;
}

/* Lock held: forgets sl's counts; the caller unmaps it unlocked. */
static void slab_forget(weft__stack_pool *p, weft__stack_slab *sl) {
  if (sl->in_partial)
    partial_remove(p, sl);
  slabs_remove(p, sl);
  p->nfree -= sl->nfree;
  p->guarded -= sl->nguarded;
  p->unguarded -= sl->n - sl->nguarded;
}

static void slab_unmap(weft__stack_slab *sl) {
  munmap(sl->map, sl->map_size);
  free(sl);
}

void weft__stack_pool_fini(weft__stack_pool *p) {
  while (p->slabs) {
    weft__stack_slab *sl = p->slabs;
    slab_forget(p, sl);
    slab_unmap(sl);
  }
  pthread_mutex_destroy(&p->lock);
}

/* ---- stacks ---- */

weft__stack *weft__stack_get(weft__stack_pool *p) {
  pthread_mutex_lock(&p->lock);
  if (!p->partial) {
    pthread_mutex_unlock(&p->lock);
    weft__stack_slab *sl = slab_new(p);
    if (!sl)
      return NULL;
    pthread_mutex_lock(&p->lock);
    sl->prev = NULL;
    sl->next = p->slabs;
    if (p->slabs)
      p->slabs->prev = sl;
    p->slabs = sl;
    p->nfree += sl->nfree;
    partial_add(p, sl);
  }
  weft__stack_slab *sl = p->partial;
  weft__stack *s = sl->free;
  sl->free = s->next;
  if (--sl->nfree == 0)
    partial_remove(p, sl);
  p->nfree--;
  if (++p->live > p->peak)
    p->peak = p->live;
  pthread_mutex_unlock(&p->lock);
  s->next = NULL;
  /* A guarded stack needs no canary, and writing one would touch a page
   * the task may never use, a resident page per task
   * (docs/decisions/memory.md, "Guard pages within a budget"). */
  if (!s->guarded)
    *(uint64_t *)s->lo = WEFT__STACK_CANARY;
  return s;
}

/* Free stacks kept before a fully free slab is unmapped: max_free, or as
 * many as were ever live at once, up to KEEP_BYTES of address space. A
 * program that runs bursts of thousands of tasks (a data-flow step) then
 * maps, faults in and unmaps nothing after its first burst, where a fixed
 * count let munmap's TLB shootdowns, mprotect and page faults dominate
 * (docs/decisions/scheduler.md, "Free stacks kept up to the peak"). Lock
 * held. */
#define KEEP_BYTES ((size_t)16 << 30)
static size_t keep_free(const weft__stack_pool *p) {
  size_t cap = KEEP_BYTES / p->stride;
  size_t keep = p->peak < cap ? p->peak : cap;
  return keep > p->max_free ? keep : p->max_free;
}

void weft__stack_put(weft__stack_pool *p, weft__stack *s) {
  weft__stack_slab *sl = s->slab, *gone = NULL;
  pthread_mutex_lock(&p->lock);
  p->live--;
  s->next = sl->free;
  sl->free = s;
  if (sl->nfree++ == 0)
    partial_add(p, sl);
  p->nfree++;
  if (sl->nfree == sl->n && p->nfree - sl->n >= keep_free(p)) {
    slab_forget(p, sl);
    gone = sl;
  }
  pthread_mutex_unlock(&p->lock);
  if (gone)
    slab_unmap(gone);
}
