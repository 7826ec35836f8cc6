/* normalize: seed 000, the Numba streams-and-events tutorial.
 *
 * 10 arrays of 2^24 floats (2^18 under --quick), each normalised (a <- a /
 * sum(a)): copied in from pinned memory, partial_reduce, single_thread_sum,
 * divide_by, copied out to pinned memory. Five rows, timed with events
 * from the first operation to the last:
 * - raw, 1 stream: every array in turn on one stream;
 * - raw, 10 streams (baseline): array i on stream i, hand-written, every
 *   stream after a start event and joined back by events;
 * - weft tasks: one task per array through the public API alone, no stream
 *   written (each task's work lands on the stream weft leases it); the
 *   calling thread orders its own stream after every task with
 *   weft_task_after and records the final event;
 * - weft pipelined: weft_map_chunks with one array per chunk, in place;
 * - the floor: the least time the copies alone can take, from the copy
 *   bandwidths measured in the same round with raw streams and events:
 *   with N arrays of B bytes, t_h2d = one H2D copy of all N.B bytes,
 *   t_d2h = one D2H copy of them, t_both = both at once on two streams
 *   (N.B bytes each way), the first array's H2D and the last one's D2H have
 *   nothing to overlap with and the rest moves both ways at once, so
 *     floor = t_h2d / N + (N - 1) / N x t_both + t_d2h / N
 *   (kernels assumed hidden behind the copies).
 * Raw means the CUDA runtime on CUDA and the host backend's own entry
 * points on the host backend. Rounds run every variant in turn; round 0
 * warms up. Before every run the outputs are overwritten with NaN, and
 * after it every element must be input / (the array's sum in double, on
 * the CPU) within 1e-4 relative. Targets: tasks <= raw 10 streams;
 * pipelined <= 1.05 x floor. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "demo_kernels.h"
#include "raw.h"

enum { NARRAYS = 10 };

enum { V_RAW1, V_RAWN, V_TASKS, V_PIPE, V_FLOOR, NVARIANTS };
enum { BW_H2D, BW_D2H, BW_BOTH, NBW };

typedef struct norm_bench {
  bench_ctx *c;
  weft_runtime *rt;
  bench_raw *raw;
  demo_kernels k;
  bench_norm_set set;
  unsigned log2n;
  size_t bytes;            /* per array */
  float *in_all, *out_all; /* pinned, NARRAYS arrays each */
  float *dev_all, *dev_tmp, *dev_partial_all, *dev_sum_all;
  float *in_h[NARRAYS], *out_h[NARRAYS], *dev_a[NARRAYS], *dev_partial[NARRAYS],
      *dev_sum[NARRAYS];
  double cpu_sum[NARRAYS];
  bench_samples s[NVARIANTS];
  bench_samples bw[NBW]; /* GB/s, each way */
} norm_bench;

/* ---- weft: a task per array ---- */

typedef struct array_job {
  norm_bench *nb;
  int i;
  weft_event *start;
  int rc;
} array_job;

static void array_task(void *arg) {
  array_job *j = arg;
  const bench_norm_set *s = &j->nb->set;
  const demo_kernels *k = &j->nb->k;
  int i = j->i;
  unsigned long long n = s->n;
  unsigned blocks = s->blocks;
  weft_dim3 grid = WEFT_DIM1(blocks), block = WEFT_DIM1(DEMO_THREADS);
  void *reduce_args[] = {&s->dev_a[i], &s->dev_partial[i], &n};
  void *sum_args[] = {&s->dev_partial[i], &s->dev_sum[i], &blocks};
  void *divide_args[] = {&s->dev_a[i], &s->dev_sum[i], &n};
  /* The first operation orders the task's stream after the start event,
   * so that start..final brackets all the work. */
  int rc = weft_event_wait(j->start);
  if (!rc)
    rc = weft_copy(s->dev_a[i], s->in_h[i], j->nb->bytes);
  if (!rc)
    rc = weft_launch(&k->partial_reduce, grid, block, 0, reduce_args);
  if (!rc)
    rc = weft_launch(&k->single_thread_sum, WEFT_DIM1(1), WEFT_DIM1(1), 0,
                     sum_args);
  if (!rc)
    rc = weft_launch(&k->divide_by, grid, block, 0, divide_args);
  if (!rc)
    rc = weft_copy(s->out_h[i], s->dev_a[i], j->nb->bytes);
  j->rc = rc; /* no weft_sync: the task completes when its GPU work does */
}

