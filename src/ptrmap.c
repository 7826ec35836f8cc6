/* Open-addressing hash table with linear probing and backward-shift
 * deletion (no tombstones, so lookups stay short after many frees). */
#include <stdlib.h>

#include "ptrmap.h"
#include "weft/error.h"

typedef struct slot {
  const void *key; /* NULL = empty */
  weft__alloc_info info;
} slot;

struct weft__ptrmap {
  slot *slots;
  size_t cap; /* power of two */
  size_t len;
};

static size_t hash(const void *p, size_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x & (cap - 1);
}

weft__ptrmap *weft__ptrmap_new(void) {
  weft__ptrmap *m = calloc(1, sizeof *m);
  if (!m)
    return NULL;
  m->cap = 64;
  m->slots = calloc(m->cap, sizeof *m->slots);
  if (!m->slots) {
    free(m);
    return NULL;
  }
  return m;
}

void weft__ptrmap_free(weft__ptrmap *m) {
  if (m) {
    free(m->slots);
    free(m);
  }
}

static size_t find(const weft__ptrmap *m, const void *p) {
  size_t i = hash(p, m->cap);
  while (m->slots[i].key && m->slots[i].key != p)
    i = (i + 1) & (m->cap - 1);
  return i;
}

static int grow(weft__ptrmap *m) {
  size_t ncap = m->cap * 2;
  slot *ns = calloc(ncap, sizeof *ns);
  if (!ns)
    return WEFT_ENOMEM;
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->slots[i].key)
      continue;
    size_t j = hash(m->slots[i].key, ncap);
    while (ns[j].key)
      j = (j + 1) & (ncap - 1);
    ns[j] = m->slots[i];
  }
  free(m->slots);
  m->slots = ns;
  m->cap = ncap;
  return 0;
}

int weft__ptrmap_put(weft__ptrmap *m, const void *p, weft__alloc_info info) {
  if ((m->len + 1) * 4 > m->cap * 3 && grow(m) != 0)
    return WEFT_ENOMEM;
  size_t i = find(m, p);
  if (!m->slots[i].key)
    m->len++;
  m->slots[i].key = p;
  m->slots[i].info = info;
  return 0;
}

int weft__ptrmap_get(const weft__ptrmap *m, const void *p,
                     weft__alloc_info *out) {
  size_t i = find(m, p);
  if (!m->slots[i].key)
    return 0;
  if (out)
    *out = m->slots[i].info;
  return 1;
}

weft__alloc_info *weft__ptrmap_find(weft__ptrmap *m, const void *p) {
  size_t i = find(m, p);
  return m->slots[i].key ? &m->slots[i].info : NULL;
}

int weft__ptrmap_del(weft__ptrmap *m, const void *p) {
  size_t i = find(m, p);
  if (!m->slots[i].key)
    return 0;
  /* Shift later members of the probe run back so no gap breaks it. */
  size_t j = i;
  for (;;) {
    j = (j + 1) & (m->cap - 1);
    if (!m->slots[j].key)
      break;
    size_t home = hash(m->slots[j].key, m->cap);
    /* Move j into the hole at i unless its home lies cyclically in (i, j]. */
    int in_range = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
    if (!in_range) {
      m->slots[i] = m->slots[j];
      i = j;
    }
  }
  m->slots[i].key = NULL;
  m->len--;
  return 1;
}

size_t weft__ptrmap_count(const weft__ptrmap *m, int kind) {
  size_t n = 0;
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i].key && m->slots[i].info.kind == kind)
      n++;
  return n;
}

size_t weft__ptrmap_bytes(const weft__ptrmap *m, int kind) {
  size_t n = 0;
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i].key && m->slots[i].info.kind == kind)
      n += m->slots[i].info.size;
  return n;
}
