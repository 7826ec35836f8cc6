/* Declared data: a spawner's record of disjoint byte ranges, each with its
 * last writer and its readers since (identities: task handles, or a
 * capture's step numbers; a handle whose task completed is stale, and
 * following it costs nothing: weft_task_after sees it done).
 *
 * The ranges are a skip list in address order: finding a range, adding
 * one and dropping one cost O(log n) expected in the n ranges held,
 * whatever the order the program declares them in (a sorted array paid a
 * move of the ranges after the new one, O(n), for each). An access then
 * walks the ranges it covers. Beside it, an index finds a range by its
 * first byte in O(1): an access that names ranges the record already
 * holds whole (a tile, declared again) needs no seek
 * (docs/decisions/dataflow.md, "An index of the ranges by first byte").
 * A range keeps at most FOLD readers: the next reader first folds them
 * into a join, an identity that follows them all (made by the record's
 * owner), so that a writer follows at most FOLD per range, however many
 * tasks read it since its last write.
 *
 * A spawn is all or nothing, in two phases. First every boundary its
 * accesses need is made (splitting a range copies its state, a gap
 * becomes an empty range), with room for one more reader in each range it
 * reads (folding where full), and the dependencies are collected: none of
 * this changes what the record says. Only then is the record changed,
 * which allocates nothing.
 * After a write, the written ranges, all with the same writer and no
 * readers, merge again. Only the spawner touches its record (one task, or
 * one plain thread, at a time): no lock. */
#include "dataflow.h"

#include <stdlib.h>
#include <string.h>

#include "caller.h"
#include "error_internal.h"

/* MAXLV: levels of the skip list, each a quarter of the one below, enough
 * for 4^16 ranges. FOLD: readers a range keeps before they become a join.
 * INRD: readers a range holds in itself, without a list of its own (most
 * data is read by one or two tasks between writes). LINEAR: dependencies
 * checked for repeats one by one; beyond, a hash. */
enum { MAXLV = 16, FOLD = WEFT__FLOW_FOLD, INRD = 2, LINEAR = 8 };

typedef struct node node;
struct node {
  uintptr_t lo, hi;     /* [lo, hi) */
  const void *writer;   /* the last, NULL for none */
  const void **rd;      /* readers since: in, or malloc'd */
  uint32_t nrd, cap;    /* nrd <= FOLD */
  uint32_t lv;          /* levels: next[0..lv) */
  const void *in[INRD]; /* the first readers' room */
  struct node *next[];
};

struct weft__flow {
  node *head; /* before every range, MAXLV levels */
  uint32_t lv;
  size_t n;
  uint64_t rng;
  uint64_t work;
  /* The index: ranges by lo, open addressing with linear probing in
   * mask + 1 slots (a power of two, 0 before the first range), at most
   * half full; home slot: the top bits of lo times an odd constant. */
  node **ix;
  size_t mask;
  unsigned shift;
};

int weft__flow_validate(const weft_access *a, size_t n, const char *call) {
  if (n && !a)
    return weft__err(WEFT_EINVAL, "%s: accesses is NULL, naccesses %zu", call,
                     n);
  for (size_t i = 0; i < n; i++) {
    unsigned m = a[i].mode, rw = m & WEFT_RW;
    if (!a[i].ptr || a[i].bytes == 0)
      return weft__err(WEFT_EINVAL, "%s: access %zu: %s", call, i,
                       a[i].ptr ? "0 bytes"
                                : "NULL pointer (weft_data_access gives one "
                                  "for a NULL or unregistered handle)");
    if (a[i].bytes - 1 >
        UINTPTR_MAX - (uintptr_t)a[i].ptr) /* may end at the top */
      return weft__err(WEFT_EINVAL,
                       "%s: access %zu: %zu bytes at %p run past the end of "
                       "memory",
                       call, i, a[i].bytes, a[i].ptr);
    if (!rw || (m & ~(unsigned)(WEFT_RW | WEFT_ACCESS_HOST)) ||
        ((m & WEFT_ACCESS_HOST) && !(m & WEFT_READ)))
      return weft__err(WEFT_EINVAL,
                       "%s: access %zu: mode 0x%x (WEFT_READ, WEFT_WRITE or "
                       "WEFT_RW, with WEFT_ACCESS_HOST only on a read)",
                       call, i, m);
  }
  return 0;
}

