/* copies: seed 001, PyTorch's three-streams puzzle: matmuls on one stream,
 * device-to-host copies on a second, host-to-device copies on a third,
 * with blocking copies (a wait after each) and without.
 *
 * Work: NMAT matmuls of n x n floats, c_i = a · a with a cycling over NIN
 * distinct inputs (cuBLAS SGEMM on CUDA, the seed matmul kernel on the host
 * backend; bench_gemm), NMAT D2H copies of n x n floats from device buffers
 * into pinned buffers, and NMAT H2D copies of as many bytes from pinned
 * buffers into device buffers. Sizes: CUDA n = 1024 (4 MiB copies), NMAT =
 * 100; under --quick n = 512, NMAT = 20; the host backend n = 128, NMAT =
 * 16 either way.
 *
 * Rows (ms, wall clock from the first issue until all three streams' work
 * is done; medians of the repeats, rounds of every variant in turn, round
 * 0 a warm-up):
 * - raw blocking: one thread, three streams made before timing; the
 *   matmuls queued on the first, then each D2H copy followed by a sync of
 *   the second stream, then each H2D copy followed by a sync of the third,
 *   then the first synchronised: what .to(non_blocking=False) does, so the
 *   H2D copies cannot start before the D2H ones are done;
 * - raw non-blocking (baseline): everything queued, then three syncs;
 * - weft blocking: a driver task spawns three tasks (matmuls; D2H copies
 *   with weft_sync after each; H2D copies likewise) and joins them. A
 *   weft_sync suspends only its own task, so the three streams still
 *   overlap: target <= 1.05 x raw non-blocking;
 * - weft non-blocking: the same three tasks, each queuing all its work
 *   and then calling weft_sync once.
 * Raw means the CUDA runtime and cuBLAS on CUDA (raw_api.h, with three
 * cudaStreamNonBlocking streams and one cuBLAS handle made before timing),
 * the host backend's own streams (weft/host.h) on the host backend.
 *
 * Then, in a second runtime that traces, each weft variant runs once as a
 * warm-up and once with its tasks named "cp/blk/" or "cp/nb/"; from the
 * trace, rows in % (their own group, no baseline): kernel/copy overlap as
 * a share of the time the GPU was busy (seed 001's HTA figure: 16.5 %
 * blocking, 32.3 % non-blocking with PyTorch), and as a share of the copy
 * time.
 *
 * Checks, after every run (timed, warm-up or traced), the outputs having
 * been poisoned before it: every D2H destination and every H2D destination
 * (fetched back) byte for byte against the known contents of its source;
 * every element of every c_i in [0, n] (catches the NaN poison) and 16
 * elements of each within 1e-3 relative of the product in double. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "gemm.h"
#include "kernels.h"
#include "raw_api.h"
#include "traced.h"

enum { NIN = 4, NSAMPLE = 16 };
enum { L_MM, L_D2H, L_H2D, NLANES };
enum { V_RAW_BLK, V_RAW_NB, V_WEFT_BLK, V_WEFT_NB, NVARIANTS };
enum { T_BLK, T_NB, NTRACED };

/* Salts of the copy sources' contents, one per direction. */
#define D2H_SALT 0x5bd1e995u
#define H2D_SALT 0xc2b2ae35u

/* The work: nmat of each of
 * - matmuls on the first stream: c[i] = a[i % nin] · a[i % nin], n x n
 *   floats, row-major;
 * - device-to-host copies on the second: d2h_dst[i] (pinned) <- d2h_src[i]
 *   (device), bytes each;
 * - host-to-device copies on the third: h2d_dst[i] (device) <- h2d_src[i]
 *   (pinned), bytes each. */
typedef struct bench_copies_set {
  int nmat;
  int nin;
  unsigned n;
  size_t bytes; /* per copy: n * n * sizeof(float) */
  float *const *a;
  float *const *c;
  void *const *d2h_src, *const *d2h_dst;
  void *const *h2d_src, *const *h2d_dst;
} bench_copies_set;

enum { S_MM, S_D2H, S_H2D, NSTREAMS };

