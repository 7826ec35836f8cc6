/* A registry of allocations, keyed by the pointer handed out and found by
 * any address inside: frees of foreign or already-freed pointers are
 * caught before they reach the backend, and operations on memory freed,
 * of another device or too small before they run. It remembers the last
 * WEFT__PTRMAP_FREED_MAX freed ranges too. Not thread-safe: the caller
 * holds the backend's lock. */
#ifndef WEFT__PTRMAP_H
#define WEFT__PTRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct weft__ptrmap weft__ptrmap;

typedef struct weft__alloc_info {
  size_t size;
  int kind; /* caller-defined: device or pinned */
  int dev;
  unsigned graphs; /* live graphs that use it: it cannot be freed */
} weft__alloc_info;

/* What an address lies in (weft__ptrmap_lookup). */
typedef struct weft__alloc_ref {
  const void *base;
  weft__alloc_info info;
} weft__alloc_ref;

enum { WEFT__PTR_UNKNOWN, WEFT__PTR_LIVE, WEFT__PTR_FREED };

/* Freed ranges remembered, the oldest forgotten first. */
#define WEFT__PTRMAP_FREED_MAX 4096

weft__ptrmap *weft__ptrmap_new(void);
void weft__ptrmap_free(weft__ptrmap *m);
/* 0, or WEFT_ENOMEM when the table could not grow (nothing inserted). */
int weft__ptrmap_put(weft__ptrmap *m, const void *p, weft__alloc_info info);
/* 1 and *out filled (if out) when p is present, else 0. */
int weft__ptrmap_get(const weft__ptrmap *m, const void *p,
                     weft__alloc_info *out);
/* The entry of p, to change in place, or NULL; valid until the next put
 * or del. */
weft__alloc_info *weft__ptrmap_find(weft__ptrmap *m, const void *p);
/* 1 when p was present and is now removed (remembered as freed), else 0. */
int weft__ptrmap_del(weft__ptrmap *m, const void *p);
/* Whether p lies inside a live allocation or a remembered freed one
 * (WEFT__PTR_*), with that allocation in *out. */
int weft__ptrmap_lookup(const weft__ptrmap *m, const void *p,
                        weft__alloc_ref *out);
/* Forgets the freed ranges overlapping [p, p + n): memory given back to
 * the system, which may hand it to anyone. */
void weft__ptrmap_forget(weft__ptrmap *m, const void *p, size_t n);
size_t weft__ptrmap_nfreed(const weft__ptrmap *m);
size_t weft__ptrmap_count(const weft__ptrmap *m, int kind);
size_t weft__ptrmap_bytes(const weft__ptrmap *m, int kind);

#endif
