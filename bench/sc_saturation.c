/* saturation: seed 004, can the CPU issue work fast enough to keep the GPU
 * busy?
 *
 * The model: L dense layers of width W (seed_kernels' layer: y[b][j] =
 * tanh(sum_k w[k][j] x[b][k]), one thread per output, grid
 * seed_blocks(B * W) of SEED_THREADS), ping-ponging between two activation
 * buffers, then a copy of the batch's output (B * W floats) into pinned
 * memory and a wait: an inference loop that reads every batch's result. So
 * each batch costs the host L launches, a copy and a round trip, and the
 * GPU L small kernels: at small batch sizes the host cannot keep up and the
 * GPU idles; the seed's throughput plateau is where it stops idling.
 * CUDA: W = 256, L = 8; host backend: W = 64, L = 4.
 *
 * Rows, throughput in items/s (B x batches / wall-clock second from the
 * first issue to the last result; higher is better, so a ratio > 1 means
 * faster than the baseline):
 * - per batch size B (CUDA 1, 4, 16, 64, 256, 1024, 4096, quick 1, 16, 256,
 *   4096; host 1, 4, 16, 64, 256, quick 1, 16, 64), one group each:
 *   raw: 1 thread, 1 stream (baseline, written here against raw_api.h:
 *   on CUDA hand-written CUDA runtime code, a non-blocking stream,
 *   cudaLaunchKernel of the layer, cudaMemcpyAsync into pinned memory and
 *   cudaStreamSynchronize per batch; on the host backend its own stream,
 *   weft/host.h), weft: 1 task (weft_launch, weft_copy, weft_sync), weft:
 *   4 tasks, each doing a quarter of the batches with its own buffers (so
 *   their streams overlap);
 * - how many tasks keep the GPU busy: at B = 16 (host 4), T = 1, 2, 4, 8,
 *   16 tasks (host 1, 2, 4) sharing the batches, T = 1 the baseline.
 * NB batches per sample: clamp(2^15 / B, 16, 1024) on CUDA (a sample of
 * tens of milliseconds, the scenario ~10 s), clamp(2^11 / B, 8, 64) on the
 * host backend (quick: clamp(2^9 / B, 8, 32)); powers of two, so every
 * task count divides them.
 * Last group, "% busy": the GPU-busy fraction (the union of the GPU
 * operations over the span from the first to the last) of one short run of
 * each 1-task loop and each task count, in a runtime that traces, read back
 * from the trace by task-name prefix. Tracing adds host cost per launch,
 * so where the loop is CPU-bound the fraction is a lower bound.
 *
 * Times are medians over bench_repeat() repeats after one untimed warm-up
 * round (rounds interleave the variants, so drift favours none). Checks:
 * before every run the outputs (pinned) and the activations (device) are
 * poisoned with NaN; after it every element of each task's last output
 * must match a CPU reference of the model (double) within 1e-4 relative
 * plus 1e-5 absolute. The input rows repeat with a prime period (251), so
 * one reference of 251 rows covers every batch size, and a mix-up of rows
 * by a power-of-two stride cannot go unseen. Target: weft 1 task at or
 * above raw throughput at every B, and more tasks reaching the plateau at
 * a smaller B. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "kernels.h"
#include "raw_api.h"
#include "traced.h"

enum {
  MAX_SIZES = 7,  /* batch sizes */
  MAX_SWEEP = 5,  /* task counts of the sweep */
  MAX_TASKS = 16, /* the most tasks of one run */
  MANY = 4,       /* tasks of the "weft: 4 tasks" rows */
  PERIOD = 251,   /* input rows repeat with this (prime) period */
  MAX_LAYERS = 8,
};

enum { V_RAW, V_WEFT1, V_WEFT4, V_GRAPH, V_RAWG, NVARIANTS };

typedef struct sat_bench sat_bench;

/* One stream's view of the model: layer l computes
 *   out[l][b][j] = tanh(sum_k w[l][k][j] * in[l][b][k])
 * for b < batch, j < width (seed_kernels' layer, grid
 * seed_blocks(batch * width) of SEED_THREADS threads), where in[0] is the
 * input and in[l] = out[l - 1] otherwise (model_of points them at two
 * activation buffers in turn). A batch runs the layers in order, then
 * copies out[layers - 1] (batch * width floats, device) to out_h (pinned
 * host memory) and waits for the copy. */
typedef struct sat_model {
  unsigned batch, width, layers; /* layers <= MAX_LAYERS */
  const float *in[MAX_LAYERS];
  const float *w[MAX_LAYERS];
  float *out[MAX_LAYERS];
  float *out_h;
} sat_model;

/* The launch arguments of a model's layers, laid out as cudaLaunchKernel's
 * kernelParams: p[l] for layer l. Launches copy the values they are
 * pointed at, so one sat_args serves every batch of a loop. It points into
 * itself: fill it in place with sat_args_init and do not copy it. */
typedef struct sat_args {
  const float *in[MAX_LAYERS], *w[MAX_LAYERS];
  float *out[MAX_LAYERS];
  unsigned batch, width;
  void *p[MAX_LAYERS][5];
} sat_args;

