/* library: what it costs to get a library handle bound to the task's
 * stream (weft/library.h), once the thread has one.
 *
 * weft_library_handle of a minimal library (its set_stream stores the
 * stream) from a task, the handle already made and bound: the common case,
 * a lookup and a stream comparison. Then the same with the stream changing
 * on every call (two tasks on one worker taking turns, so each call
 * re-binds). Baseline: the raw cost a program pays without weft, one
 * set_stream call per use, made directly. On CUDA also weft_cublas()
 * against cublasSetStream on a handle of one's own, weft_cufft_plan
 * against cufftSetStream on an own plan, and weft_curand (stream, seed and
 * offset) against the three raw calls. ns per call; every returned handle
 * is checked to be the one the thread made.
 *
 * Then seed 002's pattern with a cuRAND step: two tasks, each drawing
 * RAND_N uniform floats through weft_curand and waiting with weft_sync,
 * against the raw version, one thread with two streams and a generator
 * each (made before timing), both synced; us per pair. */
#include <stdlib.h>

#include "bench.h"
#ifdef WEFT_BENCH_CUDA
#include "weft/cuda.h"
#endif
#ifdef WEFT_BENCH_FFT_RAND
#include "weft/cuda_libraries.h"
#endif

typedef struct toy {
  void *stream;
  long binds;
} toy;

static _Thread_local toy toys[4];
static _Thread_local int ntoys;

static int toy_create(void *user, int dev, const void *key, size_t key_bytes,
                      void **h) {
  (void)user;
  (void)dev;
  (void)key;
  (void)key_bytes;
  if (ntoys == 4)
    return 1;
  *h = &toys[ntoys++];
  return 0;
}

BENCH_OPAQUE static int toy_set_stream(void *user, void *h, void *stream) {
  (void)user;
  toy *t = h;
  t->stream = stream;
  t->binds++;
  return 0;
}

static const weft_library toy_lib = {.struct_size = sizeof toy_lib,
                                     .name = "toy",
                                     .create = toy_create,
                                     .set_stream = toy_set_stream};

enum {
  V_HIT,
  V_REBIND,
  V_RAW,
  V_CUBLAS,
  V_CUBLAS_RAW,
  V_FFT,
  V_FFT_RAW,
  V_RAND,
  V_RAND_RAW,
  V_PAIR,
  V_PAIR_RAW,
  V_COLD,
  V_WARM,
  NVARIANTS
};

enum { BURST = 64 };

enum { RAND_N = 1 << 22 };

typedef struct lib_bench {
  bench_ctx *c;
  long n;
  bench_samples s[NVARIANTS];
  weft_runtime *rt;
  int turn; /* the rebind variant's two tasks alternate on it */
  int ok;
} lib_bench;

static void hit_task(void *arg) {
  lib_bench *b = arg;
  void *want, *h;
  if (weft_library_handle(&toy_lib, &want)) {
    bench_fail_weft(b->c, -1, "weft_library_handle");
    return;
  }
  for (int r = 0; r <= bench_repeat(b->c); r++) {
    long wrong = 0;
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < b->n; i++)
      wrong += weft_library_handle(&toy_lib, &h) != 0 || h != want;
    uint64_t ns = bench_now_ns() - t0;
    if (wrong) {
      bench_fail(b->c, "weft_library_handle: %ld wrong handles", wrong);
      return;
    }
    if (r > 0)
      bench_samples_add(&b->s[V_HIT], (double)ns / (double)b->n);
    /* The raw cost: one set_stream per use. */
    toy *t = want;
    t0 = bench_now_ns();
    for (long i = 0; i < b->n; i++)
      toy_set_stream(NULL, t, t->stream);
    ns = bench_now_ns() - t0;
    if (r > 0)
      bench_samples_add(&b->s[V_RAW], (double)ns / (double)b->n);
  }
}

/* Two of these on one worker take turns: every call finds the handle
 * bound to the other's stream. */
