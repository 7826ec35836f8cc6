/* cholesky: data that moves itself (weft/data.h) on the tiled Cholesky of
 * cholesky.h, with the matrix starting in host memory and the factor read
 * back there: what a program that has its data on the host does.
 *
 * Each lower tile is its own data. Rows, wall clock from the first copy
 * or registration to the factor in host memory, checked every repeat:
 * - hand-written (baseline): the matrix in pinned memory and a device
 *   copy allocated before; each lower tile copied in on the stream of its
 *   tile (8 raw streams, an event per tile, as dataflow's hand-ordered
 *   row), the factorisation ordered by those events, each tile copied
 *   back on its stream after its last write; and the same from and to
 *   pageable (malloc'd) memory;
 * - registered, pinned: a driver task registers every lower tile
 *   (weft_data_register), spawns a task per tile operation declaring the
 *   tiles' handles (weft_data_access), each task asks weft_data_get for
 *   its instances; then weft_data_unregister_n brings the factor back;
 * - registered, pageable: the same over malloc'd memory (weft stages it);
 * - registered, written back ahead, pinned and pageable: the same two
 *   runs, the driver starting each tile's write-back once it has spawned
 *   the tile's last writer (weft_data_prefetch to WEFT_DATA_HOST), as the
 *   hand-written run copies each tile out after its last write, so the
 *   copies back overlap the factorisation instead of following it;
 * - registered, pinned, copies at spawn: the pinned row in a runtime with
 *   data_prefetch 1, so that each tile moves when its first task is
 *   spawned rather than when it runs (weft/data.h, "Copies at spawn");
 * - out of core: the pinned row in a runtime whose data_limit is a
 *   quarter of the matrix's bytes, so tiles are evicted (written back)
 *   and fetched again; against the in-core row's throughput.
 * Notes: GFLOP/s (n^3 / 3 a factorisation) and the bytes weft moved
 * against the minimum (every lower tile in and out once). Targets (issue
 * 40): registered >= 0.95 x the hand-written throughput on the same kind
 * of memory, bytes <= 1.1 x
 * the minimum; out of core >= 0.6 x in core at n = 16384, tiles of 1024.
 * On CUDA a full run factors n = 8192 and 16384 with tiles of 512 and
 * 1024, out of core at 16384 / 1024 alone.
 *
 * cholesky-fp64: the same rows, sizes and targets in double precision
 * (cuSOLVER's Dpotrf, cuBLAS's Dtrsm, Dsyrk and Dgemm; the tile kernels'
 * _f64 versions on the host), so twice the bytes a tile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cholesky.h"
#include "kernels.h"
#include "raw_api.h"
#include "weft/data.h"
#include "weft/range.h"

/* V_HAND_B: the hand-written pinned run again, beside copies at spawn. */
enum {
  V_HAND,
  V_HAND_PAGEABLE,
  V_PINNED,
  V_PAGEABLE,
  V_PINNED_AHEAD,
  V_PAGEABLE_AHEAD,
  V_HAND_B,
  V_SPAWN,
  V_OOC,
  NV
};

typedef struct cbench cbench;

typedef struct optask {
  cbench *cb;
  chol_op o;
} optask;

struct cbench {
  bench_ctx *c;
  weft_runtime *rt;
  tile_kernels k;
  chol_prec prec;
  int cuda;
  unsigned n, b, T;
  size_t tile_bytes, nlower;
  void *a0;       /* pinned: the matrix, for every run and the check */
  void *pinned;   /* the pinned runs' matrix */
  void *pageable; /* the pageable run's */
  void *dev;      /* the hand-written run's device copy */
  optask *ops;
  size_t nops;
  size_t *last; /* per tile, T x T: the index in ops of its last writer */
  weft_task **handles;
  weft_data **d; /* per tile, T x T (the lower ones used) */
  int lwork;
  chol_raw raw; /* the hand-written run's streams, events, handles */
  bench_samples s[NV];
  uint64_t moved[NV];   /* bytes weft moved, the last repeat */
  uint64_t evictions;   /* out of core, the last repeat */
  uint64_t streams[NV]; /* streams the runtime held after its runs */
  uint64_t taken[NV];   /* streams taken over, the last repeat */
};

static size_t tix(const cbench *cb, unsigned i, unsigned j) {
  return (size_t)i * cb->T + j;
}

