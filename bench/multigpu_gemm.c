/* The multigpu scenario's second part: one SGEMM, out = a · b for n x n
 * row-major floats, split into NPANELS row panels (out's rows p·r ..
 * (p+1)·r - 1 are a's same rows times all of b) and spread over devices.
 *
 * b is copied to every device before timing (a broadcast the rows leave
 * out); a, b and out live in pinned memory. Per panel, timed: a's panel
 * copied in, the panel's SGEMM (cuBLAS on CUDA, the seed matmul kernel on
 * the host backend), the out panel copied back; each device holds its own
 * buffers for every panel, so any placement finds them. Rows, wall clock
 * from the first operation issued to the last one's completion:
 * - raw, a stream per panel on device 0 (baseline): one thread, one cuBLAS
 *   handle set to each panel's stream (cublasSetStream), as weft_cublas
 *   does for a task;
 * - weft, a task per panel on device 0;
 * - raw, panel p on device p % D: a stream per panel made on its device, a
 *   handle per device, cudaSetDevice before each panel's calls;
 * - weft, panel p on device p % D, and placed by weft (WEFT_DEVICE_ANY);
 * - weft, a and out registered as blocks of a panel, dealt round the
 *   devices (weft_data_register_blocks, WEFT_DATA_CYCLIC), a's placed at
 *   their homes, a task per panel there getting its blocks; out comes
 *   back at the unregister (timed from the registration); then the same
 *   with each out block's write-back started after its task's spawn
 *   (weft_data_prefetch to WEFT_DATA_HOST), as raw copies each panel out
 *   as it ends.
 * The spread rows give the ratio to raw on the same devices and the
 * scaling efficiency against the same side on one device, in the same
 * run. With one device the spread rows are skipped. After every run 64
 * sampled entries of out must match a · b computed in double on the CPU
 * within 1e-3 relative. */
#include "multigpu_gemm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "raw_api.h"
#include "weft/data.h"

enum { NPANELS = 16, NCHECK = 64 };
/* In the order they run; with one device the spread ones do not. */
enum {
  G_RAW_ONE,
  G_WEFT_ONE,
  G_WEFT_BLOCKS,
  G_WEFT_BLOCKS_BACK,
  G_RAW_SPREAD,
  G_WEFT_SPREAD,
  G_WEFT_ANY,
  G_N
};

typedef struct mgg {
  bench_ctx *c;
  weft_runtime *rt;
  seed_kernels k;
  int ndev, cuda;
  unsigned n, rows; /* rows per panel */
  size_t panel_bytes;
  float *a, *b, *out; /* pinned */
  float *db[MULTIGPU_MAXDEV];
  float *da[MULTIGPU_MAXDEV][NPANELS], *dc[MULTIGPU_MAXDEV][NPANELS];
  raw_stream rs[MULTIGPU_MAXDEV][NPANELS];
#ifdef WEFT_BENCH_CUDA
  cublasHandle_t blas[MULTIGPU_MAXDEV];
#endif
  bench_samples s[G_N];
} mgg;

/* ---- set-up, on every device ---- */

typedef struct dev_job {
  mgg *g;
  int free;
} dev_job;

static void dev_buffers(void *arg) {
  dev_job *j = arg;
  mgg *g = j->g;
  int d = weft_task_device();
  size_t all = (size_t)g->n * g->n * sizeof(float);
  if (j->free) {
    if (g->db[d])
      weft_device_free(g->db[d]);
    for (int p = 0; p < NPANELS; p++) {
      if (g->da[d][p])
        weft_device_free(g->da[d][p]);
      if (g->dc[d][p])
        weft_device_free(g->dc[d][p]);
    }
    return;
  }
  int e = weft_device_alloc(all, (void **)&g->db[d]);
  for (int p = 0; p < NPANELS && !e; p++) {
    e = weft_device_alloc(g->panel_bytes, (void **)&g->da[d][p]);
    if (!e)
      e = weft_device_alloc(g->panel_bytes, (void **)&g->dc[d][p]);
  }
  if (!e) /* the broadcast of b, untimed */
    e = weft_copy(g->db[d], g->b, all);
  if (!e)
    e = weft_sync();
  if (e)
    bench_fail_weft(g->c, e, "multigpu gemm: device buffers");
}