/* From the scenario's thread: record start, spawn the tasks, order this
 * thread's stream after each task's GPU work (no host wait for the GPU),
 * record final and wait for it. */
static int run_tasks(norm_bench *nb, float *ms) {
  bench_ctx *c = nb->c;
  weft_event *start = NULL, *final = NULL;
  weft_task *tasks[NARRAYS] = {0};
  array_job jobs[NARRAYS];
  const char *call = "weft_event_create";
  int rc = weft_event_create(&start);
  if (!rc)
    rc = weft_event_create(&final);
  if (!rc) {
    call = "weft_event_record(start)";
    rc = weft_event_record(start);
  }
  for (int i = 0; i < NARRAYS && !rc; i++) {
    jobs[i] = (array_job){nb, i, start, 0};
    call = "weft_task_spawn";
    rc = weft_task_spawn(nb->rt, &tasks[i], array_task, &jobs[i], NULL);
  }
  for (int i = 0; i < NARRAYS && !rc; i++) {
    call = "weft_task_after";
    rc = weft_task_after(tasks[i]);
  }
  if (!rc) {
    call = "weft_event_record(final)";
    rc = weft_event_record(final);
  }
  if (!rc) {
    call = "weft_event_sync";
    rc = weft_event_sync(final);
  }
  if (!rc) {
    call = "weft_event_elapsed_ms";
    rc = weft_event_elapsed_ms(start, final, ms);
  }
  if (rc)
    bench_fail_weft(c, rc, call);
  for (int i = 0; i < NARRAYS; i++) {
    if (!tasks[i])
      continue;
    int e = weft_task_join(tasks[i]);
    if (e)
      rc = bench_fail_weft(c, e, "weft_task_join");
    else if (jobs[i].rc)
      rc = bench_fail_weft(c, jobs[i].rc, "array task");
  }
  weft_event_destroy(&start);
  weft_event_destroy(&final);
  return rc ? BENCH_FAIL : 0;
}

/* ---- weft: pipelined ---- */

static int normalise_chunk(void *dev_in, void *dev_out, size_t index,
                           void *user) {
  norm_bench *nb = user;
  const demo_kernels *k = &nb->k;
  unsigned long long n = nb->set.n;
  unsigned blocks = nb->set.blocks;
  weft_dim3 grid = WEFT_DIM1(blocks), block = WEFT_DIM1(DEMO_THREADS);
  float *a = dev_in, *partial = nb->dev_partial[index],
        *sum = nb->dev_sum[index];
  void *reduce_args[] = {&a, &partial, &n};
  void *sum_args[] = {&partial, &sum, &blocks};
  void *divide_args[] = {&a, &sum, &n};
  (void)dev_out; /* in place */
  int rc = weft_launch(&k->partial_reduce, grid, block, 0, reduce_args);
  if (!rc)
    rc = weft_launch(&k->single_thread_sum, WEFT_DIM1(1), WEFT_DIM1(1), 0,
                     sum_args);
  if (!rc)
    rc = weft_launch(&k->divide_by, grid, block, 0, divide_args);
  return rc;
}

static int run_pipelined(norm_bench *nb, float *ms) {
  bench_ctx *c = nb->c;
  weft_event *start = NULL, *final = NULL;
  const char *call = "weft_event_create";
  int rc = weft_event_create(&start);
  if (!rc)
    rc = weft_event_create(&final);
  if (!rc) {
    call = "weft_event_record(start)";
    rc = weft_event_record(start);
  }
  if (!rc) {
    call = "weft_map_chunks";
    rc = weft_map_chunks(nb->in_all, nb->bytes, nb->out_all, 0, NARRAYS,
                         normalise_chunk, nb, NULL);
  }
  if (!rc) { /* the map returned: all its work is done; final marks that */
    call = "weft_event_record(final)";
    rc = weft_event_record(final);
  }
  if (!rc) {
    call = "weft_event_sync";
    rc = weft_event_sync(final);
  }
  if (!rc) {
    call = "weft_event_elapsed_ms";
    rc = weft_event_elapsed_ms(start, final, ms);
  }
  if (rc)
    bench_fail_weft(c, rc, call);
  weft_event_destroy(&start);
  weft_event_destroy(&final);
  return rc ? BENCH_FAIL : 0;
}

