/* graph: a chain of tiny kernels, launched one by one and replayed as a
 * graph (weft/graph.h).
 *
 * One step is CHAIN (80) launches of affine over 256 unsigned values
 * (x = x * 3 + k for step k, one block: each kernel costs what a launch
 * costs), ping-ponging between two device buffers, then a wait: an RK4-like
 * integrator's step, the case where a graph pays most. Variants, µs per
 * step, medians of bench_repeat() samples of STEPS steps each:
 * - raw per-kernel (baseline): CHAIN cudaLaunchKernel on a non-blocking
 *   stream and a cudaStreamSynchronize (raw_api.h; on the host backend its
 *   own streams, weft/host.h);
 * - raw CUDA graph (CUDA only): the step captured by hand
 *   (cudaStreamBeginCapture, cudaGraphInstantiate, untimed), then one
 *   cudaGraphLaunch and the sync per step;
 * - weft per-kernel: CHAIN weft_launch and a weft_sync, in a task;
 * - weft graph: the step captured with weft_graph_begin/end (untimed), then
 *   weft_graph_launch and weft_sync per step, in a task.
 * Targets: weft graph >= 3 x faster than raw per-kernel, and <= 1.02 x the
 * raw graph. Checks: every sample starts from zeroed buffers, and the
 * result after its STEPS steps must equal the same arithmetic on the CPU
 * (unsigned, so exact on both backends).
 *
 * Seed 004's model with graphs (raw graph, weft graph at every batch
 * size, and the graphed GPU-busy fraction) is in the saturation scenario,
 * beside the per-kernel variants it is compared with. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "kernels.h"
#include "raw_api.h"

enum { CHAIN = 80, WIDTH = 256, MUL = 3 };
enum { V_RAW, V_RAW_GRAPH, V_WEFT, V_WEFT_GRAPH, NVARIANTS };

typedef struct graph_bench {
  bench_ctx *c;
  weft_runtime *rt;
  bench_kernels k;
  long steps; /* per sample */
  unsigned *buf[2];
  /* Launch arguments of kernel k of a step: in, out, mul, add, n. */
  const unsigned *in[CHAIN];
  unsigned *out[CHAIN];
  unsigned mul, add[CHAIN], n;
  void *args[CHAIN][5];
  bench_samples s[NVARIANTS];
} graph_bench;

static void args_init(graph_bench *g) {
  g->mul = MUL;
  g->n = WIDTH;
  for (int k = 0; k < CHAIN; k++) {
    g->in[k] = g->buf[k & 1];
    g->out[k] = g->buf[(k + 1) & 1];
    g->add[k] = (unsigned)k + 1;
    g->args[k][0] = &g->in[k];
    g->args[k][1] = &g->out[k];
    g->args[k][2] = &g->mul;
    g->args[k][3] = &g->add[k];
    g->args[k][4] = &g->n;
  }
}

/* What buf[0] holds after steps steps from zero (CHAIN is even). */
static unsigned expected(long steps) {
  unsigned x = 0;
  for (long s = 0; s < steps; s++)
    for (int k = 0; k < CHAIN; k++)
      x = x * MUL + (unsigned)k + 1;
  return x;
}

static int zero(graph_bench *g) {
  BENCH_TRY(g->c, weft_memset(g->buf[0], 0, WIDTH * sizeof(unsigned)));
  BENCH_TRY(g->c, weft_memset(g->buf[1], 0, WIDTH * sizeof(unsigned)));
  BENCH_TRY(g->c, weft_sync());
  return 0;
}

static int check(graph_bench *g, const char *who) {
  unsigned got[WIDTH];
  if (bench_fetch(g->c, got, g->buf[0], sizeof got))
    return BENCH_FAIL;
  unsigned want = expected(g->steps);
  for (int i = 0; i < WIDTH; i++)
    if (got[i] != want)
      return bench_fail(g->c, "%s: element %d is %u after %ld steps, want %u",
                        who, i, got[i], g->steps, want);
  return 0;
}

static int weft_step_launches(graph_bench *g) {
  for (int k = 0; k < CHAIN; k++)
    BENCH_TRY(g->c, weft_launch(&g->k.affine, WEFT_DIM1(1),
                                WEFT_DIM1(BENCH_THREADS), 0, g->args[k]));
  return 0;
}