static int on_every_device(mgg *g, int free) {
  dev_job j = {g, free};
  int dev[MULTIGPU_MAXDEV];
  for (int d = 0; d < g->ndev; d++)
    dev[d] = d;
  return bench_tasks_on(g->c, g->rt, g->ndev, dev_buffers, &j, 0, dev);
}

static int raw_open(mgg *g) {
  for (int d = 0; d < g->ndev; d++) {
    for (int p = 0; p < NPANELS; p++)
      RAW_TRY(g->c, raw_stream_create_on(g->rt, d, 0, &g->rs[d][p]));
#ifdef WEFT_BENCH_CUDA
    if (g->cuda) /* made on device d: raw_stream_create_on set it */
      BLAS_TRY(g->c, cublasCreate(&g->blas[d]));
#endif
  }
  RAW_TRY(g->c, raw_set_device(g->rt, 0));
  return 0;
}

static void raw_close(mgg *g) {
  for (int d = 0; d < g->ndev; d++) {
    for (int p = 0; p < NPANELS; p++)
      raw_stream_destroy(&g->rs[d][p]);
#ifdef WEFT_BENCH_CUDA
    if (g->blas[d]) {
      raw_set_device(g->rt, d);
      cublasDestroy(g->blas[d]);
      g->blas[d] = NULL;
    }
#endif
  }
  raw_set_device(g->rt, 0);
}

static int setup(mgg *g) {
  size_t all = (size_t)g->n * g->n * sizeof(float);
  g->rows = g->n / NPANELS;
  g->panel_bytes = (size_t)g->rows * g->n * sizeof(float);
  BENCH_TRY(g->c, weft_pinned_alloc(all, (void **)&g->a));
  BENCH_TRY(g->c, weft_pinned_alloc(all, (void **)&g->b));
  BENCH_TRY(g->c, weft_pinned_alloc(all, (void **)&g->out));
  uint64_t seed = 7;
  for (size_t i = 0; i < (size_t)g->n * g->n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    g->a[i] = (float)(seed >> 40) / (float)(1u << 24);
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    g->b[i] = (float)(seed >> 40) / (float)(1u << 24) - 0.5f;
  }
  int rc = on_every_device(g, 0);
  return rc ? rc : raw_open(g);
}

static void teardown(mgg *g) {
  raw_close(g);
  on_every_device(g, 1);
  if (g->a)
    weft_pinned_free(g->a);
  if (g->b)
    weft_pinned_free(g->b);
  if (g->out)
    weft_pinned_free(g->out);
}

static int check(mgg *g, const char *who) {
  uint64_t seed = 31;
  for (int s = 0; s < NCHECK; s++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    unsigned i = (unsigned)((seed >> 33) % g->n);
    unsigned j = (unsigned)((seed >> 13) % g->n);
    double want = bench_gemm_ref(g->n, g->a, g->b, i, j);
    float got = g->out[(size_t)i * g->n + j];
    if (!(fabs((double)got - want) <= 1e-3 * (fabs(want) + 1.0)))
      return bench_fail(g->c, "%s: out[%u][%u] = %g, a · b has %g", who, i, j,
                        (double)got, want);
  }
  return 0;
}

/* ---- raw ---- */