/* ---- the skip list ---- */

static node *node_alloc(uint32_t lv) {
  return malloc(offsetof(node, next) + lv * sizeof(node *));
}

static weft__flow *flow_new(void) {
  weft__flow *f = calloc(1, sizeof *f);
  node *h = node_alloc(MAXLV);
  if (!f || !h) {
    free(f);
    free(h);
    return NULL;
  }
  memset(h, 0, offsetof(node, next) + MAXLV * sizeof(node *));
  h->rd = h->in;
  h->lv = MAXLV;
  f->head = h;
  f->lv = 1;
  f->rng = 0x9e3779b97f4a7c15u; /* any fixed seed: runs repeat exactly */
  return f;
}

/* The range [*lo, *hi) that n bytes at p take in the record. One ending at
 * the top of the address space has no end a uintptr_t holds: it loses its
 * last byte, and a range of that byte alone takes the byte below too, so
 * that it still meets the others that hold it (more order, never less). */
static void span(const void *p, size_t n, uintptr_t *lo, uintptr_t *hi) {
  *lo = (uintptr_t)p;
  *hi = *lo + n;
  if (*hi == 0) {
    *hi = UINTPTR_MAX;
    if (*lo == UINTPTR_MAX)
      *lo = UINTPTR_MAX - 1;
  }
}

/* ---- the index ---- */

static size_t ix_home(const weft__flow *f, uintptr_t lo) {
  return (size_t)(((uint64_t)lo * 0x9e3779b97f4a7c15u) >> f->shift);
}

/* The range that starts at lo, or NULL. */
static node *ix_find(weft__flow *f, uintptr_t lo) {
  if (!f->ix)
    return NULL;
  for (size_t k = ix_home(f, lo);; k = (k + 1) & f->mask) {
    node *x = f->ix[k];
    f->work++;
    if (!x || x->lo == lo)
      return x;
  }
}

static void ix_add(weft__flow *f, node *y) {
  size_t k = ix_home(f, y->lo);
  while (f->ix[k])
    k = (k + 1) & f->mask;
  f->ix[k] = y;
}

/* Takes x out, moving back the entries after it that probed past its slot,
 * so that no search stops early at the hole. */
static void ix_del(weft__flow *f, const node *x) {
  size_t i = ix_home(f, x->lo);
  while (f->ix[i] != x)
    i = (i + 1) & f->mask;
  for (size_t j = i;;) {
    j = (j + 1) & f->mask;
    node *y = f->ix[j];
    if (!y)
      break;
    size_t h = ix_home(f, y->lo);
    /* y may move to i when its home does not lie cyclically in (i, j] */
    if (i <= j ? (h <= i || h > j) : (h <= i && h > j)) {
      f->ix[i] = y;
      i = j;
    }
  }
  f->ix[i] = NULL;
}

/* Room in the index for one more range: 0, or WEFT_ENOMEM with the index
 * as it was. */
static int ix_reserve(weft__flow *f) {
  size_t slots = f->ix ? f->mask + 1 : 0;
  if (2 * (f->n + 1) <= slots)
    return 0;
  size_t ns = slots ? 2 * slots : 64;
  node **ix = calloc(ns, sizeof *ix);
  if (!ix)
    return WEFT_ENOMEM;
  unsigned bits = 0;
  while (((size_t)1 << bits) < ns)
    bits++;
  free(f->ix);
  f->ix = ix;
  f->mask = ns - 1;
  f->shift = 64 - bits;
  for (node *x = f->head->next[0]; x; x = x->next[0])
    ix_add(f, x);
  f->work += f->n;
  return 0;
}