/* The raw baseline's context: three streams made before any timing and,
 * on CUDA, one cuBLAS handle set to the first. */
typedef struct raw_copies {
  bench_ctx *c;
  raw_stream s[NSTREAMS];
  int made; /* streams made so far */
#ifdef WEFT_BENCH_CUDA
  cublasHandle_t blas; /* NULL until made */
#endif
  seed_kernels k;
} raw_copies;

typedef struct copies_bench copies_bench;

typedef struct lane_job {
  copies_bench *cb;
  int lane;
} lane_job;

struct copies_bench {
  bench_ctx *c;
  weft_runtime *rt;
  seed_kernels k;
  int nmat;
  unsigned n;
  size_t words, bytes; /* of one matrix or copy */
  /* Memory: one allocation per kind, sliced per matrix. */
  float *a_h;                  /* pinned: the inputs, for the reference */
  uint32_t *d2h_dst, *h2d_src; /* pinned */
  void *check_h;               /* pinned, one matrix: results fetched back */
  float *a_d, *c_d;            /* device */
  uint32_t *d2h_src, *h2d_dst; /* device */
  float **mats;                /* the set's a (NIN) and c (nmat) */
  void **bufs;                 /* the set's four arrays of copy buffers */
  bench_copies_set set;
  /* The weft run in progress. */
  int blocking;
  const char *prefix; /* of its tasks' names */
  lane_job jobs[NLANES];
  double ms;
  bench_samples s[NVARIANTS];
  trace_breakdown tr[NTRACED];
};

/* Word j of the source of copy b in a direction: distinct within a buffer
 * (odd multiplier) and from buffer to buffer, so that a copy landing in
 * the wrong place or a missed one shows. */
static inline uint32_t pattern(uint32_t salt, uint32_t b, uint32_t j) {
  return (j * 2654435761u) ^ (b * 0x9E3779B9u + salt);
}

/* ---- weft: a task per stream ---- */

static void matmul_lane(copies_bench *cb) {
  const bench_copies_set *s = &cb->set;
  for (int i = 0; i < s->nmat; i++) {
    const float *a = s->a[i % s->nin];
    if (bench_gemm(cb->c, &cb->k, s->n, a, a, s->c[i]))
      return;
  }
  int e = weft_sync();
  if (e)
    bench_fail_weft(cb->c, e, "weft_sync(matmuls)");
}

static void copy_lane(copies_bench *cb, void *const *dst, void *const *src,
                      const char *what) {
  const bench_copies_set *s = &cb->set;
  for (int i = 0; i < s->nmat; i++) {
    int e = weft_copy(dst[i], src[i], s->bytes);
    if (e) {
      bench_fail_weft(cb->c, e, what);
      return;
    }
    /* Blocking: the wait PyTorch makes after each copy; in weft it
     * suspends this task alone. */
    if (cb->blocking && (e = weft_sync()) != 0) {
      bench_fail_weft(cb->c, e, "weft_sync(after a copy)");
      return;
    }
  }
  int e = weft_sync();
  if (e)
    bench_fail_weft(cb->c, e, "weft_sync(copies)");
}

static void lane_task(void *arg) {
  lane_job *j = arg;
  copies_bench *cb = j->cb;
  const bench_copies_set *s = &cb->set;
  if (j->lane == L_MM)
    matmul_lane(cb);
  else if (j->lane == L_D2H)
    copy_lane(cb, s->d2h_dst, s->d2h_src, "weft_copy(D2H)");
  else
    copy_lane(cb, s->h2d_dst, s->h2d_src, "weft_copy(H2D)");
}

/* Spawns the three lanes (in the seed's issue order) and joins them; the
 * time is from before the first spawn to after the last join, which
 * returns once the task's GPU work is done. */