/* ---- the floor ---- */

/* Times the three copies of the floor; adds their GB/s and the floor. */
static int run_floor(norm_bench *nb, int record) {
  bench_ctx *c = nb->c;
  bench_raw *raw = nb->raw;
  size_t all = nb->bytes * NARRAYS;
  bench_copy_pair h2d = {
      .h2d_dst = nb->dev_all, .h2d_src = nb->in_all, .h2d_bytes = all};
  bench_copy_pair d2h = {
      .d2h_dst = nb->out_all, .d2h_src = nb->dev_tmp, .d2h_bytes = all};
  bench_copy_pair both = h2d;
  both.d2h_dst = d2h.d2h_dst;
  both.d2h_src = d2h.d2h_src;
  both.d2h_bytes = all;
  float t[NBW];
  if (raw->ops->copy_timed(raw, &h2d, &t[BW_H2D]) ||
      raw->ops->copy_timed(raw, &d2h, &t[BW_D2H]) ||
      raw->ops->copy_timed(raw, &both, &t[BW_BOTH]))
    return bench_fail(c, "floor copies: %s", raw->err);
  if (!record)
    return 0;
  for (int b = 0; b < NBW; b++)
    bench_samples_add(&nb->bw[b], t[b] > 0 ? (double)all / (t[b] * 1e6) : 0);
  bench_samples_add(&nb->s[V_FLOOR],
                    (t[BW_H2D] + (NARRAYS - 1) * t[BW_BOTH] + t[BW_D2H]) /
                        NARRAYS);
  return 0;
}

/* ---- checks ---- */

static int check(norm_bench *nb, const char *variant) {
  unsigned long long n = nb->set.n;
  for (int i = 0; i < NARRAYS; i++) {
    const float *in = nb->in_h[i], *out = nb->out_h[i];
    float inv = (float)(1.0 / nb->cpu_sum[i]);
    /* Counting first, without an early exit, keeps the loop vectorisable;
     * the negated comparison catches NaN. */
    size_t bad = 0;
    for (unsigned long long j = 0; j < n; j++) {
      float want = in[j] * inv;
      bad += !(fabsf(out[j] - want) <= 1e-4f * want);
    }
    if (!bad)
      continue;
    unsigned long long j = 0;
    for (; j + 1 < n; j++) {
      float want = in[j] * inv;
      if (!(fabsf(out[j] - want) <= 1e-4f * want))
        break;
    }
    return bench_fail(nb->c,
                      "%s: array %d: %zu bad elements, the first at %llu: "
                      "got %.9g, want %.9g (input %.9g, CPU sum %.9g)",
                      variant, i, bad, j, out[j], in[j] / nb->cpu_sum[i], in[j],
                      nb->cpu_sum[i]);
  }
  return 0;
}

/* ---- running ---- */

static const char *const what[NVARIANTS] = {
    "raw 1 stream", "raw streams", "weft tasks", "weft pipelined", "floor"};

static int run_variant(norm_bench *nb, int v, int record) {
  float ms = 0;
  memset(nb->out_all, 0xff, nb->bytes * NARRAYS); /* NaN */
  int rc;
  switch (v) {
  case V_RAW1:
  case V_RAWN:
    rc = nb->raw->ops->normalize(nb->raw, &nb->set, v == V_RAW1 ? 1 : NARRAYS,
                                 &ms);
    if (rc)
      rc = bench_fail(nb->c, "%s: %s", what[v], nb->raw->err);
    break;
  case V_TASKS:
    rc = run_tasks(nb, &ms);
    break;
  default:
    rc = run_pipelined(nb, &ms);
    break;
  }
  if (rc == 0)
    rc = check(nb, what[v]);
  if (rc == 0 && record)
    bench_samples_add(&nb->s[v], ms);
  return rc;
}

