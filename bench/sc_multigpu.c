/* multigpu: seed 000's normalisation spread over every device.
 *
 * NARRAYS arrays of 2^24 floats (2^18 on the host backend, 2^16 under
 * --quick), each normalised (a <- a / sum(a)): copied in from pinned
 * memory, partial_reduce, single_thread_sum, divide_by, copied out. Each
 * device holds its own buffers for every array, made before timing by a
 * task placed there. Rows, wall clock from the first operation issued to
 * the last one's completion:
 * - raw, a stream per array on device 0 (baseline);
 * - weft, a task per array, all on device 0;
 * - raw, array i on device i % D: a stream per array made on its device,
 *   cudaSetDevice before each array's calls, one thread;
 * - weft, a task per array placed by weft (WEFT_DEVICE_ANY);
 * - weft, array i on device i % D;
 * - weft_copy from device 0's memory to device 1's, GB/s.
 * The spread rows give the ratio to raw on the same devices and the
 * scaling efficiency against the same side on one device, measured in the
 * same run: t(one device) / (t(D devices) x D). With one device those rows
 * and the peer copy are reported as skipped. Then the tiled SGEMM across
 * devices (multigpu_gemm.c). The host backend runs with 4 emulated
 * devices, each with its executor, on however many cores the machine has:
 * its rows show the placement works, not that it scales. After every run
 * each output element must be input / (its array's sum in double, on the
 * CPU) within 1e-4 relative. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "kernels.h"
#include "multigpu_gemm.h"
#include "raw_api.h"

enum { NARRAYS = 16, MAXDEV = MULTIGPU_MAXDEV, PEER_COPIES = 4 };
enum { V_RAW, V_ONE, V_ANY, V_SPREAD, V_RAW_SPREAD, V_PEER, NVARIANTS };

typedef struct mg {
  bench_ctx *c;
  weft_runtime *rt;
  demo_kernels k;
  int ndev;
  unsigned long long n; /* floats per array */
  unsigned blocks;
  size_t bytes;
  float *in[NARRAYS], *out[NARRAYS]; /* pinned */
  double cpu_sum[NARRAYS];
  /* Per device, per array: the array, the partial sums, the sum. */
  float *a[MAXDEV][NARRAYS], *partial[MAXDEV][NARRAYS], *sum[MAXDEV][NARRAYS];
  raw_stream rs[MAXDEV][NARRAYS]; /* [d][i]: array i's stream on device d */
  bench_samples s[NVARIANTS];
} mg;

/* The kernels' arguments for array i on device d. */
typedef struct norm {
  float *a, *partial, *sum;
  unsigned long long n;
  unsigned blocks;
  void *reduce[3], *total[3], *divide[3];
} norm;

static void norm_init(norm *g, const mg *m, int d, int i) {
  g->a = m->a[d][i];
  g->partial = m->partial[d][i];
  g->sum = m->sum[d][i];
  g->n = m->n;
  g->blocks = m->blocks;
  g->reduce[0] = &g->a, g->reduce[1] = &g->partial, g->reduce[2] = &g->n;
  g->total[0] = &g->partial, g->total[1] = &g->sum, g->total[2] = &g->blocks;
  g->divide[0] = &g->a, g->divide[1] = &g->sum, g->divide[2] = &g->n;
}

/* ---- set-up ---- */

typedef struct dev_job {
  mg *m;
  int free; /* 0: allocate the device's buffers, 1: free them */
} dev_job;

static void dev_buffers(void *arg) {
  dev_job *j = arg;
  mg *m = j->m;
  int d = weft_task_device();
  for (int i = 0; i < NARRAYS; i++) {
    if (j->free) {
      if (m->a[d][i])
        weft_device_free(m->a[d][i]);
      if (m->partial[d][i])
        weft_device_free(m->partial[d][i]);
      if (m->sum[d][i])
        weft_device_free(m->sum[d][i]);
      continue;
    }
    int e = weft_device_alloc(m->bytes, (void **)&m->a[d][i]);
    if (!e)
      e = weft_device_alloc(m->blocks * sizeof(float),
                            (void **)&m->partial[d][i]);
    if (!e)
      e = weft_device_alloc(sizeof(float), (void **)&m->sum[d][i]);
    if (e) {
      bench_fail_weft(m->c, e, "weft_device_alloc");
      return;
    }
  }
  if (weft_sync() != 0)
    bench_fail(m->c, "weft_sync: %s", weft_last_error_message());
}