static void driver(void *arg) {
  copies_bench *cb = arg;
  static const char *const lane_name[NLANES] = {"mm", "d2h", "h2d"};
  weft_task_opts opts[NLANES];
  char names[NLANES][32];
  weft_task *t[NLANES] = {0};
  for (int l = 0; l < NLANES; l++) {
    snprintf(names[l], sizeof names[l], "%s%s", cb->prefix, lane_name[l]);
    weft_task_opts_init(&opts[l]);
    opts[l].name = names[l];
    cb->jobs[l] = (lane_job){cb, l};
  }
  uint64_t t0 = bench_now_ns();
  for (int l = 0; l < NLANES; l++) {
    int e = weft_task_spawn(cb->rt, &t[l], lane_task, &cb->jobs[l], &opts[l]);
    if (e) {
      bench_fail_weft(cb->c, e, "weft_task_spawn");
      break;
    }
  }
  for (int l = 0; l < NLANES; l++) {
    int e = t[l] ? weft_task_join(t[l]) : 0;
    if (e)
      bench_fail_weft(cb->c, e, "weft_task_join");
  }
  cb->ms = (double)(bench_now_ns() - t0) / 1e6;
}

/* ---- setup ---- */

static int setup(copies_bench *cb) {
  bench_ctx *c = cb->c;
  int nm = cb->nmat;
  size_t all = (size_t)nm * cb->bytes;
  cb->mats = calloc((size_t)(NIN + nm), sizeof *cb->mats);
  cb->bufs = calloc(4 * (size_t)nm, sizeof *cb->bufs);
  if (!cb->mats || !cb->bufs)
    return bench_fail(c, "out of memory");
  BENCH_TRY(c, weft_pinned_alloc(NIN * cb->bytes, (void **)&cb->a_h));
  BENCH_TRY(c, weft_pinned_alloc(all, (void **)&cb->d2h_dst));
  BENCH_TRY(c, weft_pinned_alloc(all, (void **)&cb->h2d_src));
  BENCH_TRY(c, weft_pinned_alloc(cb->bytes, &cb->check_h));
  BENCH_TRY(c, weft_device_alloc(NIN * cb->bytes, (void **)&cb->a_d));
  BENCH_TRY(c, weft_device_alloc(all, (void **)&cb->c_d));
  BENCH_TRY(c, weft_device_alloc(all, (void **)&cb->d2h_src));
  BENCH_TRY(c, weft_device_alloc(all, (void **)&cb->h2d_dst));

  /* Inputs in [0, 1) with 24 random bits: every product is positive, so a
   * relative tolerance on c is meaningful. */
  uint64_t seed = 0x9E3779B97F4A7C15ULL;
  for (size_t i = 0; i < NIN * cb->words; i++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    cb->a_h[i] = (float)(seed >> 40) / 16777216.0f;
  }
  /* The D2H sources get their contents through d2h_dst, which every run
   * poisons before it writes it again. */
  for (int b = 0; b < nm; b++)
    for (size_t j = 0; j < cb->words; j++) {
      size_t at = (size_t)b * cb->words + j;
      cb->d2h_dst[at] = pattern(D2H_SALT, (uint32_t)b, (uint32_t)j);
      cb->h2d_src[at] = pattern(H2D_SALT, (uint32_t)b, (uint32_t)j);
    }
  BENCH_TRY(c, weft_copy(cb->a_d, cb->a_h, NIN * cb->bytes));
  BENCH_TRY(c, weft_copy(cb->d2h_src, cb->d2h_dst, all));
  /* The allocations and contents, before other streams use them. */
  BENCH_TRY(c, weft_sync());

  float **a = cb->mats, **cm = a + NIN;
  void **d2h_src = cb->bufs, **d2h_dst = d2h_src + nm, **h2d_src = d2h_dst + nm,
       **h2d_dst = h2d_src + nm;
  for (int i = 0; i < NIN; i++)
    a[i] = cb->a_d + (size_t)i * cb->words;
  for (int i = 0; i < nm; i++) {
    size_t off = (size_t)i * cb->words;
    cm[i] = cb->c_d + off;
    d2h_src[i] = cb->d2h_src + off;
    d2h_dst[i] = cb->d2h_dst + off;
    h2d_src[i] = cb->h2d_src + off;
    h2d_dst[i] = cb->h2d_dst + off;
  }
  cb->set = (bench_copies_set){
      .nmat = nm,
      .nin = NIN,
      .n = cb->n,
      .bytes = cb->bytes,
      .a = a,
      .c = cm,
      .d2h_src = d2h_src,
      .d2h_dst = d2h_dst,
      .h2d_src = h2d_src,
      .h2d_dst = h2d_dst,
  };
  return 0;
}