static void rebind_task(void *arg) {
  lib_bench *b = arg;
  void *h;
  for (int r = 0; r <= bench_repeat(b->c); r++) {
    uint64_t ns = 0;
    for (long i = 0; i < b->n / 16; i++) {
      uint64_t t0 = bench_now_ns();
      for (int k = 0; k < 16; k++)
        if (weft_library_handle(&toy_lib, &h) != 0) {
          bench_fail_weft(b->c, -1, "weft_library_handle");
          return;
        }
      ns += bench_now_ns() - t0;
      weft_yield(); /* the other task re-binds it */
    }
    if (r > 0)
      bench_samples_add(&b->s[V_REBIND], (double)ns / (double)(b->n / 16 * 16));
  }
}

#ifdef WEFT_BENCH_CUDA
static void cublas_task(void *arg) {
  lib_bench *b = arg;
  cublasHandle_t want = weft_cublas(), raw = NULL;
  if (!want) {
    bench_fail(b->c, "weft_cublas: %s", weft_last_error_message());
    return;
  }
  if (cublasCreate(&raw) != CUBLAS_STATUS_SUCCESS) {
    bench_fail(b->c, "cublasCreate failed");
    return;
  }
  cudaStream_t s = weft_cuda_stream();
  for (int r = 0; r <= bench_repeat(b->c); r++) {
    long wrong = 0;
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < b->n; i++)
      wrong += weft_cublas() != want;
    uint64_t ns = bench_now_ns() - t0;
    if (wrong) {
      bench_fail(b->c, "weft_cublas: %ld other handles", wrong);
      break;
    }
    if (r > 0)
      bench_samples_add(&b->s[V_CUBLAS], (double)ns / (double)b->n);
    t0 = bench_now_ns();
    for (long i = 0; i < b->n; i++)
      cublasSetStream(raw, s);
    ns = bench_now_ns() - t0;
    if (r > 0)
      bench_samples_add(&b->s[V_CUBLAS_RAW], (double)ns / (double)b->n);
  }
  cublasDestroy(raw);
}
#endif

#ifdef WEFT_BENCH_CUDA
static void first_cublas_task(void *arg) {
  lib_bench *b = arg;
  if (!weft_cublas())
    bench_fail(b->c, "weft_cublas: %s", weft_last_error_message());
}

/* BURST fresh tasks on a fresh runtime, each making its first weft_cublas()
 * call: us for the burst, spawned and joined from this thread. */
static int first_calls(bench_ctx *c, lib_bench *b, int warm, int keep) {
  weft_runtime *rt = NULL;
  int rc = bench_runtime_open_with(
      c, &(bench_rt_opts){.stack_size = BENCH_CUBLAS_STACK}, &rt);
  if (rc == 0 && warm && weft_cublas_warm(rt) != 0)
    rc = bench_fail(c, "weft_cublas_warm: %s", weft_last_error_message());
  weft_task *t[BURST];
  int spawned = 0;
  uint64_t t0 = bench_now_ns();
  for (; rc == 0 && spawned < BURST; spawned++)
    if (weft_task_spawn(rt, &t[spawned], first_cublas_task, b, NULL) != 0)
      rc = bench_fail(c, "weft_task_spawn: %s", weft_last_error_message());
  for (int i = 0; i < spawned; i++)
    weft_task_join(t[i]);
  uint64_t ns = bench_now_ns() - t0;
  if (bench_runtime_close(c, &rt))
    rc = BENCH_FAIL;
  if (rc == 0 && keep)
    bench_samples_add(&b->s[warm ? V_WARM : V_COLD], (double)ns / 1e3);
  return rc;
}
#endif

#ifdef WEFT_BENCH_FFT_RAND
static const weft_fft_shape fft_shape = {
    .rank = 1, .n = {4096}, .type = CUFFT_C2C, .batch = 16};

