/* Raw host-backend baselines: the host backend driven directly through the
 * core's internal entry points (backend.h), as raw CUDA code drives the
 * CUDA runtime: streams and an event made by hand, launches and copies
 * queued on them, completion found by polling or by a blocking stream sync,
 * timing by events.
 * No tasks, fibers, stream leases or event pools are involved. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"
#include "demo_kernels.h"
#include "kernels.h"
#include "raw.h"
#include "raw_check.h"
#include "weft_internal.h"

typedef struct raw_host {
  bench_raw base;
  weft__backend *bk;
  bench_kernels k;
  demo_kernels dk;
  weft__stream *stream;
  weft__event *done;
  weft__event *t_start, *t_final; /* timing: copy_timed, normalize */
  weft__stream **extra;           /* one per thread of tasks_threads */
  weft__event **extra_end;        /* one per extra stream, to join it back */
  int nextra;
  pthread_mutex_t lock; /* err, from the threads of tasks_threads */
} raw_host;

static raw_host *of(bench_raw *r) { return (raw_host *)r; }

static int raw_open(weft_runtime *rt, bench_raw **out, char *err,
                    size_t errlen) {
  raw_host *x = calloc(1, sizeof *x);
  if (!x) {
    snprintf(err, errlen, "raw host: out of memory");
    return -1;
  }
  x->base.ops = &bench_raw_host;
  x->bk = weft__runtime_backend(rt);
  bench_kernels_init(&x->k);
  demo_kernels_init(&x->dk);
  pthread_mutex_init(&x->lock, NULL);
  int rc = weft__stream_create(x->bk, 0, 0, &x->stream);
  if (rc) {
    raw_record(err, errlen, rc, "weft__stream_create");
    goto fail;
  }
  rc = weft__event_create(x->bk, 0, 0, &x->done);
  if (rc) {
    raw_record(err, errlen, rc, "weft__event_create");
    goto fail_done;
  }
  rc = weft__event_create(x->bk, 0, WEFT__EVENT_TIMING, &x->t_start);
  if (rc) {
    raw_record(err, errlen, rc, "weft__event_create(timing)");
    goto fail_start;
  }
  rc = weft__event_create(x->bk, 0, WEFT__EVENT_TIMING, &x->t_final);
  if (rc) {
    raw_record(err, errlen, rc, "weft__event_create(timing)");
    goto fail_final;
  }
  *out = &x->base;
  return 0;
fail_final:
  weft__event_destroy(&x->t_start);
fail_start:
  weft__event_destroy(&x->done);
fail_done:
  weft__stream_destroy(&x->stream);
fail:
  pthread_mutex_destroy(&x->lock);
  free(x);
  return -1;
}

static void raw_close(bench_raw *r) {
  raw_host *x = of(r);
  /* Errors here would only repeat one already reported by a checked call;
   * a leak shows up as weft_shutdown's EBUSY. */
  for (int i = 0; i < x->nextra; i++) {
    weft__event_destroy(&x->extra_end[i]);
    weft__stream_destroy(&x->extra[i]);
  }
  free(x->extra);
  free(x->extra_end);
  weft__event_destroy(&x->t_final);
  weft__event_destroy(&x->t_start);
  weft__event_destroy(&x->done);
  weft__stream_destroy(&x->stream);
  pthread_mutex_destroy(&x->lock);
  free(x);
}

static int raw_streams(bench_raw *r, int n) {
  raw_host *x = of(r);
  if (n <= x->nextra)
    return 0;
  weft__stream **v = realloc(x->extra, (size_t)n * sizeof *v);
  if (v)
    x->extra = v;
  weft__event **ev = realloc(x->extra_end, (size_t)n * sizeof *ev);
  if (ev)
    x->extra_end = ev;
  if (!v || !ev) {
    snprintf(x->base.err, sizeof x->base.err, "raw host: out of memory");
    return -1;
  }
  for (; x->nextra < n; x->nextra++) {
    int i = x->nextra;
    CK(weft__stream_create(x->bk, 0, 0, &x->extra[i]));
    int rc = weft__event_create(x->bk, 0, 0, &x->extra_end[i]);
    if (rc) {
      weft__stream_destroy(&x->extra[i]);
      return raw_record(x->base.err, sizeof x->base.err, rc,
                        "weft__event_create");
    }
  }
  return 0;
}

static int raw_launch(bench_raw *r, int n, unsigned *counter) {
  raw_host *x = of(r);
  void *args[] = {&counter};
  for (int i = 0; i < n; i++)
    CK(weft__launch(x->stream, &x->k.tick, WEFT_DIM1(1), WEFT_DIM1(1), 0,
                    args));
  return 0;
}