static void *tile_of(const cbench *cb, void *m, unsigned i, unsigned j) {
  return (char *)m + tix(cb, i, j) * cb->tile_bytes;
}

/* ---- hand-written ---- */

/* The hand-ordered factorisation of chol_raw, each lower tile copied in
 * on its tile's stream before (its event recorded) and out after. */
static int hand_run(cbench *cb, void *m, uint64_t *ns) {
  bench_ctx *c = cb->c;
  chol_raw *r = &cb->raw;
  chol_raw_reset(r);
  uint64_t t0 = bench_now_ns();
  for (unsigned i = 0; i < cb->T; i++)
    for (unsigned j = 0; j <= i; j++) {
      size_t t = tix(cb, i, j);
      raw_stream s = r->rs[t % CHOL_NS];
      RAW_TRY(c, raw_copy(s, tile_of(cb, cb->dev, i, j), tile_of(cb, m, i, j),
                          cb->tile_bytes, RAW_H2D));
      RAW_TRY(c, raw_event_record(r->ev[t], s));
      r->written[t] = 1;
    }
  for (size_t n = 0; n < cb->nops; n++)
    if (chol_raw_issue(c, &cb->k, r, cb->dev, &cb->ops[n].o, 1))
      return BENCH_FAIL;
  for (unsigned i = 0; i < cb->T; i++)
    for (unsigned j = 0; j <= i; j++)
      RAW_TRY(c, raw_copy(r->rs[tix(cb, i, j) % CHOL_NS], tile_of(cb, m, i, j),
                          tile_of(cb, cb->dev, i, j), cb->tile_bytes, RAW_D2H));
  if (chol_raw_sync(c, r, CHOL_NS))
    return BENCH_FAIL;
  *ns = bench_now_ns() - t0;
  return 0;
}

static int hand_open(cbench *cb) {
  bench_ctx *c = cb->c;
  size_t nt = (size_t)cb->T * cb->T;
  BENCH_TRY(c, weft_device_alloc(nt * cb->tile_bytes, &cb->dev));
  BENCH_TRY(c, weft_sync());
  return chol_raw_open(c, cb->rt, cb->prec, cb->T, cb->b, cb->dev, &cb->lwork,
                       &cb->raw);
}

static void hand_close(cbench *cb) {
  chol_raw_close(&cb->raw);
  if (cb->dev)
    weft_device_free(cb->dev);
  weft_sync();
}

/* ---- registered ---- */

static weft_data *handle(const cbench *cb, unsigned i, unsigned j) {
  return cb->d[tix(cb, i, j)];
}

static void op_task(void *arg) {
  optask *x = arg;
  cbench *cb = x->cb;
  const chol_op *o = &x->o;
  unsigned in[2][2];
  int nin = chol_inputs(o, in);
  void *out = NULL, *p[2] = {NULL, NULL};
  int e =
      weft_data_get(handle(cb, (unsigned)o->i, (unsigned)o->j), WEFT_RW, &out);
  for (int t = 0; e == 0 && t < nin; t++)
    e = weft_data_get(handle(cb, in[t][0], in[t][1]), WEFT_READ, &p[t]);
  if (e) {
    bench_fail_weft(cb->c, e, "weft_data_get");
    return;
  }
  chol_lib lib;
  if (chol_task_lib(cb->c, cb->cuda, cb->prec, o, cb->lwork, NULL, &lib) == 0)
    chol_run_op(cb->c, cb->cuda, &cb->k, &lib, cb->b, o, out, p[0], p[1], NULL);
  chol_task_lib_done(&lib);
}

typedef struct driver {
  cbench *cb;
  weft_runtime *rt;
  void *m;           /* the matrix the handles cover */
  const char *range; /* the run's name in a trace (weft trace --range) */
  int ahead;         /* each tile written back after its last writer */
  uint64_t ns, moved, evictions, streams;
  uint64_t taken; /* streams taken over in the run */
} driver;

