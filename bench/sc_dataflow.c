/* dataflow: a tiled Cholesky factorisation written once in sequential
 * order with declared accesses (weft/dataflow.h), against the same
 * algorithm ordered by hand with raw streams and events, and against one
 * stream: the classic StarPU and CUDASTF demonstration.
 *
 * The matrix and the loop are cholesky.h's. On CUDA the tile operations are
 * cuSOLVER's potrf and cuBLAS's trsm, syrk and gemm (weft_cusolver_dn and
 * weft_cublas in weft's tasks, handles of one's own per stream in the raw
 * versions); on the host backend, the bench's tile kernels (kernels.h). Rows,
 * wall clock from the first operation issued to the last one's completion:
 * - raw, hand-ordered (baseline): S streams, each tile's operations on
 *   the stream of its output tile, an event per tile recorded after each
 *   write and waited for by every operation that reads or writes it;
 * - raw, one stream: the operations in order;
 * - weft: a task per tile operation, spawned in the loop's order by a
 *   driver task with the tiles each reads and writes declared, no stream
 *   or event written, then joined, inside a range `dataflow n=N b=B`
 *   (traced, `weft trace explain --range` reads one size);
 * - weft, captured: the same loop inside weft_graph_begin/end (each spawn
 *   a step of one graph, with the edges its declarations imply), captured
 *   once; a replay is one weft_graph_launch and weft_sync.
 * GFLOP/s = n^3 / 3 per factorisation, in the notes. Check after every
 * variant: 64 sampled entries of L L^T within 1e-3 relative of A (1e-9 in
 * FP64). Targets: weft >= 0.98 x the hand-ordered throughput, >= 2 x one
 * stream's where the DAG allows it. On CUDA a full run factors five sizes (n
 * 4096 to 16384, tiles 256 to 1024), each its own rows; WEFT_BENCH_TILES
 * picks others. Then the bookkeeping:
 * spawning a task that declares three tile accesses against spawning one that
 * declares none, ns per spawn; and at scale, the record's cost an access in the
 * four shapes of issue 37 at 1e5 and 1e6 accesses (below, "the bookkeeping at
 * scale").
 *
 * dataflow-fp64: the factorisation's rows alone, the same sizes and
 * variants in double precision (cuSOLVER's Dpotrf, cuBLAS's Dtrsm, Dsyrk
 * and Dgemm; the tile kernels' _f64 versions on the host). The bookkeeping
 * rows do not depend on the element type, so it leaves them out. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cholesky.h"
#include "kernels.h"
#include "raw_api.h"
#ifdef WEFT_BENCH_CUDA
#include "weft/cuda.h"
#include "weft/cuda_libraries.h"
#endif

enum {
  V_HAND,
  V_ONE,
  V_WEFT,
  V_GRAPH,
  V_DECL,
  V_NODECL,
  V_DECL1, /* the same two in a runtime of one worker */
  V_NODECL1,
  NVARIANTS
};

typedef struct chol chol;

typedef struct op {
  chol *ch;
  chol_op o;
} op;

struct chol {
  bench_ctx *c;
  weft_runtime *rt;
  tile_kernels k;
  chol_prec prec;
  unsigned b, T, n;
  void *a0;    /* pinned: the matrix, tile-major, for every run */
  void *tiles; /* device */
  void *back;  /* pinned: the result read back */
  op *ops;
  size_t nops;
  weft_task **handles;
  int cuda;
  chol_raw raw; /* the raw versions */
  int lwork;
  void *gwork;    /* the captured potrf steps' workspaces, one per k */
  int capturing;  /* the weft driver is capturing its steps as a graph */
  char range[40]; /* the weft runs' range: `weft trace explain --range` */
  bench_samples s[NVARIANTS];
};

static size_t tile_bytes(const chol *ch) {
  return (size_t)ch->b * ch->b * chol_elem(ch->prec);
}

static void *tile(const chol *ch, unsigned i, unsigned j) {
  return (char *)ch->tiles + ((size_t)i * ch->T + j) * tile_bytes(ch);
}

/* Runs o weft's way, on the calling task's stream (lib: the task's handles
 * and workspace). */