/* Frees what setup made (also after it failed half way) and clears the
 * pointers, so that the traced runtime can set up again. Call when no
 * work on the buffers is pending. */
static int teardown(copies_bench *cb) {
  bench_ctx *c = cb->c;
  int rc = 0, e;
  void *dev[] = {cb->a_d, cb->c_d, cb->d2h_src, cb->h2d_dst};
  void *pin[] = {cb->a_h, cb->d2h_dst, cb->h2d_src, cb->check_h};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i] && (e = weft_device_free(dev[i])) != 0)
      rc = bench_fail_weft(c, e, "weft_device_free");
  if ((e = weft_sync()) != 0)
    rc = bench_fail_weft(c, e, "weft_sync");
  for (size_t i = 0; i < sizeof pin / sizeof pin[0]; i++)
    if (pin[i] && (e = weft_pinned_free(pin[i])) != 0)
      rc = bench_fail_weft(c, e, "weft_pinned_free");
  free(cb->mats);
  free(cb->bufs);
  cb->mats = NULL;
  cb->bufs = NULL;
  cb->a_h = cb->a_d = cb->c_d = NULL;
  cb->d2h_dst = cb->h2d_src = cb->d2h_src = cb->h2d_dst = NULL;
  cb->check_h = NULL;
  return rc;
}

/* ---- poison and checks ---- */

static int poison(copies_bench *cb) {
  bench_ctx *c = cb->c;
  size_t all = (size_t)cb->nmat * cb->bytes;
  memset(cb->d2h_dst, 0xa5, all);
  BENCH_TRY(c, weft_memset(cb->h2d_dst, 0xa5, all));
  BENCH_TRY(c, weft_memset(cb->c_d, 0xff, all)); /* NaN */
  BENCH_TRY(c, weft_sync()); /* before the run's streams touch them */
  return 0;
}

/* Compares words of buf with copy b's source in a direction. */
static int check_words(copies_bench *cb, const uint32_t *buf, uint32_t salt,
                       int b, const char *variant, const char *what) {
  /* Counting first, without an early exit, keeps the loop vectorisable. */
  size_t bad = 0;
  for (size_t j = 0; j < cb->words; j++)
    bad += buf[j] != pattern(salt, (uint32_t)b, (uint32_t)j);
  if (!bad)
    return 0;
  size_t j = 0;
  while (j + 1 < cb->words && buf[j] == pattern(salt, (uint32_t)b, (uint32_t)j))
    j++;
  return bench_fail(cb->c,
                    "%s: %s copy %d: %zu of %zu words wrong, the first at "
                    "%zu: got 0x%08x, want 0x%08x",
                    variant, what, b, bad, cb->words, j, buf[j],
                    pattern(salt, (uint32_t)b, (uint32_t)j));
}

/* Copies one matrix's bytes of device memory at src into check_h. */
static int fetch(copies_bench *cb, const void *src) {
  BENCH_TRY(cb->c, weft_copy(cb->check_h, src, cb->bytes));
  BENCH_TRY(cb->c, weft_sync());
  return 0;
}

static void sample_at(unsigned n, int m, int s, unsigned *i, unsigned *j) {
  if (s < 2) { /* the corners */
    *i = *j = s ? n - 1 : 0;
    return;
  }
  uint32_t h = (uint32_t)(m * NSAMPLE + s) * 2654435761u;
  *i = (h >> 16) % n;
  *j = (h & 0xffffu) % n;
}