/* Registers the lower tiles of d->m, factors, unregisters: timed. */
static void weft_driver(void *arg) {
  driver *d = arg;
  cbench *cb = d->cb;
  weft_task_stats ts = {.struct_size = sizeof ts};
  uint64_t taken0 =
      weft_task_stats_get(d->rt, &ts) == 0 ? ts.streams_taken_over : 0;
  int pushed = weft_range_push(d->range) == 0;
  uint64_t t0 = bench_now_ns();
  weft_data **lower = calloc(cb->nlower, sizeof *lower);
  if (!lower) {
    bench_fail(cb->c, "out of memory");
    return;
  }
  size_t nreg = 0;
  int e = 0;
  for (unsigned i = 0; e == 0 && i < cb->T; i++)
    for (unsigned j = 0; e == 0 && j <= i; j++) {
      e = weft_data_register(d->rt, tile_of(cb, d->m, i, j), cb->tile_bytes,
                             &cb->d[tix(cb, i, j)]);
      if (e == 0)
        lower[nreg++] = cb->d[tix(cb, i, j)];
    }
  if (e)
    bench_fail_weft(cb->c, e, "weft_data_register");
  size_t spawned = 0;
  for (; e == 0 && spawned < cb->nops; spawned++) {
    const chol_op *o = &cb->ops[spawned].o;
    unsigned in[2][2];
    int nin = chol_inputs(o, in);
    weft_access acc[3];
    for (int t = 0; t < nin; t++)
      acc[t] = weft_data_access(handle(cb, in[t][0], in[t][1]), WEFT_READ);
    acc[nin] =
        weft_data_access(handle(cb, (unsigned)o->i, (unsigned)o->j), WEFT_RW);
    weft_task_opts to;
    weft_task_opts_init(&to);
    to.name = "cholesky/tile";
    to.accesses = acc;
    to.naccesses = (size_t)nin + 1;
    if ((e = weft_task_spawn(d->rt, &cb->handles[spawned], op_task,
                             &cb->ops[spawned], &to)) != 0) {
      bench_fail_weft(cb->c, e, "weft_task_spawn");
      break;
    }
    size_t t = tix(cb, (unsigned)o->i, (unsigned)o->j);
    if (d->ahead && cb->last[t] == spawned &&
        (e = weft_data_prefetch(cb->d[t], WEFT_DATA_HOST)) != 0) {
      bench_fail_weft(cb->c, e, "weft_data_prefetch");
      spawned++;
      break;
    }
  }
  for (size_t i = 0; i < spawned; i++)
    if ((e = weft_task_join(cb->handles[i])) != 0)
      bench_fail_weft(cb->c, e, "weft_task_join");
  /* Streams held once every task is done: more than were made ahead
   * (WEFT_STREAMS) means some were made while the GPU worked. */
  d->streams = weft_task_stats_get(d->rt, &ts) == 0 ? ts.streams : 0;
  d->moved = d->evictions = 0;
  for (size_t i = 0; i < nreg; i++) {
    weft_data_stats st;
    if (weft_data_stats_get(lower[i], &st) == 0) {
      d->moved += st.to_device + st.device_to_device + st.to_host;
      d->evictions += st.evictions;
      /* Its write-back at unregister, below; written back ahead, the copy
       * is counted already unless it is still under way. */
      if (!d->ahead || st.to_host == 0)
        d->moved += cb->tile_bytes;
    }
  }
  if ((e = weft_data_unregister_n(lower, nreg)) != 0)
    bench_fail_weft(cb->c, e, "weft_data_unregister_n");
  d->ns = bench_now_ns() - t0;
  d->taken =
      weft_task_stats_get(d->rt, &ts) == 0 ? ts.streams_taken_over - taken0 : 0;
  if (pushed)
    weft_range_pop();
  free(lower);
}

/* ---- the runs ---- */

typedef struct size {
  unsigned n, b;
  int ooc; /* and the out-of-core row */
} size;
static const size cuda_sizes[] = {
    {8192, 512, 0}, {8192, 1024, 0}, {16384, 512, 0}, {16384, 1024, 1}};
static const size cuda_quick = {2048, 256, 1}, host_size = {384, 48, 1},
                  host_quick = {192, 32, 1};

static int reset(cbench *cb, void *m) {
  memcpy(m, cb->a0, (size_t)cb->T * cb->T * cb->tile_bytes);
  return 0;
}

