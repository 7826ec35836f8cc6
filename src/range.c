/* User ranges (weft/range.h, range.h): push and pop on the calling task's
 * or thread's stack, each range timed for the trace and mirrored in NVTX.
 * They need only the caller's context, not the door: a range queues no
 * work, so it needs neither a stream nor admission, and it is allowed in
 * a graph capture. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "range.h"

int weft_range_push(const char *name) {
  if (!name)
    return weft__err(WEFT_EINVAL, "weft_range_push: name is NULL");
  weft__exec *x = weft__caller_get("weft_range_push");
  if (!x)
    return weft__caller_get_failed();
  if (x->nranges == x->cap_ranges) {
    int cap = x->cap_ranges ? 2 * x->cap_ranges : 8;
    weft__range *v = realloc(x->ranges, (size_t)cap * sizeof *v);
    if (!v)
      return weft__err(WEFT_ENOMEM, "weft_range_push: out of memory");
    x->ranges = v;
    x->cap_ranges = cap;
  }
  weft__range *r = &x->ranges[x->nranges];
  size_t n = strnlen(name, WEFT_RANGE_NAME_MAX);
  memcpy(r->name, name, n);
  r->name[n] = '\0';
  weft__trace_range_begin(&r->tr, x->bk, r->name);
  x->nranges++;
  weft__nvtx_push(r->name);
  return 0;
}

int weft_range_pop(void) {
  weft__exec *x = weft__caller_get("weft_range_pop");
  if (!x)
    return weft__caller_get_failed();
  if (x->nranges == 0)
    return weft__err(WEFT_ESTATE, "weft_range_pop: no range is open (more "
                                  "pops than pushes)");
  weft__nvtx_pop();
  weft__trace_range_end(&x->ranges[--x->nranges].tr);
  return 0;
}

void weft__range_end_all(weft__exec *x, const char *who, const char *when) {
  /* NVTX's stack is the calling thread's: another thread's ranges (at
   * weft_shutdown) are not on it. */
  int own = x == weft__caller_self();
  if (x->nranges > 0)
    fprintf(stderr,
            "weft: %s %s with %d range%s open (innermost '%s'): closed "
            "then (weft/range.h)\n",
            who, when, x->nranges, x->nranges == 1 ? "" : "s",
            x->ranges[x->nranges - 1].name);
  while (x->nranges > 0) {
    if (own)
      weft__nvtx_pop();
    weft__trace_range_end(&x->ranges[--x->nranges].tr);
  }
  free(x->ranges);
  x->ranges = NULL;
  x->cap_ranges = 0;
}