/* A new range [lo, hi) with no writer and no readers, its level drawn:
 * 1, then one more with odds of one in four each; room in the index made
 * for it, so that putting it allocates nothing. */
static node *node_new(weft__flow *f, uintptr_t lo, uintptr_t hi) {
  if (ix_reserve(f))
    return NULL;
  uint64_t r = f->rng;
  r ^= r << 13;
  r ^= r >> 7;
  r ^= r << 17;
  f->rng = r;
  uint32_t lv = 1;
  while ((r & 3) == 0 && lv < MAXLV) {
    lv++;
    r >>= 2;
  }
  node *y = node_alloc(lv);
  if (!y)
    return NULL;
  y->lo = lo;
  y->hi = hi;
  y->writer = NULL;
  y->rd = y->in;
  y->nrd = 0;
  y->cap = INRD;
  y->lv = lv;
  return y;
}

static void node_free(node *x) {
  if (x->rd != x->in)
    free(x->rd);
  free(x);
}

/* A position in the list: up[l] is the last node of level l before it. */
typedef struct cur {
  node *up[MAXLV];
} cur;

/* Places c before the first range whose end lies beyond p. */
static void seek(weft__flow *f, cur *c, uintptr_t p) {
  node *x = f->head;
  uint64_t work = 0; /* counted here: c may alias f, for all the compiler
                        knows, which would store f->work at every step */
  for (uint32_t l = MAXLV; l-- > f->lv;)
    c->up[l] = x;
  for (uint32_t l = f->lv; l-- > 0;) {
    node *y;
    while ((y = x->next[l]) && y->hi <= p) {
      x = y;
      work++;
    }
    c->up[l] = x;
    work++;
  }
  f->work += work;
}

/* The range at c, NULL at the end. */
static node *at(const cur *c) { return c->up[0]->next[0]; }

/* Moves c past the range at it. */
static void step(weft__flow *f, cur *c) {
  node *x = at(c);
  for (uint32_t l = 0; l < x->lv; l++)
    c->up[l] = x;
  f->work++;
}

/* Puts y at c (c then stands before y). */
static void put(weft__flow *f, cur *c, node *y) {
  if (y->lv > f->lv)
    f->lv = y->lv; /* c->up[] holds the head on the levels above */
  for (uint32_t l = 0; l < y->lv; l++) {
    y->next[l] = c->up[l]->next[l];
    c->up[l]->next[l] = y;
  }
  ix_add(f, y);
  f->n++;
  f->work += y->lv;
}

/* Drops the range at c and frees it. */
static void drop(weft__flow *f, cur *c) {
  node *x = at(c);
  for (uint32_t l = 0; l < x->lv; l++)
    c->up[l]->next[l] = x->next[l];
  ix_del(f, x);
  f->n--;
  f->work += x->lv;
  node_free(x);
}

/* ---- phase 1: boundaries, room, dependencies; the record says what it
 * said ---- */

/* The list being collected: d[0..n), without repeats, self or NULL; the
 * caller's buf first, then the heap; past LINEAR entries a hash set of
 * them (h, hmask + 1 slots, at most half full) finds repeats. */
typedef struct depset {
  const void **d, **buf, **h;
  uint32_t n, cap, hmask;
  const void *self;
  uint64_t *work;
} depset;

static uint32_t slot_of(const void *t, uint32_t mask) {
  return (uint32_t)(((uint64_t)(uintptr_t)t * 0x9e3779b97f4a7c15u) >> 32) &
         mask;
}

/* Rebuilds the hash set with slots slots (a power of two) from d. */
static int rehash(depset *s, uint32_t slots) {
  const void **h = calloc(slots, sizeof *h);
  if (!h)
    return WEFT_ENOMEM;
  free((void *)s->h);
  s->h = h;
  s->hmask = slots - 1;
  for (uint32_t i = 0; i < s->n; i++) {
    uint32_t k = slot_of(s->d[i], s->hmask);
    while (h[k])
      k = (k + 1) & s->hmask;
    h[k] = s->d[i];
  }
  *s->work += s->n;
  return 0;
}

