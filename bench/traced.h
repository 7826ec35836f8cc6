/* What the tracer saw of one measured run: scenarios that report an
 * overlap % or a GPU-busy fraction open a runtime with trace_path set
 * (bench_runtime_open_with), run the variant once more in it, shut it down
 * (which writes the trace) and read the file back here, with the same
 * analysis `weft trace report` uses. The timed repeats never run traced:
 * tracing costs the host time per launch (the `trace` scenario). */
#ifndef WEFT_BENCH_TRACED_H
#define WEFT_BENCH_TRACED_H

#include <stddef.h>

#include "analysis.h"
#include "bench.h"

/* Writes a path for a trace file, unique to this process and tag, under
 * $TMPDIR (or /tmp), to buf. */
void bench_trace_path(char *buf, size_t len, const char *tag);

/* A trace read back into memory. */
typedef struct bench_trace {
  trace_model m;
  trace_interval *iv; /* room for 3 * m.nops intervals */
} bench_trace;

/* Loads the trace at path (written when the runtime traced to it shut
 * down) into *t and removes the file, either way. Returns 0, or
 * BENCH_FAIL when it cannot be read. Free *t with bench_trace_free, also
 * after a failure. */
int bench_trace_load(bench_ctx *c, const char *path, bench_trace *t);
void bench_trace_free(bench_trace *t);

/* Measures the GPU operations (kernels, copies, memsets) of the tasks
 * whose names start with prefix, as trace_breakdown defines its fields:
 * span from the first one's start to the last one's end; busy, compute,
 * memory and overlap as unions of intervals; ops, kernels, copies and
 * memsets counted; device -1. Give the tasks of each measured run names
 * that no other run's prefix matches ("sat/b16/t1/" and "sat/b16/t16/",
 * not "sat-b16-t1" and "sat-b16-t16"); weft keeps 31 bytes of a name.
 * Returns 0, or BENCH_FAIL when no such operation is in the trace. */
int bench_trace_gpu_time(bench_ctx *c, bench_trace *t, const char *prefix,
                         trace_breakdown *out);

#endif
