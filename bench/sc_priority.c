/* priority: seed 001's stream priorities, "short kernels beside a flood".
 *
 * The seed queues 1000 matmuls on one stream, then 1000 pows on a second,
 * and finds the pows done after ~5.8 s at the same priority but ~350 ms
 * when the second stream has the higher priority. Here:
 * - the flood: NFLOOD products of n x n matrices on one stream (cuBLAS
 *   SGEMM through bench_gemm on CUDA, the seed matmul kernel on the host
 *   backend), flood_out[i % RING] = in[i % RING] . in[(i + 1) % RING];
 * - the short work: NSHORT cube kernels (out = in^3), kernel j over its own
 *   n x n input in[j] into its own output.
 * The time is the wall clock from just before the first issue (before the
 * flood) until the short work's completion is seen on the host: raw, the
 * return of the stream sync on the short stream; weft, the return of the
 * short task's weft_sync, stamped there and read by the driver. The flood's
 * end is not part of the time (the notes give it), but every run waits for
 * the flood before the next one starts.
 *
 * Variants, each side in its own group with its "alone" row as baseline:
 * - alone: the short work by itself;
 * - same priority: flood and short work on two streams of the default
 *   priority;
 * - high priority: the short work on a stream of the device's greatest
 *   priority (weft: a task spawned with WEFT_PRIORITY_HIGH, admission
 *   off);
 * - weft only, high priority with priority-aware admission at depth 1
 *   (the default), 2 and 4 (weft_runtime_set_admission for the run): the
 *   flood task keeps that many operations in flight while the short task
 *   lives, and issues nothing while it runs; their notes give the flood's
 *   time against the flood alone (its own row, last). Target: <= 1.05 x.
 * Raw is one thread with streams made before timing, issuing the flood
 * first and then the short work, in the seed's order, written against
 * raw_api.h: on CUDA the CUDA runtime and cuBLAS by hand, three
 * non-blocking streams (flood and short at priority 0, what a stream made
 * without one gets, as torch.cuda.Stream() makes them; high at the
 * device's greatest), one cuBLAS handle of the baseline's own set to the
 * flood stream for bench_sgemm (the very call weft's tasks make), the cube
 * by cudaLaunchKernel; on the host backend its own streams (weft/host.h)
 * with the seed matmul and cube kernels.
 * weft's workers make their cuBLAS handles before timing (bench_gemm_warm),
 * as raw made its own.
 * weft is a driver task that spawns the flood task (normal priority: queues
 * the flood, weft_sync) and then the short task, and joins both: the two
 * tasks issue at the same time, so the short work does not queue behind
 * the flood's issue on the host as it does in raw.
 *
 * Sizes: CUDA n = 1024, NFLOOD 500, NSHORT 100 (quick: 200 and 50); the
 * host backend n = 128 (quick 64), NFLOOD 40, NSHORT 20. Rounds run the six
 * variants in turn; round 0 warms up. Before every run the outputs are
 * overwritten with NaN on the device; after it every element of every
 * cube output must be in^3 within 1e-6 relative, and when a flood ran,
 * 8 sampled elements of each of the RING flood outputs must match
 * bench_gemm_ref within 1e-3 relative. Target: the high-priority weft task
 * takes <= 1.1 x its time alone under admission. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "gemm.h"
#include "kernels.h"
#include "raw_api.h"

enum { RING = 8, NSAMPLES = 8 };
enum { SIDE_RAW, SIDE_WEFT, NSIDES };

typedef enum prio_mode {
  PRIO_ALONE, /* the short work only */
  PRIO_SAME,  /* flood, then short work at the same priority */
  PRIO_HIGH,  /* flood, then short work at the greatest priority */
  PRIO_FLOOD, /* the flood only: its own time, for the admission rows */
  /* weft only: PRIO_HIGH with priority-aware admission at depth 1, 2, 4
   * (weft_runtime_set_admission for the run). */
  PRIO_ADMIT1,
  PRIO_ADMIT2,
  PRIO_ADMIT4,
  NMODES
} prio_mode;

static int admit_depth(prio_mode m) {
  return m == PRIO_ADMIT1 ? 1 : m == PRIO_ADMIT2 ? 2 : m == PRIO_ADMIT4 ? 4 : 0;
}
static int has_short(prio_mode m) { return m != PRIO_FLOOD; }
static int has_flood(prio_mode m) { return m != PRIO_ALONE; }
static int is_high(prio_mode m) { return m == PRIO_HIGH || admit_depth(m); }