/* Fills *a for m. Returns 0, or -1 when m->layers is 0 or more than
 * MAX_LAYERS. */
static int sat_args_init(sat_args *a, const sat_model *m) {
  if (m->layers == 0 || m->layers > MAX_LAYERS)
    return -1;
  a->batch = m->batch;
  a->width = m->width;
  for (unsigned l = 0; l < m->layers; l++) {
    a->in[l] = m->in[l];
    a->w[l] = m->w[l];
    a->out[l] = m->out[l];
    a->p[l][0] = &a->in[l];
    a->p[l][1] = &a->w[l];
    a->p[l][2] = &a->out[l];
    a->p[l][3] = &a->batch;
    a->p[l][4] = &a->width;
  }
  return 0;
}

/* One task's share of a run: its model (its own buffers) and batches. */
typedef struct sat_job {
  sat_bench *sb;
  sat_model m;
  long nb;
  int graphed; /* one graph of a batch's work, replayed per batch */
} sat_job;

/* What the traced run of one prefix saw. */
typedef struct sat_busy {
  char prefix[32];
  long nb; /* batches, all tasks together */
  trace_breakdown b;
} sat_busy;

struct sat_bench {
  bench_ctx *c;
  weft_runtime *rt;
  seed_kernels k;
  int cuda;
  unsigned width, layers;
  int nsizes, nsweep;
  unsigned batch[MAX_SIZES];
  int sweep_tasks[MAX_SWEEP];
  unsigned sweep_batch, max_batch;
  int nslots; /* buffer sets: one per task of the largest run */

  /* The model on the host, made once; the reference comes from it. */
  unsigned ref_rows;    /* min(PERIOD, max_batch) */
  float *x_src, *w_src; /* ref_rows x W input rows; L matrices W x W */
  double *ref;          /* ref_rows x W: the model's output for each row */

  /* In the runtime open now. */
  float *x_d, *w_d;              /* max_batch x W input rows; the weights */
  float *act[MAX_TASKS][2];      /* device activations, per task */
  float *out_h[MAX_TASKS];       /* pinned outputs, per task */
  unsigned slot_rows[MAX_TASKS]; /* batch rows each task's buffers hold */
  sat_job jobs[MAX_TASKS];
  weft_task *tasks[MAX_TASKS];

  bench_samples s[MAX_SIZES][NVARIANTS]; /* items/s */
  bench_samples sweep[MAX_SWEEP];
  sat_busy busy_b[MAX_SIZES], busy_g[MAX_SIZES], busy_t[MAX_SWEEP];
};

/* ---- sizes ---- */

static void choose_sizes(sat_bench *sb) {
  static const unsigned cuda_full[] = {1, 4, 16, 64, 256, 1024, 4096};
  static const unsigned cuda_quick[] = {1, 16, 256, 4096};
  static const unsigned host_full[] = {1, 4, 16, 64, 256};
  static const unsigned host_quick[] = {1, 16, 64};
  static const int cuda_t[] = {1, 2, 4, 8, 16}, host_t[] = {1, 2, 4};
  bench_ctx *c = sb->c;
  int quick = bench_quick(c);
  const unsigned *b;
  sb->cuda = bench_backend(c) == WEFT_BACKEND_CUDA;
  if (sb->cuda) {
    sb->width = 256;
    sb->layers = 8;
    b = quick ? cuda_quick : cuda_full;
    sb->nsizes = quick ? 4 : 7;
    memcpy(sb->sweep_tasks, cuda_t, sizeof cuda_t);
    sb->nsweep = 5;
    sb->sweep_batch = 16;
  } else {
    sb->width = 64;
    sb->layers = 4;
    b = quick ? host_quick : host_full;
    sb->nsizes = quick ? 3 : 5;
    memcpy(sb->sweep_tasks, host_t, sizeof host_t);
    sb->nsweep = 3;
    sb->sweep_batch = 4;
  }
  sb->max_batch = sb->sweep_batch;
  for (int i = 0; i < sb->nsizes; i++) {
    sb->batch[i] = b[i];
    if (b[i] > sb->max_batch)
      sb->max_batch = b[i];
  }
  /* Tasks 0..MANY-1 run every batch size; the rest only the sweep's. */
  sb->nslots = sb->sweep_tasks[sb->nsweep - 1];
  if (sb->nslots < MANY)
    sb->nslots = MANY;
  for (int s = 0; s < sb->nslots; s++)
    sb->slot_rows[s] = s < MANY ? sb->max_batch : sb->sweep_batch;
  sb->ref_rows = sb->max_batch < PERIOD ? sb->max_batch : PERIOD;
}

/* Batches per timed sample at batch size b: enough to time, few enough
 * that the scenario stays short (CUDA ~10 s; the host backend's quick run,
 * which CI makes on 2 cores, about a second). A power of two, so that any
 * task count here divides it. */
static long batches(const sat_bench *sb, unsigned b) {
  long items = sb->cuda ? 1L << 15 : bench_quick(sb->c) ? 1L << 9 : 1L << 11;
  long lo = sb->cuda ? 16 : 8;
  long hi = sb->cuda ? 1024 : bench_quick(sb->c) ? 32 : 64;
  long n = items / (long)b;
  return n < lo ? lo : n > hi ? hi : n;
}