static int run_op(chol *ch, const chol_op *o, const chol_lib *lib) {
  unsigned in[2][2] = {{0, 0}, {0, 0}};
  int nin = chol_inputs(o, in);
  return chol_run_op(ch->c, ch->cuda, &ch->k, lib, ch->b, o,
                     tile(ch, (unsigned)o->i, (unsigned)o->j),
                     nin > 0 ? tile(ch, in[0][0], in[0][1]) : NULL,
                     nin > 1 ? tile(ch, in[1][0], in[1][1]) : NULL, NULL);
}

/* ---- weft ---- */

static void op_task(void *arg) {
  op *o = arg;
  chol *ch = o->ch;
  /* Nothing allocates inside a capture: each potrf step its own. */
  void *work = ch->capturing && ch->cuda
                   ? (char *)ch->gwork +
                         (size_t)o->o.k * chol_work_bytes(ch->prec, ch->lwork)
                   : NULL;
  chol_lib lib;
  if (chol_task_lib(ch->c, ch->cuda, ch->prec, &o->o, ch->lwork, work, &lib) ==
      0)
    run_op(ch, &o->o, &lib);
  chol_task_lib_done(&lib);
}

static weft_task_opts declared(const op *x, weft_access acc[3]) {
  const chol *ch = x->ch;
  const chol_op *o = &x->o;
  size_t bytes = tile_bytes(ch);
  unsigned in[2][2];
  int nin = chol_inputs(o, in);
  for (int t = 0; t < nin; t++)
    acc[t] = (weft_access){tile(ch, in[t][0], in[t][1]), bytes, WEFT_READ};
  acc[nin] =
      (weft_access){tile(ch, (unsigned)o->i, (unsigned)o->j), bytes, WEFT_RW};
  weft_task_opts to;
  weft_task_opts_init(&to);
  to.name = "dataflow/tile";
  to.accesses = acc;
  to.naccesses = (size_t)nin + 1;
  return to;
}

typedef struct driver_job {
  chol *ch;
  uint64_t ns;
  weft_graph *graph; /* capture: made here; replay: launched */
} driver_job;

static void weft_driver(void *arg) {
  driver_job *d = arg;
  chol *ch = d->ch;
  int pushed = weft_range_push(ch->range) == 0;
  uint64_t t0 = bench_now_ns();
  size_t spawned = 0;
  for (; spawned < ch->nops; spawned++) {
    weft_access acc[3];
    weft_task_opts to = declared(&ch->ops[spawned], acc);
    int e = weft_task_spawn(ch->rt, &ch->handles[spawned], op_task,
                            &ch->ops[spawned], &to);
    if (e) {
      bench_fail_weft(ch->c, e, "weft_task_spawn");
      break;
    }
  }
  for (size_t i = 0; i < spawned; i++) {
    int e = weft_task_join(ch->handles[i]);
    if (e)
      bench_fail_weft(ch->c, e, "weft_task_join");
  }
  d->ns = bench_now_ns() - t0;
  if (pushed)
    weft_range_pop();
}

/* The same loop inside a graph capture: each spawn a step, nothing run;
 * the graph is d->graph. */
static void capture_driver(void *arg) {
  driver_job *d = arg;
  chol *ch = d->ch;
  int e = weft_graph_begin();
  if (e) {
    bench_fail_weft(ch->c, e, "weft_graph_begin");
    return;
  }
  ch->capturing = 1;
  for (size_t i = 0; i < ch->nops; i++) {
    weft_access acc[3];
    weft_task_opts to = declared(&ch->ops[i], acc);
    if ((e = weft_task_spawn(ch->rt, NULL, op_task, &ch->ops[i], &to)) != 0)
      break;
  }
  ch->capturing = 0;
  int end = weft_graph_end(&d->graph);
  if (e || end)
    bench_fail_weft(ch->c, e ? e : end,
                    e ? "weft_task_spawn (captured)" : "weft_graph_end");
}

/* One replay of d->graph, waited for. */
static void replay_driver(void *arg) {
  driver_job *d = arg;
  uint64_t t0 = bench_now_ns();
  int e = weft_graph_launch(d->graph);
  if (e == 0)
    e = weft_sync();
  d->ns = bench_now_ns() - t0;
  if (e)
    bench_fail_weft(d->ch->c, e, "weft_graph_launch");
}

/* ---- raw ---- */

static int raw_run(chol *ch, int hand, uint64_t *ns) {
  chol_raw_reset(&ch->raw);
  uint64_t t0 = bench_now_ns();
  for (size_t n = 0; n < ch->nops; n++)
    if (chol_raw_issue(ch->c, &ch->k, &ch->raw, ch->tiles, &ch->ops[n].o, hand))
      return BENCH_FAIL;
  if (chol_raw_sync(ch->c, &ch->raw, hand ? CHOL_NS : 1))
    return BENCH_FAIL;
  *ns = bench_now_ns() - t0;
  return 0;
}