static int raw_panel(mgg *g, int d, int p) {
  raw_stream s = g->rs[d][p];
  size_t off = (size_t)p * g->rows * g->n;
  float *da = g->da[d][p], *dc = g->dc[d][p];
  RAW_TRY(g->c, raw_copy(s, da, g->a + off, g->panel_bytes, RAW_H2D));
#ifdef WEFT_BENCH_CUDA
  if (g->cuda) {
    BLAS_TRY(g->c, cublasSetStream(g->blas[d], s.cs));
    BLAS_TRY(g->c,
             bench_sgemm_rows(g->blas[d], g->rows, g->n, da, g->db[d], dc));
  } else
#endif
  {
    const float *b = g->db[d];
    unsigned n = g->n, rows = g->rows;
    void *args[] = {&da, &b, &dc, &n, &rows};
    RAW_TRY(g->c, raw_launch(s, &g->k.matmul, seed_matmul_grid(rows),
                             WEFT_DIM1(1), args));
  }
  RAW_TRY(g->c, raw_copy(s, g->out + off, dc, g->panel_bytes, RAW_D2H));
  return 0;
}

/* Panel p on device p % ndev, from this thread, which is left on device 0
 * (weft's calls from it expect the device weft last made current). */
static int raw_run(mgg *g, int ndev, uint64_t *ns) {
  uint64_t t0 = bench_now_ns();
  for (int p = 0; p < NPANELS; p++) {
    int d = p % ndev;
    RAW_TRY(g->c, raw_set_device(g->rt, d));
    int rc = raw_panel(g, d, p);
    if (rc)
      return rc;
  }
  for (int p = 0; p < NPANELS; p++)
    RAW_TRY(g->c, raw_stream_sync(g->rs[p % ndev][p]));
  *ns = bench_now_ns() - t0;
  RAW_TRY(g->c, raw_set_device(g->rt, 0));
  return 0;
}

/* ---- weft ---- */

typedef struct panel_job {
  mgg *g;
  int p;
} panel_job;

static void panel_task(void *arg) {
  panel_job *j = arg;
  mgg *g = j->g;
  int d = weft_task_device();
  size_t off = (size_t)j->p * g->rows * g->n;
  float *da = g->da[d][j->p], *dc = g->dc[d][j->p];
  int e = weft_copy(da, g->a + off, g->panel_bytes);
  if (e) {
    bench_fail_weft(g->c, e, "weft_copy (a's panel)");
    return;
  }
  if (bench_gemm_rows(g->c, &g->k, g->rows, g->n, da, g->db[d], dc))
    return;
  if ((e = weft_copy(g->out + off, dc, g->panel_bytes)) != 0)
    bench_fail_weft(g->c, e, "weft_copy (out's panel)");
}

/* placement: 0 device 0, 1 panel p on p % D, 2 WEFT_DEVICE_ANY. */
static int weft_run(mgg *g, int placement, uint64_t *ns) {
  panel_job jobs[NPANELS];
  int dev[NPANELS];
  for (int p = 0; p < NPANELS; p++) {
    jobs[p] = (panel_job){g, p};
    dev[p] = placement == 0   ? 0
             : placement == 1 ? p % g->ndev
                              : WEFT_DEVICE_ANY;
  }
  uint64_t t0 = bench_now_ns();
  int rc =
      bench_tasks_on(g->c, g->rt, NPANELS, panel_task, jobs, sizeof *jobs, dev);
  *ns = bench_now_ns() - t0;
  return rc;
}

/* ---- weft, registered blocks ---- */

typedef struct block_job {
  mgg *g;
  weft_data *a, *out; /* the panel's blocks */
} block_job;

static void block_task(void *arg) {
  block_job *j = arg;
  mgg *g = j->g;
  float *da, *dc;
  int e = weft_data_get(j->a, WEFT_READ, (void **)&da);
  if (e == 0)
    e = weft_data_get(j->out, WEFT_WRITE, (void **)&dc);
  if (e) {
    bench_fail_weft(g->c, e, "weft_data_get (a panel's blocks)");
    return;
  }
  bench_gemm_rows(g->c, &g->k, g->rows, g->n, da, g->db[weft_task_device()],
                  dc);
}