/* Batches of a traced run: a quarter of a sample, at least 16 (but no
 * more than a sample); still a power of two. */
static long traced_batches(const sat_bench *sb, unsigned b) {
  long n = batches(sb, b), q = n / 4 < 16 ? 16 : n / 4;
  return q < n ? q : n;
}

/* ---- the model on the host, and its reference ---- */

static float uniform(uint64_t *s) { /* [-1, 1), xorshift64 */
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return (float)((double)(*s >> 40) / (double)(1u << 23)) - 1.0f;
}

static int make_reference(sat_bench *sb) {
  unsigned w = sb->width, rows = sb->ref_rows;
  size_t wn = (size_t)sb->layers * w * w;
  sb->x_src = malloc((size_t)rows * w * sizeof(float));
  sb->w_src = malloc(wn * sizeof(float));
  sb->ref = malloc((size_t)rows * w * sizeof(double));
  double *a = malloc(2 * (size_t)w * sizeof(double));
  if (!sb->x_src || !sb->w_src || !sb->ref || !a) {
    free(a);
    return bench_fail(sb->c, "out of memory");
  }
  /* Weights uniform in [-1, 1) x sqrt(3 / W): variance 1 / W, so a layer
   * keeps its input's scale and tanh neither saturates nor fades the
   * signal to nothing over the layers. */
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  float scale = (float)sqrt(3.0 / w);
  for (size_t i = 0; i < wn; i++)
    sb->w_src[i] = uniform(&seed) * scale;
  for (size_t i = 0; i < (size_t)rows * w; i++)
    sb->x_src[i] = uniform(&seed);
  for (unsigned r = 0; r < rows; r++) {
    double *cur = a, *next = a + w;
    for (unsigned k = 0; k < w; k++)
      cur[k] = sb->x_src[(size_t)r * w + k];
    for (unsigned l = 0; l < sb->layers; l++) {
      const float *wl = sb->w_src + (size_t)l * w * w;
      for (unsigned j = 0; j < w; j++) {
        double acc = 0;
        for (unsigned k = 0; k < w; k++)
          acc += (double)wl[(size_t)k * w + j] * cur[k];
        next[j] = tanh(acc);
      }
      double *t = cur;
      cur = next;
      next = t;
    }
    memcpy(sb->ref + (size_t)r * w, cur, w * sizeof(double));
  }
  free(a);
  return 0;
}

/* ---- buffers in the open runtime ---- */

/* Copies the weights and max_batch input rows (row b is source row
 * b % PERIOD) to the device through one pinned staging block, and waits. */
static int upload(sat_bench *sb) {
  bench_ctx *c = sb->c;
  unsigned w = sb->width;
  size_t wbytes = (size_t)sb->layers * w * w * sizeof(float);
  size_t xbytes = (size_t)sb->max_batch * w * sizeof(float);
  float *stage;
  BENCH_TRY(
      c, weft_pinned_alloc(wbytes > xbytes ? wbytes : xbytes, (void **)&stage));
  memcpy(stage, sb->w_src, wbytes);
  const char *call = "weft_copy(weights)";
  int rc = weft_copy(sb->w_d, stage, wbytes);
  if (rc == 0) {
    call = "weft_sync";
    rc = weft_sync(); /* before the stage is refilled */
  }
  if (rc == 0) {
    for (unsigned b = 0; b < sb->max_batch; b++)
      memcpy(stage + (size_t)b * w, sb->x_src + (size_t)(b % PERIOD) * w,
             w * sizeof(float));
    call = "weft_copy(input)";
    rc = weft_copy(sb->x_d, stage, xbytes);
  }
  if (rc == 0) {
    call = "weft_sync";
    rc = weft_sync();
  }
  if (rc)
    bench_fail_weft(c, rc, call);
  int e = weft_pinned_free(stage);
  if (e && rc == 0)
    rc = bench_fail_weft(c, e, "weft_pinned_free");
  return rc ? BENCH_FAIL : 0;
}

/* Allocates every buffer in the runtime open now. On failure the caller
 * still calls teardown, which frees what was made. */
static int setup(sat_bench *sb) {
  bench_ctx *c = sb->c;
  unsigned w = sb->width;
  BENCH_TRY(c, weft_device_alloc((size_t)sb->layers * w * w * sizeof(float),
                                 (void **)&sb->w_d));
  BENCH_TRY(c, weft_device_alloc((size_t)sb->max_batch * w * sizeof(float),
                                 (void **)&sb->x_d));
  for (int s = 0; s < sb->nslots; s++) {
    size_t bytes = (size_t)sb->slot_rows[s] * w * sizeof(float);
    BENCH_TRY(c, weft_device_alloc(bytes, (void **)&sb->act[s][0]));
    BENCH_TRY(c, weft_device_alloc(bytes, (void **)&sb->act[s][1]));
    BENCH_TRY(c, weft_pinned_alloc(bytes, (void **)&sb->out_h[s]));
  }
  /* The allocations are ordered on this thread's stream: the upload's
   * weft_sync also makes them usable from the tasks' and the raw streams. */
  return upload(sb);
}