/* Runs fn(job) once on every device, each a task placed there. */
static int on_every_device(mg *m, weft_task_fn fn, void *job) {
  int dev[MAXDEV];
  for (int d = 0; d < m->ndev; d++)
    dev[d] = d;
  return bench_tasks_on(m->c, m->rt, m->ndev, fn, job, 0, dev);
}

static int setup(mg *m) {
  m->blocks = (unsigned)((m->n + DEMO_THREADS - 1) / DEMO_THREADS);
  if (m->blocks > DEMO_MAX_BLOCKS)
    m->blocks = DEMO_MAX_BLOCKS;
  m->bytes = (size_t)m->n * sizeof(float);
  uint64_t seed = 99;
  for (int i = 0; i < NARRAYS; i++) {
    BENCH_TRY(m->c, weft_pinned_alloc(m->bytes, (void **)&m->in[i]));
    BENCH_TRY(m->c, weft_pinned_alloc(m->bytes, (void **)&m->out[i]));
    double sum = 0;
    for (unsigned long long j = 0; j < m->n; j++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      m->in[i][j] = 0.5f + (float)(seed >> 40) / (float)(1u << 24);
      sum += m->in[i][j];
    }
    m->cpu_sum[i] = sum;
  }
  dev_job j = {m, 0};
  return on_every_device(m, dev_buffers, &j);
}

static void teardown(mg *m) {
  dev_job j = {m, 1};
  on_every_device(m, dev_buffers, &j);
  for (int i = 0; i < NARRAYS; i++) {
    if (m->in[i])
      weft_pinned_free(m->in[i]);
    if (m->out[i])
      weft_pinned_free(m->out[i]);
  }
}

static void poison(mg *m) {
  for (int i = 0; i < NARRAYS; i++)
    memset(m->out[i], 0xff, m->bytes); /* NaN */
}

static int check(mg *m, const char *who) {
  for (int i = 0; i < NARRAYS; i++) {
    float inv = (float)(1.0 / m->cpu_sum[i]);
    size_t bad = 0;
    for (unsigned long long j = 0; j < m->n; j++) {
      float want = m->in[i][j] * inv;
      bad += !(fabsf(m->out[i][j] - want) <= 1e-4f * want);
    }
    if (bad)
      return bench_fail(m->c, "%s: array %d has %zu wrong elements", who, i,
                        bad);
  }
  return 0;
}

/* ---- raw: a stream per array, array i on device i % ndev ---- */

/* From this thread, which is left on device 0 (weft's calls from it expect
 * the device weft last made current). */
static int raw_run(mg *m, int ndev, uint64_t *ns) {
  uint64_t t0 = bench_now_ns();
  for (int i = 0; i < NARRAYS; i++) {
    int d = i % ndev;
    norm g;
    norm_init(&g, m, d, i);
    RAW_TRY(m->c, raw_set_device(m->rt, d));
    raw_stream s = m->rs[d][i];
    weft_dim3 grid = WEFT_DIM1(m->blocks), block = WEFT_DIM1(DEMO_THREADS);
    RAW_TRY(m->c, raw_copy(s, g.a, m->in[i], m->bytes, RAW_H2D));
    RAW_TRY(m->c, raw_launch(s, &m->k.partial_reduce, grid, block, g.reduce));
    RAW_TRY(m->c, raw_launch(s, &m->k.single_thread_sum, WEFT_DIM1(1),
                             WEFT_DIM1(1), g.total));
    RAW_TRY(m->c, raw_launch(s, &m->k.divide_by, grid, block, g.divide));
    RAW_TRY(m->c, raw_copy(s, m->out[i], g.a, m->bytes, RAW_D2H));
  }
  for (int i = 0; i < NARRAYS; i++)
    RAW_TRY(m->c, raw_stream_sync(m->rs[i % ndev][i]));
  *ns = bench_now_ns() - t0;
  RAW_TRY(m->c, raw_set_device(m->rt, 0));
  return 0;
}

/* ---- weft: a task per array ---- */

typedef struct array_job {
  mg *m;
  int i;
} array_job;

/* Normalises array i on the device the task was placed on; its join
 * waits for the work. */
static void array_task(void *arg) {
  array_job *j = arg;
  mg *m = j->m;
  norm g;
  norm_init(&g, m, weft_task_device(), j->i);
  weft_dim3 grid = WEFT_DIM1(m->blocks), block = WEFT_DIM1(DEMO_THREADS);
  int e = weft_copy(g.a, m->in[j->i], m->bytes);
  if (!e)
    e = weft_launch(&m->k.partial_reduce, grid, block, 0, g.reduce);
  if (!e)
    e = weft_launch(&m->k.single_thread_sum, WEFT_DIM1(1), WEFT_DIM1(1), 0,
                    g.total);
  if (!e)
    e = weft_launch(&m->k.divide_by, grid, block, 0, g.divide);
  if (!e)
    e = weft_copy(m->out[j->i], g.a, m->bytes);
  if (e)
    bench_fail_weft(m->c, e, "array task");
}

