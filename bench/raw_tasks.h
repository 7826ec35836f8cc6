/* The raw baselines of the `tasks` scenario (seed 002): run(a, b, c) =
 * c = a · b then c = sin(c), issued from one thread on streams made by
 * hand, without weft's tasks.
 *
 * Two implementations share this interface:
 * - bench_raw_tasks_cuda (raw_tasks_cuda.cu, CUDA builds only): the CUDA
 *   runtime and cuBLAS alone on device 0: cudaStreamNonBlocking streams,
 *   one cuBLAS handle made at open and moved between the streams with
 *   cublasSetStream, bench_sgemm (the very call weft's tasks make through
 *   weft_cublas), cudaLaunchKernel of seed_cuda_sine, every CUDA and cuBLAS
 *   return code checked.
 * - bench_raw_tasks_host (raw_tasks_host.c): the host backend driven
 *   through the core's internal entry points (weft__stream_create,
 *   weft__launch of the seed matmul and sine host kernels,
 *   weft__stream_sync), no tasks, no fibers, no stream leases.
 *
 * Buffers come from the caller (weft_device_alloc: device memory is the
 * same kind of memory either way), so the caller also checks the results.
 * A context is used by one thread at a time. */
#ifndef WEFT_BENCH_RAW_TASKS_H
#define WEFT_BENCH_RAW_TASKS_H

#include <stddef.h>

#include "weft.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bench_raw_tasks bench_raw_tasks;

/* The data of the runs: run k writes sin(a · b) to c[k]. */
typedef struct bench_tasks_work {
  unsigned n;         /* the matrices are n x n floats, row-major */
  const float *a, *b; /* device, shared by every run */
  float *const *c;    /* device, one per run */
} bench_tasks_work;

typedef struct bench_raw_tasks_ops {
  /* Opens a context on rt's device 0 with nstreams streams, made now and
   * kept, as a pool would keep them (the CUDA version uses rt only for the
   * device; the host version drives rt's backend). On failure writes why
   * to err and returns -1. */
  int (*open)(weft_runtime *rt, int nstreams, bench_raw_tasks **out, char *err,
              size_t errlen);
  /* Frees the context, after waiting for its streams. */
  void (*close)(bench_raw_tasks *r);
  /* One iteration: issues runs 0 .. nruns-1 in order from the calling
   * thread, run k on stream k % nstreams, then waits for each stream used
   * (a blocking stream sync). Returns 0, or -1 with the reason in err. */
  int (*iteration)(bench_raw_tasks *r, const bench_tasks_work *w, int nruns,
                   int nstreams);
} bench_raw_tasks_ops;

/* Every implementation's context starts with this. */
struct bench_raw_tasks {
  const bench_raw_tasks_ops *ops;
  char err[512]; /* why the last failed call failed */
};

extern const bench_raw_tasks_ops bench_raw_tasks_host;
#ifdef WEFT_BENCH_CUDA
extern const bench_raw_tasks_ops bench_raw_tasks_cuda;
#endif

/* The implementation for a backend; NULL for CUDA in a build without it. */
const bench_raw_tasks_ops *bench_raw_tasks_for(weft_backend_kind kind);

#ifdef __cplusplus
}
#endif

#endif