static int teardown(sat_bench *sb) {
  bench_ctx *c = sb->c;
  int rc = 0, e;
  float **dev[2 + 2 * MAX_TASKS];
  int n = 0;
  dev[n++] = &sb->w_d;
  dev[n++] = &sb->x_d;
  for (int s = 0; s < sb->nslots; s++) {
    dev[n++] = &sb->act[s][0];
    dev[n++] = &sb->act[s][1];
  }
  for (int i = 0; i < n; i++) {
    if (*dev[i] && (e = weft_device_free(*dev[i])) != 0)
      rc = bench_fail_weft(c, e, "weft_device_free");
    *dev[i] = NULL;
  }
  if ((e = weft_sync()) != 0)
    rc = bench_fail_weft(c, e, "weft_sync");
  for (int s = 0; s < sb->nslots; s++) {
    if (sb->out_h[s] && (e = weft_pinned_free(sb->out_h[s])) != 0)
      rc = bench_fail_weft(c, e, "weft_pinned_free");
    sb->out_h[s] = NULL;
  }
  return rc;
}

/* Task slot's model at batch size b. */
static sat_model model_of(const sat_bench *sb, int slot, unsigned b) {
  sat_model m = {.batch = b, .width = sb->width, .layers = sb->layers};
  for (unsigned l = 0; l < sb->layers; l++) {
    m.in[l] = l == 0 ? sb->x_d : sb->act[slot][(l - 1) & 1];
    m.w[l] = sb->w_d + (size_t)l * sb->width * sb->width;
    m.out[l] = sb->act[slot][l & 1];
  }
  m.out_h = sb->out_h[slot];
  return m;
}

/* ---- poison and checks ---- */

/* NaN in the outputs and the activations of the first ntasks tasks, so
 * that a run that skipped a kernel or a copy cannot pass on what the last
 * one left there. Waits for the device memsets. */
static int poison(sat_bench *sb, int ntasks, unsigned b) {
  size_t bytes = (size_t)b * sb->width * sizeof(float);
  for (int s = 0; s < ntasks; s++) {
    memset(sb->out_h[s], 0xff, bytes);
    BENCH_TRY(sb->c, weft_memset(sb->act[s][0], 0xff, bytes));
    BENCH_TRY(sb->c, weft_memset(sb->act[s][1], 0xff, bytes));
  }
  BENCH_TRY(sb->c, weft_sync());
  return 0;
}

static int check(sat_bench *sb, int ntasks, unsigned b, const char *what) {
  unsigned w = sb->width;
  for (int s = 0; s < ntasks; s++)
    for (unsigned r = 0; r < b; r++) {
      const float *got = sb->out_h[s] + (size_t)r * w;
      const double *want = sb->ref + (size_t)(r % PERIOD) * w;
      for (unsigned j = 0; j < w; j++)
        /* The negated comparison catches NaN. */
        if (!(fabs(got[j] - want[j]) <= 1e-4 * fabs(want[j]) + 1e-5))
          return bench_fail(sb->c,
                            "%s, B=%u: task %d, row %u, column %u: got "
                            "%.9g, want %.9g",
                            what, b, s, r, j, got[j], want[j]);
    }
  return 0;
}

/* ---- the weft variants ---- */

/* One batch's work: L launches, then the copy of the output. */
static int issue_batch(bench_ctx *c, const sat_model *m,
                       const weft_kernel *layer, const sat_args *a) {
  size_t bytes = (size_t)m->batch * m->width * sizeof(float);
  weft_dim3 grid = WEFT_DIM1(seed_blocks((unsigned long)m->batch * m->width));
  weft_dim3 block = WEFT_DIM1(SEED_THREADS);
  int e;
  for (unsigned l = 0; l < m->layers; l++)
    if ((e = weft_launch(layer, grid, block, 0, (void **)a->p[l])) != 0)
      return bench_fail_weft(c, e, "weft_launch(layer)");
  if ((e = weft_copy(m->out_h, m->out[m->layers - 1], bytes)) != 0)
    return bench_fail_weft(c, e, "weft_copy(D2H)");
  return 0;
}

/* The graphed loop: one batch's work captured once (in the timed run, as
 * a program pays for it), then a replay and a wait per batch. */
static void infer_graphed(sat_job *j, const sat_args *a) {
  bench_ctx *c = j->sb->c;
  weft_graph *g = NULL;
  int e = weft_graph_begin();
  if (e) {
    bench_fail_weft(c, e, "weft_graph_begin");
    return;
  }
  int rc = issue_batch(c, &j->m, &j->sb->k.layer, a);
  e = weft_graph_end(&g);
  if (rc || e) {
    if (e && !rc)
      bench_fail_weft(c, e, "weft_graph_end");
    return;
  }
  for (long i = 0; i < j->nb; i++) {
    if ((e = weft_graph_launch(g)) != 0) {
      bench_fail_weft(c, e, "weft_graph_launch");
      break;
    }
    if ((e = weft_sync()) != 0) {
      bench_fail_weft(c, e, "weft_sync");
      break;
    }
  }
  if ((e = weft_graph_destroy(g)) != 0)
    bench_fail_weft(c, e, "weft_graph_destroy");
}

