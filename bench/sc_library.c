/* library: what it costs to get a library handle bound to the task's
 * stream (weft/library.h), once the thread has one.
 *
 * weft_library_handle of a minimal library (its set_stream stores the
 * stream) from a task, the handle already made and bound: the common case,
 * a lookup and a stream comparison. Then the same with the stream changing
 * on every call (two tasks on one worker taking turns, so each call
 * re-binds). Baseline: the raw cost a program pays without weft, one
 * set_stream call per use, made directly. On CUDA also weft_cublas()
 * against cublasSetStream on a handle of one's own. ns per call; every
 * returned handle is checked to be the one the thread made. */
#include <stdlib.h>

#include "bench.h"
#ifdef WEFT_BENCH_CUDA
#include "weft/cuda.h"
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

enum { V_HIT, V_REBIND, V_RAW, V_CUBLAS, V_CUBLAS_RAW, NVARIANTS };

typedef struct lib_bench {
  bench_ctx *c;
  long n;
  bench_samples s[NVARIANTS];
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
  }
  free(b);
  return rc;
}

const bench_scenario bench_sc_library = {
    "library",
    "a library handle bound to the task's stream: weft_library_handle and "
    "weft_cublas against a raw set_stream",
    run};
