/* Handle pools with quarantine: destroyed objects wait on a FIFO free list
 * before reuse, so a stale handle is recognised as destroyed (its magic
 * reads dead) until at least WEFT__POOL_QUARANTINE later objects of its
 * kind have been destroyed. Objects start with a weft__obj header. The
 * caller serialises access. */
#ifndef WEFT__POOL_H
#define WEFT__POOL_H

#include <stddef.h>
#include <stdint.h>

#define WEFT__POOL_QUARANTINE 64
#define WEFT__MAGIC_DEAD 0xdeaddeadu

typedef struct weft__backend weft__backend;

typedef struct weft__obj {
  uint32_t magic;
  uint16_t gen; /* reuses of this memory: part of its public handles */
  int dev;
  weft__backend *bk;
  struct weft__obj *pool_next; /* free list while dead */
} weft__obj;

typedef struct weft__pool {
  weft__obj *head, *tail;
  size_t nfree;
  size_t live;
  /* Objects whose generation has run out: a 65 537th life would give
   * their first life's handles back. Never reused, freed by the drain. */
  weft__obj *retired;
} weft__pool;

/* A zeroed object of size bytes (magic 0) whose gen is one past its last
 * life's, or NULL when out of memory. */
weft__obj *weft__pool_get(weft__pool *p, size_t size);
/* Marks o dead and queues it for reuse. */
void weft__pool_put(weft__pool *p, weft__obj *o);
/* Frees every object on the free list. */
void weft__pool_drain(weft__pool *p);

/* Public handles (weft_task, weft_event) are the object's address with its
 * generation in the top 16 bits, which user-space addresses leave clear
 * on x86-64 and AArch64: a handle kept past its object's reuse then names
 * no live object, instead of the unrelated one now at that address (the
 * quarantine alone stopped that for only 64 reuses). Heap addresses stay
 * below 2^47 there (malloc never asks Linux for the 57-bit range). */
#define WEFT__HANDLE_SHIFT 48

static inline void *weft__handle_of(weft__obj *o) {
  uintptr_t a = (uintptr_t)o;
#if UINTPTR_MAX > 0xffffffffu
  /* Atomic: a stale handle's check may race the object's reuse. */
  a |= (uintptr_t)__atomic_load_n(&o->gen, __ATOMIC_ACQUIRE)
       << WEFT__HANDLE_SHIFT;
#endif
  return (void *)a;
}

/* The object a handle names, whatever its state; NULL for NULL. Its magic
 * and weft__handle_live say whether the handle is still good. */
static inline weft__obj *weft__handle_obj(const void *h) {
  uintptr_t a = (uintptr_t)h;
#if UINTPTR_MAX > 0xffffffffu
  a &= ((uintptr_t)1 << WEFT__HANDLE_SHIFT) - 1;
#endif
  return (weft__obj *)a;
}

/* 1 if h was made for o's current life. */
static inline int weft__handle_live(const void *h, const weft__obj *o) {
  return weft__handle_of((weft__obj *)o) == h;
}

#endif