#define TARGET_HIGH 1.1   /* x the short work alone */
#define TARGET_FLOOD 1.05 /* x the flood alone, under admission */

/* The work. Matrices are n x n floats, row-major, in device memory.
 * Flood operation i (of nflood): flood_out[i % RING] = in[i % RING] .
 * in[(i + 1) % RING], so each ring slot ends up with the same product
 * whatever nflood is (>= RING). Short kernel j (of nshort):
 * short_out + j * n * n = in[j]^3 element-wise (needs nshort >= RING). */
typedef struct prio_set {
  unsigned n;
  int nflood, nshort;
  float *const *in;        /* nshort matrices */
  float *const *flood_out; /* RING matrices */
  float *short_out;        /* nshort matrices back to back */
} prio_set;

/* What one run measured: wall clock from just before the first issue to
 * the return of the wait on the short work's stream, and to the return of
 * the wait on the flood's stream (made after it; 0 when alone). */
typedef struct prio_times {
  double short_ms, flood_ms;
} prio_times;

typedef struct prio_bench {
  bench_ctx *c;
  weft_runtime *rt;
  seed_kernels k;
  weft_device_info info;
  /* The raw baseline: streams made before timing (all zero until made);
   * on CUDA the baseline's own cuBLAS handle, on the flood stream. */
  raw_stream raw_flood, raw_short, raw_high;
  int raw_prio, raw_high_prio; /* the raw streams' priorities */
#ifdef WEFT_BENCH_CUDA
  cublasHandle_t blas; /* NULL until made */
#endif
  prio_set set;
  size_t mat;                      /* bytes of one matrix */
  float *in_h, *short_h, *flood_h; /* pinned: inputs, fetched results */
  float *in_d, *short_d, *flood_d; /* device */
  float **in;                      /* nshort pointers into in_d */
  float *flood_out[RING];
  /* The weft run in progress: set by the driver and its tasks. */
  prio_mode mode;
  uint64_t t0, t_short, t_flood;
  bench_samples s[NSIDES][NMODES];     /* ms until the short work is done */
  bench_samples flood[NSIDES][NMODES]; /* ms until the flood is done */
} prio_bench;

/* ---- the weft variants ---- */

static void flood_task(void *arg) {
  prio_bench *pb = arg;
  const prio_set *s = &pb->set;
  for (int i = 0; i < s->nflood; i++)
    if (bench_gemm(pb->c, &pb->k, s->n, s->in[i % RING], s->in[(i + 1) % RING],
                   s->flood_out[i % RING]))
      break; /* what was queued still runs; the sync waits for it */
  int e = weft_sync();
  if (e)
    bench_fail_weft(pb->c, e, "weft_sync(flood)");
  pb->t_flood = bench_now_ns();
}

static const char *const mode_name[NMODES] = {
    "alone",       "same priority", "high priority", "flood alone",
    "admission 1", "admission 2",   "admission 4"};

static void short_task(void *arg) {
  prio_bench *pb = arg;
  const prio_set *s = &pb->set;
  unsigned long nn = (unsigned long)s->n * s->n;
  /* Its life is a range, for `weft trace explain --range "short: high
   * priority"` (and the others) under WEFT_TRACE. */
  char range[64];
  snprintf(range, sizeof range, "short: %s", mode_name[pb->mode]);
  int e = weft_range_push(range), pushed = e == 0;
  if (e)
    bench_fail_weft(pb->c, e, "weft_range_push");
  for (int j = 0; j < s->nshort; j++) {
    const float *in = s->in[j];
    float *out = s->short_out + (size_t)j * nn;
    void *args[] = {&in, &out, &nn};
    e = weft_launch(&pb->k.cube, WEFT_DIM1(seed_blocks(nn)),
                    WEFT_DIM1(SEED_THREADS), 0, args);
    if (e) {
      bench_fail_weft(pb->c, e, "weft_launch(seed_cube)");
      break;
    }
  }
  if ((e = weft_sync()) != 0)
    bench_fail_weft(pb->c, e, "weft_sync(short)");
  pb->t_short = bench_now_ns();
  if (pushed && (e = weft_range_pop()) != 0)
    bench_fail_weft(pb->c, e, "weft_range_pop");
}

