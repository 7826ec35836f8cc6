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

#endif
