/* Seed 000 (the Numba streams-and-events tutorial), written once: `weft
 * demo` shows it and the `normalize` scenario measures it.
 *
 * N arrays of 2^log2n floats, each normalised (a <- a / sum(a)): copied in
 * from pinned memory, partial_reduce, single_thread_sum, divide_by, copied
 * out to pinned memory (kernels.h's demo kernels). Four variants, each
 * timed with events from its first operation to its last:
 * - SEED000_RAW1: every array in turn on one raw stream;
 * - SEED000_RAWN: array i on raw stream i, every stream after a start event
 *   on the main stream and joined back to it by events (raw_api.h: the
 *   CUDA runtime on CUDA, the host backend's own streams there);
 * - SEED000_TASKS: one weft task per array through the public API alone,
 *   no stream written; the calling thread orders its own stream after every
 *   task with weft_task_after and records the final event;
 * - SEED000_PIPELINED: weft_map_chunks, one array per chunk, in place.
 * The inputs stay untouched, so every run starts from the same data;
 * seed000_check compares every element with input / (its array's sum in
 * double, on the CPU) within 1e-4 relative, and each array's sum with 1
 * within 1e-3, after seed000_poison set the outputs to NaN before the run.
 *
 * Called from a plain thread of the runtime (the device memory is the
 * thread's, through weft_device_alloc). Functions return 0, or -1 with
 * the reason in s->err. */
#ifndef WEFT_BENCH_SEED000_H
#define WEFT_BENCH_SEED000_H

#include "kernels.h"
#include "raw_api.h"
#include "weft.h"

#define SEED000_MAX_ARRAYS 64

typedef enum seed000_variant {
  SEED000_RAW1,
  SEED000_RAWN,
  SEED000_TASKS,
  SEED000_PIPELINED,
  SEED000_NVARIANTS
} seed000_variant;

typedef struct seed000 {
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
  float *in[SEED000_MAX_ARRAYS], *out[SEED000_MAX_ARRAYS];
  float *dev_a[SEED000_MAX_ARRAYS], *dev_partial[SEED000_MAX_ARRAYS],
      *dev_sum[SEED000_MAX_ARRAYS];
  double cpu_sum[SEED000_MAX_ARRAYS];
  /* The raw variants' objects, made at open: the main stream, a stream per
   * array, timing events on the main stream, an end event per stream. */
  raw_stream main, streams[SEED000_MAX_ARRAYS];
  raw_event start, final, end[SEED000_MAX_ARRAYS];
  int nstreams, nend;
  char err[512];
} seed000;

/* Allocates and fills everything for narrays arrays of 2^log2n floats. On
 * failure s->err says why; seed000_close releases what was made either
 * way. */
int seed000_open(seed000 *s, weft_runtime *rt, int narrays, unsigned log2n);
/* Waits for everything, frees it; 0 or -1 with the first failure. */
int seed000_close(seed000 *s);
/* One run of variant v; *ms from its first operation to its last. */
int seed000_run(seed000 *s, seed000_variant v, float *ms);
/* Every output element to NaN. */
void seed000_poison(seed000 *s);
/* The outputs against the CPU's sums; name goes into the message. */
int seed000_check(seed000 *s, const char *name);
/* "raw 1 stream", "raw streams", "weft tasks", "weft pipelined". */
const char *seed000_name(seed000_variant v);

#endif