/* nb batches of the job's model: L launches, a copy of the output, and a
 * wait, which suspends the task while its worker runs others. */
static void infer_task(void *arg) {
  sat_job *j = arg;
  bench_ctx *c = j->sb->c;
  sat_args a;
  if (sat_args_init(&a, &j->m)) {
    bench_fail(c, "%u layers", j->m.layers);
    return;
  }
  if (j->graphed) {
    infer_graphed(j, &a);
    return;
  }
  for (long i = 0; i < j->nb; i++) {
    if (issue_batch(c, &j->m, &j->sb->k.layer, &a))
      return;
    int e = weft_sync();
    if (e) {
      bench_fail_weft(c, e, "weft_sync");
      return;
    }
  }
}

/* ntasks tasks named <prefix><i> (the prefix finds them in a trace), task
 * i on buffers i, sharing nb batches of size b; *ns is the wall clock from
 * before the first spawn to after the last join. */
static int run_weft(sat_bench *sb, int ntasks, unsigned b, long nb, int graphed,
                    const char *prefix, uint64_t *ns) {
  bench_ctx *c = sb->c;
  char name[32];
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.name = name;
  for (int t = 0; t < ntasks; t++)
    sb->jobs[t] = (sat_job){sb, model_of(sb, t, b), nb / ntasks, graphed};
  int spawned = 0, rc = 0, e;
  uint64_t t0 = bench_now_ns();
  for (; spawned < ntasks; spawned++) {
    snprintf(name, sizeof name, "%s%d", prefix, spawned);
    if ((e = weft_task_spawn(sb->rt, &sb->tasks[spawned], infer_task,
                             &sb->jobs[spawned], &o)) != 0) {
      rc = bench_fail_weft(c, e, "weft_task_spawn");
      break;
    }
  }
  for (int t = 0; t < spawned; t++)
    if ((e = weft_task_join(sb->tasks[t])) != 0)
      rc = bench_fail_weft(c, e, "weft_task_join");
  *ns = bench_now_ns() - t0;
  return rc || bench_failed(c) ? BENCH_FAIL : 0;
}

/* ---- the raw baseline ---- */

/* nb batches of m on stream s from this thread, each waited for before the
 * next is issued, as a loop that reads every batch's result does: L
 * launches of the layer, a copy of the output into pinned memory, a
 * blocking stream sync. */
static int raw_batch(sat_bench *sb, raw_stream s, const sat_model *m,
                     sat_args *a) {
  size_t bytes = (size_t)m->batch * m->width * sizeof(float);
  weft_dim3 grid = WEFT_DIM1(seed_blocks((unsigned long)m->batch * m->width));
  weft_dim3 block = WEFT_DIM1(SEED_THREADS);
  for (unsigned l = 0; l < m->layers; l++)
    RAW_TRY(sb->c, raw_launch(s, &sb->k.layer, grid, block, a->p[l]));
  RAW_TRY(sb->c, raw_copy(s, m->out_h, m->out[m->layers - 1], bytes, RAW_D2H));
  return 0;
}

/* graphed (CUDA only): one batch's work captured by hand into a CUDA
 * graph first (timed, as weft's is), then cudaGraphLaunch and the sync
 * per batch. */
static int raw_infer(sat_bench *sb, raw_stream s, const sat_model *m, long nb,
                     int graphed) {
  bench_ctx *c = sb->c;
  sat_args a;
  if (sat_args_init(&a, m))
    return bench_fail(c, "raw: %u layers", m->layers);
  if (!graphed) {
    for (long i = 0; i < nb; i++) {
      if (raw_batch(sb, s, m, &a))
        return BENCH_FAIL;
      RAW_TRY(c, raw_stream_sync(s));
    }
    return 0;
  }
  raw_graph g;
  RAW_TRY(c, raw_graph_begin(s));
  int rc = raw_batch(sb, s, m, &a);
  int e = raw_graph_end(s, &g);
  if (rc || e)
    return rc ? rc : raw_fail(c, e, "raw_graph_end", __LINE__);
  for (long i = 0; rc == 0 && i < nb; i++) {
    if ((e = raw_graph_launch(s, g)) != 0 || (e = raw_stream_sync(s)) != 0)
      rc = raw_fail(c, e, "raw_graph_launch/raw_stream_sync", __LINE__);
  }
  raw_graph_destroy(&g);
  return rc;
}

/* ---- running ---- */

/* One run of a variant: poison, run, check; adds items/s to s when s is
 * not NULL (not the warm-up). raw: the raw baseline's stream, NULL for
 * weft's tasks. */