/* ---- set-up, checks ---- */

static int reset(chol *ch) {
  size_t bytes = (size_t)ch->T * ch->T * tile_bytes(ch);
  BENCH_TRY(ch->c, weft_copy(ch->tiles, ch->a0, bytes));
  BENCH_TRY(ch->c, weft_sync());
  return 0;
}

/* The factor read back, checked against A (chol_check). */
static int check(chol *ch, const char *who) {
  size_t bytes = (size_t)ch->T * ch->T * tile_bytes(ch);
  BENCH_TRY(ch->c, weft_copy(ch->back, ch->tiles, bytes));
  BENCH_TRY(ch->c, weft_sync());
  return chol_check(ch->c, ch->prec, ch->a0, ch->back, ch->n, ch->b, who);
}

static int setup(chol *ch) {
  size_t bytes = (size_t)ch->T * ch->T * tile_bytes(ch);
  BENCH_TRY(ch->c, weft_pinned_alloc(bytes, &ch->a0));
  BENCH_TRY(ch->c, weft_pinned_alloc(bytes, &ch->back));
  BENCH_TRY(ch->c, weft_device_alloc(bytes, &ch->tiles));
  chol_matrix(ch->a0, ch->prec, ch->n, ch->b);
  size_t maxops = (size_t)ch->T * ch->T * ch->T;
  ch->ops = calloc(maxops, sizeof *ch->ops);
  ch->handles = calloc(maxops, sizeof *ch->handles);
  if (!ch->ops || !ch->handles)
    return bench_fail(ch->c, "out of memory");
  for (size_t i = 0; i < maxops; i++)
    ch->ops[i].ch = ch;
  chol_op *plan = calloc(maxops, sizeof *plan);
  if (!plan)
    return bench_fail(ch->c, "out of memory");
  ch->nops = chol_plan(ch->T, plan);
  for (size_t i = 0; i < ch->nops; i++)
    ch->ops[i].o = plan[i];
  free(plan);
  return 0;
}

static void teardown(chol *ch) {
  if (ch->tiles)
    weft_device_free(ch->tiles);
  if (ch->a0)
    weft_pinned_free(ch->a0);
  if (ch->back)
    weft_pinned_free(ch->back);
#ifdef WEFT_BENCH_CUDA
  if (ch->gwork)
    weft_device_free(ch->gwork);
#endif
  weft_sync();
  free(ch->ops);
  free(ch->handles);
}

/* ---- the bookkeeping ---- */

static void nothing(void *arg) { (void)arg; }

/* The spawn loop's cost in rt, its samples into ch->s[v] (declaring) and
 * ch->s[v + 1] (not); accesses: how many a declaring spawn made, on
 * average. */
typedef struct cost_job {
  chol *ch;
  weft_runtime *rt;
  int v;
  double accesses;
} cost_job;

static void spawn_cost(void *arg) {
  cost_job *j = arg;
  chol *ch = j->ch;
  /* The same count under --quick: the loop takes milliseconds, and a
   * shorter one measured the workers' start more than the record. */
  long n = 20000;
  weft_task **h = malloc((size_t)n * sizeof *h);
  if (!h) {
    bench_fail(ch->c, "out of memory");
    return;
  }
  size_t made = 0;
  for (int r = 0; r <= bench_repeat(ch->c); r++)
    for (int decl = 0; decl < 2; decl++) {
      uint64_t t0 = bench_now_ns();
      long i = 0;
      for (; i < n; i++) {
        const op *o = &ch->ops[(size_t)i % ch->nops];
        weft_access acc[3];
        weft_task_opts to = declared(o, acc);
        if (!decl)
          to.naccesses = 0;
        made += to.naccesses;
        if (weft_task_spawn(j->rt, &h[i], nothing, NULL, &to) != 0) {
          bench_fail(ch->c, "weft_task_spawn: %s", weft_last_error_message());
          break;
        }
      }
      uint64_t ns = bench_now_ns() - t0;
      for (long k = 0; k < i; k++)
        weft_task_join(h[k]);
      if (r > 0)
        bench_samples_add(&ch->s[decl ? j->v : j->v + 1],
                          (double)ns / (double)n);
    }
  j->accesses = (double)made / (double)(n * (bench_repeat(ch->c) + 1));
  free(h);
}