/* Samples of the two weft variants, from inside a task. */
static void weft_samples(void *arg) {
  graph_bench *g = arg;
  bench_ctx *c = g->c;
  weft_graph *graph = NULL;
  int e = weft_graph_begin();
  if (e) {
    bench_fail_weft(c, e, "weft_graph_begin");
    return;
  }
  int rc = weft_step_launches(g);
  e = weft_graph_end(&graph);
  if (rc || e) {
    if (e && !rc)
      bench_fail_weft(c, e, "weft_graph_end");
    return;
  }
  for (int r = 0; rc == 0 && r <= bench_repeat(c); r++)
    for (int v = V_WEFT; rc == 0 && v <= V_WEFT_GRAPH; v++) {
      if ((rc = zero(g)) != 0)
        break;
      uint64_t t0 = bench_now_ns();
      for (long s = 0; rc == 0 && s < g->steps; s++) {
        if (v == V_WEFT)
          rc = weft_step_launches(g);
        else if ((e = weft_graph_launch(graph)) != 0)
          rc = bench_fail_weft(c, e, "weft_graph_launch");
        if (rc == 0 && (e = weft_sync()) != 0)
          rc = bench_fail_weft(c, e, "weft_sync");
      }
      uint64_t ns = bench_now_ns() - t0;
      if (rc == 0)
        rc = check(g, v == V_WEFT ? "weft per-kernel" : "weft graph");
      if (rc == 0 && r > 0)
        bench_samples_add(&g->s[v], (double)ns / 1e3 / (double)g->steps);
    }
  if ((e = weft_graph_destroy(graph)) != 0 && rc == 0)
    bench_fail_weft(c, e, "weft_graph_destroy");
}

static int raw_step_launches(graph_bench *g, raw_stream s) {
  for (int k = 0; k < CHAIN; k++)
    RAW_TRY(g->c, raw_launch(s, &g->k.affine, WEFT_DIM1(1),
                             WEFT_DIM1(BENCH_THREADS), g->args[k]));
  return 0;
}

/* Samples of the raw variants from this thread; the graph on CUDA only. */
static int raw_samples(graph_bench *g) {
  bench_ctx *c = g->c;
  raw_stream s;
  RAW_TRY(c, raw_stream_create(g->rt, 0, &s));
  raw_graph graph = {0};
  int cuda = raw_is_cuda(s), rc = 0, e;
  if (cuda) {
    if ((e = raw_graph_begin(s)) != 0)
      rc = raw_fail(c, e, "raw_graph_begin", __LINE__);
    if (rc == 0)
      rc = raw_step_launches(g, s);
    if (rc == 0 && (e = raw_graph_end(s, &graph)) != 0)
      rc = raw_fail(c, e, "raw_graph_end", __LINE__);
  }
  for (int r = 0; rc == 0 && r <= bench_repeat(c); r++)
    for (int v = V_RAW; rc == 0 && v <= (cuda ? V_RAW_GRAPH : V_RAW); v++) {
      if ((rc = zero(g)) != 0)
        break;
      uint64_t t0 = bench_now_ns();
      for (long i = 0; rc == 0 && i < g->steps; i++) {
        if (v == V_RAW)
          rc = raw_step_launches(g, s);
        else if ((e = raw_graph_launch(s, graph)) != 0)
          rc = raw_fail(c, e, "raw_graph_launch", __LINE__);
        if (rc == 0 && (e = raw_stream_sync(s)) != 0)
          rc = raw_fail(c, e, "raw_stream_sync", __LINE__);
      }
      uint64_t ns = bench_now_ns() - t0;
      if (rc == 0)
        rc = check(g, v == V_RAW ? "raw per-kernel" : "raw graph");
      if (rc == 0 && r > 0)
        bench_samples_add(&g->s[v], (double)ns / 1e3 / (double)g->steps);
    }
  raw_graph_destroy(&graph);
  if ((e = raw_stream_destroy(&s)) != 0 && rc == 0)
    rc = raw_fail(c, e, "raw_stream_destroy", __LINE__);
  return rc;
}

static const bench_chart chart = {
    "graph",
    "an 80-kernel chain: one launch per kernel against one graph "
    "replay (us per step)",
    NULL, 0};

