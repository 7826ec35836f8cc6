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
 * The variants are demo.c's, which `weft demo` runs too; raw means the
 * CUDA runtime on CUDA and the host backend's own streams (weft/host.h) on
 * the host backend. Rounds run every variant in turn; round 0
 * warms up. Before every run the outputs are overwritten with NaN, and
 * after it every element must be input / (the array's sum in double, on
 * the CPU) within 1e-4 relative. Targets: tasks <= raw 10 streams;
 * pipelined <= 1.05 x floor. */
#include <stdlib.h>

#include "bench.h"
#include "demo.h"
#include "raw_api.h"

enum { NARRAYS = 10 };

enum { V_RAW1, V_RAWN, V_TASKS, V_PIPE, V_FLOOR, NVARIANTS };
enum { BW_H2D, BW_D2H, BW_BOTH, NBW };

typedef struct norm_bench {
  bench_ctx *c;
  weft_runtime *rt;
  demo s;
  float *dev_tmp; /* device: the source of the floor's D2H copies */
  bench_samples t[NVARIANTS];
  bench_samples bw[NBW]; /* GB/s, each way */
} norm_bench;

/* ---- the floor ---- */

/* Times copies of all the arrays' bytes on seed 000's raw streams: H2D on
 * the main stream and/or D2H on the first array stream, both after the
 * start event; *ms from it to the end of both. */
static int copy_timed(norm_bench *nb, int h2d, int d2h, float *ms) {
  bench_ctx *c = nb->c;
  demo *s = &nb->s;
  size_t all = s->bytes * NARRAYS;
  RAW_TRY(c, raw_event_record(s->start, s->main));
  if (h2d)
    RAW_TRY(c, raw_copy(s->main, s->dev_all, s->in_all, all, RAW_H2D));
  if (d2h) {
    RAW_TRY(c, raw_stream_wait(s->streams[0], s->start));
    RAW_TRY(c, raw_copy(s->streams[0], s->out_all, nb->dev_tmp, all, RAW_D2H));
    RAW_TRY(c, raw_event_record(s->end[0], s->streams[0]));
    RAW_TRY(c, raw_stream_wait(s->main, s->end[0]));
  }
  RAW_TRY(c, raw_event_record(s->final, s->main));
  RAW_TRY(c, raw_event_sync(s->final));
  RAW_TRY(c, raw_elapsed_ms(s->start, s->final, ms));
  return 0;
}

/* Times the three copies of the floor; adds their GB/s and the floor. */
static int run_floor(norm_bench *nb, int record) {
  size_t all = nb->s.bytes * NARRAYS;
  float t[NBW];
  if (copy_timed(nb, 1, 0, &t[BW_H2D]) || copy_timed(nb, 0, 1, &t[BW_D2H]) ||
      copy_timed(nb, 1, 1, &t[BW_BOTH]))
    return BENCH_FAIL;
  if (!record)
    return 0;
  for (int b = 0; b < NBW; b++)
    bench_samples_add(&nb->bw[b], t[b] > 0 ? (double)all / (t[b] * 1e6) : 0);
  bench_samples_add(&nb->t[V_FLOOR],
                    (t[BW_H2D] + (NARRAYS - 1) * t[BW_BOTH] + t[BW_D2H]) /
                        NARRAYS);
  return 0;
}

/* ---- running ---- */

