/* The numbers drawn from a trace: how the span of GPU activity divides into
 * compute, memory-only and idle time, how much kernels overlapped copies,
 * why each stream sat idle, the top kernels, copy bandwidth, launch delays,
 * queue lengths and per-task totals. Every formula is written beside its
 * code in analysis.c and in docs/TRACE.md. All times are microseconds.
 *
 * A value that has no meaning for a trace (a percentage of an empty span, a
 * median of no launches) is marked absent, never NaN. */
#ifndef WEFT_TRACE_ANALYSIS_H
#define WEFT_TRACE_ANALYSIS_H

#include <stdio.h>

#include "model.h"

typedef struct trace_interval {
  double start, end;
} trace_interval;

/* Sorts iv[0, n) by start and merges overlapping and touching intervals in
 * place; returns how many disjoint intervals remain. Empty intervals (end <=
 * start) are dropped. */
size_t trace_intervals_union(trace_interval *iv, size_t n);

/* Sum of end - start over disjoint intervals. */
double trace_intervals_length(const trace_interval *iv, size_t n);

/* Writes the intersection of two sorted disjoint lists to out (room for
 * na + nb intervals, or NULL to only measure) and returns its total length;
 * *nout gets the count when out is given. */
double trace_intervals_intersect(const trace_interval *a, size_t na,
                                 const trace_interval *b, size_t nb,
                                 trace_interval *out, size_t *nout);

/* The temporal breakdown of one device, or of all of them together. */
typedef struct trace_breakdown {
  int64_t device; /* -1 for all devices */
  size_t ops;     /* kernels + copies + memsets */
  size_t kernels, copies, memsets;
  double start, end;  /* first GPU op start, last GPU op end */
  double span;        /* end - start */
  double busy;        /* |union of all GPU ops| */
  double compute;     /* |union of kernels| */
  double memory;      /* |union of copies and memsets| */
  double overlap;     /* |union(kernels) ∩ union(copies, memsets)| */
  double non_compute; /* memory - overlap */
  double idle;        /* span - busy */
} trace_breakdown;

/* Idle gaps and queue length of one GPU stream. */
typedef struct trace_stream_stats {
  uint32_t lane; /* index in the model's gpu_lanes */
  size_t ops;
  double start, end, span; /* the stream's first start to its last end */
  double busy, idle;       /* idle = span - busy = the sum of the gaps */
  /* HTA's split of the gaps (docs/TRACE.md): host wait when the next op's
   * launch call started after the stream ran dry, kernel wait when the gap
   * is shorter than TRACE_KERNEL_WAIT_US, other for the rest. */
  double host_wait, kernel_wait, other_wait;
  /* weft's own figure beside it: gap time whose next op's launch call
   * ended (not started) after the stream ran dry. */
  double late_launch;
  size_t gaps;
  size_t queue_max;     /* HTA: most ops launched and not yet started at once */
  double queue_mean;    /* time-weighted mean of that count */
  size_t inflight_max;  /* weft's: most ops launched and not yet finished */
  double inflight_mean; /* time-weighted mean of that count */
} trace_stream_stats;

/* HTA's kernel-wait threshold: a gap shorter than this before a queued op
 * is the cost of launching back to back. */
#define TRACE_KERNEL_WAIT_US 30.0

typedef struct trace_kernel_stats {
  uint32_t name;
  size_t count;
  double total, min, max;
} trace_kernel_stats;

/* Copies by direction, and memsets in the last row. */
enum { TRACE_COPY_ROW_MEMSET = TRACE_COPY_NDIRS, TRACE_COPY_ROWS };

typedef struct trace_copy_stats {
  size_t count;
  size_t with_bytes;       /* ops that gave args.bytes */
  double bytes;            /* their bytes */
  double total;            /* time of all the row's ops */
  double total_with_bytes; /* time of the ops that gave bytes */
  size_t pageable;         /* copies from or to pageable host memory */
} trace_copy_stats;

