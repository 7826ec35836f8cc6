/* A stable sort whose comparator gets a context pointer, so the trace
 * reader's sorts (ops by time, threads by id, kernels by name) need no
 * global state: C11 has no qsort_r, and a file-scope "the model being
 * sorted" would make loading two traces at once unsafe. */
#ifndef WEFT_TRACE_SORT_H
#define WEFT_TRACE_SORT_H

#include <stddef.h>

/* Negative, zero or positive as a sorts before, with or after b. */
typedef int (*trace_sort_cmp)(const void *a, const void *b, const void *ctx);

/* Sorts base[0, n), elements of size bytes, by cmp; equal elements keep
 * their order. Returns 0, or -1 when out of memory (base unchanged). */
int trace_sort(void *base, size_t n, size_t size, trace_sort_cmp cmp,
               const void *ctx);

/* qsort comparators of plain values, ascending. */
int trace_cmp_double(const void *a, const void *b);
int trace_cmp_u32(const void *a, const void *b);

/* The p-quantile (0..1) of sorted x[0, n), n > 0, interpolating linearly
 * between the closest ranks (numpy's default): x[floor(h)] + frac(h) *
 * (x[floor(h) + 1] - x[floor(h)]) with h = p * (n - 1). */
double trace_quantile(const double *x, size_t n, double p);

#endif