/* weft_cufft_plan and weft_curand against their raw calls. */
static void fft_rand_task(void *arg) {
  lib_bench *b = arg;
  cufftHandle want, p, raw_plan;
  curandGenerator_t gen = weft_curand(1, 0), raw_gen;
  if (weft_cufft_plan(&fft_shape, &want) != 0 || !gen) {
    bench_fail(b->c, "weft_cufft_plan/weft_curand: %s",
               weft_last_error_message());
    return;
  }
  if (cufftPlan1d(&raw_plan, 4096, CUFFT_C2C, 16) != CUFFT_SUCCESS) {
    bench_fail(b->c, "cufftPlan1d failed");
    return;
  }
  if (curandCreateGenerator(&raw_gen, CURAND_RNG_PSEUDO_PHILOX4_32_10) !=
      CURAND_STATUS_SUCCESS) {
    cufftDestroy(raw_plan);
    bench_fail(b->c, "curandCreateGenerator failed");
    return;
  }
  cudaStream_t s = weft_cuda_stream();
  for (int r = 0; r <= bench_repeat(b->c); r++) {
    long wrong = 0;
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < b->n; i++)
      wrong += weft_cufft_plan(&fft_shape, &p) != 0 || p != want;
    uint64_t t1 = bench_now_ns();
    for (long i = 0; i < b->n; i++)
      cufftSetStream(raw_plan, s);
    uint64_t t2 = bench_now_ns();
    for (long i = 0; i < b->n; i++)
      wrong += weft_curand((unsigned long long)i, 0) != gen;
    uint64_t t3 = bench_now_ns();
    for (long i = 0; i < b->n; i++) {
      curandSetStream(raw_gen, s);
      curandSetPseudoRandomGeneratorSeed(raw_gen, (unsigned long long)i);
      curandSetGeneratorOffset(raw_gen, 0);
    }
    uint64_t t4 = bench_now_ns();
    if (wrong) {
      bench_fail(b->c, "weft_cufft_plan/weft_curand: %ld other handles", wrong);
      break;
    }
    if (r > 0) {
      double n = (double)b->n;
      bench_samples_add(&b->s[V_FFT], (double)(t1 - t0) / n);
      bench_samples_add(&b->s[V_FFT_RAW], (double)(t2 - t1) / n);
      bench_samples_add(&b->s[V_RAND], (double)(t3 - t2) / n);
      bench_samples_add(&b->s[V_RAND_RAW], (double)(t4 - t3) / n);
    }
  }
  curandDestroyGenerator(raw_gen);
  cufftDestroy(raw_plan);
}

typedef struct draw_job {
  lib_bench *b;
  float *out;
  unsigned long long seed;
} draw_job;

static void draw_task(void *arg) {
  draw_job *j = arg;
  curandGenerator_t g = weft_curand(j->seed, 0);
  if (!g || curandGenerateUniform(g, j->out, RAND_N) != CURAND_STATUS_SUCCESS ||
      weft_sync() != 0)
    bench_fail(j->b->c, "weft_curand draw: %s", weft_last_error_message());
}

