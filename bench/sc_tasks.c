/* tasks: seed 002, CUDA.jl's task-local streams.
 *
 * run(a, b, c) is the seed's mul!(c, a, b); broadcast!(sin, c, c): c = a · b
 * (cuBLAS SGEMM on CUDA, through weft_cublas in weft's tasks; the seed
 * matmul kernel on the host backend), then c = sin(c) in place (the seed
 * sine kernel). a and b are shared n x n inputs; each run writes its own c.
 * One iteration of each variant:
 * - raw serial (baseline of the first group): one thread, one stream, two
 *   runs back to back, then a stream sync: the seed's "global" stream;
 * - raw two streams: one thread, a run on each of two streams, both synced;
 * - weft serial: one task doing the two runs in order, then weft_sync;
 * - weft two tasks: the seed's @sync of two @async blocks: a driver task
 *   spawns two tasks, each one run then weft_sync, and joins them; the
 *   tasks name no stream, weft gives each its own;
 * - raw 8 streams (baseline of the second group) and weft 8 tasks: the
 *   same with 8 runs, to see whether more tasks keep overlapping;
 * - raw 2 and 8 threads (no target): a thread per run, each with its own
 *   stream (and cuBLAS handle), started by a barrier, the run and a stream
 *   sync, then a barrier: hand-written threads issuing at once, as weft's
 *   tasks on their workers do. What the driver charges concurrent issue
 *   and the barrier's wake-ups shows here, apart from weft's own costs.
 * Raw means the CUDA runtime and cuBLAS (one handle, cublasSetStream; a
 * handle per thread in the threads variants) on CUDA, the host backend's own
 * entry points on the host backend; raw streams are made before timing, as a
 * pool would keep them, and weft's workers make their cuBLAS handles before
 * timing too (bench_gemm_warm). Sizes: n = 1024 on CUDA (512 under --quick), 96
 * on the host backend (64). One iteration takes ~100 us on an H200, too short
 * to time alone, so a sample is the wall clock of 20 iterations (3 on the host
 * backend), reported per iteration; every variant runs one untimed sample
 * first, and rounds take the variants in turn. Checks: before every sample each
 * output is set to NaN; after it, every element of each output the variant
 * wrote must be finite, and 32 sampled elements within 1e-3 of sin of the
 * product computed in double on the CPU. Target: weft N tasks <= 1.02 x raw N
 * streams (the tasks overlap as the hand-made streams do), for N = 2 and 8. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "gemm.h"
#include "kernels.h"
#include "raw_api.h"

enum { NT = 8, NSAMPLE = 32 };

#define TOLERANCE 1e-3

enum {
  V_RAW1,
  V_RAW2,
  V_WEFT1,
  V_WEFT2,
  V_RAW8,
  V_WEFT8,
  V_THR2,
  V_THR8,
  NVARIANTS
};

static const char *const what[NVARIANTS] = {
    "raw serial",    "raw 2 streams", "weft serial",   "weft 2 tasks",
    "raw 8 streams", "weft 8 tasks",  "raw 2 threads", "raw 8 threads"};
/* Runs per iteration, and streams, tasks or threads they spread over (weft
 * serial runs in the driver task itself: 0 tasks). */
static const int nruns[NVARIANTS] = {2, 2, 2, 2, NT, NT, 2, NT};
static const int nspread[NVARIANTS] = {1, 2, 0, 2, NT, NT, 2, NT};

typedef struct tasks_bench tasks_bench;

/* One thread of the raw threads variants: run k on stream k. */
typedef struct raw_thread {
  tasks_bench *tb;
  int k;
  int failed; /* bench_fail was called from the thread */
  pthread_t th;
} raw_thread;

typedef struct run_job {
  tasks_bench *tb;
  int k;  /* the output it writes */
  int rc; /* 0, or BENCH_FAIL after bench_fail */
} run_job;

