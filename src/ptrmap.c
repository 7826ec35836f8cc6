/* An ordered map of address ranges: a treap (a binary search tree by
 * base address, a heap by random priority, so expected O(log n) depth
 * whatever the order of insertion) holding the live allocations and the
 * most recent freed ones. docs/decisions/reliability.md, "Pointers are
 * looked up by any address inside", says why an interior lookup. */
#include <stdlib.h>

#include "ptrmap.h"
#include "weft/error.h"

typedef struct node {
  struct node *l, *r;
  uintptr_t base;
  uint32_t prio;
  int freed;
  weft__alloc_info info;
  struct node *older, *newer; /* freed records, oldest first */
} node;

struct weft__ptrmap {
  node *root;
  size_t live, nfreed;
  node *oldest, *newest; /* the freed records' queue */
  uint32_t rng;
};

weft__ptrmap *weft__ptrmap_new(void) {
  weft__ptrmap *m = calloc(1, sizeof *m);
  if (m)
    m->rng = 0x9e3779b9u;
  return m;
}

static void free_tree(node *t) {
  while (t) {
    free_tree(t->l);
    node *r = t->r;
    free(t);
    t = r;
  }
}

void weft__ptrmap_free(weft__ptrmap *m) {
  if (m) {
    free_tree(m->root);
    free(m);
  }
}

static uint32_t next_prio(weft__ptrmap *m) {
  uint32_t x = m->rng; /* xorshift32 */
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return m->rng = x;
}

/* The record whose base is key, or NULL. */
static node *exact(const weft__ptrmap *m, uintptr_t key) {
  node *t = m->root;
  while (t && t->base != key)
    t = key < t->base ? t->l : t->r;
  return t;
}

/* The record with the greatest base <= key, or NULL. */
static node *floor_of(const weft__ptrmap *m, uintptr_t key) {
  node *t = m->root, *best = NULL;
  while (t) {
    if (t->base <= key) {
      best = t;
      t = t->r;
    } else {
      t = t->l;
    }
  }
  return best;
}

static void split(node *t, uintptr_t key, node **lo, node **hi) {
  if (!t) {
    *lo = *hi = NULL;
  } else if (t->base < key) {
    split(t->r, key, &t->r, hi);
    *lo = t;
  } else {
    split(t->l, key, lo, &t->l);
    *hi = t;
  }
}

static node *merge(node *a, node *b) {
  if (!a || !b)
    return a ? a : b;
  if (a->prio > b->prio) {
    a->r = merge(a->r, b);
    return a;
  }
  b->l = merge(a, b->l);
  return b;
}

static node *insert(node *t, node *n) {
  if (!t)
    return n;
  if (n->prio > t->prio) {
    split(t, n->base, &n->l, &n->r);
    return n;
  }
  if (n->base < t->base)
    t->l = insert(t->l, n);
  else
    t->r = insert(t->r, n);
  return t;
}

static node *erase(node *t, uintptr_t key) {
  if (!t)
    return NULL;
  if (t->base == key)
    return merge(t->l, t->r);
  if (key < t->base)
    t->l = erase(t->l, key);
  else
    t->r = erase(t->r, key);
  return t;
}

static void unqueue(weft__ptrmap *m, node *n) {
  if (n->older)
    n->older->newer = n->newer;
  else
    m->oldest = n->newer;
  if (n->newer)
    n->newer->older = n->older;
  else
    m->newest = n->older;
  n->older = n->newer = NULL;
  m->nfreed--;
}

static void drop_freed(weft__ptrmap *m, node *n) {
  unqueue(m, n);
  m->root = erase(m->root, n->base);
  free(n);
}

void weft__ptrmap_forget(weft__ptrmap *m, const void *p, size_t n) {
  uintptr_t lo = (uintptr_t)p, hi = lo + (n ? n : 1);
  if (hi < lo)
    hi = UINTPTR_MAX;
  node *r;
  /* Freed records overlapping [lo, hi), the last first. */
  while ((r = floor_of(m, hi - 1)) != NULL && r->freed &&
         r->base + r->info.size > lo)
    drop_freed(m, r);
}

int weft__ptrmap_put(weft__ptrmap *m, const void *p, weft__alloc_info info) {
  node *old = exact(m, (uintptr_t)p);
  if (old && !old->freed) {
    old->info = info;
    return 0;
  }
  node *n = calloc(1, sizeof *n);
  if (!n)
    return WEFT_ENOMEM;
  /* Memory handed out again: what was freed there is no more. */
  if (old)
    drop_freed(m, old);
  weft__ptrmap_forget(m, p, info.size);
  n->base = (uintptr_t)p;
  n->prio = next_prio(m);
  n->info = info;
  m->root = insert(m->root, n);
  m->live++;
  return 0;
}

int weft__ptrmap_get(const weft__ptrmap *m, const void *p,
                     weft__alloc_info *out) {
  const node *n = exact(m, (uintptr_t)p);
  if (!n || n->freed)
    return 0;
  if (out)
    *out = n->info;
  return 1;
}

weft__alloc_info *weft__ptrmap_find(weft__ptrmap *m, const void *p) {
  node *n = exact(m, (uintptr_t)p);
  return n && !n->freed ? &n->info : NULL;
}

int weft__ptrmap_lookup(const weft__ptrmap *m, const void *p,
                        weft__alloc_ref *out) {
  const node *n = floor_of(m, (uintptr_t)p);
  if (!n || (uintptr_t)p - n->base >= n->info.size)
    return WEFT__PTR_UNKNOWN;
  out->base = (const void *)n->base;
  out->info = n->info;
  return n->freed ? WEFT__PTR_FREED : WEFT__PTR_LIVE;
}

int weft__ptrmap_del(weft__ptrmap *m, const void *p) {
  node *n = exact(m, (uintptr_t)p);
  if (!n || n->freed)
    return 0;
  m->live--;
  if (n->info.size == 0) { /* nothing to remember */
    m->root = erase(m->root, n->base);
    free(n);
    return 1;
  }
  n->freed = 1;
  n->info.graphs = 0;
  /* Remembered as freed, the oldest forgotten beyond the bound. */
  n->older = m->newest;
  if (m->newest)
    m->newest->newer = n;
  else
    m->oldest = n;
  m->newest = n;
  if (++m->nfreed > WEFT__PTRMAP_FREED_MAX)
    drop_freed(m, m->oldest);
  return 1;
}

size_t weft__ptrmap_nfreed(const weft__ptrmap *m) { return m->nfreed; }

static void sum(const node *t, int kind, size_t *count, size_t *bytes) {
  for (; t; t = t->r) {
    sum(t->l, kind, count, bytes);
    if (!t->freed && t->info.kind == kind) {
      (*count)++;
      *bytes += t->info.size;
    }
  }
}

size_t weft__ptrmap_count(const weft__ptrmap *m, int kind) {
  size_t n = 0, b = 0;
  sum(m->root, kind, &n, &b);
  return n;
}

size_t weft__ptrmap_bytes(const weft__ptrmap *m, int kind) {
  size_t n = 0, b = 0;
  sum(m->root, kind, &n, &b);
  return b;
}
