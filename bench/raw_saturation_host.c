/* The `saturation` scenario's raw host-backend baseline (raw_saturation.h):
 * the host backend driven directly through the core's internal entry points
 * (backend.h), as raw CUDA code drives the CUDA runtime: a stream made by
 * hand, launches and a copy queued on it, a blocking stream sync per batch.
 * No tasks, fibers or stream leases are involved. */
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"
#include "raw_check.h"
#include "raw_saturation.h"
#include "weft_internal.h"
#include "seed_kernels.h"

typedef struct sat_host {
  bench_sat_raw base;
  weft__backend *bk;
  seed_kernels k;
  weft__stream *stream;
} sat_host;

static sat_host *of(bench_sat_raw *r) { return (sat_host *)r; }

static int sat_open(weft_runtime *rt, bench_sat_raw **out, char *err,
                    size_t errlen) {
  sat_host *x = calloc(1, sizeof *x);
  if (!x) {
    snprintf(err, errlen, "raw host: out of memory");
    return -1;
  }
  x->base.ops = &bench_sat_raw_host;
  x->bk = weft__runtime_backend(rt);
  seed_kernels_init(&x->k);
  int rc = weft__stream_create(x->bk, 0, 0, &x->stream);
  if (rc) {
    raw_record(err, errlen, rc, "weft__stream_create");
    free(x);
    return -1;
  }
  *out = &x->base;
  return 0;
}

static void sat_close(bench_sat_raw *r) {
  sat_host *x = of(r);
  /* Errors here would only repeat one already reported by a checked call;
   * a leak shows up as weft_shutdown's EBUSY. */
  weft__stream_sync(x->stream);
  weft__stream_destroy(&x->stream);
  free(x);
}

int bench_sat_args_init(bench_sat_args *a, const bench_sat_model *m) {
  if (m->layers == 0 || m->layers > BENCH_SAT_MAX_LAYERS)
    return -1;
  a->batch = m->batch;
  a->width = m->width;
  for (unsigned l = 0; l < m->layers; l++) {
    a->in[l] = m->in[l];
    a->w[l] = m->w[l];
    a->out[l] = m->out[l];
    a->p[l][0] = &a->in[l];
    a->p[l][1] = &a->w[l];
    a->p[l][2] = &a->out[l];
    a->p[l][3] = &a->batch;
    a->p[l][4] = &a->width;
  }
  return 0;
}

static int sat_infer(bench_sat_raw *r, const bench_sat_model *m, long nb) {
  sat_host *x = of(r);
  bench_sat_args a;
  if (bench_sat_args_init(&a, m)) {
    snprintf(x->base.err, sizeof x->base.err, "raw host: %u layers", m->layers);
    return -1;
  }
  size_t bytes = (size_t)m->batch * m->width * sizeof(float);
  weft_dim3 grid = WEFT_DIM1(seed_blocks((unsigned long)m->batch * m->width));
  weft_dim3 block = WEFT_DIM1(SEED_THREADS);
  const float *result = m->out[m->layers - 1];
  for (long i = 0; i < nb; i++) {
    for (unsigned l = 0; l < m->layers; l++)
      CK(weft__launch(x->stream, &x->k.layer, grid, block, 0, a.p[l]));
    CK(weft__copy(x->stream, m->out_h, result, bytes, WEFT__COPY_D2H));
    CK(weft__stream_sync(x->stream));
  }
  return 0;
}

const bench_sat_raw_ops bench_sat_raw_host = {
    .open = sat_open,
    .close = sat_close,
    .infer = sat_infer,
};

const bench_sat_raw_ops *bench_sat_raw_for(weft_backend_kind kind) {
  if (kind != WEFT_BACKEND_CUDA)
    return &bench_sat_raw_host;
#ifdef WEFT_BENCH_CUDA
  return &bench_sat_raw_cuda;
#else
  return NULL;
#endif
}