struct tasks_bench {
  bench_ctx *c;
  weft_runtime *rt;
  seed_kernels k;
  unsigned n;
  int iters;
  float *a_h, *b_h; /* host copies of the inputs, for the reference */
  float *fetched;   /* one output read back */
  float *a, *b, *out[NT];
  unsigned si[NSAMPLE], sj[NSAMPLE];
  double want[NSAMPLE];
  /* The raw baseline: streams made before timing, as a pool would keep
   * them; on CUDA one cuBLAS handle moved between them. */
  raw_stream streams[NT];
  int nstreams;
#ifdef WEFT_BENCH_CUDA
  cublasHandle_t blas;    /* NULL until made */
  cudaStream_t blas_on;   /* the stream blas is set to */
  cublasHandle_t own[NT]; /* the threads': own[k] on stream k */
#endif
  /* The raw threads variants: start and end of each iteration. */
  pthread_barrier_t start, end;
  int quit; /* read by the threads after start */
  /* Set once every thread is made (1), or when one could not be (-1): the
   * threads enter the barriers only after 1. */
  pthread_mutex_t go_lock;
  pthread_cond_t go_cond;
  int go;
  raw_thread thr[NT];
  /* The weft variants' driver: its parameter and result. */
  int ntasks; /* 0: the runs in the driver itself */
  uint64_t ns;
  run_job jobs[NT];
  weft_task *handles[NT];
  bench_samples s[NVARIANTS];
};

/* ---- weft ---- */

/* Queues run k on the calling task's stream. */
static int run_one(tasks_bench *tb, int k) {
  unsigned long nn = (unsigned long)tb->n * tb->n;
  float *out = tb->out[k];
  void *args[] = {&out, &nn};
  if (bench_gemm(tb->c, &tb->k, tb->n, tb->a, tb->b, out))
    return BENCH_FAIL;
  int e = weft_launch(&tb->k.sine, WEFT_DIM1(seed_blocks(nn)),
                      WEFT_DIM1(SEED_THREADS), 0, args);
  return e ? bench_fail_weft(tb->c, e, "weft_launch(seed_sine)") : 0;
}

/* One of the seed's @async blocks: a run, then wait for it. */
static void run_task(void *arg) {
  run_job *j = arg;
  j->rc = run_one(j->tb, j->k);
  if (j->rc == 0) {
    int e = weft_sync();
    if (e)
      j->rc = bench_fail_weft(j->tb->c, e, "weft_sync");
  }
}

/* One iteration of a weft variant, in the driver task. */
static int weft_iteration(tasks_bench *tb, const weft_task_opts *opts) {
  int e, rc = 0, spawned = 0;
  if (tb->ntasks == 0) {
    for (int k = 0; k < 2 && rc == 0; k++)
      rc = run_one(tb, k);
    if (rc == 0 && (e = weft_sync()) != 0)
      rc = bench_fail_weft(tb->c, e, "weft_sync");
    return rc;
  }
  for (; spawned < tb->ntasks; spawned++) {
    tb->jobs[spawned] = (run_job){tb, spawned, 0};
    if ((e = weft_task_spawn(tb->rt, &tb->handles[spawned], run_task,
                             &tb->jobs[spawned], opts)) != 0) {
      rc = bench_fail_weft(tb->c, e, "weft_task_spawn");
      break;
    }
  }
  for (int i = 0; i < spawned; i++) {
    if ((e = weft_task_join(tb->handles[i])) != 0)
      rc = bench_fail_weft(tb->c, e, "weft_task_join");
    else if (tb->jobs[i].rc)
      rc = BENCH_FAIL;
  }
  return rc;
}

/* Times tb->iters iterations of a weft variant, from inside a task. */
static void driver(void *arg) {
  tasks_bench *tb = arg;
  weft_task_opts opts;
  weft_task_opts_init(&opts);
  opts.name = "tasks/run";
  uint64_t t0 = bench_now_ns();
  for (int it = 0; it < tb->iters; it++)
    if (weft_iteration(tb, &opts))
      break; /* bench_fail recorded why */
  tb->ns = bench_now_ns() - t0;
}

/* ---- raw ---- */

/* Queues run k (SGEMM, then sine) on raw stream s. On CUDA the SGEMM is
 * bench_sgemm through handle own (a thread's, already on s) or, with own
 * NULL, through the baseline's shared handle, moved to s with
 * cublasSetStream (the very call weft's tasks make through weft_cublas);
 * on the host backend the seed matmul kernel. */