static int one_run(sat_bench *sb, const raw_stream *raw, int ntasks,
                   int graphed, unsigned b, long nb, bench_samples *s) {
  char prefix[32], what[48], range[64];
  uint64_t ns = 0;
  if (poison(sb, ntasks, b))
    return BENCH_FAIL;
  if (raw)
    snprintf(what, sizeof what, graphed ? "raw graph" : "raw");
  else
    snprintf(what, sizeof what, "weft, %d tasks%s", ntasks,
             graphed ? ", graphed" : "");
  /* Each run is a range, for `weft trace explain --range` under
   * WEFT_TRACE. */
  snprintf(range, sizeof range, "B=%u %s", b, what);
  BENCH_TRY(sb->c, weft_range_push(range));
  int rc = 0;
  if (raw) {
    sat_model m = model_of(sb, 0, b);
    uint64_t t0 = bench_now_ns();
    rc = raw_infer(sb, *raw, &m, nb, graphed);
    ns = bench_now_ns() - t0;
  } else {
    snprintf(prefix, sizeof prefix, "sat/b%u/t%d%s/", b, ntasks,
             graphed ? "g" : "");
    rc = run_weft(sb, ntasks, b, nb, graphed, prefix, &ns);
  }
  BENCH_TRY(sb->c, weft_range_pop());
  if (rc)
    return BENCH_FAIL;
  if (check(sb, ntasks, b, what))
    return BENCH_FAIL;
  if (s)
    bench_samples_add(s,
                      ns > 0 ? (double)b * (double)nb * 1e9 / (double)ns : 0.0);
  return 0;
}

/* The timed rounds, in an untraced runtime: round 0 warms every variant
 * up, the rest are kept. */
static int measure(sat_bench *sb, const raw_stream *raw) {
  int repeat = bench_repeat(sb->c);
  for (int i = 0; i < sb->nsizes; i++) {
    unsigned b = sb->batch[i];
    long nb = batches(sb, b);
    for (int r = 0; r <= repeat; r++) {
      bench_samples *s = r > 0 ? sb->s[i] : NULL;
      if (one_run(sb, raw, 1, 0, b, nb, s ? &s[V_RAW] : NULL) ||
          one_run(sb, NULL, 1, 0, b, nb, s ? &s[V_WEFT1] : NULL) ||
          one_run(sb, NULL, MANY, 0, b, nb, s ? &s[V_WEFT4] : NULL) ||
          one_run(sb, NULL, 1, 1, b, nb, s ? &s[V_GRAPH] : NULL) ||
          (sb->cuda && one_run(sb, raw, 1, 1, b, nb, s ? &s[V_RAWG] : NULL)))
        return BENCH_FAIL;
    }
  }
  unsigned b = sb->sweep_batch;
  long nb = batches(sb, b);
  for (int r = 0; r <= repeat; r++)
    for (int t = 0; t < sb->nsweep; t++)
      if (one_run(sb, NULL, sb->sweep_tasks[t], 0, b, nb,
                  r > 0 ? &sb->sweep[t] : NULL))
        return BENCH_FAIL;
  return 0;
}

/* One traced run: ntasks tasks named <u->prefix><i>. */
static int traced_run(sat_bench *sb, int ntasks, int graphed, unsigned b,
                      sat_busy *u) {
  uint64_t ns;
  u->nb = traced_batches(sb, b);
  if (poison(sb, ntasks, b) ||
      run_weft(sb, ntasks, b, u->nb, graphed, u->prefix, &ns) ||
      check(sb, ntasks, b, u->prefix))
    return BENCH_FAIL;
  return 0;
}

/* The traced runs, in the traced runtime open now: each 1-task loop and
 * each task count of the sweep once, after a warm-up that fills weft's
 * stream pool, so that no measured run pays for making streams. */
static int measure_traced(sat_bench *sb) {
  sat_busy warm = {.prefix = "sat/warm/"};
  if (traced_run(sb, sb->nslots, 0, sb->sweep_batch, &warm))
    return BENCH_FAIL;
  for (int i = 0; i < sb->nsizes; i++) {
    sat_busy *u = &sb->busy_b[i];
    snprintf(u->prefix, sizeof u->prefix, "sat/b%u/t1/", sb->batch[i]);
    if (traced_run(sb, 1, 0, sb->batch[i], u))
      return BENCH_FAIL;
    u = &sb->busy_g[i];
    snprintf(u->prefix, sizeof u->prefix, "sat/b%u/g/", sb->batch[i]);
    if (traced_run(sb, 1, 1, sb->batch[i], u))
      return BENCH_FAIL;
  }
  for (int t = 0; t < sb->nsweep; t++) {
    sat_busy *u = &sb->busy_t[t];
    snprintf(u->prefix, sizeof u->prefix, "sat/t%d/", sb->sweep_tasks[t]);
    if (traced_run(sb, sb->sweep_tasks[t], 0, sb->sweep_batch, u))
      return BENCH_FAIL;
  }
  return 0;
}