/* back: each out block's write-back starts after its task's spawn. */
static int blocks_run(mgg *g, int back, uint64_t *ns) {
  size_t bytes = (size_t)NPANELS * g->panel_bytes;
  weft_data_blocks *ma = NULL, *mo = NULL;
  block_job jobs[NPANELS];
  weft_task *t[NPANELS];
  int spawned = 0;
  uint64_t t0 = bench_now_ns();
  int e = weft_data_register_blocks(g->rt, g->a, bytes, g->panel_bytes,
                                    WEFT_DATA_CYCLIC, &ma);
  if (e == 0)
    e = weft_data_register_blocks(g->rt, g->out, bytes, g->panel_bytes,
                                  WEFT_DATA_CYCLIC, &mo);
  if (e == 0)
    e = weft_data_blocks_place(ma);
  for (int p = 0; e == 0 && p < NPANELS; p++) {
    jobs[p] = (block_job){g, weft_data_blocks_at(ma, (size_t)p),
                          weft_data_blocks_at(mo, (size_t)p)};
    int home = weft_data_blocks_device(ma, (size_t)p);
    /* b's copy on the home device too: a task that declares is held to
     * what it declares (weft check). */
    weft_access acc[3] = {weft_data_access(jobs[p].a, WEFT_READ),
                          weft_data_access(jobs[p].out, WEFT_WRITE),
                          {g->db[home], bytes, WEFT_READ}};
    weft_task_opts o;
    weft_task_opts_init(&o);
    o.device = home;
    o.accesses = acc;
    o.naccesses = 3;
    if ((e = weft_task_spawn(g->rt, &t[p], block_task, &jobs[p], &o)) == 0)
      spawned++;
    if (e == 0 && back)
      e = weft_data_prefetch(jobs[p].out, WEFT_DATA_HOST);
  }
  for (int p = 0; p < spawned; p++) {
    int je = weft_task_join(t[p]);
    e = e ? e : je;
  }
  int ue = mo ? weft_data_unregister_blocks(mo) : 0;
  e = e ? e : ue;
  ue = ma ? weft_data_unregister_blocks(ma) : 0;
  e = e ? e : ue;
  *ns = bench_now_ns() - t0;
  return e ? bench_fail_weft(g->c, e, "weft, registered blocks") : 0;
}

/* ---- the rows ---- */

