/* Growable arrays for the trace reader: capacity doubles, and every size is
 * checked for overflow, because a hostile trace decides how much is asked
 * for. */
#ifndef WEFT_TRACE_GROW_H
#define WEFT_TRACE_GROW_H

#include <stdint.h>
#include <stdlib.h>

/* Makes room for need elements of elem bytes in *p (capacity *cap).
 * Returns 0, or -1 when out of memory, leaving *p and *cap as they were. */
static inline int trace_grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return 0;
  size_t c = *cap ? *cap : 16;
  while (c < need) {
    if (c > SIZE_MAX / 2 / elem)
      return -1;
    c *= 2;
  }
  void *q = realloc(*p, c * elem);
  if (!q)
    return -1;
  *p = q;
  *cap = c;
  return 0;
}

#endif