static int raw_run(tasks_bench *tb, int k, raw_stream s, void *own) {
  bench_ctx *c = tb->c;
  unsigned n = tb->n;
  unsigned long nn = (unsigned long)n * n;
  const float *a = tb->a, *b = tb->b;
  float *out = tb->out[k];
  /* Launches copy their arguments when queued, so locals will do. */
  void *sine_args[] = {&out, &nn};
#ifdef WEFT_BENCH_CUDA
  if (raw_is_cuda(s)) {
    cublasHandle_t h = own ? (cublasHandle_t)own : tb->blas;
    if (!own && tb->blas_on != s.cs) {
      cublasStatus_t st = cublasSetStream(h, s.cs);
      if (st != CUBLAS_STATUS_SUCCESS)
        return bench_fail(c, "raw CUDA: cublasSetStream: %s",
                          cublasGetStatusString(st));
      tb->blas_on = s.cs;
    }
    cublasStatus_t st = bench_sgemm(h, n, a, b, out);
    if (st != CUBLAS_STATUS_SUCCESS)
      return bench_fail(c, "raw CUDA: bench_sgemm (run %d): %s", k,
                        cublasGetStatusString(st));
  } else
#endif
  {
    (void)own;
    void *mm_args[] = {&a, &b, &out, &n, &n};
    RAW_TRY(c, raw_launch(s, &tb->k.matmul, seed_matmul_grid(n), WEFT_DIM1(1),
                          mm_args));
  }
  RAW_TRY(c, raw_launch(s, &tb->k.sine, WEFT_DIM1(seed_blocks(nn)),
                        WEFT_DIM1(SEED_THREADS), sine_args));
  return 0;
}

/* One raw iteration: runs 0 .. runs-1 issued in order from this thread,
 * run k on stream k % nstreams through the shared handle, then a blocking
 * sync of each stream used. */
static int raw_iteration(tasks_bench *tb, int runs, int nstreams) {
  for (int k = 0; k < runs; k++)
    if (raw_run(tb, k, tb->streams[k % nstreams], NULL))
      return BENCH_FAIL;
  for (int i = 0; i < nstreams && i < runs; i++)
    RAW_TRY(tb->c, raw_stream_sync(tb->streams[i]));
  return 0;
}

/* Run k on stream k from the calling thread, through its own cuBLAS
 * handle, then a blocking sync of it. */
static int raw_thread_run(raw_thread *t) {
  tasks_bench *tb = t->tb;
  raw_stream s = tb->streams[t->k];
  void *own = NULL;
#ifdef WEFT_BENCH_CUDA
  own = tb->own[t->k];
#endif
  if (raw_run(tb, t->k, s, own))
    return BENCH_FAIL;
  RAW_TRY(tb->c, raw_stream_sync(s));
  return 0;
}

/* A raw thread: an iteration between each start and end barrier, until
 * quit; after a failure it only keeps the barriers. */
static void *raw_thread_main(void *arg) {
  raw_thread *t = arg;
  tasks_bench *tb = t->tb;
  pthread_mutex_lock(&tb->go_lock);
  while (tb->go == 0)
    pthread_cond_wait(&tb->go_cond, &tb->go_lock);
  int go = tb->go;
  pthread_mutex_unlock(&tb->go_lock);
  if (go < 0)
    return NULL;
  for (;;) {
    pthread_barrier_wait(&tb->start);
    if (__atomic_load_n(&tb->quit, __ATOMIC_ACQUIRE))
      return NULL;
    if (!t->failed && raw_thread_run(t))
      t->failed = 1;
    pthread_barrier_wait(&tb->end);
  }
}

/* Times tb->iters iterations of nthreads raw threads, in ns (0 after a
 * failure, reported). The threads and barriers are made untimed. */
