/* Declared data: a spawner's record, a sorted array of disjoint byte
 * ranges, each with its last writer and its readers since (task handles;
 * a handle whose task completed is simply stale, and following it costs
 * nothing: weft_task_after sees it done).
 *
 * A spawn is all or nothing: first every boundary its accesses need is
 * made (splitting a range copies its state, a gap becomes an empty range:
 * neither changes what the record says) and room for every change is
 * reserved; only then are the dependencies read and the record changed,
 * which allocates nothing. After a write, the written ranges, all with the
 * same writer and no readers, merge again. Only the spawner touches its
 * record (one task, or one plain thread, at a time): no lock. */
#include "dataflow.h"

#include <stdlib.h>
#include <string.h>

#include "caller.h"
#include "error_internal.h"

typedef struct range {
  uintptr_t lo, hi;   /* [lo, hi) */
  const void *writer; /* identities: task handles, or a capture's steps */
  const void **readers;
  uint32_t nreaders, cap;
} range;

struct weft__flow {
  range *r;
  size_t n, cap;
};

int weft__flow_validate(const weft_access *a, size_t n, const char *call) {
  if (n && !a)
    return weft__err(WEFT_EINVAL, "%s: accesses is NULL, naccesses %zu", call,
                     n);
  for (size_t i = 0; i < n; i++) {
    unsigned m = a[i].mode, rw = m & WEFT_RW;
    if (!a[i].ptr || a[i].bytes == 0)
      return weft__err(WEFT_EINVAL, "%s: access %zu: %s", call, i,
                       a[i].ptr ? "0 bytes" : "NULL pointer");
    if ((uintptr_t)a[i].ptr + a[i].bytes < (uintptr_t)a[i].ptr)
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

/* The first range whose end lies beyond p. */
static size_t first_after(const weft__flow *f, uintptr_t p) {
  size_t lo = 0, hi = f->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (f->r[mid].hi <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int reserve(weft__flow *f, size_t more) {
  if (f->n + more <= f->cap)
    return 0;
  size_t nc = f->cap ? f->cap : 16;
  while (nc < f->n + more)
    nc *= 2;
  range *v = realloc(f->r, nc * sizeof *v);
  if (!v)
    return WEFT_ENOMEM;
  f->r = v;
  f->cap = nc;
  return 0;
}

/* Inserts r at index i (room reserved). */
static void insert_at(weft__flow *f, size_t i, range r) {
  memmove(&f->r[i + 1], &f->r[i], (f->n - i) * sizeof *f->r);
  f->r[i] = r;
  f->n++;
}

/* Makes p a boundary: the range holding p inside it is cut in two, both
 * halves with its state. */
static int cut(weft__flow *f, uintptr_t p) {
  size_t i = first_after(f, p);
  if (i == f->n || f->r[i].lo >= p)
    return 0;
  range *r = &f->r[i];
  /* With room for one more reader, as fill() leaves every range. */
  const void **copy = malloc((r->nreaders + 1) * sizeof *copy);
  if (!copy)
    return WEFT_ENOMEM;
  memcpy(copy, r->readers, r->nreaders * sizeof *copy);
  if (reserve(f, 1)) {
    free(copy);
    return WEFT_ENOMEM;
  }
  r = &f->r[i];
  range right = *r;
  right.lo = p;
  right.readers = copy;
  right.cap = r->nreaders + 1;
  r->hi = p;
  insert_at(f, i + 1, right);
  return 0;
}

/* Makes [lo, hi), whose ends are boundaries already, covered by ranges
 * (gaps become empty ones) with room for one more reader in each. */
static int fill(weft__flow *f, uintptr_t lo, uintptr_t hi) {
  uintptr_t p = lo;
  size_t i = first_after(f, lo);
  while (p < hi) {
    if (i == f->n || f->r[i].lo > p) {
      uintptr_t end = i == f->n || f->r[i].lo > hi ? hi : f->r[i].lo;
      if (reserve(f, 1))
        return WEFT_ENOMEM;
      insert_at(f, i, (range){p, end, NULL, NULL, 0, 0});
    }
    range *r = &f->r[i];
    if (r->nreaders == r->cap) {
      uint32_t nc = r->cap ? 2 * r->cap : 4;
      const void **v = realloc(r->readers, nc * sizeof *v);
      if (!v)
        return WEFT_ENOMEM;
      r->readers = v;
      r->cap = nc;
    }
    p = r->hi;
    i++;
  }
  return 0;
}

/* Adds t to the list d[0..*n) unless there already (or self). */
static void add_dep(const void **d, uint32_t *n, const void *t,
                    const void *self) {
  if (!t || t == self)
    return;
  for (uint32_t i = 0; i < *n; i++)
    if (d[i] == t)
      return;
  d[(*n)++] = t;
}

/* After a write of [lo, hi): its ranges, one writer and no readers now,
 * become one. */
static void merge(weft__flow *f, uintptr_t lo, uintptr_t hi) {
  size_t i = first_after(f, lo), j = i;
  while (j + 1 < f->n && f->r[j + 1].lo == f->r[j].hi && f->r[j + 1].hi <= hi)
    j++;
  if (j == i)
    return;
  for (size_t k = i + 1; k <= j; k++)
    free(f->r[k].readers);
  f->r[i].hi = f->r[j].hi;
  memmove(&f->r[i + 1], &f->r[j + 1], (f->n - j - 1) * sizeof *f->r);
  f->n -= j - i;
}

int weft__flow_note(weft__flow **fp, const void *self, const weft_access *a,
                    size_t n, const void **buf, const void ***deps,
                    uint32_t *ndeps, int *host) {
  *deps = NULL;
  *ndeps = 0;
  *host = 0;
  if (!*fp && !(*fp = calloc(1, sizeof **fp)))
    return WEFT_ENOMEM;
  weft__flow *f = *fp;
  /* Phase 1: every boundary first, then gaps and room; the record still
   * says what it said. */
  size_t bound = 0;
  for (size_t i = 0; i < n; i++) {
    uintptr_t lo = (uintptr_t)a[i].ptr, hi = lo + a[i].bytes;
    if (cut(f, lo) || cut(f, hi))
      return WEFT_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    uintptr_t lo = (uintptr_t)a[i].ptr;
    if (fill(f, lo, lo + a[i].bytes))
      return WEFT_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    uintptr_t lo = (uintptr_t)a[i].ptr, hi = lo + a[i].bytes;
    for (size_t k = first_after(f, lo); k < f->n && f->r[k].lo < hi; k++)
      bound += 1 + f->r[k].nreaders;
  }
  const void **d = bound <= WEFT__FLOW_INLINE ? buf : malloc(bound * sizeof *d);
  if (!d)
    return WEFT_ENOMEM;
  /* Phase 2: what to follow, then the record; nothing allocates. Reads
   * first, so that a task reading and writing one range does not count
   * itself among its readers. */
  uint32_t nd = 0;
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < n; i++) {
      unsigned m = a[i].mode;
      int writes = (m & WEFT_WRITE) != 0;
      if (writes != pass)
        continue;
      uintptr_t lo = (uintptr_t)a[i].ptr, hi = lo + a[i].bytes;
      if (m & WEFT_ACCESS_HOST)
        *host = 1;
      for (size_t k = first_after(f, lo); k < f->n && f->r[k].lo < hi; k++) {
        range *r = &f->r[k];
        add_dep(d, &nd, r->writer, self);
        if (writes) {
          for (uint32_t j = 0; j < r->nreaders; j++)
            add_dep(d, &nd, r->readers[j], self);
          r->writer = self;
          r->nreaders = 0;
        } else if (r->writer != self &&
                   (r->nreaders == 0 || r->readers[r->nreaders - 1] != self)) {
          r->readers[r->nreaders++] = self; /* room made in phase 1 */
        }
      }
      if (writes)
        merge(f, lo, hi);
    }
  if (nd == 0) {
    weft__flow_deps_free(d, buf);
    d = NULL;
  }
  *deps = d;
  *ndeps = nd;
  return 0;
}

int weft__flow_declare(weft__exec *x, weft_task *self, const weft_access *a,
                       size_t n, const void **buf, const void ***deps,
                       uint32_t *ndeps, int *host) {
  return weft__flow_note(&x->flow, self, a, n, buf, deps, ndeps, host);
}

void weft__flow_forget(weft__exec *x, const void *p, size_t n) {
  weft__flow *f = x ? x->flow : NULL;
  if (!f || n == 0)
    return;
  uintptr_t lo = (uintptr_t)p, hi = lo + n;
  /* Without memory to cut at the ends the record stays: the worst it does
   * is order a task after one it need not follow. */
  if (cut(f, lo) || cut(f, hi))
    return;
  size_t i = first_after(f, lo), j = i;
  while (j < f->n && f->r[j].lo < hi) {
    free(f->r[j].readers);
    j++;
  }
  memmove(&f->r[i], &f->r[j], (f->n - j) * sizeof *f->r);
  f->n -= j - i;
}

size_t weft__flow_ranges(const weft__exec *x) {
  return x && x->flow ? x->flow->n : 0;
}

void weft__flow_free(weft__flow *f) {
  if (!f)
    return;
  for (size_t i = 0; i < f->n; i++)
    free(f->r[i].readers);
  free(f->r);
  free(f);
}
