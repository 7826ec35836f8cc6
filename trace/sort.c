/* The stable sort of sort.h: a top-down merge sort through one buffer the
 * size of the array, with insertion sort for short pieces. Halving first
 * keeps the deep levels on pieces that fit in the cache, which is what
 * makes it as fast as glibc's qsort on a million indices. */
#include "sort.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { RUN = 8 }; /* pieces this short are sorted by insertion */

/* One element: the sizes sorted most (indices, pointers) copy inline. */
static void copy_one(unsigned char *d, const unsigned char *s, size_t size) {
  if (size == sizeof(uint32_t))
    memcpy(d, s, sizeof(uint32_t));
  else if (size == sizeof(uint64_t))
    memcpy(d, s, sizeof(uint64_t));
  else
    memcpy(d, s, size);
}

/* Sorts v[0, n) in place; scratch holds one element. */
static void insertion_sort(unsigned char *v, size_t n, size_t size,
                           trace_sort_cmp cmp, const void *ctx,
                           unsigned char *scratch) {
  for (size_t i = 1; i < n; i++) {
    size_t j = i;
    while (j > 0 && cmp(v + (j - 1) * size, v + i * size, ctx) > 0)
      j--;
    if (j == i)
      continue;
    copy_one(scratch, v + i * size, size);
    memmove(v + (j + 1) * size, v + j * size, (i - j) * size);
    copy_one(v + j * size, scratch, size);
  }
}

/* Merges the sorted a[0, na) and b[0, nb) into out, a's first on ties. */
static void merge(unsigned char *out, const unsigned char *a, size_t na,
                  const unsigned char *b, size_t nb, size_t size,
                  trace_sort_cmp cmp, const void *ctx) {
  while (na && nb) {
    if (cmp(b, a, ctx) < 0) {
      copy_one(out, b, size);
      b += size;
      nb--;
    } else {
      copy_one(out, a, size);
      a += size;
      na--;
    }
    out += size;
  }
  memcpy(out, a, na * size);
  memcpy(out + na * size, b, nb * size);
}

/* Sorts v[0, n) using tmp, which has room for n elements. */
static void sort_range(unsigned char *v, size_t n, size_t size,
                       trace_sort_cmp cmp, const void *ctx,
                       unsigned char *tmp) {
  if (n <= RUN) {
    insertion_sort(v, n, size, cmp, ctx, tmp);
    return;
  }
  size_t na = n / 2;
  sort_range(v, na, size, cmp, ctx, tmp);
  sort_range(v + na * size, n - na, size, cmp, ctx, tmp);
  /* Halves already in order (a sorted input) need no merge. */
  if (cmp(v + (na - 1) * size, v + na * size, ctx) <= 0)
    return;
  merge(tmp, v, na, v + na * size, n - na, size, cmp, ctx);
  memcpy(v, tmp, n * size);
}

int trace_sort(void *base, size_t n, size_t size, trace_sort_cmp cmp,
               const void *ctx) {
  if (n < 2)
    return 0;
  unsigned char *tmp = malloc(n * size);
  if (!tmp)
    return -1;
  sort_range(base, n, size, cmp, ctx, tmp);
  free(tmp);
  return 0;
}

int trace_cmp_double(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return a < b ? -1 : a > b;
}

int trace_cmp_u32(const void *pa, const void *pb) {
  uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
  return a < b ? -1 : a > b;
}

double trace_quantile(const double *x, size_t n, double p) {
  double h = p * (double)(n - 1);
  size_t lo = (size_t)h;
  if (lo + 1 >= n)
    return x[n - 1];
  return x[lo] + (h - (double)lo) * (x[lo + 1] - x[lo]);
}