/* Reads each traced run's GPU time back from the trace at path. */
static int read_busy(sat_bench *sb, const char *path) {
  bench_trace t;
  int rc = bench_trace_load(sb->c, path, &t);
  for (int i = 0; rc == 0 && i < sb->nsizes; i++)
    rc =
        bench_trace_gpu_time(sb->c, &t, sb->busy_b[i].prefix, &sb->busy_b[i].b);
  for (int i = 0; rc == 0 && i < sb->nsizes; i++)
    rc =
        bench_trace_gpu_time(sb->c, &t, sb->busy_g[i].prefix, &sb->busy_g[i].b);
  for (int i = 0; rc == 0 && i < sb->nsweep; i++)
    rc =
        bench_trace_gpu_time(sb->c, &t, sb->busy_t[i].prefix, &sb->busy_t[i].b);
  bench_trace_free(&t);
  return rc;
}

/* Opens a runtime (traced when path is not NULL), makes the buffers, runs
 * the timed rounds against the raw baseline (untraced) or the traced runs,
 * and frees and closes everything, also on failure. */
static int in_runtime(sat_bench *sb, const char *path) {
  bench_ctx *c = sb->c;
  bench_rt_opts o = {.trace_path = path};
  int rc = bench_runtime_open_with(c, &o, &sb->rt);
  if (rc)
    return rc;
  if ((rc = seed_kernels_preload(&sb->k, bench_backend(c))) != 0)
    rc = bench_fail_weft(c, rc, "weft_kernel_preload");
  if (rc == 0) {
    rc = setup(sb);
    /* The raw baseline's stream, made before timing (all zero until made,
     * which destroy passes over); destroying it waits for its work. */
    raw_stream raw = {0};
    if (rc == 0 && !path) {
      int e = raw_stream_create(sb->rt, 0, &raw);
      if (e)
        rc = raw_fail(c, e, "raw_stream_create", __LINE__);
    }
    if (rc == 0)
      rc = path ? measure_traced(sb) : measure(sb, &raw);
    raw_stream_destroy(&raw);
    if (teardown(sb))
      rc = BENCH_FAIL;
  }
  if (bench_runtime_close(c, &sb->rt))
    rc = BENCH_FAIL;
  return rc;
}

/* ---- report ---- */

static int report_busy(sat_bench *sb, const sat_busy *u, const char *variant) {
  bench_samples s = {0};
  double pct = u->b.span > 0 ? 100.0 * u->b.busy / u->b.span : 0.0;
  bench_samples_add(&s, pct);
  /* The trace's times are microseconds. */
  return bench_report(sb->c, variant, "% busy", &s, 0,
                      "1 traced run: %ld batches (%zu kernels, %zu copies), "
                      "GPU busy %.3g of %.3g ms; tracing costs host time per "
                      "launch: a lower bound when CPU-bound",
                      u->nb, u->b.kernels, u->b.copies, u->b.busy / 1e3,
                      u->b.span / 1e3);
}

/* Seed 004's point is a plot: where throughput stops growing with the
 * batch, the CPU no longer keeps the GPU fed. */
static const bench_chart chart_batch = {
    "saturation-throughput",
    "seed 004: throughput against batch size (raw, 1 task, 4 tasks, graphed)",
    "batch size B (items of W x L work)",
    BENCH_CHART_LOG_X | BENCH_CHART_LOG_Y};
static const bench_chart chart_tasks = {
    "saturation-tasks",
    "throughput against the number of tasks sharing the batches (one B)",
    "tasks", BENCH_CHART_LOG_X};
static const bench_chart chart_busy = {
    "saturation-busy",
    "GPU busy against batch size (1 task, per batch and graphed; traced)",
    "batch size B (items of W x L work)", BENCH_CHART_LOG_X};
static const bench_chart chart_busy_tasks = {
    "saturation-busy-tasks",
    "GPU busy against the number of tasks (one B, traced)", "tasks",
    BENCH_CHART_LOG_X};

