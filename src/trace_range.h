/* The tracer's side of user ranges (weft/range.h): what range.c needs of
 * it, apart from trace.h, whose includers are many enough (DESIGN.md's
 * header rule). trace_record.c implements it. */
#ifndef WEFT__TRACE_RANGE_H
#define WEFT__TRACE_RANGE_H

#include <stdint.h>

/* A range as the tracer sees it from its push to its pop. */
typedef struct weft__trace_range {
  const char *name; /* the tracer's copy; NULL: not traced */
  uint64_t start;   /* ns on the tracer's clock */
  uint64_t task;    /* the running task's id, 0 on a plain thread */
  uint64_t epoch;   /* the trace it began in */
  uint32_t lane;    /* the thread's lane (a task's range goes on its own) */
} weft__trace_range;

/* At a push: fills *r for a range named name if owner's (a backend's)
 * work is traced now, else sets r->name to NULL. */
void weft__trace_range_begin(weft__trace_range *r, const void *owner,
                             const char *name);
/* At its pop: records r as a range ending now, if it began traced in the
 * trace still open. */
void weft__trace_range_end(const weft__trace_range *r);

#endif