static int check_matrix(copies_bench *cb, int m, const char *variant) {
  unsigned n = cb->n;
  const float *got = cb->check_h;
  const float *a = cb->a_h + (size_t)(m % NIN) * cb->words;
  /* Each element is a sum of n products in [0, 1). The negated test
   * catches NaN, the poison. */
  size_t bad = 0;
  for (size_t j = 0; j < cb->words; j++)
    bad += !(got[j] >= 0.0f && got[j] <= (float)n);
  if (bad) {
    size_t j = 0;
    while (j + 1 < cb->words && got[j] >= 0.0f && got[j] <= (float)n)
      j++;
    return bench_fail(cb->c,
                      "%s: matmul %d: %zu of %zu elements outside [0, %u], "
                      "the first at (%zu, %zu): %g",
                      variant, m, bad, cb->words, n, j / n, j % n, got[j]);
  }
  for (int s = 0; s < NSAMPLE; s++) {
    unsigned i, j;
    sample_at(n, m, s, &i, &j);
    double want = bench_gemm_ref(n, a, a, i, j);
    double v = got[(size_t)i * n + j];
    if (!(v - want <= 1e-3 * want && want - v <= 1e-3 * want))
      return bench_fail(cb->c,
                        "%s: matmul %d: c[%u][%u] = %.9g, want %.9g (1e-3 "
                        "relative)",
                        variant, m, i, j, v, want);
  }
  return 0;
}

static int check(copies_bench *cb, const char *variant) {
  for (int b = 0; b < cb->nmat; b++)
    if (check_words(cb, cb->d2h_dst + (size_t)b * cb->words, D2H_SALT, b,
                    variant, "D2H"))
      return BENCH_FAIL;
  for (int b = 0; b < cb->nmat; b++)
    if (fetch(cb, cb->h2d_dst + (size_t)b * cb->words) ||
        check_words(cb, cb->check_h, H2D_SALT, b, variant, "H2D"))
      return BENCH_FAIL;
  for (int m = 0; m < cb->nmat; m++)
    if (fetch(cb, cb->c_d + (size_t)m * cb->words) ||
        check_matrix(cb, m, variant))
      return BENCH_FAIL;
  return 0;
}

/* ---- running ---- */

static const char *const what[NVARIANTS] = {
    "raw blocking", "raw non-blocking", "weft blocking", "weft non-blocking"};

/* One weft run with its tasks named prefix*, checked. */
static int run_weft(copies_bench *cb, int blocking, const char *prefix,
                    const char *variant) {
  cb->blocking = blocking;
  cb->prefix = prefix;
  if (poison(cb) || bench_in_task(cb->c, cb->rt, driver, cb) ||
      bench_failed(cb->c))
    return BENCH_FAIL;
  return check(cb, variant);
}

/* ---- raw ---- */

static int raw_open(raw_copies *x, weft_runtime *rt) {
  for (; x->made < NSTREAMS; x->made++)
    RAW_TRY(x->c, raw_stream_create(rt, 0, &x->s[x->made]));
#ifdef WEFT_BENCH_CUDA
  if (raw_is_cuda(x->s[S_MM])) {
    /* cublasCreate loads cuBLAS on first use and is slow (16 ms on the
     * H200): once, here, as any program would; the warm-up run then loads
     * the SGEMM kernel. */
    cublasStatus_t st = cublasCreate(&x->blas);
    if (st != CUBLAS_STATUS_SUCCESS) {
      x->blas = NULL;
      return bench_fail(x->c, "raw CUDA: cublasCreate: %s",
                        cublasGetStatusString(st));
    }
    st = cublasSetStream(x->blas, x->s[S_MM].cs);
    if (st != CUBLAS_STATUS_SUCCESS)
      return bench_fail(x->c, "raw CUDA: cublasSetStream: %s",
                        cublasGetStatusString(st));
  }
#endif
  return 0;
}

/* Waits for the streams and frees them; errors here would only repeat one
 * that a checked call already reported. */
static void raw_close(raw_copies *x) {
#ifdef WEFT_BENCH_CUDA
  if (x->blas) {
    for (int i = 0; i < x->made; i++)
      raw_stream_sync(x->s[i]);
    cublasDestroy(x->blas);
    x->blas = NULL;
  }
#endif
  for (int i = 0; i < x->made; i++)
    raw_stream_destroy(&x->s[i]);
  x->made = 0;
}

