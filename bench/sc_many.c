/* many: many small independent pieces of GPU work.
 *
 * 1000 tasks (200 under --quick), each: copy 64 KiB (16 KiB) from pinned
 * host memory to the device, run a small kernel (affine: out = in * 3 +
 * the task's own constant), copy the result back, and wait. As weft tasks,
 * spawned and joined by one driver task, each on the stream weft leases it;
 * against (baseline) one thread issuing the same work in order on one raw
 * stream, each piece waited for before the next; and one pthread per task,
 * each with its own raw stream (made once, before timing, as a pool would
 * keep them). Raw means raw_api.h: on CUDA, cudaStreamNonBlocking streams,
 * cudaMemcpyAsync, cudaLaunchKernel of the same __global__ affine and
 * cudaStreamSynchronize; on the host backend, its own streams
 * (weft/host.h). The time is the wall clock from the first issue to the
 * last completion; every output element is checked after every run, the
 * outputs having been overwritten with garbage before it. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "kernels.h"
#include "raw_api.h"

enum { MUL = 3 };

/* The work: for each task t, copy in_h[t] to in_d[t] (H2D), out_d[t][i] =
 * in_d[t][i] * mul + add[t] (kernel affine), copy out_d[t] to out_h[t]
 * (D2H), and wait for it. */
typedef struct many_set {
  int ntasks;
  unsigned n;   /* elements per task */
  unsigned mul; /* the same for every task */
  const unsigned *add;
  unsigned **in_h, **in_d, **out_d, **out_h;
} many_set;

typedef struct many_bench many_bench;

typedef struct one {
  many_bench *tb;
  int i;
} one;

struct many_bench {
  bench_ctx *c;
  weft_runtime *rt;
  bench_kernels k;
  many_set set;
  unsigned *in_h, *out_h, *in_d, *out_d; /* ntasks * n each */
  unsigned *add;
  unsigned **ptrs; /* the set's four arrays of per-task pointers */
  one *args;
  weft_task **handles;
  double ms; /* of the driver's last run */
  /* The raw baseline's streams, made before timing: the serial variant's,
   * then one per thread of the threads variant; zeroed until made. */
  raw_stream serial;
  raw_stream *threads;
};

/* ---- the weft variant ---- */

static void task_fn(void *arg) {
  one *o = arg;
  many_bench *tb = o->tb;
  const many_set *s = &tb->set;
  int i = o->i, e;
  size_t bytes = (size_t)s->n * sizeof(unsigned);
  unsigned mul = s->mul, add = s->add[i], n = s->n;
  void *args[] = {&s->in_d[i], &s->out_d[i], &mul, &add, &n};
  if ((e = weft_copy(s->in_d[i], s->in_h[i], bytes)) != 0)
    bench_fail_weft(tb->c, e, "weft_copy(H2D)");
  else if ((e = weft_launch(&tb->k.affine, WEFT_DIM1(bench_affine_blocks(n)),
                            WEFT_DIM1(BENCH_THREADS), 0, args)) != 0)
    bench_fail_weft(tb->c, e, "weft_launch(affine)");
  else if ((e = weft_copy(s->out_h[i], s->out_d[i], bytes)) != 0)
    bench_fail_weft(tb->c, e, "weft_copy(D2H)");
  else if ((e = weft_sync()) != 0)
    bench_fail_weft(tb->c, e, "weft_sync");
}

static void driver(void *arg) {
  many_bench *tb = arg;
  int nt = tb->set.ntasks, spawned = 0, e;
  uint64_t t0 = bench_now_ns();
  for (; spawned < nt; spawned++)
    if ((e = weft_task_spawn(tb->rt, &tb->handles[spawned], task_fn,
                             &tb->args[spawned], NULL)) != 0) {
      bench_fail_weft(tb->c, e, "weft_task_spawn");
      break;
    }
  for (int i = 0; i < spawned; i++)
    if ((e = weft_task_join(tb->handles[i])) != 0)
      bench_fail_weft(tb->c, e, "weft_task_join");
  tb->ms = (double)(bench_now_ns() - t0) / 1e6;
}

/* ---- setup, checks ---- */