static int report(sat_bench *sb) {
  bench_ctx *c = sb->c;
  char name[64];
  const char *raw_how =
      sb->cuda ? "cudaLaunchKernel x L, cudaMemcpyAsync, cudaStreamSynchronize"
               : "weft_host_launch x L, weft_host_copy, weft_host_stream_sync";
  int rc = 0;
  for (int i = 0; rc == 0 && i < sb->nsizes; i++) {
    unsigned b = sb->batch[i];
    long nb = batches(sb, b);
    if (i > 0)
      bench_group(c);
    snprintf(name, sizeof name, "raw: 1 thread, 1 stream, B=%u", b);
    bench_plot(c, &chart_batch, "raw: 1 thread, 1 stream", b);
    rc = bench_report(c, name, "items/s", &sb->s[i][V_RAW], BENCH_BASELINE,
                      "higher is better; %ld batches of B x W=%u, L=%u; "
                      "per batch %s",
                      nb, sb->width, sb->layers, raw_how);
    snprintf(name, sizeof name, "weft: 1 task, B=%u", b);
    bench_plot(c, &chart_batch, "weft: 1 task", b);
    if (rc == 0)
      rc = bench_report(c, name, "items/s", &sb->s[i][V_WEFT1], 0,
                        "ratio > 1: faster than raw; per batch weft_launch "
                        "x L, weft_copy, weft_sync");
    snprintf(name, sizeof name, "weft: %d tasks, B=%u", MANY, b);
    bench_plot(c, &chart_batch, "weft: 4 tasks", b);
    if (rc == 0)
      rc = bench_report(c, name, "items/s", &sb->s[i][V_WEFT4], 0,
                        "%d tasks x %ld batches, own buffers, streams "
                        "overlap",
                        MANY, nb / MANY);
    double raw = bench_stats_of(&sb->s[i][V_RAW]).median;
    double gr = bench_stats_of(&sb->s[i][V_GRAPH]).median;
    double rg = sb->cuda ? bench_stats_of(&sb->s[i][V_RAWG]).median : 0;
    char vs_raw_graph[96] = "";
    if (sb->cuda)
      snprintf(vs_raw_graph, sizeof vs_raw_graph,
               "; %.3f x the raw graph's time, target <= 1.02 (%s)",
               gr > 0 ? rg / gr : 0, rg <= 1.02 * gr ? "met" : "MISSED");
    if (sb->cuda && rc == 0) {
      snprintf(name, sizeof name, "raw: 1 thread, CUDA graph, B=%u", b);
      bench_plot(c, &chart_batch, "raw: CUDA graph", b);
      rc = bench_report(c, name, "items/s", &sb->s[i][V_RAWG], 0,
                        "a batch captured by hand (cudaStreamBeginCapture, "
                        "instantiate; timed), then cudaGraphLaunch + "
                        "cudaStreamSynchronize per batch");
    }
    snprintf(name, sizeof name, "weft: 1 task, graphed, B=%u", b);
    bench_plot(c, &chart_batch, "weft: 1 task, graphed", b);
    if (rc == 0 && i == 0)
      rc = bench_report(c, name, "items/s", &sb->s[i][V_GRAPH], 0,
                        "a batch's L launches and copy captured once "
                        "(weft_graph_begin/end, timed), then "
                        "weft_graph_launch + weft_sync per batch; target >= "
                        "1.5 x raw per-kernel at B=%u (%s)%s",
                        b, gr >= 1.5 * raw ? "met" : "MISSED", vs_raw_graph);
    else if (rc == 0)
      rc = bench_report(c, name, "items/s", &sb->s[i][V_GRAPH], 0,
                        "one graph per run, a replay + weft_sync per "
                        "batch%s",
                        vs_raw_graph);
  }
  long nb = batches(sb, sb->sweep_batch);
  if (rc == 0)
    bench_group(c);
  for (int t = 0; rc == 0 && t < sb->nsweep; t++) {
    int nt = sb->sweep_tasks[t];
    snprintf(name, sizeof name, "weft: T=%d tasks, B=%u", nt, sb->sweep_batch);
    bench_plot(c, &chart_tasks, "weft", nt);
    rc = bench_report(c, name, "items/s", &sb->sweep[t],
                      t == 0 ? BENCH_BASELINE : 0,
                      "how many tasks keep the GPU busy: %d x %ld batches, "
                      "own buffers",
                      nt, nb / nt);
  }
  if (rc == 0)
    bench_group(c);
  for (int i = 0; rc == 0 && i < sb->nsizes; i++) {
    snprintf(name, sizeof name, "weft: GPU busy, 1 task, B=%u", sb->batch[i]);
    bench_plot(c, &chart_busy, "weft: 1 task", sb->batch[i]);
    rc = report_busy(sb, &sb->busy_b[i], name);
  }
  for (int i = 0; rc == 0 && i < sb->nsizes; i++) {
    snprintf(name, sizeof name, "weft: GPU busy, 1 task graphed, B=%u",
             sb->batch[i]);
    bench_plot(c, &chart_busy, "weft: 1 task, graphed", sb->batch[i]);
    rc = report_busy(sb, &sb->busy_g[i], name);
  }
  for (int t = 0; rc == 0 && t < sb->nsweep; t++) {
    snprintf(name, sizeof name, "weft: GPU busy, T=%d tasks, B=%u",
             sb->sweep_tasks[t], sb->sweep_batch);
    bench_plot(c, &chart_busy_tasks, "weft", sb->sweep_tasks[t]);
    rc = report_busy(sb, &sb->busy_t[t], name);
  }
  return rc;
}

static int run(bench_ctx *c) {
  sat_bench *sb = calloc(1, sizeof *sb);
  if (!sb)
    return bench_fail(c, "out of memory");
  sb->c = c;
  seed_kernels_init(&sb->k);
  choose_sizes(sb);
  char path[4096];
  bench_trace_path(path, sizeof path, "saturation");
  int rc = make_reference(sb);
  if (rc == 0)
    rc = in_runtime(sb, NULL);
  if (rc == 0)
    rc = in_runtime(sb, path);
  if (rc == 0)
    rc = read_busy(sb, path);
  else
    remove(path); /* a traced runtime that failed may have left it */
  if (rc == 0)
    rc = report(sb);
  free(sb->x_src);
  free(sb->w_src);
  free(sb->ref);
  free(sb);
  return rc;
}

const bench_scenario bench_sc_saturation = {
    "saturation",
    "seed 004: batch-size sweep of a small model's inference loop, raw vs "
    "weft 1 and 4 tasks, tasks needed to keep the GPU busy, traced busy %",
    run};
