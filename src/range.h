/* User ranges (weft/range.h): each task's or plain thread's stack of open
 * ranges, kept in its exec (caller.h). range.c holds the public calls and
 * the closing of ranges left open; the scheduler re-opens a task's NVTX
 * ranges on each resume with the inline helpers below. */
#ifndef WEFT__RANGE_H
#define WEFT__RANGE_H

#include "caller.h"
#include "nvtx.h"
#include "trace_range.h"
#include "weft/range.h"

/* One open range. */
typedef struct weft__range {
  weft__trace_range tr; /* the tracer's view of it */
  char name[WEFT_RANGE_NAME_MAX + 1];
} weft__range;

/* Closes every range x has open, innermost first, as if popped now, and
 * says so on stderr naming who (a task's or thread's name) and when (e.g.
 * "returned"); frees x's stack. Called where a task returns and by
 * weft_shutdown for its plain threads. */
void weft__range_end_all(weft__exec *x, const char *who, const char *when);

/* NVTX ranges are per thread, and a task moves between workers: around
 * each run slice the scheduler closes the task's open ranges on the
 * worker it leaves and opens them again, outermost first, on the one it
 * resumes on, so that they always balance on a thread. */
static inline void weft__range_nvtx_resume(const weft__exec *x) {
#ifdef WEFT_HAVE_NVTX
  for (int i = 0; i < x->nranges; i++)
    weft__nvtx_push(x->ranges[i].name);
#else
  (void)x;
#endif
}

static inline void weft__range_nvtx_suspend(const weft__exec *x) {
#ifdef WEFT_HAVE_NVTX
  for (int i = 0; i < x->nranges; i++)
    weft__nvtx_pop();
#else
  (void)x;
#endif
}

#endif
