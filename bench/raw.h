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

/* The `many` scenario's work: for each task t, copy in_h[t] to in_d[t]
 * (H2D), out_d[t][i] = in_d[t][i] * mul + add[t] (kernel affine), copy
 * out_d[t] to out_h[t] (D2H), and wait for it. */
typedef struct bench_task_set {
  int ntasks;
  unsigned n;   /* elements per task */
  unsigned mul; /* the same for every task */
  const unsigned *add;
  unsigned **in_h, **in_d, **out_d, **out_h;
} bench_task_set;

/* The `normalize` scenario's work (seed 000), for each array i: copy in_h[i]
 * to dev_a[i] (H2D), partial_reduce(dev_a[i], dev_partial[i], n) over
 * blocks blocks, single_thread_sum(dev_partial[i], dev_sum[i], blocks),
 * divide_by(dev_a[i], dev_sum[i], n), copy dev_a[i] to out_h[i] (D2H). The
 * kernels are those of demo_kernels.h; the host buffers are pinned. */
typedef struct bench_norm_set {
  int narrays;
  unsigned long long n; /* floats per array */
  unsigned blocks;      /* grid of partial_reduce and divide_by */
  float **in_h, **out_h;
  float **dev_a, **dev_partial, **dev_sum;
} bench_norm_set;

/* Copies for copy_timed: h2d_bytes from h2d_src (host) to h2d_dst (device)
 * and, at the same time, d2h_bytes from d2h_src (device) to d2h_dst (host).
 * Either size may be 0. */
typedef struct bench_copy_pair {
  void *h2d_dst;
  const void *h2d_src;
  size_t h2d_bytes;
  void *d2h_dst;
  const void *d2h_src;
  size_t d2h_bytes;
} bench_copy_pair;

typedef struct bench_raw_ops {
  /* Opens a raw context on rt's device 0 (the CUDA version uses rt only for
   * that; the host version drives rt's backend). On failure writes why to
   * err and returns -1. */
  int (*open)(weft_runtime *rt, bench_raw **out, char *err, size_t errlen);
  void (*close)(bench_raw *r);
  /* Makes sure the context has n extra streams (one per thread of
   * tasks_threads, per stream of normalize, or the second of copy_timed),
   * made once and kept, as a pool would keep them. */
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
  /* Page-locked host memory without a cache: cudaMallocHost and
   * cudaFreeHost; on the host backend the backend's own pinned allocation
   * (weft__pinned_alloc, which is posix_memalign there) and free. */
  int (*pinned_alloc)(bench_raw *r, size_t n, void **p);
  int (*pinned_free)(bench_raw *r, void *p);
  /* Queues a copy of n bytes on the context's stream, host src to device
   * dst when to_device, else device src to host dst; sync waits for it.
   * As cudaMemcpyAsync does, it may block until the copy is done when the
   * host memory is pageable. */
  int (*copy)(bench_raw *r, void *dst, const void *src, size_t n,
              int to_device);
  /* Runs p's copies, the H2D one on the context's stream and the D2H one on
   * the first stream from streams() (needed when d2h_bytes is not 0), both
   * after a start event; *ms is the time from it to the end of both, on
   * the device's clock (events). */
  int (*copy_timed)(bench_raw *r, const bench_copy_pair *p, float *ms);
  /* Runs s's work: on the context's stream alone when nstreams is 1, else
   * array i on stream i % nstreams from streams() (at least nstreams made),
   * every stream after a start event and joined back by events; *ms is
   * start to finish on the device's clock. Waits for the work. */
  int (*normalize)(bench_raw *r, const bench_norm_set *s, int nstreams,
                   float *ms);
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