/* The sizes factored: on the H200, tiles of 256 to 1024 and matrices of
 * 4096 to 16384 (the issue's range); --quick and the host backend, one
 * small size. */
typedef struct size {
  unsigned b, T;
} size;
static const size cuda_sizes[] = {
    {256, 16}, {512, 16}, {256, 32}, {1024, 16}, {512, 32}};
static const size cuda_quick = {256, 8}, host_size = {48, 8},
                  host_quick = {32, 6};
enum { MAX_CHOSEN = 8, MAX_TILES = 64 };

/* WEFT_BENCH_TILES, "N:B[,N:B...]": the sizes to factor instead (n a
 * multiple of the tile b, at most MAX_TILES tiles a side), to trace or
 * time one size alone. Returns how many, 0 when unset, or BENCH_FAIL. */
static int chosen_sizes(bench_ctx *c, size out[MAX_CHOSEN]) {
  const char *env = getenv("WEFT_BENCH_TILES");
  if (!env || !*env)
    return 0;
  int n = 0;
  for (const char *p = env; *p;) {
    char *end;
    unsigned long nn = strtoul(p, &end, 10), b = 0;
    int ok = end != p && *end == ':';
    if (ok) {
      p = end + 1;
      b = strtoul(p, &end, 10);
      ok = end != p && (*end == ',' || !*end);
    }
    if (!ok || n == MAX_CHOSEN || b < 1 || b > 4096 || nn % b || nn / b < 1 ||
        nn / b > MAX_TILES)
      return bench_fail(c,
                        "WEFT_BENCH_TILES='%s': want up to %d sizes N:B, "
                        "comma-separated, N a multiple of the tile B (1 to "
                        "4096) with 1 to %d tiles a side",
                        env, MAX_CHOSEN, MAX_TILES);
    out[n++] = (size){(unsigned)b, (unsigned)(nn / b)};
    p = *end ? end + 1 : end;
  }
  return n;
}

/* Factors one size in precision p, each variant bench_repeat times, and
 * reports its rows; with bookkeeping, the spawn cost rows too. */