/* Spawns the flood task (unless alone), then the short task, and joins
 * both; the clock starts before the first spawn. */
static void driver(void *arg) {
  prio_bench *pb = arg;
  weft_task *flood = NULL, *shrt = NULL;
  weft_task_opts fo, so;
  weft_task_opts_init(&fo);
  weft_task_opts_init(&so);
  fo.name = "priority/flood";
  so.name = "priority/short";
  so.priority = is_high(pb->mode) ? WEFT_PRIORITY_HIGH : WEFT_PRIORITY_NORMAL;
  int e = weft_runtime_set_admission(pb->rt, admit_depth(pb->mode));
  if (e) {
    bench_fail_weft(pb->c, e, "weft_runtime_set_admission");
    return;
  }
  pb->t_short = pb->t_flood = 0;
  pb->t0 = bench_now_ns();
  if (has_flood(pb->mode) &&
      (e = weft_task_spawn(pb->rt, &flood, flood_task, pb, &fo)) != 0)
    bench_fail_weft(pb->c, e, "weft_task_spawn(flood)");
  else if (has_short(pb->mode) &&
           (e = weft_task_spawn(pb->rt, &shrt, short_task, pb, &so)) != 0)
    bench_fail_weft(pb->c, e, "weft_task_spawn(short)");
  if (shrt && (e = weft_task_join(shrt)) != 0)
    bench_fail_weft(pb->c, e, "weft_task_join(short)");
  if (flood && (e = weft_task_join(flood)) != 0)
    bench_fail_weft(pb->c, e, "weft_task_join(flood)");
  if ((e = weft_runtime_set_admission(pb->rt, 0)) != 0)
    bench_fail_weft(pb->c, e, "weft_runtime_set_admission");
}

/* ---- the raw baseline ---- */

/* Makes the raw streams before any timing: flood and short at priority 0
 * (what a stream made without a priority gets on CUDA, the least of the
 * range on current GPUs and on the host backend), high at the device's
 * greatest (on CUDA, weft_device_info has it from
 * cudaDeviceGetStreamPriorityRange); on CUDA also the handle, set to the
 * flood stream. The cube's module is loaded already (seed_kernels_preload,
 * cudaFuncGetAttributes): under lazy loading the first launch would load
 * it, and loading can wait for kernels running on other streams; the
 * warm-up round does the same for cuBLAS's kernels. */
static int raw_open(prio_bench *pb) {
  bench_ctx *c = pb->c;
  pb->raw_prio = 0;
  pb->raw_high_prio = pb->info.priority_greatest;
  RAW_TRY(c, raw_stream_create(pb->rt, pb->raw_prio, &pb->raw_flood));
  RAW_TRY(c, raw_stream_create(pb->rt, pb->raw_prio, &pb->raw_short));
  RAW_TRY(c, raw_stream_create(pb->rt, pb->raw_high_prio, &pb->raw_high));
#ifdef WEFT_BENCH_CUDA
  if (raw_is_cuda(pb->raw_flood)) {
    cublasHandle_t h; /* kept only once made: close destroys nothing else */
    BLAS_TRY(c, cublasCreate(&h));
    pb->blas = h;
    BLAS_TRY(c, cublasSetStream(pb->blas, pb->raw_flood.cs));
  }
#endif
  return 0;
}

/* Waits for the raw streams and frees them and the handle; errors here
 * would only repeat one already reported. */
static void raw_close(prio_bench *pb) {
#ifdef WEFT_BENCH_CUDA
  if (pb->blas)
    cublasDestroy(pb->blas);
  pb->blas = NULL;
#endif
  /* A stream not made is all zero, which destroy passes over. */
  raw_stream_destroy(&pb->raw_high);
  raw_stream_destroy(&pb->raw_short);
  raw_stream_destroy(&pb->raw_flood);
}

/* The seed's order from one thread: `with stream(first): matmuls`, then
 * `with stream(second): pows` (PRIO_HIGH: on the high stream); then the
 * host waits for the short work's stream, then for the flood's. The flood
 * is bench_sgemm through the baseline's handle on CUDA, the seed matmul
 * kernel on the host backend. On failure, work already queued still runs;
 * raw_close waits for it. */