static int measure(norm_bench *nb) {
  for (int r = 0; r <= bench_repeat(nb->c); r++) {
    for (int v = 0; v < V_FLOOR; v++)
      if (run_variant(nb, v, r > 0))
        return BENCH_FAIL;
    if (run_floor(nb, r > 0))
      return BENCH_FAIL;
  }
  return 0;
}

static int report(norm_bench *nb) {
  bench_ctx *c = nb->c;
  int cuda = bench_backend(c) == WEFT_BACKEND_CUDA;
  const char *raw = cuda ? "raw CUDA" : "raw host ops";
  double med[NVARIANTS], bw[NBW];
  for (int v = 0; v < NVARIANTS; v++)
    med[v] = bench_stats_of(&nb->s[v]).median;
  for (int b = 0; b < NBW; b++)
    bw[b] = bench_stats_of(&nb->bw[b]).median;
  double fl = med[V_FLOOR] > 0 ? med[V_FLOOR] : 1e-9;
  char name[64], size[64];
  double mib = (double)nb->bytes / (1 << 20);
  snprintf(size, sizeof size, "%d arrays of 2^%u floats (%g MiB each)", NARRAYS,
           nb->log2n, mib);

  snprintf(name, sizeof name, "%s: 1 stream", raw);
  int rc = bench_report(c, name, "ms", &nb->s[V_RAW1], 0,
                        "%.2f x floor; %s; events", med[V_RAW1] / fl, size);
  snprintf(name, sizeof name, "%s: %d streams", raw, NARRAYS);
  if (rc == 0)
    rc = bench_report(c, name, "ms", &nb->s[V_RAWN], BENCH_BASELINE,
                      "%.2f x floor; a stream per array, joined by events",
                      med[V_RAWN] / fl);
  if (rc == 0)
    rc = bench_report(
        c, "weft: a task per array, no streams", "ms", &nb->s[V_TASKS], 0,
        "%.2f x floor; target <= raw %d streams (%s); weft_task_after, events",
        med[V_TASKS] / fl, NARRAYS,
        med[V_TASKS] <= med[V_RAWN] ? "met" : "MISSED");
  if (rc == 0)
    rc = bench_report(
        c, "weft_map_chunks, pipelined, in place", "ms", &nb->s[V_PIPE], 0,
        "%.2f x floor; target <= 1.05 x floor (%s); default "
        "depth (3)",
        med[V_PIPE] / fl, med[V_PIPE] <= 1.05 * fl ? "met" : "MISSED");
  if (rc == 0)
    rc = bench_report(c, "floor: the copies alone, overlapped", "ms",
                      &nb->s[V_FLOOR], 0,
                      "(H2D + (N-1) x both + D2H) / N, N = %d; all N arrays "
                      "moved: H2D %.1f GB/s, D2H %.1f GB/s, both at once "
                      "%.1f GB/s each way",
                      NARRAYS, bw[BW_H2D], bw[BW_D2H], bw[BW_BOTH]);
  return rc;
}

/* ---- setup ---- */