static uint64_t raw_threads_time(tasks_bench *tb, int nthreads) {
  bench_ctx *c = tb->c;
  if (pthread_barrier_init(&tb->start, NULL, (unsigned)nthreads + 1)) {
    bench_fail(c, "pthread_barrier_init failed");
    return 0;
  }
  if (pthread_barrier_init(&tb->end, NULL, (unsigned)nthreads + 1)) {
    pthread_barrier_destroy(&tb->start);
    bench_fail(c, "pthread_barrier_init failed");
    return 0;
  }
  tb->quit = 0;
  tb->go = 0;
  int made = 0;
  for (; made < nthreads; made++) {
    tb->thr[made] = (raw_thread){.tb = tb, .k = made};
    if (pthread_create(&tb->thr[made].th, NULL, raw_thread_main,
                       &tb->thr[made]) != 0)
      break;
  }
  pthread_mutex_lock(&tb->go_lock);
  tb->go = made == nthreads ? 1 : -1;
  pthread_cond_broadcast(&tb->go_cond);
  pthread_mutex_unlock(&tb->go_lock);
  uint64_t ns = 0;
  if (made == nthreads) {
    /* One iteration untimed: each new thread's first CUDA and cuBLAS
     * calls set up per-thread state that a long-lived thread has. */
    pthread_barrier_wait(&tb->start);
    pthread_barrier_wait(&tb->end);
    uint64_t t0 = bench_now_ns();
    for (int it = 0; it < tb->iters; it++) {
      pthread_barrier_wait(&tb->start);
      pthread_barrier_wait(&tb->end);
    }
    ns = bench_now_ns() - t0;
    __atomic_store_n(&tb->quit, 1, __ATOMIC_RELEASE);
    pthread_barrier_wait(&tb->start);
  } else {
    bench_fail(c, "pthread_create failed for raw thread %d", made);
  }
  for (int i = 0; i < made; i++)
    pthread_join(tb->thr[i].th, NULL);
  /* Done already, but synced from here too, untimed: the barrier that
   * ordered the threads' work before this thread's checks is one weft
   * check cannot see, a stream sync is. */
  for (int i = 0; i < made && ns; i++) {
    int e = raw_stream_sync(tb->streams[i]);
    if (e) {
      raw_fail(c, e, "raw_stream_sync", __LINE__);
      ns = 0;
    }
  }
  pthread_barrier_destroy(&tb->start);
  pthread_barrier_destroy(&tb->end);
  for (int i = 0; i < made; i++)
    if (tb->thr[i].failed)
      ns = 0;
  return ns;
}

static int raw_open(tasks_bench *tb) {
  for (; tb->nstreams < NT; tb->nstreams++)
    RAW_TRY(tb->c, raw_stream_create(tb->rt, 0, &tb->streams[tb->nstreams]));
#ifdef WEFT_BENCH_CUDA
  if (raw_on_cuda(tb->rt)) {
    cublasStatus_t st = cublasCreate(&tb->blas);
    if (st != CUBLAS_STATUS_SUCCESS) {
      tb->blas = NULL;
      return bench_fail(tb->c, "raw CUDA: cublasCreate: %s",
                        cublasGetStatusString(st));
    }
    tb->blas_on = NULL; /* a new handle works on the legacy default stream */
    for (int k = 0; k < NT; k++) {
      st = cublasCreate(&tb->own[k]);
      if (st == CUBLAS_STATUS_SUCCESS &&
          (st = cublasSetStream(tb->own[k], tb->streams[k].cs)) !=
              CUBLAS_STATUS_SUCCESS) {
        cublasDestroy(tb->own[k]);
      }
      if (st != CUBLAS_STATUS_SUCCESS) {
        tb->own[k] = NULL;
        return bench_fail(tb->c, "raw CUDA: cublasCreate (thread %d): %s", k,
                          cublasGetStatusString(st));
      }
    }
  }
#endif
  return 0;
}

/* Waits for the raw streams and frees them; errors here would only repeat
 * one already reported. */
static void raw_close(tasks_bench *tb) {
#ifdef WEFT_BENCH_CUDA
  /* The handles first, while the streams they are bound to exist. */
  if (tb->blas) /* waits for the whole device, which is idle by now */
    cublasDestroy(tb->blas);
  tb->blas = NULL;
  for (int k = 0; k < NT; k++)
    if (tb->own[k])
      cublasDestroy(tb->own[k]);
  memset(tb->own, 0, sizeof tb->own);
#endif
  for (int i = 0; i < tb->nstreams; i++)
    raw_stream_destroy(&tb->streams[i]);
  tb->nstreams = 0;
}

/* ---- checks ---- */

