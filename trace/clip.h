/* A trace restricted to the time inside its user ranges of one name
 * (`weft trace report --range NAME`): every op clipped to the union of
 * those ranges' spans, the time between them taken out, so that every
 * figure the analysis computes afterwards is for that time alone
 * (docs/TRACE.md, "Inside a range"). */
#ifndef WEFT_TRACE_CLIP_H
#define WEFT_TRACE_CLIP_H

#include <stddef.h>

#include "model.h"

typedef struct trace_clip_info {
  size_t ranges; /* the ranges of that name */
  double start;  /* the first one's start, us */
  double inside; /* |union of their spans|, us */
} trace_clip_info;

/* Restricts m in place to the time inside the ranges (TRACE_OP_RANGE ops)
 * named name. Time is closed up: t becomes start + |U ∩ [start, t]| for U
 * the union of the ranges' spans, so one range keeps its own times and
 * several follow one another without the time between them. An op is
 * kept, with its start and end so mapped, if it overlaps U (an op of no
 * duration: if it lies in U); an API call dropped leaves its GPU op
 * without a launch. Lanes and threads left without ops go. Returns 0, 1
 * when m has no range of that name (m unchanged), -1 when out of memory
 * (m unchanged). */
int trace_model_clip(trace_model *m, const char *name, trace_clip_info *info);

/* The distinct names of m's ranges, sorted, as "'a', 'b'" in out (cut
 * with "..." if too long); returns how many there are. */
size_t trace_range_names(const trace_model *m, char *out, size_t size);

#endif
