/* The compatibility test behind `weft trace check`: whether a trace reads
 * in Perfetto and HTA as PyTorch's profiler traces do. Each kind of
 * problem it looks for:
 * - slices on a CPU lane must nest (Perfetto cannot draw partial overlap);
 * - API calls must carry plain CUDA names (HTA looks launches up by name;
 *   CUPTI's "_v7000" suffixes hide them);
 * - every GPU op with a correlation needs its API call and a launch arrow
 *   (an "ac2g" flow start and end with the correlation as id);
 * - the header must give the rank (distributedInfo, as HTA reads it). */
#ifndef WEFT_TRACE_COMPAT_H
#define WEFT_TRACE_COMPAT_H

#include <stdio.h>

#include "model.h"

/* Writes each problem found in m as a line to out, the first max of them;
 * returns how many there are in all (0: the trace passes). -1 when out of
 * memory. */
long trace_compat_problems(FILE *out, const trace_model *m, long max);

#endif