/* Every output to NaN, on the calling thread's stream, waited for. */
static int poison(tasks_bench *tb) {
  size_t bytes = (size_t)tb->n * tb->n * sizeof(float);
  for (int k = 0; k < NT; k++)
    BENCH_TRY(tb->c, weft_memset(tb->out[k], 0xff, bytes));
  BENCH_TRY(tb->c, weft_sync());
  return 0;
}

static int check(tasks_bench *tb, int v) {
  bench_ctx *c = tb->c;
  size_t nn = (size_t)tb->n * tb->n;
  for (int k = 0; k < nruns[v]; k++) {
    if (bench_fetch(c, tb->fetched, tb->out[k], nn * sizeof(float)))
      return BENCH_FAIL;
    /* Counting first keeps the loop vectorisable; NaN is not finite. */
    size_t bad = 0;
    for (size_t i = 0; i < nn; i++)
      bad += !isfinite(tb->fetched[i]);
    if (bad) {
      size_t i = 0;
      while (i + 1 < nn && isfinite(tb->fetched[i]))
        i++;
      return bench_fail(c,
                        "%s: output %d: %zu elements not written (NaN), the "
                        "first at row %zu, column %zu",
                        what[v], k, bad, i / tb->n, i % tb->n);
    }
    for (int s = 0; s < NSAMPLE; s++) {
      double got = tb->fetched[(size_t)tb->si[s] * tb->n + tb->sj[s]];
      if (!(fabs(got - tb->want[s]) <= TOLERANCE))
        return bench_fail(c,
                          "%s: output %d, element (%u, %u): got %.7g, "
                          "expected %.7g",
                          what[v], k, tb->si[s], tb->sj[s], got, tb->want[s]);
    }
  }
  return 0;
}

/* ---- running ---- */

/* One sample of variant v: poison, time tb->iters iterations, check. */
static int sample(tasks_bench *tb, int v, double *us) {
  bench_ctx *c = tb->c;
  if (poison(tb))
    return BENCH_FAIL;
  uint64_t ns;
  if (v == V_WEFT1 || v == V_WEFT2 || v == V_WEFT8) {
    tb->ntasks = nspread[v];
    if (bench_in_task(c, tb->rt, driver, tb) || bench_failed(c))
      return BENCH_FAIL;
    ns = tb->ns;
  } else if (v == V_THR2 || v == V_THR8) {
    if ((ns = raw_threads_time(tb, nspread[v])) == 0)
      return BENCH_FAIL;
  } else {
    uint64_t t0 = bench_now_ns();
    for (int it = 0; it < tb->iters; it++)
      if (raw_iteration(tb, nruns[v], nspread[v]))
        return BENCH_FAIL;
    ns = bench_now_ns() - t0;
  }
  *us = (double)ns / tb->iters / 1e3;
  return check(tb, v);
}

static int measure(tasks_bench *tb) {
  for (int r = 0; r <= bench_repeat(tb->c); r++)
    for (int v = 0; v < NVARIANTS; v++) {
      double us = 0;
      if (sample(tb, v, &us))
        return BENCH_FAIL;
      if (r > 0)
        bench_samples_add(&tb->s[v], us);
    }
  return 0;
}

static const bench_chart chart = {
    "tasks", "seed 002: SGEMM + sine runs, weft tasks against raw streams",
    NULL, 0};

/* The raw threads row of a group: against the same group's one-thread
 * streams and weft's tasks. */
static int report_threads(tasks_bench *tb, const char *raw, int v, int streams,
                          int tasks, const double *med) {
  bench_ctx *c = tb->c;
  char name[64];
  snprintf(name, sizeof name, "%s: %d threads, a stream each", raw, nspread[v]);
  bench_plot(c, &chart, name, 0);
  return bench_report(
      c, name, "us", &tb->s[v], 0,
      "%.2f x raw %d streams from 1 thread, weft %d tasks %.2f x this; a "
      "thread per run (own stream%s), a barrier before and after each "
      "iteration: hand-written threads issuing at once, as tasks on their "
      "workers do",
      med[v] / med[streams], nspread[v], nspread[v], med[tasks] / med[v],
      bench_backend(c) == WEFT_BACKEND_CUDA ? " and cuBLAS handle" : "");
}