static int setup(many_bench *tb, int nt, unsigned n) {
  bench_ctx *c = tb->c;
  size_t all = (size_t)nt * n * sizeof(unsigned);
  tb->add = calloc((size_t)nt, sizeof *tb->add);
  tb->ptrs = calloc(4 * (size_t)nt, sizeof *tb->ptrs);
  tb->args = calloc((size_t)nt, sizeof *tb->args);
  tb->handles = calloc((size_t)nt, sizeof *tb->handles);
  tb->threads = calloc((size_t)nt, sizeof *tb->threads);
  if (!tb->add || !tb->ptrs || !tb->args || !tb->handles || !tb->threads)
    return bench_fail(c, "out of memory");
  BENCH_TRY(c, weft_pinned_alloc(all, (void **)&tb->in_h));
  BENCH_TRY(c, weft_pinned_alloc(all, (void **)&tb->out_h));
  BENCH_TRY(c, weft_device_alloc(all, (void **)&tb->in_d));
  BENCH_TRY(c, weft_device_alloc(all, (void **)&tb->out_d));
  BENCH_TRY(c, weft_sync()); /* the allocations, before other streams */
  many_set *s = &tb->set;
  s->ntasks = nt;
  s->n = n;
  s->mul = MUL;
  s->add = tb->add;
  s->in_h = tb->ptrs;
  s->in_d = tb->ptrs + nt;
  s->out_d = tb->ptrs + 2 * nt;
  s->out_h = tb->ptrs + 3 * nt;
  for (int t = 0; t < nt; t++) {
    size_t off = (size_t)t * n;
    s->in_h[t] = tb->in_h + off;
    s->in_d[t] = tb->in_d + off;
    s->out_d[t] = tb->out_d + off;
    s->out_h[t] = tb->out_h + off;
    tb->add[t] = 1000003u * (unsigned)t + 1u;
    tb->args[t] = (one){tb, t};
    for (unsigned i = 0; i < n; i++)
      s->in_h[t][i] = i * 2654435761u + (unsigned)t;
  }
  return 0;
}

static int teardown(many_bench *tb) {
  bench_ctx *c = tb->c;
  int rc = 0, e;
  if (tb->in_d && (e = weft_device_free(tb->in_d)) != 0)
    rc = bench_fail_weft(c, e, "weft_device_free");
  if (tb->out_d && (e = weft_device_free(tb->out_d)) != 0)
    rc = bench_fail_weft(c, e, "weft_device_free");
  if ((e = weft_sync()) != 0)
    rc = bench_fail_weft(c, e, "weft_sync");
  if (tb->in_h && (e = weft_pinned_free(tb->in_h)) != 0)
    rc = bench_fail_weft(c, e, "weft_pinned_free");
  if (tb->out_h && (e = weft_pinned_free(tb->out_h)) != 0)
    rc = bench_fail_weft(c, e, "weft_pinned_free");
  free(tb->add);
  free(tb->ptrs);
  free(tb->args);
  free(tb->handles);
  free(tb->threads);
  return rc;
}

static void poison(many_bench *tb) {
  memset(tb->out_h, 0xa5,
         (size_t)tb->set.ntasks * tb->set.n * sizeof(unsigned));
}

static int check(many_bench *tb, const char *variant) {
  const many_set *s = &tb->set;
  for (int t = 0; t < s->ntasks; t++)
    for (unsigned i = 0; i < s->n; i++) {
      unsigned want = s->in_h[t][i] * s->mul + s->add[t];
      if (s->out_h[t][i] != want)
        return bench_fail(tb->c, "%s: task %d, element %u: got %u, expected %u",
                          variant, t, i, s->out_h[t][i], want);
    }
  return 0;
}

/* ---- the raw variants ---- */

/* A thread makes device 0 (weft's device 0) current before it issues CUDA
 * work on s, as the raw CUDA baseline always did. Nothing to do on the host
 * backend. */
static int raw_use_device(raw_stream s) {
#ifdef WEFT_BENCH_CUDA
  if (raw_is_cuda(s))
    return cudaSetDevice(0);
#endif
  (void)s;
  return 0;
}