static int report(mgg *g) {
  bench_ctx *c = g->c;
  double flop = 2.0 * g->n * (double)g->n * g->n;
  double raw1 = bench_stats_of(&g->s[G_RAW_ONE]).median;
  double weft1 = bench_stats_of(&g->s[G_WEFT_ONE]).median;
  int rc = bench_report(c, "gemm raw: a stream per panel, device 0", "ms",
                        &g->s[G_RAW_ONE], BENCH_BASELINE,
                        "%.0f GFLOP/s; n = %u, %d panels of %u rows, b "
                        "already on every device",
                        flop / raw1 / 1e6, g->n, NPANELS, g->rows);
  if (rc == 0)
    rc = bench_report(c, "gemm weft: a task per panel, device 0", "ms",
                      &g->s[G_WEFT_ONE], 0,
                      "%.0f GFLOP/s; the one-device "
                      "reference",
                      flop / weft1 / 1e6);
  if (rc == 0) {
    double t = bench_stats_of(&g->s[G_WEFT_BLOCKS]).median;
    double raw =
        g->ndev == 1 ? raw1 : bench_stats_of(&g->s[G_RAW_SPREAD]).median;
    rc = bench_report(c, "gemm weft: a and out as blocks, cyclic, placed", "ms",
                      &g->s[G_WEFT_BLOCKS], 0,
                      "D = %d: %.0f GFLOP/s, %.2f x raw on the same devices; "
                      "weft_data_register_blocks, a task per panel at its "
                      "block's home",
                      g->ndev, flop / t / 1e6, t / raw);
    double b = bench_stats_of(&g->s[G_WEFT_BLOCKS_BACK]).median;
    if (rc == 0)
      rc = bench_report(
          c, "gemm weft: the same, out written back as each panel ends", "ms",
          &g->s[G_WEFT_BLOCKS_BACK], 0,
          "D = %d: %.0f GFLOP/s, %.2f x raw on the same devices, %.2f x "
          "the write-back at unregister; weft_data_prefetch(out block, "
          "WEFT_DATA_HOST) after each spawn",
          g->ndev, flop / b / 1e6, b / raw, b / t);
  }
  static const char *const names[] = {
      "gemm raw: panel p on device p % D", "gemm weft: panel p on device p % D",
      "gemm weft: a task per panel, WEFT_DEVICE_ANY"};
  for (int v = 0; v < 3 && rc == 0; v++) {
    if (g->ndev == 1) {
      rc = bench_skip(c, names[v], "ms", "one device; needs two or more");
      continue;
    }
    const bench_samples *s = &g->s[G_RAW_SPREAD + v];
    double t = bench_stats_of(s).median;
    double one = v == 0 ? raw1 : weft1;
    double raw = bench_stats_of(&g->s[G_RAW_SPREAD]).median;
    if (v == 0)
      rc = bench_report(c, names[v], "ms", s, 0,
                        "D = %d: %.0f GFLOP/s, scaling efficiency %.0f %% "
                        "(against raw on one device)",
                        g->ndev, flop / t / 1e6, 100.0 * one / (t * g->ndev));
    else
      rc = bench_report(c, names[v], "ms", s, 0,
                        "D = %d: %.0f GFLOP/s, %.2f x raw on the same devices "
                        "(target <= 1.05: %s), scaling efficiency %.0f %%",
                        g->ndev, flop / t / 1e6, t / raw,
                        t / raw <= 1.05 ? "met" : "MISSED",
                        100.0 * one / (t * g->ndev));
  }
  bench_group(c);
  return rc;
}

int multigpu_gemm(bench_ctx *c, weft_runtime *rt, int ndev) {
  mgg *g = calloc(1, sizeof *g);
  if (!g)
    return bench_fail(c, "out of memory");
  g->c = c;
  g->rt = rt;
  g->ndev = ndev;
  g->cuda = raw_on_cuda(rt);
  seed_kernels_init(&g->k);
  g->n = bench_quick(c) ? (g->cuda ? 1024 : 128) : (g->cuda ? 8192 : 256);
  int rc = setup(g);
  if (rc == 0)
    rc = seed_kernels_preload(&g->k, weft_runtime_backend(rt));
  for (int r = 0; rc == 0 && r <= bench_repeat(c); r++) {
    static const char *const who[G_N] = {
        "raw, device 0",           "weft, device 0", "weft, blocks",
        "weft, blocks back early", "raw, p % D",     "weft, p % D",
        "weft, WEFT_DEVICE_ANY"};
    for (int v = 0; v < G_N && rc == 0; v++) {
      if (ndev == 1 && v >= G_RAW_SPREAD)
        break;
      uint64_t ns = 0;
      memset(g->out, 0xff, (size_t)g->n * g->n * sizeof(float)); /* NaN */
      rc = v == G_RAW_ONE            ? raw_run(g, 1, &ns)
           : v == G_RAW_SPREAD       ? raw_run(g, ndev, &ns)
           : v == G_WEFT_BLOCKS      ? blocks_run(g, 0, &ns)
           : v == G_WEFT_BLOCKS_BACK ? blocks_run(g, 1, &ns)
                                     : weft_run(g,
                                                v == G_WEFT_ONE      ? 0
                                                : v == G_WEFT_SPREAD ? 1
                                                                     : 2,
                                                &ns);
      if (rc == 0)
        rc = check(g, who[v]);
      if (rc == 0 && r > 0)
        bench_samples_add(&g->s[v], (double)ns / 1e6);
    }
  }
  teardown(g);
  if (rc == 0 && !bench_failed(c))
    rc = report(g);
  free(g);
  return rc;
}
