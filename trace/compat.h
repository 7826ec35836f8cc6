/* The compatibility test behind `weft trace check`: whether a trace reads
 * in Perfetto and HTA as PyTorch's profiler traces do. Each kind of
 * problem it looks for:
 * - the events must be a top-level object's "traceEvents" (HTA's loader
 *   reads nothing else);
 * - every pid and tid must fit in 32 bits (Perfetto's JSON importer keeps
 *   32: tracks beyond merge, and their overlapping slices are dropped);
 * - slices on one (pid, tid) track must nest (Perfetto drops a slice that
 *   overlaps another without nesting);
 * - API calls must carry plain CUDA names (HTA looks launches up by name;
 *   CUPTI's "_v7000" suffixes hide them);
 * - every GPU op with a correlation needs its API call and a launch arrow
 *   (an "ac2g" flow start and end with the correlation as id).
 * A header without a rank (distributedInfo) is no problem: HTA reads such
 * a file as rank 0, as the PyTorch profiler writes it outside a
 * distributed job; trace_compat_notes says so. */
#ifndef WEFT_TRACE_COMPAT_H
#define WEFT_TRACE_COMPAT_H

#include <stdio.h>

#include "model.h"

/* Writes each problem found in m as a line to out, the first max of them;
 * returns how many there are in all (0: the trace passes). -1 when out of
 * memory. */
long trace_compat_problems(FILE *out, const trace_model *m, long max);

/* Writes to out, a line each, what a trace lacks that HTA and Perfetto do
 * without (the rank); returns how many lines. */
int trace_compat_notes(FILE *out, const trace_model *m);

#endif