static int dep_add(depset *s, const void *t) {
  if (!t || t == s->self)
    return 0;
  if (!s->h) {
    for (uint32_t i = 0; i < s->n; i++) {
      ++*s->work;
      if (s->d[i] == t)
        return 0;
    }
  } else {
    uint32_t k = slot_of(t, s->hmask);
    for (; s->h[k]; k = (k + 1) & s->hmask) {
      ++*s->work;
      if (s->h[k] == t)
        return 0;
    }
  }
  if (s->n == s->cap) {
    uint32_t nc = 2 * s->cap;
    const void **v = s->d == s->buf ? malloc(nc * sizeof *v)
                                    : realloc((void *)s->d, nc * sizeof *v);
    if (!v)
      return WEFT_ENOMEM;
    if (s->d == s->buf)
      memcpy(v, s->buf, s->n * sizeof *v);
    s->d = v;
    s->cap = nc;
  }
  s->d[s->n++] = t;
  if (s->h && 2 * s->n <= s->hmask + 1) {
    uint32_t k = slot_of(t, s->hmask);
    while (s->h[k])
      k = (k + 1) & s->hmask;
    s->h[k] = t;
    return 0;
  }
  if (s->n > LINEAR)
    return rehash(s, s->h ? 2 * (s->hmask + 1) : 4 * LINEAR);
  return 0;
}

/* Cuts x, the range at c, at p inside it: x keeps [x->lo, p), a new range
 * after it takes [p, x->hi) with x's state and room for one more reader;
 * c stays before x. */
static int split(weft__flow *f, cur *c, uintptr_t p) {
  node *x = at(c), *y = node_new(f, p, x->hi);
  if (!y)
    return WEFT_ENOMEM;
  if (x->nrd >= INRD) {
    y->rd = malloc((x->nrd + 1) * sizeof *y->rd);
    if (!y->rd) {
      free(y);
      return WEFT_ENOMEM;
    }
    y->cap = x->nrd + 1;
  }
  /* Not memcpy: x's list may be empty, and memcpy from NULL is undefined
   * even for no bytes. */
  for (uint32_t i = 0; i < x->nrd; i++)
    y->rd[i] = x->rd[i];
  y->nrd = x->nrd;
  f->work += x->nrd;
  y->writer = x->writer;
  x->hi = p;
  cur d = *c;
  step(f, &d);
  put(f, &d, y);
  return 0;
}

/* How a spawn makes its joins: the owner's join(ctx, ...), and the last
 * fold's readers and join, for the next range with the same readers (a
 * range cut in pieces, then read across: one join for all). */
typedef struct joiner {
  weft__flow_join_fn join;
  void *ctx;
  int made;
  const void *last; /* NULL: nothing left to follow */
  uint32_t n;
  const void *m[FOLD];
} joiner;

/* Room for one more reader in x: a bigger list, or, with FOLD readers
 * already, the readers folded into one join that follows them (a writer
 * then follows the join: the same order, one dependency). */
static int room(weft__flow *f, node *x, joiner *jn) {
  if (x->nrd >= FOLD) {
    int same = jn->made && jn->n == x->nrd;
    for (uint32_t i = 0; same && i < x->nrd; i++)
      same = jn->m[i] == x->rd[i];
    f->work += x->nrd;
    if (!same) {
      const void *j = NULL;
      int rc = jn->join(jn->ctx, x->rd, x->nrd, &j);
      if (rc)
        return rc;
      jn->made = 1;
      jn->last = j;
      jn->n = x->nrd;
      for (uint32_t i = 0; i < x->nrd; i++)
        jn->m[i] = x->rd[i];
    }
    x->rd[0] = jn->last;
    x->nrd = jn->last != NULL;
    return 0;
  }
  if (x->nrd < x->cap)
    return 0;
  uint32_t nc = 2 * x->cap < FOLD ? 2 * x->cap : FOLD;
  const void **v = x->rd == x->in ? malloc(nc * sizeof *v)
                                  : realloc((void *)x->rd, nc * sizeof *v);
  if (!v)
    return WEFT_ENOMEM;
  if (x->rd == x->in)
    for (uint32_t i = 0; i < x->nrd; i++)
      v[i] = x->in[i];
  x->rd = v;
  x->cap = nc;
  return 0;
}