/* Issues s's work from the calling thread and returns once all of it is
 * done. blocking = 0: every matmul queued on the first stream, every D2H
 * copy on the second, every H2D copy on the third, then the three streams
 * synchronised. blocking = 1, what PyTorch's .to(non_blocking=False) does:
 * the matmuls queued as before; then each D2H copy followed by a
 * synchronisation of the second stream before the next is issued; then
 * the same for the H2D copies on the third; then the first stream
 * synchronised. On CUDA the matmuls are bench_sgemm through the handle;
 * on the host backend the seed matmul kernel. */
static int raw_run(raw_copies *x, const bench_copies_set *s, int blocking) {
  bench_ctx *c = x->c;
  unsigned n = s->n;
  for (int i = 0; i < s->nmat; i++) {
    const float *a = s->a[i % s->nin];
#ifdef WEFT_BENCH_CUDA
    if (x->blas) {
      cublasStatus_t st = bench_sgemm(x->blas, n, a, a, s->c[i]);
      if (st != CUBLAS_STATUS_SUCCESS)
        return bench_fail(c, "raw CUDA: bench_sgemm: %s",
                          cublasGetStatusString(st));
      continue;
    }
#endif
    float *out = s->c[i];
    void *args[] = {&a, &a, &out, &n, &n};
    RAW_TRY(c, raw_launch(x->s[S_MM], &x->k.matmul, seed_matmul_grid(n),
                          WEFT_DIM1(1), args));
  }
  for (int i = 0; i < s->nmat; i++) {
    RAW_TRY(c, raw_copy(x->s[S_D2H], s->d2h_dst[i], s->d2h_src[i], s->bytes,
                        RAW_D2H));
    if (blocking)
      RAW_TRY(c, raw_stream_sync(x->s[S_D2H]));
  }
  for (int i = 0; i < s->nmat; i++) {
    RAW_TRY(c, raw_copy(x->s[S_H2D], s->h2d_dst[i], s->h2d_src[i], s->bytes,
                        RAW_H2D));
    if (blocking)
      RAW_TRY(c, raw_stream_sync(x->s[S_H2D]));
  }
  /* Blocking: the copy streams are already drained and their syncs return
   * at once, so one loop serves both cases. The syncs also report any
   * error of the work queued (an SGEMM kernel's, a copy's). */
  for (int i = 0; i < NSTREAMS; i++)
    RAW_TRY(c, raw_stream_sync(x->s[i]));
  return 0;
}

static int run_one(copies_bench *cb, raw_copies *raw, int v, double *ms) {
  if (v == V_WEFT_BLK || v == V_WEFT_NB) {
    int blocking = v == V_WEFT_BLK;
    if (run_weft(cb, blocking, blocking ? "cp/blk/" : "cp/nb/", what[v]))
      return BENCH_FAIL;
    *ms = cb->ms;
    return 0;
  }
  if (poison(cb))
    return BENCH_FAIL;
  uint64_t t0 = bench_now_ns();
  int rc = raw_run(raw, &cb->set, v == V_RAW_BLK);
  *ms = (double)(bench_now_ns() - t0) / 1e6;
  if (rc)
    return BENCH_FAIL;
  return check(cb, what[v]);
}

/* run_one in a range named for the variant, for `weft trace explain
 * --range` under WEFT_TRACE. */
static int run_variant(copies_bench *cb, raw_copies *raw, int v, double *ms) {
  BENCH_TRY(cb->c, weft_range_push(what[v]));
  int rc = run_one(cb, raw, v, ms);
  BENCH_TRY(cb->c, weft_range_pop());
  return rc;
}

static int measure(copies_bench *cb, raw_copies *raw) {
  for (int r = 0; r <= bench_repeat(cb->c); r++)
    for (int v = 0; v < NVARIANTS; v++) {
      double ms = 0;
      if (run_variant(cb, raw, v, &ms))
        return BENCH_FAIL;
      if (r > 0)
        bench_samples_add(&cb->s[v], ms);
    }
  return 0;
}

/* Opens a runtime with the stacks cuBLAS needs, tracing to trace_path
 * unless it is NULL, and loads the kernels. */