static int report(tasks_bench *tb) {
  bench_ctx *c = tb->c;
  int cuda = bench_backend(c) == WEFT_BACKEND_CUDA;
  const char *raw = cuda ? "raw CUDA" : "raw host ops";
  const char *mm = cuda ? "cuBLAS SGEMM" : "matmul kernel";
  double med[NVARIANTS];
  for (int v = 0; v < NVARIANTS; v++)
    med[v] = bench_stats_of(&tb->s[v]).median;
  char name[64], size[96];
  snprintf(size, sizeof size, "n = %u, %s + sine, %d iterations a sample",
           tb->n, mm, tb->iters);

  snprintf(name, sizeof name, "%s: 1 stream, 2 runs", raw);
  bench_peer(c, "serial", "raw");
  bench_plot(c, &chart, name, 0);
  int rc = bench_report(c, name, "us", &tb->s[V_RAW1], BENCH_BASELINE,
                        "%s; 2 runs back to back, then a stream sync", size);
  snprintf(name, sizeof name, "%s: 2 streams, a run each", raw);
  if (rc == 0) {
    bench_peer(c, "two", "raw");
    bench_plot(c, &chart, name, 0);
    rc = bench_report(c, name, "us", &tb->s[V_RAW2], 0,
                      "n = %u; 1 thread; streams made before timing; both "
                      "synced",
                      tb->n);
  }
  if (rc == 0) {
    bench_peer(c, "serial", "weft");
    bench_plot(c, &chart, "weft: 1 task, 2 runs", 0);
    rc = bench_report(c, "weft: 1 task, 2 runs", "us", &tb->s[V_WEFT1], 0,
                      "n = %u; the runs in order, then weft_sync", tb->n);
  }
  if (rc == 0) {
    bench_peer(c, "two", "weft");
    bench_plot(c, &chart, "weft: 2 tasks, a run each", 0);
    rc = bench_report(
        c, "weft: 2 tasks, a run each", "us", &tb->s[V_WEFT2], 0,
        "n = %u; seed 002's @async pair, spawned+joined by a driver task, run "
        "+ "
        "weft_sync each; no stream code in the tasks; %.3f x raw 2 streams "
        "(the ratio column is against raw 1 stream), target <= 1.02 (%s)",
        tb->n, med[V_WEFT2] / med[V_RAW2],
        med[V_WEFT2] <= 1.02 * med[V_RAW2] ? "met" : "MISSED");
  }
  if (rc == 0)
    rc = report_threads(tb, raw, V_THR2, V_RAW2, V_WEFT2, med);
  if (rc)
    return rc;

  bench_group(c);
  snprintf(name, sizeof name, "%s: %d streams, a run each", raw, NT);
  bench_peer(c, "n8", "raw");
  bench_plot(c, &chart, name, 0);
  rc = bench_report(c, name, "us", &tb->s[V_RAW8], BENCH_BASELINE,
                    "%s; 1 thread; streams made before timing; all synced",
                    size);
  if (rc == 0) {
    snprintf(name, sizeof name, "weft: %d tasks, a run each", NT);
    bench_peer(c, "n8", "weft");
    bench_plot(c, &chart, name, 0);
    rc = bench_report(
        c, name, "us", &tb->s[V_WEFT8], 0,
        "n = %u; spawned+joined by a driver task, run + weft_sync "
        "each; "
        "target <= 1.02 x raw %d streams (%s)",
        tb->n, NT, med[V_WEFT8] <= 1.02 * med[V_RAW8] ? "met" : "MISSED");
  }
  if (rc == 0)
    rc = report_threads(tb, raw, V_THR8, V_RAW8, V_WEFT8, med);
  return rc;
}

/* ---- setup ---- */

