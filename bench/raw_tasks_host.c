/* The `tasks` scenario's raw host-backend baseline (raw_tasks.h): the host
 * backend driven directly through the core's internal entry points, as
 * raw_host.c does: streams made by hand, the seed matmul and sine host
 * kernels launched on them, each stream waited for with a blocking sync. */
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"
#include "gemm.h"
#include "raw_check.h"
#include "raw_tasks.h"
#include "weft_internal.h"
#include "seed_kernels.h"

typedef struct raw_tasks_host {
  bench_raw_tasks base;
  weft__backend *bk;
  seed_kernels k;
  weft__stream **streams;
  int nstreams;
} raw_tasks_host;

static raw_tasks_host *of(bench_raw_tasks *r) { return (raw_tasks_host *)r; }

static void raw_close(bench_raw_tasks *r) {
  raw_tasks_host *x = of(r);
  /* Errors here would only repeat one already reported by a checked call;
   * a leak shows up as weft_shutdown's EBUSY. */
  for (int i = 0; i < x->nstreams; i++) {
    weft__stream_sync(x->streams[i]);
    weft__stream_destroy(&x->streams[i]);
  }
  free(x->streams);
  free(x);
}

static int raw_open(weft_runtime *rt, int nstreams, bench_raw_tasks **out,
                    char *err, size_t errlen) {
  raw_tasks_host *x = calloc(1, sizeof *x);
  weft__stream **v = calloc(nstreams > 0 ? (size_t)nstreams : 1, sizeof *v);
  if (!x || !v) {
    free(x);
    free(v);
    snprintf(err, errlen, "raw host: out of memory");
    return -1;
  }
  x->base.ops = &bench_raw_tasks_host;
  x->bk = weft__runtime_backend(rt);
  x->streams = v;
  seed_kernels_init(&x->k);
  for (; x->nstreams < nstreams; x->nstreams++) {
    int rc = weft__stream_create(x->bk, 0, 0, &x->streams[x->nstreams]);
    if (rc) {
      raw_record(err, errlen, rc, "weft__stream_create");
      raw_close(&x->base);
      return -1;
    }
  }
  *out = &x->base;
  return 0;
}

static int raw_iteration(bench_raw_tasks *r, const bench_tasks_work *w,
                         int nruns, int nstreams) {
  raw_tasks_host *x = of(r);
  if (nstreams < 1 || nstreams > x->nstreams) {
    snprintf(x->base.err, sizeof x->base.err,
             "raw host: %d streams asked for, %d made", nstreams, x->nstreams);
    return -1;
  }
  unsigned n = w->n;
  unsigned long nn = (unsigned long)n * n;
  const float *a = w->a, *b = w->b;
  for (int k = 0; k < nruns; k++) {
    weft__stream *s = x->streams[k % nstreams];
    float *c = w->c[k];
    /* Launches copy their arguments when queued, so locals will do. */
    void *mm_args[] = {&a, &b, &c, &n};
    void *sine_args[] = {&c, &nn};
    CK(weft__launch(s, &x->k.matmul, seed_matmul_grid(n), WEFT_DIM1(1), 0,
                    mm_args));
    CK(weft__launch(s, &x->k.sine, WEFT_DIM1(seed_blocks(nn)),
                    WEFT_DIM1(SEED_THREADS), 0, sine_args));
  }
  for (int i = 0; i < nstreams && i < nruns; i++)
    CK(weft__stream_sync(x->streams[i]));
  return 0;
}

const bench_raw_tasks_ops bench_raw_tasks_host = {
    .open = raw_open,
    .close = raw_close,
    .iteration = raw_iteration,
};

const bench_raw_tasks_ops *bench_raw_tasks_for(weft_backend_kind kind) {
#ifdef WEFT_BENCH_CUDA
  if (kind == WEFT_BACKEND_CUDA)
    return &bench_raw_tasks_cuda;
#endif
  return kind == WEFT_BACKEND_CUDA ? NULL : &bench_raw_tasks_host;
}
