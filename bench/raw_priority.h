/* Raw baselines of the `priority` scenario (seed 001's "short kernels
 * beside a flood"), in raw.h's style: an ops table with two
 * implementations.
 * - bench_prio_raw_cuda (raw_priority_cuda.cu, CUDA builds only): the CUDA
 *   runtime and cuBLAS by hand: three cudaStreamNonBlocking streams (flood
 *   and short at the default priority, one at the device's greatest), one
 *   cuBLAS handle of its own set to the flood stream, bench_sgemm for the
 *   flood and cudaLaunchKernel of seed_kernels' cube for the short work.
 * - bench_prio_raw_host (raw_priority_host.c): the host backend through the
 *   core's entry points (weft__stream_create with a priority, weft__launch
 *   of the seed matmul and cube host kernels, weft__stream_sync).
 * Streams, handle and kernels are made at open, before any timing. The
 * buffers come from the caller, who also checks the results. A context is
 * used by one thread at a time. */
#ifndef WEFT_BENCH_RAW_PRIORITY_H
#define WEFT_BENCH_RAW_PRIORITY_H

#include <stddef.h>

#include "weft.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The work. Matrices are n x n floats, row-major, in device memory.
 * Flood operation i (of nflood): flood_out[i % ring] = in[i % ring] .
 * in[(i + 1) % ring], so each ring slot ends up with the same product
 * whatever nflood is (>= ring). Short kernel j (of nshort):
 * short_out + j * n * n = in[j]^3 element-wise (needs nshort >= ring). */
typedef struct bench_prio_set {
  unsigned n;
  int nflood, nshort, ring;
  float *const *in;        /* nshort matrices */
  float *const *flood_out; /* ring matrices */
  float *short_out;        /* nshort matrices back to back */
} bench_prio_set;

typedef enum bench_prio_mode {
  BENCH_PRIO_ALONE, /* the short work only */
  BENCH_PRIO_SAME,  /* flood, then short work at the same priority */
  BENCH_PRIO_HIGH   /* flood, then short work at the greatest priority */
} bench_prio_mode;

/* What one run measured: wall clock from just before the first issue to
 * the return of the wait on the short work's stream, and to the return of
 * the wait on the flood's stream (made after it; 0 when ALONE). */
typedef struct bench_prio_times {
  double short_ms, flood_ms;
} bench_prio_times;

typedef struct bench_prio_raw bench_prio_raw;

typedef struct bench_prio_ops {
  /* Opens a context on rt's device 0 (the CUDA version uses rt only for
   * that). On failure writes why to err and returns -1. */
  int (*open)(weft_runtime *rt, bench_prio_raw **out, char *err, size_t errlen);
  /* Waits for the context's streams, then frees everything. */
  void (*close)(bench_prio_raw *r);
  /* From one thread: unless ALONE, queues s's nflood matrix products on
   * the flood stream; then queues the nshort cubes on the short stream
   * (HIGH: the greatest-priority stream); waits for the short stream, then
   * for the flood stream. Returns 0, or -1 with err set (work already
   * queued still runs; close waits for it). */
  int (*run)(bench_prio_raw *r, const bench_prio_set *s, bench_prio_mode m,
             bench_prio_times *t);
} bench_prio_ops;

/* Every implementation's context starts with this. */
struct bench_prio_raw {
  const bench_prio_ops *ops;
  int prio_default, prio_high; /* the priorities of the streams made */
  char err[512];               /* why the last failed call failed */
};

#ifdef WEFT_BENCH_CUDA
extern const bench_prio_ops bench_prio_raw_cuda;
#endif
extern const bench_prio_ops bench_prio_raw_host;

#ifdef __cplusplus
}
#endif

#endif