/* RAW_TRY for one task's calls in raw_task: the failure also names the
 * variant and the task or thread (who, i). */
#define TASK_TRY(call)                                                         \
  do {                                                                         \
    int e_ = (call);                                                           \
    if (e_ != 0) {                                                             \
      char what_[192];                                                         \
      snprintf(what_, sizeof what_, "%s %d: %s", who, i, #call);               \
      return raw_fail(c, e_, what_, __LINE__);                                 \
    }                                                                          \
  } while (0)

/* Task i's work on stream s, waited for; first making the device current
 * when use_device is set. Returns 0 or BENCH_FAIL after bench_fail. */
static int raw_task(many_bench *tb, raw_stream s, int i, const char *who,
                    int use_device) {
  bench_ctx *c = tb->c;
  const many_set *t = &tb->set;
  if (use_device)
    TASK_TRY(raw_use_device(s));
  size_t bytes = (size_t)t->n * sizeof(unsigned);
  unsigned blocks = bench_affine_blocks(t->n);
  unsigned mul = t->mul, add = t->add[i], n = t->n;
  void *args[] = {&t->in_d[i], &t->out_d[i], &mul, &add, &n};
  TASK_TRY(raw_copy(s, t->in_d[i], t->in_h[i], bytes, RAW_H2D));
  TASK_TRY(raw_launch(s, &tb->k.affine, WEFT_DIM1(blocks),
                      WEFT_DIM1(BENCH_THREADS), args));
  TASK_TRY(raw_copy(s, t->out_h[i], t->out_d[i], bytes, RAW_D2H));
  TASK_TRY(raw_stream_sync(s));
  return 0;
}

/* One thread, one stream: the tasks in order, each waited for before the
 * next is issued. */
static int raw_serial(many_bench *tb) {
  RAW_TRY(tb->c, raw_use_device(tb->serial));
  for (int i = 0; i < tb->set.ntasks; i++)
    if (raw_task(tb, tb->serial, i, "raw serial, task", 0))
      return BENCH_FAIL;
  return 0;
}

typedef struct raw_job {
  many_bench *tb;
  int i;
  int rc; /* 0, or BENCH_FAIL after bench_fail */
} raw_job;

static void *raw_thread(void *arg) {
  raw_job *j = arg;
  j->rc = raw_task(j->tb, j->tb->threads[j->i], j->i, "raw threads, thread", 1);
  return NULL;
}

/* One pthread per task, each on its own stream; returns when every thread
 * has joined. */
static int raw_threads(many_bench *tb) {
  bench_ctx *c = tb->c;
  int nt = tb->set.ntasks;
  raw_job *jobs = calloc((size_t)nt, sizeof *jobs);
  pthread_t *th = calloc((size_t)nt, sizeof *th);
  if (!jobs || !th) {
    free(jobs);
    free(th);
    return bench_fail(c, "raw threads: out of memory");
  }
  int started = 0, rc = 0, e;
  for (; started < nt; started++) {
    jobs[started] = (raw_job){tb, started, 0};
    if ((e = pthread_create(&th[started], NULL, raw_thread, &jobs[started])) !=
        0) {
      rc = bench_fail(c, "raw threads: pthread_create for thread %d of %d: %s",
                      started, nt, strerror(e));
      break;
    }
  }
  for (int i = 0; i < started; i++) {
    if ((e = pthread_join(th[i], NULL)) != 0)
      rc = bench_fail(c, "raw threads: pthread_join of thread %d: %s", i,
                      strerror(e));
    else if (jobs[i].rc)
      rc = BENCH_FAIL;
  }
  free(jobs);
  free(th);
  return rc;
}

/* The serial variant's stream, then one per task for the threads. */
static int raw_open(many_bench *tb) {
  RAW_TRY(tb->c, raw_stream_create(tb->rt, 0, &tb->serial));
  for (int i = 0; i < tb->set.ntasks; i++)
    RAW_TRY(tb->c, raw_stream_create(tb->rt, 0, &tb->threads[i]));
  return 0;
}

/* Waits for the streams and frees them (those made); errors here would
 * only repeat one already reported by a checked call. */
static void raw_close(many_bench *tb) {
  raw_stream_destroy(&tb->serial);
  for (int i = 0; tb->threads && i < tb->set.ntasks; i++)
    raw_stream_destroy(&tb->threads[i]);
}

/* ---- running the variants ---- */

enum { V_WEFT, V_SERIAL, V_THREADS, NVARIANTS };

static int one_run(many_bench *tb, int v, double *ms) {
  bench_ctx *c = tb->c;
  static const char *const what[] = {"weft tasks", "raw serial", "raw threads"};
  poison(tb);
  if (v == V_WEFT) {
    if (bench_in_task(c, tb->rt, driver, tb) || bench_failed(c))
      return BENCH_FAIL;
    *ms = tb->ms;
  } else {
    uint64_t t0 = bench_now_ns();
    int rc = v == V_SERIAL ? raw_serial(tb) : raw_threads(tb);
    *ms = (double)(bench_now_ns() - t0) / 1e6;
    if (rc)
      return BENCH_FAIL;
  }
  return check(tb, what[v]);
}

static int measure(many_bench *tb, bench_samples *s) {
  bench_ctx *c = tb->c;
  int rc = raw_open(tb);
  for (int v = 0; rc == 0 && v < NVARIANTS; v++)
    for (int r = 0; rc == 0 && r <= bench_repeat(c); r++) {
      double ms;
      rc = one_run(tb, v, &ms);
      if (rc == 0 && r > 0)
        bench_samples_add(&s[v], ms);
    }
  /* Before teardown frees the buffers a failed run's copies may use. */
  raw_close(tb);
  return rc;
}

static int report(many_bench *tb, bench_samples *s) {
  bench_ctx *c = tb->c;
  int nt = tb->set.ntasks;
  int cuda = bench_backend(c) == WEFT_BACKEND_CUDA;
  static const char *const names[2][NVARIANTS] = {
      {"weft: a task each, default workers", "raw host ops: 1 thread, 1 stream",
       "raw host ops: a pthread+stream each"},
      {"weft: a task each, default workers", "raw CUDA: 1 thread, 1 stream",
       "raw CUDA: a pthread+stream each"},
  };
  static const char *const notes[NVARIANTS] = {
      "spawned and joined by a driver task",
      "each task's work waited for before the next",
      "streams made before timing",
  };
  for (int v = 0; v < NVARIANTS; v++) {
    double ms = bench_stats_of(&s[v]).median;
    int rc = bench_report(
        c, names[cuda][v], "ms", &s[v], v == V_SERIAL ? BENCH_BASELINE : 0,
        "%.0f tasks/s; %d tasks of %u KiB; %s", ms > 0 ? nt / (ms / 1e3) : 0.0,
        nt, (unsigned)(tb->set.n * sizeof(unsigned) / 1024), notes[v]);
    if (rc)
      return rc;
  }
  return 0;
}

static int run(bench_ctx *c) {
  int nt = (int)bench_size(c, 1000, 200);
  unsigned n = (unsigned)bench_size(c, 64 * 1024, 16 * 1024) / sizeof(unsigned);
  many_bench *tb = calloc(1, sizeof *tb);
  bench_samples *s = calloc(NVARIANTS, sizeof *s);
  if (!tb || !s) {
    free(tb);
    free(s);
    return bench_fail(c, "out of memory");
  }
  tb->c = c;
  bench_kernels_init(&tb->k);
  int rc = bench_runtime_open(c, 0, &tb->rt);
  if (rc == 0 && (rc = bench_kernels_preload(&tb->k)) != 0)
    rc = bench_fail_weft(c, rc, "weft_kernel_preload");
  if (rc == 0) {
    rc = setup(tb, nt, n);
    if (rc == 0)
      rc = measure(tb, s);
    if (teardown(tb))
      rc = BENCH_FAIL;
  }
  if (bench_runtime_close(c, &tb->rt))
    rc = BENCH_FAIL;
  if (rc == 0)
    rc = report(tb, s);
  free(tb);
  free(s);
  return rc;
}

const bench_scenario bench_sc_many = {
    "many",
    "1000 small copy+kernel+copy tasks vs one raw stream and a thread "
    "each",
    run};