static int raw_run(prio_bench *pb, prio_mode m, prio_times *t) {
  bench_ctx *c = pb->c;
  const prio_set *s = &pb->set;
  unsigned n = s->n;
  unsigned long nn = (unsigned long)n * n;
  raw_stream st = m == PRIO_HIGH ? pb->raw_high : pb->raw_short;
  uint64_t t0 = bench_now_ns();
  for (int i = 0; has_flood(m) && i < s->nflood; i++) {
    const float *a = s->in[i % RING], *b = s->in[(i + 1) % RING];
    float *out = s->flood_out[i % RING];
#ifdef WEFT_BENCH_CUDA
    if (raw_is_cuda(pb->raw_flood)) {
      BLAS_TRY(c, bench_sgemm(pb->blas, n, a, b, out));
      continue;
    }
#endif
    /* Launches copy their arguments when queued, so locals will do. */
    void *args[] = {&a, &b, &out, &n, &n};
    RAW_TRY(c, raw_launch(pb->raw_flood, &pb->k.matmul, seed_matmul_grid(n),
                          WEFT_DIM1(1), args));
  }
  for (int j = 0; has_short(m) && j < s->nshort; j++) {
    const float *in = s->in[j];
    float *out = s->short_out + (size_t)j * nn;
    void *args[] = {&in, &out, &nn};
    RAW_TRY(c, raw_launch(st, &pb->k.cube, WEFT_DIM1(seed_blocks(nn)),
                          WEFT_DIM1(SEED_THREADS), args));
  }
  RAW_TRY(c, raw_stream_sync(st));
  t->short_ms = has_short(m) ? (double)(bench_now_ns() - t0) / 1e6 : 0;
  t->flood_ms = 0;
  if (has_flood(m)) {
    RAW_TRY(c, raw_stream_sync(pb->raw_flood));
    t->flood_ms = (double)(bench_now_ns() - t0) / 1e6;
  }
  return 0;
}

/* ---- setup, checks ---- */

static float uniform(uint64_t *x) { /* [0.5, 1.5): cubes stay tame */
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return 0.5f + (float)(*x >> 40) * (1.0f / (float)(1u << 24));
}

static int setup(prio_bench *pb, unsigned n, int nflood, int nshort) {
  bench_ctx *c = pb->c;
  size_t nn = (size_t)n * n;
  pb->mat = nn * sizeof(float);
  pb->in = calloc((size_t)nshort, sizeof *pb->in);
  if (!pb->in)
    return bench_fail(c, "out of memory");
  BENCH_TRY(c, weft_pinned_alloc(nshort * pb->mat, (void **)&pb->in_h));
  BENCH_TRY(c, weft_pinned_alloc(nshort * pb->mat, (void **)&pb->short_h));
  BENCH_TRY(c, weft_pinned_alloc(RING * pb->mat, (void **)&pb->flood_h));
  BENCH_TRY(c, weft_device_alloc(nshort * pb->mat, (void **)&pb->in_d));
  BENCH_TRY(c, weft_device_alloc(nshort * pb->mat, (void **)&pb->short_d));
  BENCH_TRY(c, weft_device_alloc(RING * pb->mat, (void **)&pb->flood_d));
  uint64_t seed = 0x9E3779B97F4A7C15ULL;
  for (size_t i = 0; i < nshort * nn; i++)
    pb->in_h[i] = uniform(&seed);
  BENCH_TRY(c, weft_copy(pb->in_d, pb->in_h, nshort * pb->mat));
  /* The allocations and inputs, before other streams use them. */
  BENCH_TRY(c, weft_sync());
  for (int j = 0; j < nshort; j++)
    pb->in[j] = pb->in_d + (size_t)j * nn;
  for (int r = 0; r < RING; r++)
    pb->flood_out[r] = pb->flood_d + (size_t)r * nn;
  pb->set = (prio_set){
      .n = n,
      .nflood = nflood,
      .nshort = nshort,
      .in = pb->in,
      .flood_out = pb->flood_out,
      .short_out = pb->short_d,
  };
  return 0;
}

static int teardown(prio_bench *pb) {
  bench_ctx *c = pb->c;
  int rc = 0, e;
  float *dev[] = {pb->in_d, pb->short_d, pb->flood_d};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i] && (e = weft_device_free(dev[i])) != 0)
      rc = bench_fail_weft(c, e, "weft_device_free");
  if ((e = weft_sync()) != 0)
    rc = bench_fail_weft(c, e, "weft_sync");
  float *pin[] = {pb->in_h, pb->short_h, pb->flood_h};
  for (size_t i = 0; i < sizeof pin / sizeof pin[0]; i++)
    if (pin[i] && (e = weft_pinned_free(pin[i])) != 0)
      rc = bench_fail_weft(c, e, "weft_pinned_free");
  free(pb->in);
  return rc;
}