static int factor(bench_ctx *c, weft_runtime *rt, chol_prec p, size sz,
                  int sized, int bookkeeping) {
  chol *ch = calloc(1, sizeof *ch);
  if (!ch)
    return bench_fail(c, "out of memory");
  ch->c = c;
  ch->rt = rt;
  ch->prec = p;
  tile_kernels_init(&ch->k, p == CHOL_F64);
  ch->cuda = raw_on_cuda(ch->rt);
  ch->b = sz.b;
  ch->T = sz.T;
  ch->n = ch->b * ch->T;
  snprintf(ch->range, sizeof ch->range, "dataflow%s n=%u b=%u",
           p == CHOL_F64 ? "-fp64" : "", ch->n, ch->b);
  int rc = setup(ch);
  if (rc == 0)
    rc = chol_raw_open(c, ch->rt, p, ch->T, ch->b, ch->tiles, &ch->lwork,
                       &ch->raw);
  /* The captured potrf steps' workspaces, of the size the raw set-up
   * asked cuSOLVER for. */
  if (rc == 0 && ch->cuda &&
      (rc = weft_device_alloc(ch->T * chol_work_bytes(p, ch->lwork),
                              &ch->gwork)) != 0)
    rc = bench_fail_weft(c, rc, "weft_device_alloc(potrf workspaces)");
  driver_job g = {ch, 0, NULL};
  for (int r = 0; rc == 0 && r <= bench_repeat(c); r++) {
    uint64_t ns = 0;
    if ((rc = reset(ch)) || (rc = raw_run(ch, 1, &ns)) ||
        (rc = check(ch, "raw hand-ordered")))
      break;
    if (r > 0)
      bench_samples_add(&ch->s[V_HAND], (double)ns / 1e6);
    if ((rc = reset(ch)) || (rc = raw_run(ch, 0, &ns)) ||
        (rc = check(ch, "raw one stream")))
      break;
    if (r > 0)
      bench_samples_add(&ch->s[V_ONE], (double)ns / 1e6);
    driver_job d = {ch, 0, NULL};
    if ((rc = reset(ch)) || (rc = bench_in_task(c, ch->rt, weft_driver, &d)))
      break;
    if (bench_failed(c) || (rc = check(ch, "weft")))
      break;
    if (r > 0)
      bench_samples_add(&ch->s[V_WEFT], (double)d.ns / 1e6);
    /* Captured once, after the warm-up's weft run: the streams' library
     * handles and workspaces are made by then (nothing allocates inside
     * a capture, weft's own calls included). */
    if (!g.graph && ((rc = bench_in_task(c, ch->rt, capture_driver, &g)) ||
                     (rc = bench_failed(c) ? BENCH_FAIL : 0)))
      break;
    if ((rc = reset(ch)) || (rc = bench_in_task(c, ch->rt, replay_driver, &g)))
      break;
    if (bench_failed(c) || (rc = check(ch, "weft graph replay")))
      break;
    if (r > 0)
      bench_samples_add(&ch->s[V_GRAPH], (double)g.ns / 1e6);
  }
  if (g.graph && weft_graph_destroy(g.graph) != 0 && rc == 0)
    rc = bench_fail(c, "weft_graph_destroy: %s", weft_last_error_message());
  /* Streams the runtime holds after this size's runs (and those of the
   * sizes before it), before the spawn-cost loop makes its own: a task
   * keeps its stream until its work is done (unless a follower takes it
   * over), and a declared task until those it follows are, so more than
   * were made ahead means some were made while the GPU worked. */
  weft_task_stats ts = {.struct_size = sizeof ts};
  if (weft_task_stats_get(ch->rt, &ts) != 0)
    ts.streams = 0;
  /* The spawn cost, then the same in a runtime of one worker, where the
   * spawned tasks wait for the loop to end: the record's own cost, without
   * workers running the tasks beside the spawner. */
  cost_job cj = {ch, ch->rt, V_DECL, 0}, cj1 = {ch, NULL, V_DECL1, 0};
  if (rc == 0 && bookkeeping && !bench_failed(c))
    rc = bench_in_task(c, ch->rt, spawn_cost, &cj);
  if (rc == 0 && bookkeeping && !bench_failed(c) &&
      (rc = bench_runtime_open_with(c, &(bench_rt_opts){.workers = 1},
                                    &cj1.rt)) == 0) {
    rc = bench_in_task(c, cj1.rt, spawn_cost, &cj1);
    if (bench_runtime_close(c, &cj1.rt) && rc == 0)
      rc = BENCH_FAIL;
  }
  chol_raw_close(&ch->raw);
  teardown(ch);
  if (rc == 0 && bench_failed(c))
    rc = BENCH_FAIL;
  char buf[128];
  if (rc == 0) {
    double flop = (double)ch->n * ch->n * ch->n / 3.0;
    double hand = bench_stats_of(&ch->s[V_HAND]).median;
    double one = bench_stats_of(&ch->s[V_ONE]).median;
    double weft = bench_stats_of(&ch->s[V_WEFT]).median;
    double graph = bench_stats_of(&ch->s[V_GRAPH]).median;
    rc = bench_report(
        c,
        chol_label(buf, sizeof buf, "raw: hand-ordered, 8 streams + events",
                   ch->n, ch->b, sized),
        "ms", &ch->s[V_HAND], BENCH_BASELINE,
        "%.1f GFLOP/s; n = %u, %u x %u tiles of %u, %zu tile operations",
        flop / hand / 1e6, ch->n, ch->T, ch->T, ch->b, ch->nops);
    if (rc == 0)
      rc = bench_report(
          c,
          chol_label(buf, sizeof buf, "raw: one stream", ch->n, ch->b, sized),
          "ms", &ch->s[V_ONE], 0, "%.1f GFLOP/s; the operations in order",
          flop / one / 1e6);
    if (rc == 0)
      rc = bench_report(
          c,
          chol_label(buf, sizeof buf,
                     "weft: a task per tile operation, declared", ch->n, ch->b,
                     sized),
          "ms", &ch->s[V_WEFT], 0,
          "%.1f GFLOP/s: %.2f x the hand-ordered throughput, target >= 0.98 "
          "(%s); %.2f x one stream's, target >= 2 (%s); %llu streams held "
          "by the runtime",
          flop / weft / 1e6, hand / weft,
          hand / weft >= 0.98 ? "met" : "MISSED", one / weft,
          one / weft >= 2 ? "met" : "MISSED", (unsigned long long)ts.streams);
    if (rc == 0)
      rc = bench_report(
          c,
          chol_label(buf, sizeof buf, "weft: the same captured, one replay",
                     ch->n, ch->b, sized),
          "ms", &ch->s[V_GRAPH], 0,
          "%.1f GFLOP/s: %.2f x the hand-ordered throughput; the loop "
          "captured once as one graph of steps, each replay one "
          "weft_graph_launch + weft_sync",
          flop / graph / 1e6, hand / graph);
    bench_group(c);
  }
  for (int one = 0; rc == 0 && bookkeeping && one < 2; one++) {
    const cost_job *j = one ? &cj1 : &cj;
    double extra = bench_stats_of(&ch->s[j->v]).median -
                   bench_stats_of(&ch->s[j->v + 1]).median;
    rc = bench_report(c,
                      one ? "one worker: spawn declaring nothing"
                          : "spawn declaring nothing",
                      "ns", &ch->s[j->v + 1], BENCH_BASELINE,
                      one ? "the same in a runtime of one worker: the tasks "
                            "run after the loop"
                          : "a no-op task from a task, joined later, untimed");
    if (rc == 0)
      rc = bench_report(
          c,
          one ? "one worker: spawn declaring 3 tile accesses"
              : "spawn declaring 3 tile accesses",
          "ns", &ch->s[j->v], 0,
          "%.0f ns per access beyond the plain spawn (%.2f accesses a "
          "spawn: a tile operation's, 1 to 3); %s, target <= 150 ns (%s)",
          extra / j->accesses, j->accesses,
          one ? "the record's own cost"
              : "beside the workers running the tasks",
          extra / j->accesses <= 150 ? "met" : "MISSED");
    bench_group(c);
  }
  free(ch);
  return rc;
}