static int run_variant(norm_bench *nb, int v, int record) {
  float ms = 0;
  demo_poison(&nb->s);
  const char *name = demo_name((demo_variant)v);
  if (demo_run(&nb->s, (demo_variant)v, &ms) || demo_check(&nb->s, name))
    return bench_fail(nb->c, "%s: %s", name, nb->s.err);
  if (record)
    bench_samples_add(&nb->t[v], ms);
  return 0;
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

static const bench_chart chart = {
    "normalize", "seed 000: normalising 10 arrays, against the copies' floor",
    NULL, 0};

static int report(norm_bench *nb) {
  bench_ctx *c = nb->c;
  const char *raw = raw_label(bench_backend(c));
  double med[NVARIANTS], bw[NBW];
  for (int v = 0; v < NVARIANTS; v++)
    med[v] = bench_stats_of(&nb->t[v]).median;
  for (int b = 0; b < NBW; b++)
    bw[b] = bench_stats_of(&nb->bw[b]).median;
  double fl = med[V_FLOOR] > 0 ? med[V_FLOOR] : 1e-9;
  char name[64], size[64];
  double mib = (double)nb->s.bytes / (1 << 20);
  snprintf(size, sizeof size, "%d arrays of 2^%u floats (%g MiB each)", NARRAYS,
           nb->s.log2n, mib);

  snprintf(name, sizeof name, "%s: 1 stream", raw);
  bench_plot(c, &chart, name, 0);
  int rc = bench_report(c, name, "ms", &nb->t[V_RAW1], 0,
                        "%.2f x floor; %s; events", med[V_RAW1] / fl, size);
  snprintf(name, sizeof name, "%s: %d streams", raw, NARRAYS);
  bench_plot(c, &chart, name, 0);
  if (rc == 0)
    rc = bench_report(c, name, "ms", &nb->t[V_RAWN], BENCH_BASELINE,
                      "%.2f x floor; a stream per array, joined by events",
                      med[V_RAWN] / fl);
  bench_plot(c, &chart, "weft: a task per array, no streams", 0);
  if (rc == 0)
    rc = bench_report(
        c, "weft: a task per array, no streams", "ms", &nb->t[V_TASKS], 0,
        "%.2f x floor; target <= raw %d streams (%s); weft_task_after, events",
        med[V_TASKS] / fl, NARRAYS,
        med[V_TASKS] <= med[V_RAWN] ? "met" : "MISSED");
  bench_plot(c, &chart, "weft_map_chunks, pipelined, in place", 0);
  if (rc == 0)
    rc = bench_report(
        c, "weft_map_chunks, pipelined, in place", "ms", &nb->t[V_PIPE], 0,
        "%.2f x floor; target <= 1.05 x floor (%s); default "
        "depth (3)",
        med[V_PIPE] / fl, med[V_PIPE] <= 1.05 * fl ? "met" : "MISSED");
  bench_plot_ref(c, &chart, "floor: the copies alone, overlapped");
  if (rc == 0)
    rc = bench_report(c, "floor: the copies alone, overlapped", "ms",
                      &nb->t[V_FLOOR], 0,
                      "(H2D + (N-1) x both + D2H) / N, N = %d; all N arrays "
                      "moved: H2D %.1f GB/s, D2H %.1f GB/s, both at once "
                      "%.1f GB/s each way",
                      NARRAYS, bw[BW_H2D], bw[BW_D2H], bw[BW_BOTH]);
  return rc;
}

static int run(bench_ctx *c) {
  norm_bench *nb = calloc(1, sizeof *nb);
  if (!nb)
    return bench_fail(c, "out of memory");
  nb->c = c;
  int rc = bench_runtime_open(c, 0, &nb->rt);
  if (rc == 0 &&
      demo_open(&nb->s, nb->rt, NARRAYS, (unsigned)bench_size(c, 24, 18)) != 0)
    rc = bench_fail(c, "seed 000: %s", nb->s.err);
  size_t all = nb->s.bytes * NARRAYS;
  /* dev_tmp is only a source for timing copies; give it defined bytes. */
  if (rc == 0 && (rc = weft_device_alloc(all, (void **)&nb->dev_tmp)) != 0)
    rc = bench_fail_weft(c, rc, "weft_device_alloc");
  if (rc == 0 && (rc = weft_memset(nb->dev_tmp, 0, all)) != 0)
    rc = bench_fail_weft(c, rc, "weft_memset");
  if (rc == 0 && (rc = weft_sync()) != 0)
    rc = bench_fail_weft(c, rc, "weft_sync");
  if (rc == 0)
    rc = measure(nb);
  if (nb->rt) {
    /* demo_close waits for the raw streams before anything is freed. */
    if (demo_close(&nb->s) && rc == 0)
      rc = bench_fail(c, "seed 000: %s", nb->s.err);
    int e = nb->dev_tmp ? weft_device_free(nb->dev_tmp) : 0;
    if (e == 0)
      e = weft_sync();
    if (e && rc == 0)
      rc = bench_fail_weft(c, e, "weft_device_free");
  }
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
