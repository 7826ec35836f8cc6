/* Raw baselines: the work of weft's variants written without weft's task
 * runtime, for the scenarios to compare against in the same run.
 *
 * Two implementations share this interface:
 * - bench_raw_cuda (raw_cuda.cu): hand-written CUDA runtime code on the
 *   device weft uses (device 0): its own cudaStreamNonBlocking streams and
 *   events, cudaLaunchKernel of the same __global__ functions, every CUDA
 *   call checked. A build without CUDA links raw_nocuda.c instead, whose
 *   open fails with "not built".
 * - bench_raw_host (raw_host.c): the host backend driven directly through
 *   the core's internal entry points (weft__stream_create, weft__launch,
 *   weft__event_query, ...), no tasks, no fibers, no stream leases.
 *
 * Buffers come from the caller (allocated through weft: pinned host memory
 * and device memory are the same kind of memory either way), so the caller
 * also checks the results. A raw object is used by one thread at a time;
 * tasks_threads starts its own threads. */
#ifndef WEFT_BENCH_RAW_H
#define WEFT_BENCH_RAW_H

#include <stddef.h>

#include "weft.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bench_raw bench_raw;

/* The `tasks` scenario's work: for each task t, copy in_h[t] to in_d[t]
 * (H2D), out_d[t][i] = in_d[t][i] * mul + add[t] (kernel affine), copy
 * out_d[t] to out_h[t] (D2H), and wait for it. */
typedef struct bench_task_set {
  int ntasks;
  unsigned n;   /* elements per task */
  unsigned mul; /* the same for every task */
  const unsigned *add;
  unsigned **in_h, **in_d, **out_d, **out_h;
} bench_task_set;

typedef struct bench_raw_ops {
  /* Opens a raw context on rt's device 0 (the CUDA version uses rt only for
   * that; the host version drives rt's backend). On failure writes why to
   * err and returns -1. */
  int (*open)(weft_runtime *rt, bench_raw **out, char *err, size_t errlen);
  void (*close)(bench_raw *r);
  /* Makes sure the context has n extra streams, one per thread of
   * tasks_threads; made once and kept, as a pool would keep them. */
  int (*streams)(bench_raw *r, int n);
  /* n launches of tick(counter) on the context's stream; does not wait. */
  int (*launch)(bench_raw *r, int n, unsigned *counter);
  /* Waits for everything queued on the context's stream. */
  int (*sync)(bench_raw *r);
  /* n times: launch tick(counter), record an event, poll it until done. */
  int (*roundtrip)(bench_raw *r, int n, unsigned *counter);
  /* One thread, the context's stream: the tasks in order, each waited for
   * before the next is issued. */
  int (*tasks_serial)(bench_raw *r, const bench_task_set *t);
  /* One pthread per task, each on its own stream from streams(); returns
   * when every thread has joined. */
  int (*tasks_threads)(bench_raw *r, const bench_task_set *t);
} bench_raw_ops;

/* Every implementation's context starts with this. */
struct bench_raw {
  const bench_raw_ops *ops;
  char err[512]; /* why the last failed call failed */
};

extern const bench_raw_ops bench_raw_cuda;
extern const bench_raw_ops bench_raw_host;

/* The implementation for a backend: bench_raw_cuda for CUDA, else
 * bench_raw_host. */
const bench_raw_ops *bench_raw_for(weft_backend_kind kind);

#ifdef __cplusplus
}
#endif

#endif