static int raw_sync(bench_raw *r) {
  raw_host *x = of(r);
  CK(weft__stream_sync(x->stream));
  return 0;
}

static int raw_roundtrip(bench_raw *r, int n, unsigned *counter) {
  raw_host *x = of(r);
  void *args[] = {&counter};
  for (int i = 0; i < n; i++) {
    CK(weft__launch(x->stream, &x->k.tick, WEFT_DIM1(1), WEFT_DIM1(1), 0,
                    args));
    CK(weft__event_record(x->done, x->stream));
    int rc;
    while ((rc = weft__event_query(x->done)) == WEFT_EAGAIN) {
    }
    CK(rc);
  }
  return 0;
}

/* One task's work on stream s, waited for. Returns 0 or -1 with err set. */
static int one_task(raw_host *x, weft__stream *s, const bench_task_set *t,
                    int i, char *err, size_t errlen) {
  size_t bytes = (size_t)t->n * sizeof(unsigned);
  unsigned mul = t->mul, add = t->add[i], n = t->n;
  void *args[] = {&t->in_d[i], &t->out_d[i], &mul, &add, &n};
  int rc;
#define TK(call)                                                               \
  do {                                                                         \
    if ((rc = (call)) != 0)                                                    \
      return raw_record(err, errlen, rc, #call);                               \
  } while (0)
  TK(weft__copy(s, t->in_d[i], t->in_h[i], bytes, WEFT__COPY_H2D));
  TK(weft__launch(s, &x->k.affine, WEFT_DIM1(bench_affine_blocks(n)),
                  WEFT_DIM1(BENCH_THREADS), 0, args));
  TK(weft__copy(s, t->out_h[i], t->out_d[i], bytes, WEFT__COPY_D2H));
  TK(weft__stream_sync(s));
#undef TK
  return 0;
}

static int raw_tasks_serial(bench_raw *r, const bench_task_set *t) {
  raw_host *x = of(r);
  for (int i = 0; i < t->ntasks; i++)
    if (one_task(x, x->stream, t, i, x->base.err, sizeof x->base.err))
      return -1;
  return 0;
}

typedef struct thread_arg {
  raw_host *x;
  const bench_task_set *t;
  int i;
} thread_arg;

static void *task_thread(void *p) {
  thread_arg *a = p;
  raw_host *x = a->x;
  char err[sizeof x->base.err - 32]; /* room for "thread N: " */
  if (one_task(x, x->extra[a->i], a->t, a->i, err, sizeof err)) {
    pthread_mutex_lock(&x->lock);
    if (!x->base.err[0])
      snprintf(x->base.err, sizeof x->base.err, "thread %d: %s", a->i, err);
    pthread_mutex_unlock(&x->lock);
  }
  return NULL;
}

static int raw_tasks_threads(bench_raw *r, const bench_task_set *t) {
  raw_host *x = of(r);
  if (x->nextra < t->ntasks) {
    snprintf(x->base.err, sizeof x->base.err,
             "raw host: %d streams made for %d threads", x->nextra, t->ntasks);
    return -1;
  }
  thread_arg *args = calloc((size_t)t->ntasks, sizeof *args);
  pthread_t *th = calloc((size_t)t->ntasks, sizeof *th);
  if (!args || !th) {
    free(args);
    free(th);
    snprintf(x->base.err, sizeof x->base.err, "raw host: out of memory");
    return -1;
  }
  x->base.err[0] = '\0';
  int started = 0, rc = 0;
  for (; started < t->ntasks; started++) {
    args[started] = (thread_arg){x, t, started};
    if (pthread_create(&th[started], NULL, task_thread, &args[started])) {
      snprintf(x->base.err, sizeof x->base.err,
               "pthread_create failed for thread %d", started);
      rc = -1;
      break;
    }
  }
  for (int i = 0; i < started; i++)
    pthread_join(th[i], NULL);
  free(args);
  free(th);
  return rc || x->base.err[0] ? -1 : 0;
}

static int raw_pinned_alloc(bench_raw *r, size_t n, void **p) {
  raw_host *x = of(r);
  CK(weft__pinned_alloc(x->bk, n, p));
  return 0;
}

static int raw_pinned_free(bench_raw *r, void *p) {
  raw_host *x = of(r);
  CK(weft__pinned_free(x->bk, p));
  return 0;
}

static int raw_copy(bench_raw *r, void *dst, const void *src, size_t n,
                    int to_device) {
  raw_host *x = of(r);
  CK(weft__copy(x->stream, dst, src, n,
                to_device ? WEFT__COPY_H2D : WEFT__COPY_D2H));
  return 0;
}

static int need_streams(raw_host *x, int n) {
  if (x->nextra >= n)
    return 0;
  snprintf(x->base.err, sizeof x->base.err,
           "raw host: %d streams needed, %d made", n, x->nextra);
  return -1;
}

static int raw_copy_timed(bench_raw *r, const bench_copy_pair *p, float *ms) {
  raw_host *x = of(r);
  if (p->d2h_bytes && need_streams(x, 1))
    return -1;
  CK(weft__event_record(x->t_start, x->stream));
  if (p->h2d_bytes)
    CK(weft__copy(x->stream, p->h2d_dst, p->h2d_src, p->h2d_bytes,
                  WEFT__COPY_H2D));
  if (p->d2h_bytes) {
    CK(weft__stream_wait_event(x->extra[0], x->t_start));
    CK(weft__copy(x->extra[0], p->d2h_dst, p->d2h_src, p->d2h_bytes,
                  WEFT__COPY_D2H));
    CK(weft__event_record(x->extra_end[0], x->extra[0]));
    CK(weft__stream_wait_event(x->stream, x->extra_end[0]));
  }
  CK(weft__event_record(x->t_final, x->stream));
  CK(weft__event_sync(x->t_final));
  CK(weft__event_elapsed(x->t_start, x->t_final, ms));
  return 0;
}

/* One array's work of normalize on stream st. */
static int norm_array(raw_host *x, const bench_norm_set *s, int i,
                      weft__stream *st) {
  size_t bytes = (size_t)s->n * sizeof(float);
  unsigned long long n = s->n;
  unsigned blocks = s->blocks;
  weft_dim3 grid = WEFT_DIM1(blocks), block = WEFT_DIM1(DEMO_THREADS);
  void *reduce_args[] = {&s->dev_a[i], &s->dev_partial[i], &n};
  void *sum_args[] = {&s->dev_partial[i], &s->dev_sum[i], &blocks};
  void *divide_args[] = {&s->dev_a[i], &s->dev_sum[i], &n};
  CK(weft__copy(st, s->dev_a[i], s->in_h[i], bytes, WEFT__COPY_H2D));
  CK(weft__launch(st, &x->dk.partial_reduce, grid, block, 0, reduce_args));
  CK(weft__launch(st, &x->dk.single_thread_sum, WEFT_DIM1(1), WEFT_DIM1(1), 0,
                  sum_args));
  CK(weft__launch(st, &x->dk.divide_by, grid, block, 0, divide_args));
  CK(weft__copy(st, s->out_h[i], s->dev_a[i], bytes, WEFT__COPY_D2H));
  return 0;
}

static int raw_normalize(bench_raw *r, const bench_norm_set *s, int nstreams,
                         float *ms) {
  raw_host *x = of(r);
  int many = nstreams > 1;
  if (many && need_streams(x, nstreams))
    return -1;
  CK(weft__event_record(x->t_start, x->stream));
  for (int k = 0; many && k < nstreams; k++)
    CK(weft__stream_wait_event(x->extra[k], x->t_start));
  for (int i = 0; i < s->narrays; i++)
    if (norm_array(x, s, i, many ? x->extra[i % nstreams] : x->stream))
      return -1;
  for (int k = 0; many && k < nstreams; k++) {
    CK(weft__event_record(x->extra_end[k], x->extra[k]));
    CK(weft__stream_wait_event(x->stream, x->extra_end[k]));
  }
  CK(weft__event_record(x->t_final, x->stream));
  CK(weft__event_sync(x->t_final));
  CK(weft__event_elapsed(x->t_start, x->t_final, ms));
  return 0;
}

const bench_raw_ops bench_raw_host = {
    .open = raw_open,
    .close = raw_close,
    .streams = raw_streams,
    .launch = raw_launch,
    .sync = raw_sync,
    .roundtrip = raw_roundtrip,
    .tasks_serial = raw_tasks_serial,
    .tasks_threads = raw_tasks_threads,
    .pinned_alloc = raw_pinned_alloc,
    .pinned_free = raw_pinned_free,
    .copy = raw_copy,
    .copy_timed = raw_copy_timed,
    .normalize = raw_normalize,
};

const bench_raw_ops *bench_raw_for(weft_backend_kind kind) {
  return kind == WEFT_BACKEND_CUDA ? &bench_raw_cuda : &bench_raw_host;
}