static int weft_run(cbench *cb, weft_runtime *rt, void *m, int v,
                    const char *who, int r) {
  char range[96];
  snprintf(range, sizeof range, "%s, n=%u b=%u", who, cb->n, cb->b);
  driver d = {.cb = cb,
              .rt = rt,
              .m = m,
              .range = range,
              .ahead = v == V_PINNED_AHEAD || v == V_PAGEABLE_AHEAD};
  reset(cb, m);
  int rc = bench_in_task(cb->c, rt, weft_driver, &d);
  if (rc == 0 && bench_failed(cb->c))
    rc = BENCH_FAIL;
  if (rc == 0)
    rc = chol_check(cb->c, cb->prec, cb->a0, m, cb->n, cb->b, who);
  if (rc == 0 && r > 0)
    bench_samples_add(&cb->s[v], (double)d.ns / 1e6);
  cb->moved[v] = d.moved;
  cb->streams[v] = d.streams;
  cb->taken[v] = d.taken;
  if (v == V_OOC)
    cb->evictions = d.evictions;
  return rc;
}

static int setup(cbench *cb, size sz) {
  bench_ctx *c = cb->c;
  cb->n = sz.n;
  cb->b = sz.b;
  cb->T = sz.n / sz.b;
  cb->tile_bytes = (size_t)sz.b * sz.b * chol_elem(cb->prec);
  cb->nlower = (size_t)cb->T * (cb->T + 1) / 2;
  size_t bytes = (size_t)cb->T * cb->T * cb->tile_bytes;
  BENCH_TRY(c, weft_pinned_alloc(bytes, &cb->a0));
  BENCH_TRY(c, weft_pinned_alloc(bytes, &cb->pinned));
  cb->pageable = malloc(bytes);
  size_t maxops = (size_t)cb->T * cb->T * cb->T;
  chol_op *plan = calloc(maxops, sizeof *plan);
  cb->ops = calloc(maxops, sizeof *cb->ops);
  cb->handles = calloc(maxops, sizeof *cb->handles);
  cb->d = calloc((size_t)cb->T * cb->T, sizeof *cb->d);
  cb->last = calloc((size_t)cb->T * cb->T, sizeof *cb->last);
  if (!cb->pageable || !plan || !cb->ops || !cb->handles || !cb->d ||
      !cb->last) {
    free(plan);
    return bench_fail(c, "out of memory");
  }
  cb->nops = chol_plan(cb->T, plan);
  for (size_t i = 0; i < cb->nops; i++) {
    cb->ops[i] = (optask){cb, plan[i]};
    cb->last[tix(cb, (unsigned)plan[i].i, (unsigned)plan[i].j)] = i;
  }
  free(plan);
  chol_matrix(cb->a0, cb->prec, cb->n, cb->b);
  return 0;
}

static void teardown(cbench *cb) {
  if (cb->a0)
    weft_pinned_free(cb->a0);
  if (cb->pinned)
    weft_pinned_free(cb->pinned);
  free(cb->pageable);
  free(cb->ops);
  free(cb->handles);
  free(cb->d);
  free(cb->last);
}