/* NaN in every output on the device, and garbage in the host copies, so
 * that work which did not run cannot pass the check. */
static int poison(prio_bench *pb) {
  bench_ctx *c = pb->c;
  size_t short_bytes = (size_t)pb->set.nshort * pb->mat;
  BENCH_TRY(c, weft_memset(pb->short_d, 0xff, short_bytes));
  BENCH_TRY(c, weft_memset(pb->flood_d, 0xff, RING * pb->mat));
  BENCH_TRY(c, weft_sync());
  memset(pb->short_h, 0xa5, short_bytes);
  memset(pb->flood_h, 0xa5, RING * pb->mat);
  return 0;
}

static int check_short(prio_bench *pb, const char *what) {
  size_t nn = (size_t)pb->set.n * pb->set.n;
  for (int j = 0; j < pb->set.nshort; j++) {
    const float *in = pb->in_h + j * nn, *out = pb->short_h + j * nn;
    /* Counting first, without an early exit, keeps the loop vectorisable;
     * the negated comparison catches NaN. */
    size_t bad = 0;
    for (size_t i = 0; i < nn; i++) {
      float want = in[i] * in[i] * in[i];
      bad += !(fabsf(out[i] - want) <= 1e-6f * want);
    }
    if (!bad)
      continue;
    size_t i = 0;
    for (; i + 1 < nn; i++) {
      float want = in[i] * in[i] * in[i];
      if (!(fabsf(out[i] - want) <= 1e-6f * want))
        break;
    }
    return bench_fail(pb->c,
                      "%s: cube %d: %zu bad elements, the first at %zu: got "
                      "%.9g, want %.9g (input %.9g)",
                      what, j, bad, i, out[i], in[i] * in[i] * in[i], in[i]);
  }
  return 0;
}

/* Eight elements of each flood output: the corners and spread-out
 * positions between them. */
static int check_flood(prio_bench *pb, const char *what) {
  unsigned n = pb->set.n;
  size_t nn = (size_t)n * n;
  for (int r = 0; r < RING; r++) {
    const float *a = pb->in_h + r * nn, *b = pb->in_h + ((r + 1) % RING) * nn;
    const float *out = pb->flood_h + r * nn;
    for (unsigned q = 0; q < NSAMPLES; q++) {
      unsigned i = q == 0 ? 0 : q == 1 ? n - 1 : (q * 2654435761u + r) % n;
      unsigned j = q == 0 ? 0 : q == 1 ? n - 1 : (q * 40503u + 7u * r) % n;
      double want = bench_gemm_ref(n, a, b, i, j);
      double got = out[(size_t)i * n + j];
      if (!(fabs(got - want) <= 1e-3 * fabs(want)))
        return bench_fail(pb->c,
                          "%s: flood output %d, element (%u, %u): got %.9g, "
                          "want %.9g",
                          what, r, i, j, got, want);
    }
  }
  return 0;
}

static int check(prio_bench *pb, prio_mode m, const char *what) {
  bench_ctx *c = pb->c;
  BENCH_TRY(
      c, weft_copy(pb->short_h, pb->short_d, (size_t)pb->set.nshort * pb->mat));
  if (has_flood(m))
    BENCH_TRY(c, weft_copy(pb->flood_h, pb->flood_d, RING * pb->mat));
  BENCH_TRY(c, weft_sync());
  if (has_short(m) && check_short(pb, what))
    return BENCH_FAIL;
  return has_flood(m) ? check_flood(pb, what) : 0;
}

/* ---- running ---- */

static int run_once(prio_bench *pb, int side, prio_mode m, int record) {
  bench_ctx *c = pb->c;
  char what[64];
  snprintf(what, sizeof what, "%s, %s", side == SIDE_RAW ? "raw" : "weft",
           mode_name[m]);
  if (poison(pb))
    return BENCH_FAIL;
  prio_times t = {0};
  if (side == SIDE_RAW) {
    if (raw_run(pb, m, &t))
      return BENCH_FAIL;
  } else {
    pb->mode = m;
    if (bench_in_task(c, pb->rt, driver, pb) || bench_failed(c))
      return BENCH_FAIL;
    t.short_ms = has_short(m) ? (double)(pb->t_short - pb->t0) / 1e6 : 0;
    t.flood_ms = has_flood(m) ? (double)(pb->t_flood - pb->t0) / 1e6 : 0;
  }
  if (check(pb, m, what))
    return BENCH_FAIL;
  if (record) {
    bench_samples_add(&pb->s[side][m], t.short_ms);
    bench_samples_add(&pb->flood[side][m], t.flood_ms);
  }
  return 0;
}