static int report(graph_bench *g) {
  bench_ctx *c = g->c;
  int cuda = bench_backend(c) == WEFT_BACKEND_CUDA;
  const char *raw = raw_label(bench_backend(c));
  double med[NVARIANTS];
  for (int v = 0; v < NVARIANTS; v++)
    med[v] = g->s[v].n ? bench_stats_of(&g->s[v]).median : 0;
  char name[80];
  snprintf(name, sizeof name, "%s: %d launches + sync", raw, CHAIN);
  bench_plot(c, &chart, name, 0);
  int rc = bench_report(c, name, "us", &g->s[V_RAW], BENCH_BASELINE,
                        "per step: %d affine kernels of %d threads, then a "
                        "stream sync; %ld steps a sample",
                        CHAIN, WIDTH, g->steps);
  if (cuda)
    bench_plot(c, &chart, "raw CUDA: graph launch + sync", 0);
  if (rc == 0 && cuda)
    rc = bench_report(c, "raw CUDA: graph launch + sync", "us",
                      &g->s[V_RAW_GRAPH], 0,
                      "the step captured by hand once (untimed); one "
                      "cudaGraphLaunch per step");
  bench_plot(c, &chart, "weft: launches + weft_sync", 0);
  if (rc == 0)
    rc = bench_report(c, "weft: launches + weft_sync", "us", &g->s[V_WEFT], 0,
                      "%d weft_launch from a task, then weft_sync", CHAIN);
  if (rc == 0) {
    char vs[96] = "";
    if (cuda)
      snprintf(vs, sizeof vs, "; %.3f x the raw graph, target <= 1.02 (%s)",
               med[V_WEFT_GRAPH] / med[V_RAW_GRAPH],
               med[V_WEFT_GRAPH] <= 1.02 * med[V_RAW_GRAPH] ? "met" : "MISSED");
    bench_plot(c, &chart, "weft: weft_graph_launch + weft_sync", 0);
    rc = bench_report(
        c, "weft: weft_graph_launch + weft_sync", "us", &g->s[V_WEFT_GRAPH], 0,
        "%.2f x faster than raw per-kernel, target >= 3 (%s)%s",
        med[V_RAW] / med[V_WEFT_GRAPH],
        med[V_RAW] >= 3 * med[V_WEFT_GRAPH] ? "met" : "MISSED", vs);
  }
  return rc;
}

static int run(bench_ctx *c) {
  graph_bench *g = calloc(1, sizeof *g);
  if (!g)
    return bench_fail(c, "out of memory");
  g->c = c;
  g->steps = bench_backend(c) == WEFT_BACKEND_CUDA ? bench_size(c, 200, 50)
                                                   : bench_size(c, 20, 5);
  bench_kernels_init(&g->k);
  int rc = bench_runtime_open(c, 0, &g->rt), e;
  if (rc == 0 && (e = bench_kernels_preload(&g->k)) != 0)
    rc = bench_fail_weft(c, e, "weft_kernel_preload");
  for (int i = 0; rc == 0 && i < 2; i++)
    if ((e = weft_device_alloc(WIDTH * sizeof(unsigned),
                               (void **)&g->buf[i])) != 0)
      rc = bench_fail_weft(c, e, "weft_device_alloc");
  if (rc == 0) {
    args_init(g);
    rc = bench_in_task(c, g->rt, weft_samples, g);
    if (rc == 0 && bench_failed(c))
      rc = BENCH_FAIL;
  }
  if (rc == 0)
    rc = raw_samples(g);
  for (int i = 0; i < 2; i++)
    if (g->buf[i] && (e = weft_device_free(g->buf[i])) != 0 && rc == 0)
      rc = bench_fail_weft(c, e, "weft_device_free");
  if (g->rt && (e = weft_sync()) != 0 && rc == 0)
    rc = bench_fail_weft(c, e, "weft_sync");
  if (bench_runtime_close(c, &g->rt))
    rc = BENCH_FAIL;
  if (rc == 0)
    rc = report(g);
  free(g);
  return rc;
}

const bench_scenario bench_sc_graph = {
    "graph",
    "an 80-kernel chain: launches one by one against one graph replay, weft "
    "and raw",
    run};