static int report(cbench *cb, int sized, int ooc) {
  bench_ctx *c = cb->c;
  double flop = (double)cb->n * cb->n * cb->n / 3.0;
  double hand = bench_stats_of(&cb->s[V_HAND]).median;
  double min = 2.0 * (double)cb->nlower * (double)cb->tile_bytes;
  char buf[128];
  int rc = bench_report(
      c,
      chol_label(buf, sizeof buf, "hand-written: copies, 8 streams + events",
                 cb->n, cb->b, sized),
      "ms", &cb->s[V_HAND], BENCH_BASELINE,
      "%.1f GFLOP/s; n = %u, tiles of %u, pinned; %zu lower tiles in and out "
      "(%.0f MiB)",
      flop / hand / 1e6, cb->n, cb->b, cb->nlower, min / (1 << 20));
  double hand_pg = bench_stats_of(&cb->s[V_HAND_PAGEABLE]).median;
  if (rc == 0)
    rc = bench_report(
        c,
        chol_label(buf, sizeof buf, "hand-written: the same, pageable", cb->n,
                   cb->b, sized),
        "ms", &cb->s[V_HAND_PAGEABLE], 0,
        "%.1f GFLOP/s; cudaMemcpyAsync from and to malloc'd memory",
        flop / hand_pg / 1e6);
  static const char *const reg_label[] = {
      [V_PINNED] = "registered: a handle a tile, pinned",
      [V_PAGEABLE] = "registered: a handle a tile, pageable",
      [V_PINNED_AHEAD] = "registered: pinned, written back ahead",
      [V_PAGEABLE_AHEAD] = "registered: pageable, written back ahead"};
  for (int v = V_PINNED; rc == 0 && v <= V_PAGEABLE_AHEAD; v++) {
    int pageable = v == V_PAGEABLE || v == V_PAGEABLE_AHEAD;
    double ms = bench_stats_of(&cb->s[v]).median;
    double ratio = hand / ms, bytes = (double)cb->moved[v] / min;
    double same = (pageable ? hand_pg : hand) / ms;
    rc = bench_report(
        c, chol_label(buf, sizeof buf, reg_label[v], cb->n, cb->b, sized), "ms",
        &cb->s[v], 0,
        "%.1f GFLOP/s: %.2f x the hand-written throughput (pinned), %.2f x "
        "the same memory's, target >= 0.95 (%s); moved %.2f x the minimum, "
        "target <= 1.1 (%s); %llu streams held, %llu taken over a run",
        flop / ms / 1e6, ratio, same, same >= 0.95 ? "met" : "MISSED", bytes,
        bytes <= 1.1 ? "met" : "MISSED", (unsigned long long)cb->streams[v],
        (unsigned long long)cb->taken[v]);
  }
  if (rc == 0) {
    double ms = bench_stats_of(&cb->s[V_SPAWN]).median;
    double hand_b = bench_stats_of(&cb->s[V_HAND_B]).median;
    double at_get = bench_stats_of(&cb->s[V_PINNED]).median;
    rc = bench_report(
        c,
        chol_label(buf, sizeof buf,
                   "registered: pinned, copies at spawn (data_prefetch 1)",
                   cb->n, cb->b, sized),
        "ms", &cb->s[V_SPAWN], 0,
        "%.1f GFLOP/s: %.2f x the hand-written throughput of its runs, "
        "%.2f x the pinned row's (copies at get) against the same; moved "
        "%.2f x the minimum; %llu streams held, %llu taken over a run",
        flop / ms / 1e6, hand_b / ms, (hand_b / ms) / (hand / at_get),
        (double)cb->moved[V_SPAWN] / min,
        (unsigned long long)cb->streams[V_SPAWN],
        (unsigned long long)cb->taken[V_SPAWN]);
  }
  if (rc == 0 && ooc) {
    double in = bench_stats_of(&cb->s[V_PINNED]).median;
    double ms = bench_stats_of(&cb->s[V_OOC]).median;
    int judged = !bench_size(c, 0, 1) && cb->n == 16384 && cb->b == 1024;
    rc = bench_report(
        c,
        chol_label(buf, sizeof buf, "out of core: pinned, limit 1/4 matrix",
                   cb->n, cb->b, sized),
        "ms", &cb->s[V_OOC], 0,
        "%.1f GFLOP/s: %.2f x in core's throughput%s%s; %llu evictions, "
        "moved %.2f x the minimum; %llu streams held, %llu taken over a run",
        flop / ms / 1e6, in / ms, judged ? ", target >= 0.6 " : "",
        judged ? (in / ms >= 0.6 ? "(met)" : "(MISSED)") : "",
        (unsigned long long)cb->evictions, (double)cb->moved[V_OOC] / min,
        (unsigned long long)cb->streams[V_OOC],
        (unsigned long long)cb->taken[V_OOC]);
  }
  bench_group(c);
  return rc;
}

/* One runtime opened with o, and in it the hand-written runs of v0..v1
 * (none when v1 < v0) and a run of each registered variant reg[0..nreg),
 * repeat after repeat; then it closes. It is the only runtime with data
 * work alive meanwhile: a second one that has run slows the first by
 * 1.5-3 x at tiles of 512 on the H200, not understood yet
 * (docs/decisions/data.md, "One runtime at a time in the Cholesky
 * bench"). */
typedef struct reg_run {
  int v;
  const char *who;
} reg_run;

