/* A growable stack of pointers, for the runtime's pools of streams and
 * events; kept sorted by address, a set that says whether it holds an
 * object before anything reads the object (registered data's handles and
 * block sets). */
#ifndef WEFT__PTRVEC_H
#define WEFT__PTRVEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weft/error.h"

typedef struct weft__ptrvec {
  void **v;
  size_t n, cap;
} weft__ptrvec;

/* Room for n pointers in all; 0, or WEFT_ENOMEM with v unchanged. */
static inline int weft__ptrvec_reserve(weft__ptrvec *v, size_t n) {
  if (n <= v->cap)
    return 0;
  size_t cap = v->cap ? v->cap : 16;
  while (cap < n)
    cap *= 2;
  void **nv = realloc(v->v, cap * sizeof *nv);
  if (!nv)
    return WEFT_ENOMEM;
  v->v = nv;
  v->cap = cap;
  return 0;
}

/* 0, or WEFT_ENOMEM with v unchanged. */
static inline int weft__ptrvec_push(weft__ptrvec *v, void *p) {
  if (weft__ptrvec_reserve(v, v->n + 1))
    return WEFT_ENOMEM;
  v->v[v->n++] = p;
  return 0;
}

/* The newest, or NULL when empty. */
static inline void *weft__ptrvec_pop(weft__ptrvec *v) {
  return v->n ? v->v[--v->n] : NULL;
}

/* The index of p among the n pointers at v, sorted by address, or where
 * it would go. */
static inline size_t weft__ptrset_at(void *const *v, size_t n, const void *p) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if ((uintptr_t)v[mid] < (uintptr_t)p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static inline int weft__ptrset_has(const weft__ptrvec *v, const void *p) {
  size_t i = weft__ptrset_at(v->v, v->n, p);
  return p && i < v->n && v->v[i] == p;
}

/* Adds p to the sorted v; 0, or WEFT_ENOMEM with v unchanged. */
static inline int weft__ptrset_add(weft__ptrvec *v, void *p) {
  if (weft__ptrvec_reserve(v, v->n + 1))
    return WEFT_ENOMEM;
  size_t i = weft__ptrset_at(v->v, v->n, p);
  memmove(&v->v[i + 1], &v->v[i], (v->n - i) * sizeof *v->v);
  v->v[i] = p;
  v->n++;
  return 0;
}

/* Takes p out of the sorted v, if there. */
static inline void weft__ptrset_remove(weft__ptrvec *v, const void *p) {
  size_t i = weft__ptrset_at(v->v, v->n, p);
  if (i < v->n && v->v[i] == p) {
    memmove(&v->v[i], &v->v[i + 1], (v->n - i - 1) * sizeof *v->v);
    v->n--;
  }
}

#endif