static int open_runtime(copies_bench *cb, const char *trace_path) {
  bench_ctx *c = cb->c;
  if (bench_runtime_open_with(c,
                              &(bench_rt_opts){.stack_size = BENCH_CUBLAS_STACK,
                                               .trace_path = trace_path},
                              &cb->rt))
    return BENCH_FAIL;
  /* Only the host backend runs the matmul kernel; CUDA runs cuBLAS. */
  if (bench_backend(c) != WEFT_BACKEND_CUDA)
    BENCH_TRY(c, weft_kernel_preload(&cb->k.matmul));
  return 0;
}

/* The timed rows' runs: weft and raw in one runtime. */
static int timed(copies_bench *cb) {
  bench_ctx *c = cb->c;
  raw_copies raw = {.c = c};
  seed_kernels_init(&raw.k);
  int rc = open_runtime(cb, NULL);
  if (rc == 0) {
    rc = raw_open(&raw, cb->rt);
    if (rc == 0)
      rc = setup(cb);
    if (rc == 0)
      rc = measure(cb, &raw);
    /* Closing the raw context first waits for its streams, so that no
     * copy of a failed raw run still uses the buffers freed next. */
    raw_close(&raw);
    if (teardown(cb))
      rc = BENCH_FAIL;
  }
  if (bench_runtime_close(c, &cb->rt))
    rc = BENCH_FAIL;
  return rc;
}

/* The traced runs: each weft variant once as a warm-up, once measured. */
static int traced(copies_bench *cb) {
  bench_ctx *c = cb->c;
  char path[512];
  bench_trace_path(path, sizeof path, "copies");
  int rc = open_runtime(cb, path);
  if (rc == 0) {
    rc = setup(cb);
    if (rc == 0)
      rc = run_weft(cb, 1, "cpw/blk/", "traced weft blocking, warm-up");
    if (rc == 0)
      rc = run_weft(cb, 1, "cp/blk/", "traced weft blocking");
    if (rc == 0)
      rc = run_weft(cb, 0, "cpw/nb/", "traced weft non-blocking, warm-up");
    if (rc == 0)
      rc = run_weft(cb, 0, "cp/nb/", "traced weft non-blocking");
    if (teardown(cb))
      rc = BENCH_FAIL;
  }
  /* Shutting down writes the trace. */
  int opened = cb->rt != NULL;
  if (bench_runtime_close(c, &cb->rt))
    rc = BENCH_FAIL;
  if (rc) {
    if (opened)
      unlink(path); /* whatever was written of it */
    return rc;
  }
  bench_trace t = {0};
  rc = bench_trace_load(c, path, &t);
  if (rc == 0)
    rc = bench_trace_gpu_time(c, &t, "cp/blk/", &cb->tr[T_BLK]);
  if (rc == 0)
    rc = bench_trace_gpu_time(c, &t, "cp/nb/", &cb->tr[T_NB]);
  bench_trace_free(&t);
  return rc;
}

/* ---- report ---- */

static int report_overlap(copies_bench *cb) {
  bench_ctx *c = cb->c;
  static const char *const of_busy[NTRACED] = {
      "weft blocking: kernel/copy overlap, % of GPU busy time",
      "weft non-blocking: kernel/copy overlap, % of GPU busy time"};
  static const char *const of_copy[NTRACED] = {
      "weft blocking: % of copy time overlapped",
      "weft non-blocking: % of copy time overlapped"};
  for (int t = 0; t < NTRACED; t++) {
    const trace_breakdown *b = &cb->tr[t];
    bench_samples one = {0};
    bench_samples_add(&one, b->busy > 0 ? 100.0 * b->overlap / b->busy : 0);
    int rc = bench_report(
        c, of_busy[t], "%", &one, 0,
        "one traced run; busy %.2f ms = compute %.2f + memory %.2f - overlap "
        "%.2f; span %.2f ms; %zu kernels, %zu copies",
        b->busy / 1e3, b->compute / 1e3, b->memory / 1e3, b->overlap / 1e3,
        b->span / 1e3, b->kernels, b->copies);
    if (rc)
      return rc;
    one.n = 0;
    bench_samples_add(&one, b->memory > 0 ? 100.0 * b->overlap / b->memory : 0);
    rc = bench_report(c, of_copy[t], "%", &one, 0,
                      "the same run: overlap / memory (copy time)");
    if (rc)
      return rc;
  }
  return 0;
}