/* The pair: two weft tasks against two raw streams, in turn. */
static void pair_driver(void *arg) {
  lib_bench *b = arg;
  float *out[2] = {NULL, NULL};
  cudaStream_t rs[2] = {NULL, NULL};
  curandGenerator_t rg[2] = {NULL, NULL};
  int ok = 1;
  for (int i = 0; i < 2 && ok; i++)
    ok = weft_device_alloc(RAND_N * sizeof(float), (void **)&out[i]) == 0 &&
         cudaStreamCreateWithFlags(&rs[i], cudaStreamNonBlocking) ==
             cudaSuccess &&
         curandCreateGenerator(&rg[i], CURAND_RNG_PSEUDO_PHILOX4_32_10) ==
             CURAND_STATUS_SUCCESS &&
         curandSetStream(rg[i], rs[i]) == CURAND_STATUS_SUCCESS;
  if (!ok)
    bench_fail(b->c, "cuRAND pair set-up failed");
  for (int r = 0; ok && r <= bench_repeat(b->c); r++) {
    draw_job jobs[2];
    weft_task *t[2];
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < 2; i++) {
      jobs[i] = (draw_job){b, out[i], 7u + (unsigned)i};
      if (weft_task_spawn(b->rt, &t[i], draw_task, &jobs[i], NULL) != 0)
        ok = 0;
    }
    for (int i = 0; ok && i < 2; i++)
      ok = weft_task_join(t[i]) == 0;
    uint64_t t1 = bench_now_ns();
    for (int i = 0; ok && i < 2; i++) {
      ok =
          curandSetPseudoRandomGeneratorSeed(rg[i], 7u + (unsigned)i) ==
              CURAND_STATUS_SUCCESS &&
          curandSetGeneratorOffset(rg[i], 0) == CURAND_STATUS_SUCCESS &&
          curandGenerateUniform(rg[i], out[i], RAND_N) == CURAND_STATUS_SUCCESS;
    }
    for (int i = 0; ok && i < 2; i++)
      ok = cudaStreamSynchronize(rs[i]) == cudaSuccess;
    uint64_t t2 = bench_now_ns();
    if (!ok)
      bench_fail(b->c, "cuRAND pair: a step failed");
    else if (r > 0) {
      bench_samples_add(&b->s[V_PAIR], (double)(t1 - t0) / 1e3);
      bench_samples_add(&b->s[V_PAIR_RAW], (double)(t2 - t1) / 1e3);
    }
  }
  for (int i = 0; i < 2; i++) {
    if (rg[i])
      curandDestroyGenerator(rg[i]);
    if (rs[i])
      cudaStreamDestroy(rs[i]);
    if (out[i])
      weft_device_free(out[i]);
  }
  weft_sync();
}
#endif

