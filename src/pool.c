/* Handle pools with quarantine (pool.h). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"

weft__obj *weft__pool_get(weft__pool *p, size_t size) {
  weft__obj *o;
  if (p->nfree > WEFT__POOL_QUARANTINE) {
    o = p->head;
    p->head = o->pool_next;
    if (!p->head)
      p->tail = NULL;
    p->nfree--;
    /* magic and gen are read by handle checks on other threads, which
     * may hold a stale handle racing this reuse: written atomically, the
     * rest cleared around them. */
    uint16_t gen = o->gen;
    __atomic_store_n(&o->magic, 0, __ATOMIC_RELAXED);
    size_t rest = offsetof(weft__obj, dev);
    memset((char *)o + rest, 0, size - rest);
    __atomic_store_n(&o->gen, (uint16_t)(gen + 1), __ATOMIC_RELEASE);
  } else {
    o = calloc(1, size);
    if (!o)
      return NULL;
  }
  p->live++;
  return o;
}

void weft__pool_put(weft__pool *p, weft__obj *o) {
  __atomic_store_n(&o->magic, WEFT__MAGIC_DEAD, __ATOMIC_RELEASE);
  p->live--;
  if (o->gen == UINT16_MAX) {
    o->pool_next = p->retired;
    p->retired = o;
    return;
  }
  o->pool_next = NULL;
  if (p->tail)
    p->tail->pool_next = o;
  else
    p->head = o;
  p->tail = o;
  p->nfree++;
}

void weft__pool_drain(weft__pool *p) {
  while (p->head) {
    weft__obj *o = p->head;
    p->head = o->pool_next;
    free(o);
  }
  p->tail = NULL;
  p->nfree = 0;
  while (p->retired) {
    weft__obj *o = p->retired;
    p->retired = o->pool_next;
    free(o);
  }
}