/* placement: 0 all on device 0, 1 WEFT_DEVICE_ANY, 2 array i on i % D. */
static int weft_run(mg *m, int placement, uint64_t *ns) {
  array_job jobs[NARRAYS];
  int dev[NARRAYS];
  for (int i = 0; i < NARRAYS; i++) {
    jobs[i] = (array_job){m, i};
    dev[i] = placement == 0   ? 0
             : placement == 1 ? WEFT_DEVICE_ANY
                              : i % m->ndev;
  }
  uint64_t t0 = bench_now_ns();
  int rc =
      bench_tasks_on(m->c, m->rt, NARRAYS, array_task, jobs, sizeof *jobs, dev);
  *ns = bench_now_ns() - t0;
  return rc;
}

/* ---- the peer copy, from a task on device 1 ---- */

typedef struct peer_job {
  mg *m;
  uint64_t ns;
} peer_job;

static void peer_task(void *arg) {
  peer_job *j = arg;
  mg *m = j->m;
  uint64_t t0 = bench_now_ns();
  int e = 0;
  for (int r = 0; r < PEER_COPIES && !e; r++)
    e = weft_copy(m->a[1][r], m->a[0][r], m->bytes);
  if (!e)
    e = weft_sync();
  j->ns = bench_now_ns() - t0;
  if (e) {
    bench_fail_weft(m->c, e, "weft_copy (device 0 to 1)");
    return;
  }
  /* Untimed: every copy's bytes on device 1 equal its source's. */
  unsigned char *x = malloc(m->bytes), *y = malloc(m->bytes);
  if (!x || !y)
    bench_fail(m->c, "out of memory");
  for (int r = 0; r < PEER_COPIES && x && y; r++) {
    if (bench_fetch(m->c, x, m->a[0][r], m->bytes) ||
        bench_fetch(m->c, y, m->a[1][r], m->bytes))
      break;
    if (memcmp(x, y, m->bytes) != 0) {
      bench_fail(m->c,
                 "weft_copy (device 0 to 1): copy %d differs from "
                 "its source",
                 r);
      break;
    }
  }
  free(x);
  free(y);
}

static int peer_run(mg *m, uint64_t *ns) {
  peer_job j = {m, 0};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.device = 1;
  weft_task *t;
  BENCH_TRY(m->c, weft_task_spawn(m->rt, &t, peer_task, &j, &o));
  BENCH_TRY(m->c, weft_task_join(t));
  *ns = j.ns;
  return bench_failed(m->c) ? BENCH_FAIL : 0;
}

static int report(mg *m) {
  bench_ctx *c = m->c;
  double one = bench_stats_of(&m->s[V_ONE]).median;
  int rc =
      bench_report(c, "raw: a stream per array, device 0", "ms", &m->s[V_RAW],
                   BENCH_BASELINE, "%d arrays of %llu floats, %d device%s",
                   NARRAYS, m->n, m->ndev, m->ndev == 1 ? "" : "s");
  if (rc == 0)
    rc = bench_report(c, "weft: a task per array, device 0", "ms", &m->s[V_ONE],
                      0, "the one-device reference");
  double raw1 = bench_stats_of(&m->s[V_RAW]).median;
  double raw = bench_stats_of(&m->s[V_RAW_SPREAD]).median;
  if (rc == 0 && m->ndev == 1)
    rc = bench_skip(c, "raw: array i on device i % D", "ms",
                    "one device; needs two or more");
  else if (rc == 0)
    rc = bench_report(c, "raw: array i on device i % D", "ms",
                      &m->s[V_RAW_SPREAD], 0,
                      "D = %d: a stream per array on its device; scaling "
                      "efficiency %.0f %% (against raw on one device)",
                      m->ndev, 100.0 * raw1 / (raw * m->ndev));
  const char *multi[] = {"weft: a task per array, WEFT_DEVICE_ANY",
                         "weft: array i on device i % D"};
  for (int v = 0; v < 2 && rc == 0; v++) {
    if (m->ndev == 1) {
      rc = bench_skip(c, multi[v], "ms", "one device; needs two or more");
      continue;
    }
    double t = bench_stats_of(&m->s[V_ANY + v]).median;
    rc = bench_report(c, multi[v], "ms", &m->s[V_ANY + v], 0,
                      "D = %d: %.2f x raw on the same devices (target <= "
                      "1.05: %s); scaling efficiency %.0f %%",
                      m->ndev, t / raw, t / raw <= 1.05 ? "met" : "MISSED",
                      100.0 * one / (t * m->ndev));
  }
  bench_group(c);
  if (rc == 0 && m->ndev == 1)
    rc = bench_skip(c, "weft_copy device 0 to device 1", "GB/s",
                    "one device; needs two or more");
  else if (rc == 0) {
    int direct = 0;
    weft_device_peer(m->rt, 0, 1, &direct);
    rc = bench_report(c, "weft_copy device 0 to device 1", "GB/s",
                      &m->s[V_PEER], 0,
                      "%d copies of %zu bytes, from a task on device 1; "
                      "%s (weft_device_peer)",
                      PEER_COPIES, m->bytes,
                      direct ? "device to device" : "staged through the host");
  }
  return rc;
}

