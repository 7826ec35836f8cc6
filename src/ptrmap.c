/* An ordered map of address ranges: the live allocations and the most
 * recent freed ones, sorted by base address in leaves of up to 32 under
 * one sorted array of the leaves' first bases (a B+ tree two levels high).
 * A lookup is a floor search, so any address inside is found
 * (docs/decisions/reliability.md, "Pointers are looked up by any address
 * inside"); it reads a few cache lines, most of them side by side, where a
 * tree of nodes chased one miss a level behind a driver's launch that had
 * evicted them (same file, "A lookup that reads few cache lines"). */
#include <stdlib.h>
#include <string.h>

#include "ptrmap.h"
#include "weft/error.h"

typedef struct node {
  uintptr_t base;
  int freed;
  weft__alloc_info info;
  struct node *older, *newer; /* freed records, oldest first */
} node;

enum { LEAF_MAX = 32 };

/* An entry keeps its base beside its record, so that a leaf's scan reads
 * only the leaf. */
typedef struct entry {
  uintptr_t base;
  node *rec;
} entry;

typedef struct leaf {
  unsigned n;
  entry e[LEAF_MAX]; /* sorted by base */
} leaf;

typedef struct top {
  uintptr_t first; /* l->e[0].base */
  leaf *l;
} top;

struct weft__ptrmap {
  top *tops; /* sorted; every leaf holds at least one entry */
  size_t ntops, cap;
  size_t live, nfreed;
  node *oldest, *newest; /* the freed records' queue */
};

weft__ptrmap *weft__ptrmap_new(void) { return calloc(1, sizeof(weft__ptrmap)); }

void weft__ptrmap_free(weft__ptrmap *m) {
  if (!m)
    return;
  for (size_t t = 0; t < m->ntops; t++) {
    leaf *l = m->tops[t].l;
    for (unsigned i = 0; i < l->n; i++)
      free(l->e[i].rec);
    free(l);
  }
  free(m->tops);
  free(m);
}