typedef struct trace_launch_stats {
  size_t matched;   /* GPU ops whose launch call is in the trace */
  size_t unmatched; /* GPU ops without one */
  /* Launch delays (op start - end of its call), when matched > 0, clipped
   * at 0 as HTA does: an op may start before its call returns. */
  double median, p90, max, min;
  size_t early; /* weft's figure: ops that started before the call returned */
} trace_launch_stats;

typedef struct trace_task_stats {
  int64_t task;
  uint32_t name;
  size_t slices; /* run slices ("task" spans) */
  double run;    /* their total time */
  double wait;   /* total time of its "weft_wait" spans */
  size_t waits;
  /* Of which for something outside weft (weft_wait_until: an MPI
   * message): the span named WEFT_TRF_WAIT_EXTERNAL. */
  double ext_wait;
  size_t gpu_ops;
  double gpu;                  /* sum of its GPU ops' durations */
  size_t streams_at, nstreams; /* its lanes: task_streams[streams_at ...] */
} trace_task_stats;

/* The runtime's own delays of one kind (docs/TRACE.md, "Runtime
 * latency"): from a task being made ready to its run slice starting. */
typedef struct trace_latency_stats {
  size_t count;
  double total, median, p90, max; /* when count > 0 */
} trace_latency_stats;

/* CUDA graphs: launches (cudaGraphLaunch calls) and the GPU ops that came
 * out of them (ops with a graph id). */
typedef struct trace_graph_stats {
  size_t launches;
  size_t ops, kernels;
  size_t graphs; /* distinct graph ids */
} trace_graph_stats;

typedef struct trace_analysis {
  size_t gpu_ops;
  trace_breakdown all; /* all devices together */
  trace_breakdown *devices;
  size_t ndevices;
  /* union(kernels) ∩ union(copies, memsets) over all devices, for the
   * SVG's overlap band. */
  trace_interval *overlap;
  size_t noverlap;

  trace_stream_stats *streams; /* in lane order */
  size_t nstreams;
  double host_wait, kernel_wait, other_wait, stream_idle; /* summed */

  trace_kernel_stats *kernels; /* by total time, longest first */
  size_t nkernels;
  trace_copy_stats copies[TRACE_COPY_ROWS];
  trace_launch_stats launch;
  trace_graph_stats graph;

  trace_task_stats *tasks; /* by GPU time, then run time, then id */
  size_t ntasks;
  uint32_t *task_streams;

  /* Runtime latency, by trace_ready_kind (index 0 unused). The slowest
   * task is the one with the longest life, from being made ready for its
   * first slice to the end of its last; its delays are the runtime's part
   * of that critical path. */
  trace_latency_stats latency[TRACE_READY_NKINDS];
  size_t latency_slices; /* slices that carried a delay */
  int64_t slowest_task;  /* TRACE_NONE when no slice carried a delay */
  uint32_t slowest_name;
  double slowest_life, slowest_delay;
} trace_analysis;

/* Computes everything for m into a. Returns 0, or -1 when out of memory.
 * Free a with trace_analysis_free either way. */
int trace_analyze(const trace_model *m, trace_analysis *a);

void trace_analysis_free(trace_analysis *a);

/* The share part / whole in percent, or -1 when whole is not positive. */
double trace_pct(double part, double whole);

typedef struct trace_report_opts {
  const char *source; /* the file name shown in the report */
  int json;           /* 1: the JSON report, else text */
  int top;            /* rows of the kernel and task tables (default 10) */
  /* --range: the model was clipped to the ranges of this name (clip.h),
   * ranges of them, inside_us long together; NULL: the whole trace. */
  const char *range;
  size_t ranges;
  double inside_us;
} trace_report_opts;

/* Prints the report of m and a to f, as aligned text tables or as JSON
 * (schema "weft-trace-report/1", docs/TRACE.md). Returns 0, or -1 when
 * writing failed. */
int trace_report_print(FILE *f, const trace_model *m, const trace_analysis *a,
                       const trace_report_opts *opts);

#endif
