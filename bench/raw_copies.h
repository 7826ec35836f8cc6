/* Raw baselines of the `copies` scenario (seed 001's three streams): the
 * same work as weft's variants, written without weft's task runtime.
 *
 * Two implementations share this interface, as raw.h's do:
 * - bench_raw_copies_cuda (raw_copies_cuda.cu, CUDA builds only): the CUDA
 *   runtime and cuBLAS by hand: three cudaStreamNonBlocking streams and one
 *   cuBLAS handle set to the first, made at open, before any timing; the
 *   matmuls through bench_sgemm, the copies with cudaMemcpyAsync, every
 *   call checked.
 * - bench_raw_copies_host (raw_copies_host.c): the host backend through the
 *   core's internal entry points (backend.h): three streams made with
 *   weft__stream_create, the seed matmul kernel queued with weft__launch,
 *   copies with weft__copy, waits with weft__stream_sync.
 *
 * Buffers come from the caller (weft_pinned_alloc, weft_device_alloc), who
 * also checks the results. A context is used by one thread at a time. */
#ifndef WEFT_BENCH_RAW_COPIES_H
#define WEFT_BENCH_RAW_COPIES_H

#include <stddef.h>

#include "weft.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The work: nmat of each of
 * - matmuls on the first stream: c[i] = a[i % nin] · a[i % nin], n x n
 *   floats, row-major;
 * - device-to-host copies on the second: d2h_dst[i] (pinned) <- d2h_src[i]
 *   (device), bytes each;
 * - host-to-device copies on the third: h2d_dst[i] (device) <- h2d_src[i]
 *   (pinned), bytes each. */
typedef struct bench_copies_set {
  int nmat;
  int nin;
  unsigned n;
  size_t bytes; /* per copy: n * n * sizeof(float) */
  float *const *a;
  float *const *c;
  void *const *d2h_src, *const *d2h_dst;
  void *const *h2d_src, *const *h2d_dst;
} bench_copies_set;

typedef struct bench_raw_copies bench_raw_copies;

typedef struct bench_raw_copies_ops {
  /* Opens a context on rt's device 0: the three streams (and on CUDA the
   * cuBLAS handle). The CUDA version uses rt only for that; the host
   * version drives rt's backend. On failure writes why to err and returns
   * -1. */
  int (*open)(weft_runtime *rt, bench_raw_copies **out, char *err,
              size_t errlen);
  /* Waits for the streams, then frees the context. */
  void (*close)(bench_raw_copies *r);
  /* Issues s's work from the calling thread and returns once all of it is
   * done, or -1 with the reason in r->err.
   * blocking = 0: every matmul queued on the first stream, every D2H copy
   * on the second, every H2D copy on the third, then the three streams
   * synchronised.
   * blocking = 1, what PyTorch's .to(non_blocking=False) does: the matmuls
   * queued as before; then each D2H copy followed by a synchronisation of
   * the second stream before the next is issued; then the same for the H2D
   * copies on the third; then the first stream synchronised. */
  int (*run)(bench_raw_copies *r, const bench_copies_set *s, int blocking);
} bench_raw_copies_ops;

/* Every implementation's context starts with this. */
struct bench_raw_copies {
  const bench_raw_copies_ops *ops;
  char err[512]; /* why the last failed call failed */
};

extern const bench_raw_copies_ops bench_raw_copies_host;
#ifdef WEFT_BENCH_CUDA
extern const bench_raw_copies_ops bench_raw_copies_cuda;
#endif

/* bench_raw_copies_cuda for CUDA (in CUDA builds), else
 * bench_raw_copies_host. */
const bench_raw_copies_ops *bench_raw_copies_for(weft_backend_kind kind);

#ifdef __cplusplus
}
#endif

#endif
