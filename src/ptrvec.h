/* A growable stack of pointers, for the runtime's pools of streams and
 * events. */
#ifndef WEFT__PTRVEC_H
#define WEFT__PTRVEC_H

#include <stddef.h>
#include <stdlib.h>

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

#endif