static int measure(prio_bench *pb) {
  for (int r = 0; r <= bench_repeat(pb->c); r++)
    for (int side = 0; side < NSIDES; side++)
      for (int m = 0; m < NMODES; m++)
        if ((side == SIDE_WEFT || !admit_depth((prio_mode)m)) &&
            run_once(pb, side, (prio_mode)m, r > 0))
          return BENCH_FAIL;
  return 0;
}

/* ---- the table ---- */

static double median(const bench_samples *s) {
  return bench_stats_of(s).median;
}

static int report_raw(prio_bench *pb, const char *size, const char *flood) {
  bench_ctx *c = pb->c;
  int cuda = bench_backend(c) == WEFT_BACKEND_CUDA;
  const char *raw = cuda ? "raw CUDA" : "raw host ops";
  int prio = pb->raw_prio, high = pb->raw_high_prio;
  bench_samples *s = pb->s[SIDE_RAW], *f = pb->flood[SIDE_RAW];
  char name[96];
  snprintf(name, sizeof name, "%s: short work alone", raw);
  bench_peer(c, "alone", "raw");
  int rc = bench_report(c, name, "ms", &s[PRIO_ALONE], BENCH_BASELINE,
                        "%s on one stream (priority %d); until its stream "
                        "sync returns",
                        size, prio);
  snprintf(name, sizeof name, "%s: beside the flood, same priority", raw);
  bench_peer(c, "same", "raw");
  if (rc == 0)
    rc = bench_report(c, name, "ms", &s[PRIO_SAME], 0,
                      "one thread: %s queued first, then the short work, "
                      "both streams priority %d; flood done at %.1f ms",
                      flood, prio, median(&f[PRIO_SAME]));
  snprintf(name, sizeof name, "%s: beside the flood, short stream high", raw);
  /* On the host backend a stream runs on one executor thread at a time and
   * priority only picks among ready streams when every executor is busy:
   * with two or more, the short stream never waits behind the flood's. */
  char host[128] = "";
  if (!cuda)
    snprintf(host, sizeof host,
             "; host backend: %d executor threads, priority acts only when "
             "all are busy",
             pb->info.multiprocessors);
  bench_peer(c, "high", "raw");
  if (rc == 0)
    rc = bench_report(c, name, "ms", &s[PRIO_HIGH], 0,
                      "as above, short stream priority %d (greatest); flood "
                      "done at %.1f ms%s",
                      high, median(&f[PRIO_HIGH]), host);
  return rc;
}