static int setup(norm_bench *nb) {
  bench_ctx *c = nb->c;
  unsigned long long n = 1ull << nb->log2n;
  unsigned long long need = (n + DEMO_THREADS - 1) / DEMO_THREADS;
  unsigned blocks = need < DEMO_MAX_BLOCKS ? (unsigned)need : DEMO_MAX_BLOCKS;
  size_t all = (size_t)n * NARRAYS * sizeof(float);
  nb->bytes = (size_t)n * sizeof(float);
  BENCH_TRY(c, weft_pinned_alloc(all, (void **)&nb->in_all));
  BENCH_TRY(c, weft_pinned_alloc(all, (void **)&nb->out_all));
  BENCH_TRY(c, weft_device_alloc(all, (void **)&nb->dev_all));
  BENCH_TRY(c, weft_device_alloc(all, (void **)&nb->dev_tmp));
  BENCH_TRY(c, weft_device_alloc((size_t)blocks * NARRAYS * sizeof(float),
                                 (void **)&nb->dev_partial_all));
  BENCH_TRY(
      c, weft_device_alloc(NARRAYS * sizeof(float), (void **)&nb->dev_sum_all));
  /* dev_tmp is only a source for timing copies; give it defined bytes. */
  BENCH_TRY(c, weft_memset(nb->dev_tmp, 0, all));
  BENCH_TRY(c, weft_sync()); /* the allocations, before other streams */
  uint64_t seed = 0x9E3779B97F4A7C15ULL;
  for (int i = 0; i < NARRAYS; i++) {
    nb->in_h[i] = nb->in_all + (size_t)i * n;
    nb->out_h[i] = nb->out_all + (size_t)i * n;
    nb->dev_a[i] = nb->dev_all + (size_t)i * n;
    nb->dev_partial[i] = nb->dev_partial_all + (size_t)i * blocks;
    nb->dev_sum[i] = nb->dev_sum_all + i;
    nb->cpu_sum[i] = demo_fill_input(nb->in_h[i], n, &seed);
  }
  nb->set = (bench_norm_set){
      .narrays = NARRAYS,
      .n = n,
      .blocks = blocks,
      .in_h = nb->in_h,
      .out_h = nb->out_h,
      .dev_a = nb->dev_a,
      .dev_partial = nb->dev_partial,
      .dev_sum = nb->dev_sum,
  };
  return 0;
}

static int teardown(norm_bench *nb) {
  bench_ctx *c = nb->c;
  int rc = 0, e;
  float *dev[] = {nb->dev_all, nb->dev_tmp, nb->dev_partial_all,
                  nb->dev_sum_all};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i] && (e = weft_device_free(dev[i])) != 0)
      rc = bench_fail_weft(c, e, "weft_device_free");
  if ((e = weft_sync()) != 0)
    rc = bench_fail_weft(c, e, "weft_sync");
  if (nb->in_all && (e = weft_pinned_free(nb->in_all)) != 0)
    rc = bench_fail_weft(c, e, "weft_pinned_free");
  if (nb->out_all && (e = weft_pinned_free(nb->out_all)) != 0)
    rc = bench_fail_weft(c, e, "weft_pinned_free");
  return rc;
}

static int preload(norm_bench *nb) {
  BENCH_TRY(nb->c, weft_kernel_preload(&nb->k.partial_reduce));
  BENCH_TRY(nb->c, weft_kernel_preload(&nb->k.single_thread_sum));
  BENCH_TRY(nb->c, weft_kernel_preload(&nb->k.divide_by));
  return 0;
}

static int run(bench_ctx *c) {
  norm_bench *nb = calloc(1, sizeof *nb);
  if (!nb)
    return bench_fail(c, "out of memory");
  nb->c = c;
  nb->log2n = (unsigned)bench_size(c, 24, 18);
  demo_kernels_init(&nb->k);
  const bench_raw_ops *ops = bench_raw_for(bench_backend(c));
  char err[512];
  int rc = bench_runtime_open(c, 0, &nb->rt);
  if (rc == 0)
    rc = preload(nb);
  if (rc == 0 && ops->open(nb->rt, &nb->raw, err, sizeof err))
    rc = bench_fail(c, "%s", err);
  if (rc == 0 && ops->streams(nb->raw, NARRAYS))
    rc = bench_fail(c, "%s", nb->raw->err);
  if (rc == 0) {
    rc = setup(nb);
    if (rc == 0)
      rc = measure(nb);
    if (teardown(nb))
      rc = BENCH_FAIL;
  }
  if (nb->raw)
    ops->close(nb->raw);
  if (bench_runtime_close(c, &nb->rt))
    rc = BENCH_FAIL;
  if (rc == 0)
    rc = report(nb);
  free(nb);
  return rc;
}

const bench_scenario bench_sc_normalize = {
    "normalize",
    "seed 000: normalise 10 arrays, raw 1 and 10 streams vs weft tasks and "
    "pipelined, against the copy floor",
    run};