static int run(bench_ctx *c) {
  lib_bench *b = calloc(1, sizeof *b);
  if (!b)
    return bench_fail(c, "out of memory");
  b->c = c;
  b->n = bench_size(c, 200000, 20000);
  weft_runtime *rt = NULL;
  /* One worker: the rebind pair takes turns on it. cuBLAS needs deep
   * stacks. */
  int rc = bench_runtime_open_with(
      c, &(bench_rt_opts){.workers = 1, .stack_size = BENCH_CUBLAS_STACK}, &rt);
  b->rt = rt;
  if (rc == 0)
    rc = bench_in_task(c, rt, hit_task, b);
  if (rc == 0) {
    weft_task *t[2];
    int e = 0;
    for (int i = 0; i < 2 && !e; i++)
      e = weft_task_spawn(rt, &t[i], rebind_task, b, NULL);
    for (int i = 0; i < 2 && !e; i++)
      e = weft_task_join(t[i]);
    if (e)
      rc = bench_fail_weft(c, e, "rebind tasks");
  }
#ifdef WEFT_BENCH_CUDA
  int cuda = bench_backend(c) == WEFT_BACKEND_CUDA;
  if (rc == 0 && cuda)
    rc = bench_in_task(c, rt, cublas_task, b);
#ifdef WEFT_BENCH_FFT_RAND
  if (rc == 0 && cuda)
    rc = bench_in_task(c, rt, fft_rand_task, b);
  /* The pair in a runtime of its own without weft check: each draw after
   * a new seed waits for the whole device inside cuRAND (its seeds are
   * set up again), which weft check rightly reports; raw pays the same,
   * and the pair measures the cost with it. */
  weft_runtime *prt = NULL;
  if (rc == 0 && cuda)
    rc = bench_runtime_open_with(
        c,
        &(bench_rt_opts){
            .workers = 1, .stack_size = BENCH_CUBLAS_STACK, .no_check = 1},
        &prt);
  if (rc == 0 && cuda) {
    b->rt = prt;
    rc = bench_in_task(c, prt, pair_driver, b);
  }
  if (bench_runtime_close(c, &prt))
    rc = BENCH_FAIL;
#endif
  /* Each sample a fresh runtime, cold and warmed in turn. */
  for (int r = 0; rc == 0 && cuda && r <= bench_repeat(c); r++)
    for (int warm = 0; rc == 0 && warm < 2; warm++)
      rc = first_calls(c, b, warm, r > 0);
#else
  int cuda = 0;
#endif
  if (rc == 0 && bench_failed(c))
    rc = BENCH_FAIL;
  if (bench_runtime_close(c, &rt))
    rc = BENCH_FAIL;
  if (rc == 0)
    rc = bench_report(c, "raw: one set_stream call per use", "ns", &b->s[V_RAW],
                      BENCH_BASELINE,
                      "what a program pays binding a handle of its own each "
                      "time; %ld calls per repeat",
                      b->n);
  if (rc == 0)
    rc = bench_report(c, "weft_library_handle, bound already", "ns",
                      &b->s[V_HIT], 0,
                      "from a task; the thread's handle, the same stream");
  if (rc == 0)
    rc = bench_report(c, "weft_library_handle, stream changed", "ns",
                      &b->s[V_REBIND], 0,
                      "two tasks on one worker taking turns: the first call "
                      "of each turn re-binds, then 15 hits");
  if (rc == 0 && cuda) {
    bench_group(c);
    rc = bench_report(c, "raw cublasSetStream on an own handle", "ns",
                      &b->s[V_CUBLAS_RAW], BENCH_BASELINE,
                      "the same stream every call");
    if (rc == 0)
      rc = bench_report(c, "weft_cublas(), bound already", "ns",
                        &b->s[V_CUBLAS], 0,
                        "from a task: the thread's handle on the task's "
                        "stream and its workspace");
#ifdef WEFT_BENCH_FFT_RAND
    bench_group(c);
    if (rc == 0)
      rc = bench_report(c, "raw cufftSetStream on an own plan", "ns",
                        &b->s[V_FFT_RAW], BENCH_BASELINE,
                        "the same stream every call");
    if (rc == 0)
      rc = bench_report(c, "weft_cufft_plan, made already", "ns", &b->s[V_FFT],
                        0,
                        "from a task: the stream's plan for a 4096-point "
                        "C2C x 16 shape");
    bench_group(c);
    if (rc == 0)
      rc = bench_report(c, "raw curandSetStream + seed + offset", "ns",
                        &b->s[V_RAND_RAW], BENCH_BASELINE,
                        "an own Philox generator");
    if (rc == 0)
      rc = bench_report(c, "weft_curand(seed, offset)", "ns", &b->s[V_RAND], 0,
                        "from a task: the stream's generator, seed and "
                        "offset set");
    bench_group(c);
    if (rc == 0)
      rc = bench_report(c, "raw CUDA: 2 streams, a cuRAND draw each", "us",
                        &b->s[V_PAIR_RAW], BENCH_BASELINE,
                        "%d uniform floats per stream, own generators made "
                        "before timing, both streams synced",
                        RAND_N);
    if (rc == 0)
      rc = bench_report(c, "weft: 2 tasks, a weft_curand draw each", "us",
                        &b->s[V_PAIR], 0,
                        "spawned and joined by a driver task, weft_sync in "
                        "each; seed 002's pattern with a cuRAND step");
#endif
    bench_group(c);
    if (rc == 0)
      rc = bench_report(c, "first weft_cublas() of 64 fresh tasks, cold", "us",
                        &b->s[V_COLD], BENCH_BASELINE,
                        "a fresh runtime each sample: every worker's first "
                        "call makes its handle (and each stream its "
                        "workspace)");
    if (rc == 0)
      rc = bench_report(c, "the same after weft_cublas_warm", "us",
                        &b->s[V_WARM], 0,
                        "handles made ahead on every worker, untimed; the "
                        "streams' workspaces still made in the burst");
  }
  free(b);
  return rc;
}

const bench_scenario bench_sc_library = {
    "library",
    "a library handle bound to the task's stream: weft_library_handle and "
    "weft_cublas against a raw set_stream",
    run};