/* The last leaf whose first base is <= key, or -1. */
static ptrdiff_t leaf_of(const weft__ptrmap *m, uintptr_t key) {
  size_t lo = 0, hi = m->ntops; /* the answer lies in [lo, hi) + 1 */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (m->tops[mid].first <= key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return (ptrdiff_t)lo - 1;
}

/* In l, the index of the last entry whose base is <= key, or -1. The
 * scan reads the whole leaf's lines at once rather than one after another
 * as a binary search would. */
static int slot_of(const leaf *l, uintptr_t key) {
  int i = 0;
  while (i < (int)l->n && l->e[i].base <= key)
    i++;
  return i - 1;
}

/* The record with the greatest base <= key, or NULL. */
static node *floor_of(const weft__ptrmap *m, uintptr_t key) {
  ptrdiff_t t = leaf_of(m, key);
  if (t < 0)
    return NULL;
  const leaf *l = m->tops[t].l;
  return l->e[slot_of(l, key)].rec; /* the first base is <= key */
}

/* The record whose base is key, or NULL. */
static node *exact(const weft__ptrmap *m, uintptr_t key) {
  node *n = floor_of(m, key);
  return n && n->base == key ? n : NULL;
}

/* Room for one more top; 0 or WEFT_ENOMEM (nothing changed). */
static int tops_room(weft__ptrmap *m) {
  if (m->ntops < m->cap)
    return 0;
  size_t cap = m->cap ? 2 * m->cap : 8;
  top *t = realloc(m->tops, cap * sizeof *t);
  if (!t)
    return WEFT_ENOMEM;
  m->tops = t;
  m->cap = cap;
  return 0;
}

static void tops_insert(weft__ptrmap *m, size_t at, leaf *l) {
  memmove(&m->tops[at + 1], &m->tops[at], (m->ntops - at) * sizeof *m->tops);
  m->tops[at] = (top){l->e[0].base, l};
  m->ntops++;
}

static void tops_remove(weft__ptrmap *m, size_t at) {
  free(m->tops[at].l);
  memmove(&m->tops[at], &m->tops[at + 1],
          (m->ntops - at - 1) * sizeof *m->tops);
  m->ntops--;
}

/* Inserts n (its base not present); 0 or WEFT_ENOMEM with nothing
 * changed. A full leaf splits in two halves. */
static int insert(weft__ptrmap *m, node *n) {
  if (tops_room(m) != 0)
    return WEFT_ENOMEM;
  if (m->ntops == 0) {
    leaf *l = calloc(1, sizeof *l);
    if (!l)
      return WEFT_ENOMEM;
    l->e[0] = (entry){n->base, n};
    l->n = 1;
    tops_insert(m, 0, l);
    return 0;
  }
  ptrdiff_t t = leaf_of(m, n->base);
  if (t < 0) /* before every base: into the first leaf */
    t = 0;
  leaf *l = m->tops[t].l;
  if (l->n == LEAF_MAX) {
    leaf *r = malloc(sizeof *r);
    if (!r)
      return WEFT_ENOMEM;
    r->n = LEAF_MAX / 2;
    memcpy(r->e, &l->e[LEAF_MAX / 2], (LEAF_MAX / 2) * sizeof *r->e);
    l->n = LEAF_MAX / 2;
    tops_insert(m, (size_t)t + 1, r);
    if (n->base >= r->e[0].base)
      l = r, t++;
  }
  int at = slot_of(l, n->base) + 1;
  memmove(&l->e[at + 1], &l->e[at], (l->n - (unsigned)at) * sizeof *l->e);
  l->e[at] = (entry){n->base, n};
  l->n++;
  m->tops[t].first = l->e[0].base;
  return 0;
}

/* Removes the entry of base key (present). A leaf left empty goes; one
 * left a quarter full joins a neighbour with room, so that leaves stay
 * dense whatever the order of frees. */
static void erase(weft__ptrmap *m, uintptr_t key) {
  size_t t = (size_t)leaf_of(m, key);
  leaf *l = m->tops[t].l;
  int at = slot_of(l, key);
  memmove(&l->e[at], &l->e[at + 1], (l->n - (unsigned)at - 1) * sizeof *l->e);
  if (--l->n == 0) {
    tops_remove(m, t);
    return;
  }
  m->tops[t].first = l->e[0].base;
  if (l->n > LEAF_MAX / 4)
    return;
  if (t + 1 < m->ntops && l->n + m->tops[t + 1].l->n <= LEAF_MAX / 2) {
    leaf *r = m->tops[t + 1].l;
    memcpy(&l->e[l->n], r->e, r->n * sizeof *r->e);
    l->n += r->n;
    tops_remove(m, t + 1);
  } else if (t > 0 && l->n + m->tops[t - 1].l->n <= LEAF_MAX / 2) {
    leaf *p = m->tops[t - 1].l;
    memcpy(&p->e[p->n], l->e, l->n * sizeof *l->e);
    p->n += l->n;
    tops_remove(m, t);
  }
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
  erase(m, n->base);
  free(n);
}

void weft__ptrmap_forget(weft__ptrmap *m, const void *p, size_t n) {
  uintptr_t lo = (uintptr_t)p, hi = lo + (n ? n : 1);
  if (hi < lo)
    hi = UINTPTR_MAX;
  /* Freed records overlapping [lo, hi), the last first, past any live one
   * among them; records are disjoint, so the first below lo is the last
   * that can overlap. */
  uintptr_t key = hi - 1;
  node *r;
  while ((r = floor_of(m, key)) != NULL) {
    uintptr_t below = r->base;
    int last = below < lo;
    if (r->freed && (!last || r->base + r->info.size > lo))
      drop_freed(m, r);
    if (last || below == 0)
      break;
    key = below - 1;
  }
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
  /* Memory handed out again: what was freed there (old too) is no more. */
  weft__ptrmap_forget(m, p, info.size);
  n->base = (uintptr_t)p;
  n->info = info;
  if (insert(m, n) != 0) {
    free(n);
    return WEFT_ENOMEM;
  }
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
    erase(m, n->base);
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

static void sum(const weft__ptrmap *m, int kind, size_t *count, size_t *bytes) {
  for (size_t t = 0; t < m->ntops; t++) {
    const leaf *l = m->tops[t].l;
    for (unsigned i = 0; i < l->n; i++) {
      const node *n = l->e[i].rec;
      if (!n->freed && n->info.kind == kind) {
        (*count)++;
        *bytes += n->info.size;
      }
    }
  }
}

size_t weft__ptrmap_count(const weft__ptrmap *m, int kind) {
  size_t n = 0, b = 0;
  sum(m, kind, &n, &b);
  return n;
}

size_t weft__ptrmap_bytes(const weft__ptrmap *m, int kind) {
  size_t n = 0, b = 0;
  sum(m, kind, &n, &b);
  return b;
}
