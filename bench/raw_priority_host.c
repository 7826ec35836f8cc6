/* The `priority` scenario's raw baseline on the host backend: the backend
 * driven through the core's entry points (backend.h), as raw CUDA code
 * drives the CUDA runtime. The host backend serves ready streams by
 * priority level whenever its executor threads are all busy; each stream
 * runs on at most one executor at a time. */
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"
#include "bench.h"
#include "gemm.h"
#include "raw_check.h"
#include "raw_priority.h"
#include "weft_internal.h"
#include "seed_kernels.h"

typedef struct prio_host {
  bench_prio_raw base;
  weft__backend *bk;
  seed_kernels k;
  weft__stream *flood, *shrt, *high;
} prio_host;

static prio_host *of(bench_prio_raw *r) { return (prio_host *)r; }

static void prio_close(bench_prio_raw *r) {
  prio_host *x = of(r);
  /* Destroying a host stream waits for its queued work first. Errors here
   * would only repeat one already reported; a leak shows up as
   * weft_shutdown's EBUSY. */
  if (x->high)
    weft__stream_destroy(&x->high);
  if (x->shrt)
    weft__stream_destroy(&x->shrt);
  if (x->flood)
    weft__stream_destroy(&x->flood);
  free(x);
}

static int prio_open(weft_runtime *rt, bench_prio_raw **out, char *err,
                     size_t errlen) {
  prio_host *x = calloc(1, sizeof *x);
  if (!x) {
    snprintf(err, errlen, "raw host: out of memory");
    return -1;
  }
  x->base.ops = &bench_prio_raw_host;
  x->bk = weft__runtime_backend(rt);
  seed_kernels_init(&x->k);
  weft_device_info info;
  int rc = weft_device_get_info(rt, 0, &info);
  const char *call = "weft_device_get_info";
  if (rc == 0) {
    /* The default priority is the device's least, as a stream made
     * without one gets on CUDA (0 on both backends). */
    x->base.prio_default = info.priority_least;
    x->base.prio_high = info.priority_greatest;
    call = "weft__stream_create(flood)";
    rc = weft__stream_create(x->bk, 0, x->base.prio_default, &x->flood);
  }
  if (rc == 0) {
    call = "weft__stream_create(short)";
    rc = weft__stream_create(x->bk, 0, x->base.prio_default, &x->shrt);
  }
  if (rc == 0) {
    call = "weft__stream_create(high)";
    rc = weft__stream_create(x->bk, 0, x->base.prio_high, &x->high);
  }
  if (rc) {
    raw_record(err, errlen, rc, call);
    prio_close(&x->base);
    return -1;
  }
  *out = &x->base;
  return 0;
}

static int prio_run(bench_prio_raw *r, const bench_prio_set *s,
                    bench_prio_mode m, bench_prio_times *t) {
  prio_host *x = of(r);
  unsigned n = s->n;
  unsigned long nn = (unsigned long)n * n;
  weft__stream *st = m == BENCH_PRIO_HIGH ? x->high : x->shrt;
  uint64_t t0 = bench_now_ns();
  for (int i = 0; m != BENCH_PRIO_ALONE && i < s->nflood; i++) {
    const float *a = s->in[i % s->ring], *b = s->in[(i + 1) % s->ring];
    float *c = s->flood_out[i % s->ring];
    void *args[] = {&a, &b, &c, &n};
    CK(weft__launch(x->flood, &x->k.matmul, seed_matmul_grid(n), WEFT_DIM1(1),
                    0, args));
  }
  for (int j = 0; j < s->nshort; j++) {
    const float *in = s->in[j];
    float *out = s->short_out + (size_t)j * nn;
    void *args[] = {&in, &out, &nn};
    CK(weft__launch(st, &x->k.cube, WEFT_DIM1(seed_blocks(nn)),
                    WEFT_DIM1(SEED_THREADS), 0, args));
  }
  CK(weft__stream_sync(st));
  t->short_ms = (double)(bench_now_ns() - t0) / 1e6;
  t->flood_ms = 0;
  if (m != BENCH_PRIO_ALONE) {
    CK(weft__stream_sync(x->flood));
    t->flood_ms = (double)(bench_now_ns() - t0) / 1e6;
  }
  return 0;
}

const bench_prio_ops bench_prio_raw_host = {
    .open = prio_open,
    .close = prio_close,
    .run = prio_run,
};