/* ---- the bookkeeping at scale (issue 37) ----
 *
 * The four shapes whose record was quadratic, each spawned from a driver
 * task of its own (a new record) with no-op tasks, n accesses timed in
 * all, in ns an access: n readers of one range then a writer; n writers
 * of gapped bytes then a reader over them all; n writes in falling
 * address order (and rising, for reference); a 4096 x 4096 float matrix
 * declared tile by tile down its columns, a range per tile row (tiles of
 * 64: 262 144 accesses; of 16: 1 048 576). The baseline: n spawns that
 * declare nothing. The addresses are a buffer's that no task touches. */

enum { SC_PLAIN, SC_READERS, SC_GAPPED, SC_FALLING, SC_RISING, SC_TILES, NSC };

typedef struct scale_job {
  bench_ctx *c;
  weft_runtime *rt;
  int shape;
  long n; /* accesses; tiles: the tile's side */
  char *base;
  uint64_t ns, one_ns; /* all accesses; the last spawn alone */
  long accesses;
} scale_job;

static int scale_spawn(scale_job *j, weft_task **keep, const weft_access *a,
                       size_t na) {
  weft_task_opts to;
  weft_task_opts_init(&to);
  to.accesses = a;
  to.naccesses = na;
  int rc = weft_task_spawn(j->rt, keep, nothing, NULL, &to);
  return rc ? bench_fail_weft(j->c, rc, "weft_task_spawn") : 0;
}

/* Untimed: a task writing the whole span (it follows every task before
 * it, directly or through others), joined, then every task gone. */
static void scale_drain(scale_job *j, size_t span) {
  weft_task *last = NULL;
  weft_access all = {j->base, span, WEFT_RW};
  if (scale_spawn(j, &last, &all, 1) == 0)
    weft_task_join(last);
  weft_task_stats st = {.struct_size = sizeof st};
  while (weft_task_stats_get(j->rt, &st) == 0 && st.live > 1)
    weft_yield();
}

