/* The `copies` scenario's raw baseline on the host backend: the backend's
 * own entry points (backend.h) driven by hand, as raw CUDA code drives the
 * CUDA runtime: three streams made at open, the seed matmul kernel and the
 * copies queued on them, waits by blocking stream syncs. No tasks, fibers
 * or stream leases. See raw_copies.h. */
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"
#include "gemm.h"
#include "raw_check.h"
#include "raw_copies.h"
#include "weft_internal.h"
#include "seed_kernels.h"

enum { S_MM, S_D2H, S_H2D, NSTREAMS };

typedef struct raw_copies_host {
  bench_raw_copies base;
  weft__backend *bk;
  seed_kernels k;
  weft__stream *s[NSTREAMS];
} raw_copies_host;

static raw_copies_host *of(bench_raw_copies *r) { return (raw_copies_host *)r; }

static void destroy_streams(raw_copies_host *x) {
  for (int i = 0; i < NSTREAMS; i++)
    if (x->s[i]) {
      /* Errors here would only repeat one a checked call reported. */
      weft__stream_sync(x->s[i]);
      weft__stream_destroy(&x->s[i]);
    }
}

static int raw_open(weft_runtime *rt, bench_raw_copies **out, char *err,
                    size_t errlen) {
  raw_copies_host *x = calloc(1, sizeof *x);
  if (!x) {
    snprintf(err, errlen, "raw host: out of memory");
    return -1;
  }
  x->base.ops = &bench_raw_copies_host;
  x->bk = weft__runtime_backend(rt);
  seed_kernels_init(&x->k);
  for (int i = 0; i < NSTREAMS; i++) {
    int rc = weft__stream_create(x->bk, 0, 0, &x->s[i]);
    if (rc) {
      raw_record(err, errlen, rc, "weft__stream_create");
      destroy_streams(x);
      free(x);
      return -1;
    }
  }
  *out = &x->base;
  return 0;
}

static void raw_close(bench_raw_copies *r) {
  raw_copies_host *x = of(r);
  destroy_streams(x);
  free(x);
}

static int raw_run(bench_raw_copies *r, const bench_copies_set *s,
                   int blocking) {
  raw_copies_host *x = of(r);
  unsigned n = s->n;
  for (int i = 0; i < s->nmat; i++) {
    const float *a = s->a[i % s->nin];
    float *c = s->c[i];
    void *args[] = {&a, &a, &c, &n};
    CK(weft__launch(x->s[S_MM], &x->k.matmul, seed_matmul_grid(n), WEFT_DIM1(1),
                    0, args));
  }
  for (int i = 0; i < s->nmat; i++) {
    CK(weft__copy(x->s[S_D2H], s->d2h_dst[i], s->d2h_src[i], s->bytes,
                  WEFT__COPY_D2H));
    if (blocking)
      CK(weft__stream_sync(x->s[S_D2H]));
  }
  for (int i = 0; i < s->nmat; i++) {
    CK(weft__copy(x->s[S_H2D], s->h2d_dst[i], s->h2d_src[i], s->bytes,
                  WEFT__COPY_H2D));
    if (blocking)
      CK(weft__stream_sync(x->s[S_H2D]));
  }
  /* Blocking: the copy streams are already drained; syncing them again
   * returns at once, so one loop serves both cases. */
  for (int i = 0; i < NSTREAMS; i++)
    CK(weft__stream_sync(x->s[i]));
  return 0;
}

const bench_raw_copies_ops bench_raw_copies_host = {
    .open = raw_open,
    .close = raw_close,
    .run = raw_run,
};

const bench_raw_copies_ops *bench_raw_copies_for(weft_backend_kind kind) {
#ifdef WEFT_BENCH_CUDA
  if (kind == WEFT_BACKEND_CUDA)
    return &bench_raw_copies_cuda;
#endif
  (void)kind;
  return &bench_raw_copies_host;
}