static int run(bench_ctx *c) {
  mg *m = calloc(1, sizeof *m);
  if (!m)
    return bench_fail(c, "out of memory");
  m->c = c;
  /* Deep stacks: the SGEMM's tasks call cuBLAS (multigpu_gemm.c). */
  int rc = bench_runtime_open_with(
      c, &(bench_rt_opts){.host_devices = 4, .stack_size = BENCH_CUBLAS_STACK},
      &m->rt);
  if (rc) {
    free(m);
    return rc;
  }
  demo_kernels_init(&m->k);
  int cuda = raw_on_cuda(m->rt);
  if ((rc = weft_device_count(m->rt, &m->ndev)) != 0)
    rc = bench_fail_weft(c, rc, "weft_device_count");
  if (m->ndev > MAXDEV)
    m->ndev = MAXDEV;
  m->n = 1ull << (bench_quick(c) ? 16 : cuda ? 24 : 18);
  if (rc == 0)
    rc = setup(m);
  for (int d = 0; rc == 0 && d < m->ndev; d++)
    for (int i = 0; rc == 0 && i < NARRAYS; i++)
      if ((rc = raw_stream_create_on(m->rt, d, 0, &m->rs[d][i])) != 0)
        rc = bench_fail(c, "raw_stream_create_on(device %d) failed: %d", d, rc);
  if (rc == 0 && (rc = raw_set_device(m->rt, 0)) != 0)
    rc = bench_fail(c, "raw_set_device(0) failed: %d", rc);
  for (int r = 0; rc == 0 && r <= bench_repeat(c); r++) {
    uint64_t ns = 0;
    poison(m);
    if ((rc = raw_run(m, 1, &ns)) || (rc = check(m, "raw")))
      break;
    if (r > 0)
      bench_samples_add(&m->s[V_RAW], (double)ns / 1e6);
    if (m->ndev > 1) {
      poison(m);
      if ((rc = raw_run(m, m->ndev, &ns)) || (rc = check(m, "raw, i % D")))
        break;
      if (r > 0)
        bench_samples_add(&m->s[V_RAW_SPREAD], (double)ns / 1e6);
    }
    for (int p = 0; p < 3 && rc == 0; p++) {
      if (p > 0 && m->ndev == 1)
        break;
      poison(m);
      if ((rc = weft_run(m, p, &ns)) ||
          (rc = check(m, p == 0   ? "weft, device 0"
                         : p == 1 ? "weft, WEFT_DEVICE_ANY"
                                  : "weft, i % D")))
        break;
      if (r > 0)
        bench_samples_add(&m->s[V_ONE + p], (double)ns / 1e6);
    }
    if (rc == 0 && m->ndev > 1) {
      if ((rc = peer_run(m, &ns)) != 0)
        break;
      if (r > 0)
        bench_samples_add(&m->s[V_PEER],
                          (double)PEER_COPIES * (double)m->bytes / (double)ns);
    }
  }
  for (int d = 0; d < m->ndev; d++)
    for (int i = 0; i < NARRAYS; i++)
      raw_stream_destroy(&m->rs[d][i]);
  teardown(m);
  if (rc == 0 && !bench_failed(c))
    rc = report(m);
  if (rc == 0 && !bench_failed(c))
    rc = multigpu_gemm(c, m->rt, m->ndev);
  if (bench_runtime_close(c, &m->rt) || bench_failed(c))
    rc = BENCH_FAIL;
  free(m);
  return rc;
}

const bench_scenario bench_sc_multigpu = {
    "multigpu",
    "seed 000's normalisation and a tiled SGEMM over every device: a task "
    "per array (panel) on one device, placed by weft, and spread by hand, "
    "against raw streams on one device and on every device; the peer-copy "
    "bandwidth",
    run};