/* Uniform in [-1, 1), from a 64-bit LCG (Knuth's MMIX constants). */
static float uniform(uint64_t *seed) {
  *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((double)(*seed >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
}

static int setup(tasks_bench *tb) {
  bench_ctx *c = tb->c;
  unsigned n = tb->n;
  size_t nn = (size_t)n * n, bytes = nn * sizeof(float);
  tb->a_h = malloc(bytes);
  tb->b_h = malloc(bytes);
  tb->fetched = malloc(bytes);
  if (!tb->a_h || !tb->b_h || !tb->fetched)
    return bench_fail(c, "out of memory");
  /* a is scaled by 1/sqrt(n), so that the entries of a · b spread with a
   * standard deviation of about 1/3: sin is far from saturating and
   * differs between entries well beyond the tolerance. */
  uint64_t seed = 0x5EED002ULL;
  float scale = (float)(1.0 / sqrt((double)n));
  for (size_t i = 0; i < nn; i++) {
    tb->a_h[i] = uniform(&seed) * scale;
    tb->b_h[i] = uniform(&seed);
  }
  BENCH_TRY(c, weft_device_alloc(bytes, (void **)&tb->a));
  BENCH_TRY(c, weft_device_alloc(bytes, (void **)&tb->b));
  for (int k = 0; k < NT; k++)
    BENCH_TRY(c, weft_device_alloc(bytes, (void **)&tb->out[k]));
  BENCH_TRY(c, weft_copy(tb->a, tb->a_h, bytes));
  BENCH_TRY(c, weft_copy(tb->b, tb->b_h, bytes));
  /* The allocations and inputs, before other streams use them. */
  BENCH_TRY(c, weft_sync());
  /* Samples: the corners, then spread by the LCG. */
  for (int s = 0; s < NSAMPLE; s++) {
    uint64_t r = seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    tb->si[s] = s == 1 ? n - 1 : s < 2 ? 0 : (unsigned)((r >> 33) % n);
    tb->sj[s] = s == 1 ? n - 1 : s < 2 ? 0 : (unsigned)((r >> 13) % n);
    tb->want[s] =
        sin(bench_gemm_ref(n, tb->a_h, tb->b_h, tb->si[s], tb->sj[s]));
  }
  return 0;
}

static int teardown(tasks_bench *tb) {
  bench_ctx *c = tb->c;
  int rc = 0, e;
  float *dev[2 + NT] = {tb->a, tb->b};
  memcpy(dev + 2, tb->out, sizeof tb->out);
  for (int i = 0; i < 2 + NT; i++)
    if (dev[i] && (e = weft_device_free(dev[i])) != 0)
      rc = bench_fail_weft(c, e, "weft_device_free");
  if ((e = weft_sync()) != 0)
    rc = bench_fail_weft(c, e, "weft_sync");
  free(tb->a_h);
  free(tb->b_h);
  free(tb->fetched);
  return rc;
}

static int run(bench_ctx *c) {
  tasks_bench *tb = calloc(1, sizeof *tb);
  if (!tb)
    return bench_fail(c, "out of memory");
  int cuda = bench_backend(c) == WEFT_BACKEND_CUDA;
  tb->c = c;
  pthread_mutex_init(&tb->go_lock, NULL);
  pthread_cond_init(&tb->go_cond, NULL);
  tb->n = (unsigned)(cuda ? bench_size(c, 1024, 512) : bench_size(c, 96, 64));
  tb->iters = cuda ? 20 : 3;
  seed_kernels_init(&tb->k);
  /* cuBLAS's first calls in a task need deep stacks (weft/cuda.h). */
  int rc = bench_runtime_open_with(
      c, &(bench_rt_opts){.stack_size = BENCH_CUBLAS_STACK}, &tb->rt);
  if (rc == 0 && (rc = seed_kernels_preload(&tb->k, bench_backend(c))) != 0)
    rc = bench_fail_weft(c, rc, "weft_kernel_preload");
  if (rc == 0)
    rc = bench_gemm_warm(c, tb->rt);
  if (rc == 0)
    rc = raw_open(tb);
  if (rc == 0) {
    rc = setup(tb);
    if (rc == 0)
      rc = measure(tb);
  }
  /* The raw streams are waited for (close) before the memory they may
   * still use after a failure is freed on another stream. */
  raw_close(tb);
  if (tb->rt && teardown(tb))
    rc = BENCH_FAIL;
  if (bench_runtime_close(c, &tb->rt))
    rc = BENCH_FAIL;
  if (rc == 0)
    rc = report(tb);
  pthread_mutex_destroy(&tb->go_lock);
  pthread_cond_destroy(&tb->go_cond);
  free(tb);
  return rc;
}

const bench_scenario bench_sc_tasks = {
    "tasks",
    "seed 002: SGEMM + sine runs, 1 task vs 2 and 8 tasks, against raw 1, 2 "
    "and 8 streams from one thread and 2 and 8 threads",
    run};