static int report_weft(prio_bench *pb, const char *size) {
  bench_ctx *c = pb->c;
  bench_samples *s = pb->s[SIDE_WEFT], *f = pb->flood[SIDE_WEFT];
  double alone = median(&s[PRIO_ALONE]);
  double ratio = alone > 0 ? median(&s[PRIO_HIGH]) / alone : 0;
  bench_peer(c, "alone", "weft");
  int rc = bench_report(
      c, "weft: short task alone", "ms", &s[PRIO_ALONE], BENCH_BASELINE,
      "%s in one task; until its weft_sync returns (stamped in "
      "the task)",
      size);
  bench_peer(c, "same", "weft");
  if (rc == 0)
    rc = bench_report(
        c, "weft: beside a flood task, same priority", "ms", &s[PRIO_SAME], 0,
        "a driver spawns the flood task, then the short task, both normal: "
        "they issue at once (raw issues the flood first from one thread); "
        "flood done at %.1f ms",
        median(&f[PRIO_SAME]));
  bench_peer(c, "high", "weft");
  if (rc == 0)
    rc = bench_report(c,
                      "weft: beside a flood task, short task HIGH, "
                      "admission off",
                      "ms", &s[PRIO_HIGH], 0,
                      "%.2f x alone (no target: admission is on by default); "
                      "WEFT_PRIORITY_HIGH: stream priority %d; flood done at "
                      "%.1f ms",
                      ratio, pb->info.priority_greatest, median(&f[PRIO_HIGH]));
  double flood_alone = median(&f[PRIO_FLOOD]);
  static const prio_mode admitted[] = {PRIO_ADMIT1, PRIO_ADMIT2, PRIO_ADMIT4};
  for (int i = 0; rc == 0 && i < 3; i++) {
    prio_mode m = admitted[i];
    char name[96];
    snprintf(name, sizeof name,
             "weft: beside a flood task, short task HIGH, admission %d%s",
             admit_depth(m), m == PRIO_ADMIT1 ? " (default)" : "");
    double r = alone > 0 ? median(&s[m]) / alone : 0;
    double fr = flood_alone > 0 ? median(&f[m]) / flood_alone : 0;
    rc = bench_report(
        c, name, "ms", &s[m], 0,
        "target <= %.1f x alone: %.2f x (%s); the flood task held to %d "
        "operation%s in flight while the short task lives, and while it "
        "runs; flood done at "
        "%.1f ms, %.2f x alone (target <= %.2f: %s)",
        TARGET_HIGH, r, r <= TARGET_HIGH ? "met" : "MISSED", admit_depth(m),
        admit_depth(m) == 1 ? "" : "s", median(&f[m]), fr, TARGET_FLOOD,
        fr <= TARGET_FLOOD ? "met" : "MISSED");
  }
  bench_group(c);
  if (rc == 0)
    rc = bench_report(c, "weft: flood task alone", "ms", &f[PRIO_FLOOD],
                      BENCH_BASELINE,
                      "the flood's own time, until its weft_sync returns: "
                      "what the admission rows' flood is compared with");
  return rc;
}

static int report(prio_bench *pb) {
  bench_ctx *c = pb->c;
  int cuda = bench_backend(c) == WEFT_BACKEND_CUDA;
  const prio_set *s = &pb->set;
  char size[96], flood[96];
  snprintf(size, sizeof size, "%d cube kernels over %ux%u floats", s->nshort,
           s->n, s->n);
  snprintf(flood, sizeof flood, "%d %s of %ux%u", s->nflood,
           cuda ? "SGEMMs" : "matmul kernels", s->n, s->n);
  int rc = report_raw(pb, size, flood);
  bench_group(c);
  return rc ? rc : report_weft(pb, size);
}

static int run(bench_ctx *c) {
  int cuda = bench_backend(c) == WEFT_BACKEND_CUDA;
  unsigned n = cuda ? 1024 : (unsigned)bench_size(c, 128, 64);
  int nflood = cuda ? (int)bench_size(c, 500, 200) : 40;
  int nshort = cuda ? (int)bench_size(c, 100, 50) : 20;
  prio_bench *pb = calloc(1, sizeof *pb);
  if (!pb)
    return bench_fail(c, "out of memory");
  pb->c = c;
  seed_kernels_init(&pb->k);
  /* Tasks that call cuBLAS need deep stacks (weft/cuda.h). */
  int rc = bench_runtime_open_with(
      c, &(bench_rt_opts){.stack_size = BENCH_CUBLAS_STACK}, &pb->rt);
  if (rc == 0 && (rc = weft_device_get_info(pb->rt, 0, &pb->info)) != 0)
    rc = bench_fail_weft(c, rc, "weft_device_get_info");
  if (rc == 0 && (rc = seed_kernels_preload(&pb->k, bench_backend(c))) != 0)
    rc = bench_fail_weft(c, rc, "seed_kernels_preload");
  if (rc == 0)
    rc = bench_gemm_warm(c, pb->rt);
  if (rc == 0)
    rc = raw_open(pb);
  if (rc == 0) {
    rc = setup(pb, n, nflood, nshort);
    if (rc == 0)
      rc = measure(pb);
  }
  /* The raw streams are drained before the memory they use is freed. */
  raw_close(pb);
  if (pb->rt && teardown(pb))
    rc = BENCH_FAIL;
  if (bench_runtime_close(c, &pb->rt))
    rc = BENCH_FAIL;
  if (rc == 0)
    rc = report(pb);
  free(pb);
  return rc;
}

const bench_scenario bench_sc_priority = {
    "priority",
    "seed 001: short kernels beside a flood of matmuls, same and high "
    "priority, raw streams vs weft tasks",
    run};