static void scale_driver(void *arg) {
  scale_job *j = arg;
  long n = j->n;
  uint64_t t0 = bench_now_ns(), t1 = t0;
  size_t span = 64;
  int rc = 0;
  switch (j->shape) {
  case SC_PLAIN:
    for (long i = 0; i < n && rc == 0; i++)
      rc = scale_spawn(j, NULL, NULL, 0);
    t1 = bench_now_ns();
    j->accesses = n;
    break;
  case SC_READERS: {
    weft_access r = {j->base, 64, WEFT_READ};
    for (long i = 0; i < n - 1 && rc == 0; i++)
      rc = scale_spawn(j, NULL, &r, 1);
    t1 = bench_now_ns();
    r.mode = WEFT_WRITE;
    if (rc == 0)
      rc = scale_spawn(j, NULL, &r, 1);
    j->accesses = n;
    break;
  }
  case SC_GAPPED: {
    for (long i = 0; i < n - 1 && rc == 0; i++) {
      weft_access w = {j->base + 2 * i, 1, WEFT_WRITE};
      rc = scale_spawn(j, NULL, &w, 1);
    }
    t1 = bench_now_ns();
    span = (size_t)(2 * n);
    weft_access r = {j->base, span, WEFT_READ};
    if (rc == 0)
      rc = scale_spawn(j, NULL, &r, 1);
    j->accesses = n;
    break;
  }
  case SC_FALLING:
  case SC_RISING:
    for (long i = 0; i < n && rc == 0; i++) {
      long k = j->shape == SC_FALLING ? n - 1 - i : i;
      weft_access w = {j->base + 16 * k, 8, WEFT_WRITE};
      rc = scale_spawn(j, NULL, &w, 1);
    }
    t1 = bench_now_ns();
    span = (size_t)(16 * n);
    j->accesses = n;
    break;
  case SC_TILES: {
    long b = n, side = 4096, t = side / b;
    weft_access *acc = malloc((size_t)b * sizeof *acc);
    if (!acc) {
      bench_fail(j->c, "out of memory");
      return;
    }
    for (long tj = 0; tj < t && rc == 0; tj++)
      for (long ti = 0; ti < t && rc == 0; ti++) {
        for (long r = 0; r < b; r++)
          acc[r] = (weft_access){j->base + 4 * ((ti * b + r) * side + tj * b),
                                 (size_t)(4 * b), WEFT_RW};
        rc = scale_spawn(j, NULL, acc, (size_t)b);
      }
    free(acc);
    t1 = bench_now_ns();
    span = (size_t)(4 * side * side);
    j->accesses = side * side / b;
    break;
  }
  }
  uint64_t t2 = bench_now_ns();
  j->ns = t2 - t0;
  j->one_ns = t2 - t1;
  scale_drain(j, span);
}

/* The rows of one size (n accesses; tiles of tb), each shape repeated. */
static int scale_size(bench_ctx *c, weft_runtime *rt, char *base, long n,
                      long tb, const double *prev, double *per) {
  static bench_samples s[NSC], s1[NSC];
  double one[NSC];
  int rounds = bench_repeat(c) < 3 || n < 1000000 ? bench_repeat(c) : 3;
  memset(s, 0, sizeof s);
  memset(s1, 0, sizeof s1);
  for (int r = 0; r <= rounds; r++)
    for (int sh = 0; sh < NSC; sh++) {
      scale_job j = {c, rt, sh, sh == SC_TILES ? tb : n, base, 0, 0, 0};
      if (bench_in_task(c, rt, scale_driver, &j) != 0 || bench_failed(c))
        return BENCH_FAIL;
      if (r > 0) {
        bench_samples_add(&s[sh], (double)j.ns / (double)j.accesses);
        bench_samples_add(&s1[sh], (double)j.one_ns);
      }
    }
  for (int sh = 0; sh < NSC; sh++) {
    per[sh] = bench_stats_of(&s[sh]).median;
    one[sh] = bench_stats_of(&s1[sh]).median;
  }
  char row[96], growth[NSC][80];
  for (int sh = 0; sh < NSC; sh++) {
    growth[sh][0] = '\0';
    if (prev && prev[sh] > 0)
      snprintf(growth[sh], sizeof growth[sh],
               "; %.2f x the smaller size's, target <= 2 (%s)",
               per[sh] / prev[sh], per[sh] / prev[sh] <= 2 ? "met" : "MISSED");
  }
  long tiles = 4096 / tb;
  char sz[16];
  snprintf(sz, sizeof sz, "1e%d", (int)lround(log10((double)n)));
  snprintf(row, sizeof row, "spawn declaring nothing, %s", sz);
  int rc = bench_report(c, row, "ns", &s[SC_PLAIN], BENCH_BASELINE,
                        "%ld no-op tasks from a task, per spawn", n);
  snprintf(row, sizeof row, "readers then a writer, %s", sz);
  if (rc == 0)
    rc = bench_report(c, row, "ns", &s[SC_READERS], 0,
                      "per access: %ld readers of one range, then a writer "
                      "whose spawn took %.1f us%s",
                      n - 1, one[SC_READERS] / 1e3, growth[SC_READERS]);
  snprintf(row, sizeof row, "gapped writers then a reader, %s", sz);
  if (rc == 0)
    rc =
        bench_report(c, row, "ns", &s[SC_GAPPED], 0,
                     "per access: %ld writers of gapped bytes, then a "
                     "reader over %ld ranges following them all, whose "
                     "spawn took %.1f ms%s",
                     n - 1, 2 * n - 1, one[SC_GAPPED] / 1e6, growth[SC_GAPPED]);
  snprintf(row, sizeof row, "writes at falling addresses, %s", sz);
  if (rc == 0)
    rc = bench_report(c, row, "ns", &s[SC_FALLING], 0, "per access%s",
                      growth[SC_FALLING]);
  snprintf(row, sizeof row, "writes at rising addresses, %s", sz);
  if (rc == 0)
    rc = bench_report(c, row, "ns", &s[SC_RISING], 0,
                      "per access, for reference%s", growth[SC_RISING]);
  snprintf(row, sizeof row, "4096^2 matrix in tiles of %ld, down columns", tb);
  if (rc == 0)
    rc = bench_report(c, row, "ns", &s[SC_TILES], 0,
                      "per access: %ld x %ld tiles, each declared as its %ld "
                      "rows, %ld accesses%s",
                      tiles, tiles, tb, 4096L * 4096 / tb, growth[SC_TILES]);
  bench_group(c);
  return rc;
}