static int phase(cbench *cb, const bench_rt_opts *o, int v0, int v1,
                 const reg_run *reg, int nreg) {
  bench_ctx *c = cb->c;
  weft_runtime *rt = NULL;
  int rc = bench_runtime_open_with(c, o, &rt);
  if (rc == 0 && v0 <= v1)
    rc = hand_open(cb);
  for (int r = 0; rc == 0 && r <= bench_repeat(c); r++) {
    for (int v = v0; rc == 0 && v <= v1; v++) {
      void *m = v == V_HAND_PAGEABLE ? cb->pageable : cb->pinned;
      uint64_t ns = 0;
      reset(cb, m);
      if ((rc = hand_run(cb, m, &ns)) == 0)
        rc = chol_check(c, cb->prec, cb->a0, m, cb->n, cb->b, "hand-written");
      if (rc == 0 && r > 0)
        bench_samples_add(&cb->s[v], (double)ns / 1e6);
    }
    for (int k = 0; rc == 0 && k < nreg; k++)
      rc = weft_run(cb, rt,
                    reg[k].v == V_PAGEABLE || reg[k].v == V_PAGEABLE_AHEAD
                        ? cb->pageable
                        : cb->pinned,
                    reg[k].v, reg[k].who, r);
  }
  if (v0 <= v1)
    hand_close(cb);
  if (bench_runtime_close(c, &rt) && rc == 0)
    rc = BENCH_FAIL;
  return rc;
}

static int factor(bench_ctx *c, weft_runtime *base, chol_prec p, size sz,
                  int sized) {
  cbench *cb = calloc(1, sizeof *cb);
  if (!cb)
    return bench_fail(c, "out of memory");
  cb->c = c;
  cb->rt = base;
  cb->cuda = raw_on_cuda(base);
  cb->prec = p;
  tile_kernels_init(&cb->k, p == CHOL_F64);
  int rc = setup(cb, sz);
  /* Copies at get; then at spawn (data_prefetch 1); then out of core (a
   * limit): a runtime each, one after the other. */
  static const reg_run at_get[] = {{V_PINNED, "registered, pinned"},
                                   {V_PAGEABLE, "registered, pageable"},
                                   {V_PINNED_AHEAD,
                                    "written back ahead, pinned"},
                                   {V_PAGEABLE_AHEAD,
                                    "written back ahead, pageable"}},
                       at_spawn[] = {{V_SPAWN, "copies at spawn"}},
                       ooc[] = {{V_OOC, "out of core"}};
  if (rc == 0)
    rc = phase(cb, &(bench_rt_opts){.stack_size = BENCH_CUBLAS_STACK}, V_HAND,
               V_HAND_PAGEABLE, at_get, 4);
  if (rc == 0)
    rc = phase(
        cb, &(bench_rt_opts){.stack_size = BENCH_CUBLAS_STACK, .prefetch = 1},
        V_HAND_B, V_HAND_B, at_spawn, 1);
  if (rc == 0 && sz.ooc)
    rc = phase(cb,
               &(bench_rt_opts){.stack_size = BENCH_CUBLAS_STACK,
                                .data_limit =
                                    (size_t)cb->T * cb->T * cb->tile_bytes / 4},
               1, 0, ooc, 1);
  teardown(cb);
  if (rc == 0)
    rc = report(cb, sized, sz.ooc);
  free(cb);
  return rc;
}

/* base: the matrices' pinned memory and the hand-written runs; the
 * registered runs have runtimes of their own (factor). */
static int run(bench_ctx *c, chol_prec p) {
  weft_runtime *base = NULL;
  int rc = bench_runtime_open_with(
      c, &(bench_rt_opts){.stack_size = BENCH_CUBLAS_STACK}, &base);
  if (rc)
    return rc;
  int quick = bench_size(c, 0, 1);
  const size *sizes = quick ? &host_quick : &host_size;
  size_t nsizes = 1;
  if (raw_on_cuda(base) && !quick) {
    sizes = cuda_sizes;
    nsizes = sizeof cuda_sizes / sizeof *cuda_sizes;
  } else if (raw_on_cuda(base)) {
    sizes = &cuda_quick;
  }
  for (size_t i = 0; rc == 0 && i < nsizes; i++)
    rc = factor(c, base, p, sizes[i], nsizes > 1);
  if (bench_runtime_close(c, &base))
    rc = BENCH_FAIL;
  return rc;
}

static int run_f32(bench_ctx *c) { return run(c, CHOL_F32); }
static int run_f64(bench_ctx *c) { return run(c, CHOL_F64); }

const bench_scenario bench_sc_cholesky = {
    "cholesky",
    "data that moves itself: a tiled Cholesky whose matrix starts in host "
    "memory, a handle a tile, against copies written by hand; pinned, "
    "pageable, and out of core under a device limit",
    run_f32};

const bench_scenario bench_sc_cholesky_fp64 = {
    "cholesky-fp64",
    "cholesky in FP64 (double): data that moves itself, a handle a tile, "
    "against copies written by hand; pinned, pageable, out of core",
    run_f64};
