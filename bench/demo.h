/* Seed 000 (the Numba streams-and-events tutorial), written once: `weft
 * demo` shows it and the `normalize` scenario measures it.
 *
 * N arrays of 2^log2n floats, each normalised (a <- a / sum(a)): copied in
 * from pinned memory, partial_reduce, single_thread_sum, divide_by, copied
 * out to pinned memory (kernels.h's demo kernels). Four variants, each
 * timed with events from its first operation to its last:
 * - DEMO_RAW1: every array in turn on one raw stream;
 * - DEMO_RAWN: array i on raw stream i, every stream after a start event
 *   on the main stream and joined back to it by events (raw_api.h: the
 *   CUDA runtime on CUDA, the host backend's own streams there);
 * - DEMO_TASKS: one weft task per array through the public API alone,
 *   no stream written; the calling thread orders its own stream after every
 *   task with weft_task_after and records the final event;
 * - DEMO_PIPELINED: weft_map_chunks, one array per chunk, in place.
 * The inputs stay untouched, so every run starts from the same data;
 * demo_check compares every element with input / (its array's sum in
 * double, on the CPU) within 1e-4 relative, and each array's sum with 1
 * within 1e-3, after demo_poison set the outputs to NaN before the run.
 *
 * Called from a plain thread of the runtime (the device memory is the
 * thread's, through weft_device_alloc). Functions return 0, or -1 with
 * the reason in s->err. */
#ifndef WEFT_BENCH_DEMO_H
#define WEFT_BENCH_DEMO_H

#include "kernels.h"
#include "raw_api.h"
#include "weft.h"

#define DEMO_MAX_ARRAYS 64

typedef enum demo_variant {
  DEMO_RAW1,
  DEMO_RAWN,
  DEMO_TASKS,
  DEMO_PIPELINED,
  DEMO_NVARIANTS
} demo_variant;

typedef struct demo {
  weft_runtime *rt;
  demo_kernels k;
  int narrays;
  unsigned log2n;
  unsigned long long n; /* floats per array */
  unsigned blocks;      /* grid of partial_reduce and divide_by */
  size_t bytes;         /* per array */
  int depth; /* the pipelined variant's weft_map_opts.depth; 0: default */
  float *in_all, *out_all; /* pinned, narrays arrays each, contiguous */
  float *dev_all, *dev_partial_all, *dev_sum_all;
  float *in[DEMO_MAX_ARRAYS], *out[DEMO_MAX_ARRAYS];
  float *dev_a[DEMO_MAX_ARRAYS], *dev_partial[DEMO_MAX_ARRAYS],
      *dev_sum[DEMO_MAX_ARRAYS];
  double cpu_sum[DEMO_MAX_ARRAYS];
  /* The raw variants' objects, made at open: the main stream, a stream per
   * array, timing events on the main stream, an end event per stream. */
  raw_stream main, streams[DEMO_MAX_ARRAYS];
  raw_event start, final, end[DEMO_MAX_ARRAYS];
  int nstreams, nend;
  char err[512];
} demo;

/* Allocates and fills everything for narrays arrays of 2^log2n floats. On
 * failure s->err says why; demo_close releases what was made either
 * way. */
int demo_open(demo *s, weft_runtime *rt, int narrays, unsigned log2n);
/* Waits for everything, frees it; 0 or -1 with the first failure. */
int demo_close(demo *s);
/* One run of variant v; *ms from its first operation to its last. */
int demo_run(demo *s, demo_variant v, float *ms);
/* Every output element to NaN. */
void demo_poison(demo *s);
/* The outputs against the CPU's sums; name goes into the message. */
int demo_check(demo *s, const char *name);
/* "raw 1 stream", "raw streams", "weft tasks", "weft pipelined". */
const char *demo_name(demo_variant v);

#endif
