/* Fiber stacks: carved out of slabs (one mapping holds several stacks, each
 * with a guard page below it while the kernel's map budget allows) and
 * pooled for reuse. */
#ifndef WEFT__STACK_H
#define WEFT__STACK_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct weft__stack_slab weft__stack_slab;

typedef struct weft__stack {
  struct weft__stack *next; /* the slab's free list */
  weft__stack_slab *slab;
  void *lo; /* usable stack: [lo, lo + size); the guard page lies below */
  size_t size;
  int guarded;
} weft__stack;

typedef struct weft__stack_pool {
  pthread_mutex_t lock;
  weft__stack_slab *slabs;   /* every slab */
  weft__stack_slab *partial; /* slabs with a free stack, oldest first */
  size_t nfree, max_free;    /* free stacks kept before slabs are unmapped */
  size_t stack_size, stride; /* usable size; size with guard and rounding */
  unsigned per_slab;
  size_t guard_budget; /* guarded stacks allowed at once (map count) */
  size_t live, guarded, unguarded; /* statistics */
  size_t peak;                     /* most stacks live at once */
} weft__stack_pool;

/* At most this many guarded stacks per pool, whatever the map budget:
 * SIZE_MAX unless a test lowers it to reach the unguarded path. */
extern size_t weft__stack_guards_max;

int weft__stack_pool_init(weft__stack_pool *p, size_t stack_size);
/* Unmaps every slab; every stack must have been put back. */
void weft__stack_pool_fini(weft__stack_pool *p);
/* NULL when out of memory. */
weft__stack *weft__stack_get(weft__stack_pool *p);
void weft__stack_put(weft__stack_pool *p, weft__stack *s);
/* Written at an unguarded stack's low end; an overflow overwrites it. */
#define WEFT__STACK_CANARY 0x77656674cafef00dULL /* "weft" */

/* 0 if the stack is guarded (overflow faults) or, if unguarded, the
 * canary at its low end is intact. Inline: the scheduler checks it at
 * every switch, and the signal handler calls it. */
static inline int weft__stack_check(const weft__stack *s) {
  return s->guarded || *(const uint64_t *)s->lo == WEFT__STACK_CANARY ? 0 : -1;
}

#endif