static int scale_rows(bench_ctx *c, weft_runtime *rt) {
  long small = bench_size(c, 100000, 1000), big = bench_size(c, 1000000, 10000);
  long tb_small = bench_size(c, 64, 256), tb_big = bench_size(c, 16, 128);
  /* The largest span: the matrix, or 16 bytes a falling write. */
  size_t span = (size_t)4 * 4096 * 4096;
  if ((size_t)(16 * big) > span)
    span = (size_t)(16 * big);
  char *base = malloc(span);
  if (!base)
    return bench_fail(c, "out of memory");
  double per_small[NSC], per_big[NSC];
  int rc = scale_size(c, rt, base, small, tb_small, NULL, per_small);
  if (rc == 0)
    rc = scale_size(c, rt, base, big, tb_big, per_small, per_big);
  free(base);
  return rc;
}

/* The factorisation's rows in precision p; in FP32 the bookkeeping's
 * too. */
static int run(bench_ctx *c, chol_prec p) {
  weft_runtime *rt = NULL;
  int rc = bench_runtime_open_with(
      c, &(bench_rt_opts){.stack_size = BENCH_CUBLAS_STACK}, &rt);
  if (rc)
    return rc;
  int quick = bench_size(c, 0, 1);
  size chosen[MAX_CHOSEN];
  int nchosen = chosen_sizes(c, chosen);
  const size *sizes = &host_size;
  size_t nsizes = 1;
  if (nchosen < 0) {
    rc = nchosen;
  } else if (nchosen > 0) {
    sizes = chosen;
    nsizes = (size_t)nchosen;
  } else if (raw_on_cuda(rt) && !quick) {
    sizes = cuda_sizes;
    nsizes = sizeof cuda_sizes / sizeof *cuda_sizes;
  } else if (raw_on_cuda(rt)) {
    sizes = &cuda_quick;
  } else if (quick) {
    sizes = &host_quick;
  }
  int f32 = p == CHOL_F32;
  for (size_t i = 0; rc == 0 && i < nsizes; i++)
    rc = factor(c, rt, p, sizes[i], nsizes > 1 || nchosen > 0, f32 && i == 0);
  if (rc == 0 && f32)
    rc = scale_rows(c, rt);
  if (bench_runtime_close(c, &rt))
    rc = BENCH_FAIL;
  return rc;
}

static int run_f32(bench_ctx *c) { return run(c, CHOL_F32); }
static int run_f64(bench_ctx *c) { return run(c, CHOL_F64); }

const bench_scenario bench_sc_dataflow = {
    "dataflow",
    "ordering from declared data: a tiled Cholesky factorisation in "
    "sequential order with declared accesses, against the same ordered by "
    "hand with streams and events, and one stream; then the record's cost "
    "an access at 1e5 and 1e6",
    run_f32};

const bench_scenario bench_sc_dataflow_fp64 = {
    "dataflow-fp64",
    "dataflow's tiled Cholesky rows in FP64 (double): declared accesses "
    "against the same ordered by hand with streams and events, and one "
    "stream",
    run_f64};