static const bench_chart chart = {
    "copies", "seed 001: matmuls, D2H and H2D copies on three streams", NULL,
    0};

static int report(copies_bench *cb) {
  bench_ctx *c = cb->c;
  int cuda = bench_backend(c) == WEFT_BACKEND_CUDA;
  const char *raw = cuda ? "raw CUDA" : "raw host ops";
  double med[NVARIANTS];
  for (int v = 0; v < NVARIANTS; v++)
    med[v] = bench_stats_of(&cb->s[v]).median;
  double base = med[V_RAW_NB] > 0 ? med[V_RAW_NB] : 1e-9;
  char name[80], size[128];
  snprintf(size, sizeof size,
           "%d matmuls %ux%u, %d D2H + %d H2D copies of %g MiB, pinned",
           cb->nmat, cb->n, cb->n, cb->nmat, cb->nmat,
           (double)cb->bytes / (1 << 20));

  snprintf(name, sizeof name, "%s: blocking copies, 3 streams", raw);
  bench_peer(c, "blocking", "raw");
  bench_plot(c, &chart, name, 0);
  int rc = bench_report(c, name, "ms", &cb->s[V_RAW_BLK], 0,
                        "%s; a stream sync after each copy "
                        "(.to(non_blocking=False)), streams made untimed",
                        size);
  snprintf(name, sizeof name, "%s: non-blocking, 3 streams", raw);
  if (rc == 0) {
    bench_peer(c, "non_blocking", "raw");
    bench_plot(c, &chart, name, 0);
    rc = bench_report(c, name, "ms", &cb->s[V_RAW_NB], BENCH_BASELINE,
                      "all queued, then the 3 streams synced");
  }
  if (rc == 0) {
    bench_peer(c, "blocking", "weft");
    bench_plot(c, &chart, "weft: blocking copies, a task per stream", 0);
    rc = bench_report(
        c, "weft: blocking copies, a task per stream", "ms", &cb->s[V_WEFT_BLK],
        0,
        "target <= 1.05 x raw non-blocking (%s, %.2f x); weft_sync after each "
        "copy suspends only its task; spawned and joined by a driver task",
        med[V_WEFT_BLK] <= 1.05 * base ? "met" : "MISSED",
        med[V_WEFT_BLK] / base);
  }
  if (rc == 0) {
    bench_peer(c, "non_blocking", "weft");
    bench_plot(c, &chart, "weft: non-blocking, a task per stream", 0);
    rc = bench_report(c, "weft: non-blocking, a task per stream", "ms",
                      &cb->s[V_WEFT_NB], 0,
                      "each of 3 tasks queues all its work, then one "
                      "weft_sync");
  }
  if (rc == 0) {
    bench_group(c);
    rc = report_overlap(cb);
  }
  return rc;
}

static int run(bench_ctx *c) {
  copies_bench *cb = calloc(1, sizeof *cb);
  if (!cb)
    return bench_fail(c, "out of memory");
  cb->c = c;
  int cuda = bench_backend(c) == WEFT_BACKEND_CUDA;
  /* The host backend multiplies on the CPU: smaller, whatever the mode. */
  cb->n = cuda ? (unsigned)bench_size(c, 1024, 512) : 128;
  cb->nmat = cuda ? (int)bench_size(c, 100, 20) : 16;
  cb->words = (size_t)cb->n * cb->n;
  cb->bytes = cb->words * sizeof(float);
  seed_kernels_init(&cb->k);
  int rc = timed(cb);
  if (rc == 0)
    rc = traced(cb);
  if (rc == 0)
    rc = report(cb);
  free(cb);
  return rc;
}

const bench_scenario bench_sc_copies = {
    "copies",
    "seed 001: matmuls, D2H and H2D copies on three streams, blocking and "
    "non-blocking, raw vs a weft task per stream; kernel/copy overlap",
    run};