/* What an access to x follows, added to s: x's writer, and for a write
 * its readers too; a read first gets room in x for one more reader. */
static int follow(weft__flow *f, node *x, int writes, joiner *jn, depset *s) {
  int rc;
  if (!writes && (rc = room(f, x, jn)) != 0)
    return rc;
  if ((rc = dep_add(s, x->writer)) != 0)
    return rc;
  for (uint32_t j = 0; writes && j < x->nrd; j++)
    if ((rc = dep_add(s, x->rd[j])) != 0)
      return rc;
  return 0;
}

/* The first of the ranges that make [lo, hi) whole, without gaps, when the
 * record holds them so already; else NULL. */
static node *whole(weft__flow *f, uintptr_t lo, uintptr_t hi) {
  node *x = ix_find(f, lo), *y = x;
  while (y && y->hi < hi) {
    node *z = y->next[0];
    y = z && z->lo == y->hi ? z : NULL;
    f->work++;
  }
  return y && y->hi == hi ? x : NULL;
}

/* Makes [lo, hi) a run of whole ranges: a range holding lo or hi inside
 * it is cut there, a gap becomes an empty range; and follows each range of
 * the run (above). */
static int cover(weft__flow *f, uintptr_t lo, uintptr_t hi, int writes,
                 joiner *jn, depset *s) {
  int rc = 0;
  node *x = whole(f, lo, hi);
  if (x) {
    for (;; x = x->next[0])
      if ((rc = follow(f, x, writes, jn, s)) != 0 || x->hi == hi)
        return rc;
  }
  cur c;
  seek(f, &c, lo);
  x = at(&c);
  if (x && x->lo < lo) {
    if ((rc = split(f, &c, lo)) != 0)
      return rc;
    step(f, &c);
  }
  for (uintptr_t p = lo; p < hi; step(f, &c)) {
    x = at(&c);
    if (!x || x->lo > p) {
      node *y = node_new(f, p, !x || x->lo > hi ? hi : x->lo);
      if (!y)
        return WEFT_ENOMEM;
      put(f, &c, y);
      x = y;
    }
    if (x->hi > hi && (rc = split(f, &c, hi)) != 0)
      return rc;
    if ((rc = follow(f, x, writes, jn, s)) != 0)
      return rc;
    p = x->hi;
  }
  return 0;
}

/* ---- the spawn ---- */

/* Merges the run at c, ranges up to hi just written by one writer and
 * with no readers, into its first. */
static void merge(weft__flow *f, cur *c, uintptr_t hi) {
  node *x = at(c), *y;
  step(f, c);
  while ((y = at(c)) && y->lo == x->hi && y->hi <= hi) {
    x->hi = y->hi;
    drop(f, c);
  }
}

