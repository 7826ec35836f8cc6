/* Raw host-backend baselines: the host backend driven directly through the
 * core's internal entry points (backend.h), as raw CUDA code drives the
 * CUDA runtime: streams and an event made by hand, launches and copies
 * queued on them, completion found by polling or by a blocking stream sync.
 * No tasks, fibers, stream leases or event pools are involved. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"
#include "kernels.h"
#include "raw.h"
#include "runtime_internal.h"

typedef struct raw_host {
  bench_raw base;
  weft__backend *bk;
  bench_kernels k;
  weft__stream *stream;
  weft__event *done;
  weft__stream **extra; /* one per thread of tasks_threads */
  int nextra;
  pthread_mutex_t lock; /* err, from the threads of tasks_threads */
} raw_host;

static raw_host *of(bench_raw *r) { return (raw_host *)r; }

static int record(char *err, size_t len, int rc, const char *call) {
  const char *msg = weft_last_error_message();
  snprintf(err, len, "%s: %s: %s", call, weft_err_name(rc),
           *msg ? msg : weft_strerror(rc));
  return -1;
}

/* Inside a member of the ops table: the context is `x`. */
#define CK(call)                                                               \
  do {                                                                         \
    int rc_ = (call);                                                          \
    if (rc_ != 0)                                                              \
      return record(x->base.err, sizeof x->base.err, rc_, #call);              \
  } while (0)

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
  pthread_mutex_init(&x->lock, NULL);
  int rc = weft__stream_create(x->bk, 0, 0, &x->stream);
  if (rc) {
    record(err, errlen, rc, "weft__stream_create");
    goto fail;
  }
  rc = weft__event_create(x->bk, 0, 0, &x->done);
  if (rc) {
    record(err, errlen, rc, "weft__event_create");
    weft__stream_destroy(&x->stream);
    goto fail;
  }
  *out = &x->base;
  return 0;
fail:
  pthread_mutex_destroy(&x->lock);
  free(x);
  return -1;
}

static void raw_close(bench_raw *r) {
  raw_host *x = of(r);
  /* Errors here would only repeat one already reported by a checked call;
   * a leak shows up as weft_shutdown's EBUSY. */
  for (int i = 0; i < x->nextra; i++)
    weft__stream_destroy(&x->extra[i]);
  free(x->extra);
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
  if (!v) {
    snprintf(x->base.err, sizeof x->base.err, "raw host: out of memory");
    return -1;
  }
  x->extra = v;
  for (; x->nextra < n; x->nextra++)
    CK(weft__stream_create(x->bk, 0, 0, &x->extra[x->nextra]));
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
      return record(err, errlen, rc, #call);                                   \
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

const bench_raw_ops bench_raw_host = {
    .open = raw_open,
    .close = raw_close,
    .streams = raw_streams,
    .launch = raw_launch,
    .sync = raw_sync,
    .roundtrip = raw_roundtrip,
    .tasks_serial = raw_tasks_serial,
    .tasks_threads = raw_tasks_threads,
};

const bench_raw_ops *bench_raw_for(weft_backend_kind kind) {
  return kind == WEFT_BACKEND_CUDA ? &bench_raw_cuda : &bench_raw_host;
}