int weft__flow_note(weft__flow **fp, const void *self, const weft_access *a,
                    size_t n, weft__flow_join_fn join, void *ctx,
                    const void **buf, const void ***deps, uint32_t *ndeps,
                    int *host) {
  *deps = NULL;
  *ndeps = 0;
  *host = 0;
  if (!*fp && !(*fp = flow_new()))
    return WEFT_ENOMEM;
  weft__flow *f = *fp;
  /* Phase 1: each access a run of whole ranges, with room where it reads
   * (a later access's cuts split them with their state, room included),
   * and what it follows; reads first (the order in which dependencies
   * have always been handed out: the first may hand its stream over), so
   * that a write collects readers after any fold. */
  joiner jn; /* m is read only where made says it was written */
  jn.join = join;
  jn.ctx = ctx;
  jn.made = 0;
  jn.last = NULL;
  jn.n = 0;
  depset s = {buf, buf, NULL, 0, WEFT__FLOW_INLINE, 0, self, &f->work};
  int h = 0, rc = 0;
  for (int pass = 0; pass < 2 && rc == 0; pass++)
    for (size_t i = 0; i < n && rc == 0; i++) {
      int writes = (a[i].mode & WEFT_WRITE) != 0;
      if (writes != pass)
        continue;
      h |= (a[i].mode & WEFT_ACCESS_HOST) != 0;
      uintptr_t lo, hi;
      span(a[i].ptr, a[i].bytes, &lo, &hi);
      rc = cover(f, lo, hi, writes, &jn, &s);
    }
  free((void *)s.h);
  if (rc) {
    weft__flow_deps_free(s.d, buf);
    return rc;
  }
  /* Phase 2: the record changes; nothing allocates. Reads first, so that
   * a task reading and writing one range is left its writer alone. Phase
   * 1 made each access a run of whole ranges, and phase 2's reads free
   * none: a read's run starts at the range the index finds at its first
   * byte. A write's merge may join the ranges of a later write: that one
   * then seeks. */
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < n; i++) {
      int writes = (a[i].mode & WEFT_WRITE) != 0;
      if (writes != pass)
        continue;
      uintptr_t lo, hi;
      span(a[i].ptr, a[i].bytes, &lo, &hi);
      node *x = ix_find(f, lo);
      if (!writes) {
        for (; x && x->lo < hi; x = x->next[0]) {
          if (x->writer != self && (x->nrd == 0 || x->rd[x->nrd - 1] != self))
            x->rd[x->nrd++] = self; /* room made in phase 1 */
          f->work++;
        }
        continue;
      }
      if (x && x->hi == hi) { /* one range: nothing to merge */
        x->writer = self;
        x->nrd = 0;
        continue;
      }
      cur c, first;
      seek(f, &c, lo);
      first = c;
      for (; (x = at(&c)) && x->lo < hi; step(f, &c)) {
        x->writer = self;
        x->nrd = 0;
      }
      merge(f, &first, hi);
    }
  if (s.n == 0) {
    weft__flow_deps_free(s.d, buf);
    s.d = NULL;
  }
  *deps = s.d;
  *ndeps = s.n;
  *host = h;
  return 0;
}

int weft__flow_declare(weft__exec *x, weft_task *self, const weft_access *a,
                       size_t n, weft__flow_join_fn join, void *ctx,
                       const void **buf, const void ***deps, uint32_t *ndeps,
                       int *host) {
  return weft__flow_note(&x->flow, self, a, n, join, ctx, buf, deps, ndeps,
                         host);
}

void weft__flow_forget(weft__exec *x, const void *p, size_t n) {
  weft__flow *f = x ? x->flow : NULL;
  if (!f || n == 0)
    return;
  uintptr_t lo, hi;
  span(p, n, &lo, &hi);
  cur c;
  seek(f, &c, lo);
  node *y = at(&c);
  /* Without memory to cut at an end, what lies past the cut stays: the
   * worst it does is order a task after one it need not follow. */
  if (y && y->lo < lo) {
    if (split(f, &c, lo))
      return;
    step(f, &c);
  }
  while ((y = at(&c)) && y->lo < hi) {
    if (y->hi > hi && split(f, &c, hi))
      return;
    drop(f, &c);
  }
}

size_t weft__flow_ranges(const weft__exec *x) {
  return x && x->flow ? x->flow->n : 0;
}

uint64_t weft__flow_work(const weft__exec *x) {
  return x && x->flow ? x->flow->work : 0;
}

void weft__flow_free(weft__flow *f) {
  if (!f)
    return;
  node *x = f->head;
  while (x) {
    node *next = x->next[0];
    node_free(x);
    x = next;
  }
  free(f->ix);
  free(f);
}
