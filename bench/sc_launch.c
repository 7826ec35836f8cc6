/* launch: the host cost of one kernel launch.
 *
 * weft_launch of a one-thread kernel (tick: as cheap as an empty one, and it
 * counts its runs) from a task, in batches: only the launch calls are
 * timed, then weft_sync drains the batch untimed, so the device's queue
 * never fills and blocks a launch. Baseline, from a plain thread: the same
 * batches of the same kernel on one raw stream (raw_api.h), each drained by
 * a stream sync, untimed: on CUDA, cudaLaunchKernel of the same __global__
 * function on a cudaStreamNonBlocking stream; on the host backend,
 * weft_host_launch on one of its own streams (weft/host.h). Both counters
 * must equal the number of launches. Target: weft <= raw + 0.1 us. */
#include <stdlib.h>

#include "bench.h"
#include "kernels.h"
#include "launch_rounds.h"

enum { BATCH = 256 };

typedef struct launcher {
  bench_ctx *c;
  bench_kernels k;
  long batches;
  bench_samples s;
} launcher;

static long total_launches(launcher *l) {
  return l->batches * BATCH * (bench_repeat(l->c) + 1);
}

static int weft_rounds(launcher *l) {
  unsigned ran = 0;
  int rc =
      bench_launch_rounds(l->c, &l->k.tick, l->batches, BATCH, &l->s, &ran);
  if (rc == 0 && (long)ran != total_launches(l))
    rc = bench_fail(l->c, "weft: the kernel ran %u times, expected %ld", ran,
                    total_launches(l));
  return rc;
}

static void launch_task(void *arg) { weft_rounds(arg); }

static int raw_rounds(launcher *l, weft_runtime *rt) {
  unsigned ran = 0;
  int rc = bench_raw_launch_rounds(l->c, rt, &l->k.tick, l->batches, BATCH,
                                   &l->s, &ran);
  if (rc == 0 && (long)ran != total_launches(l))
    rc = bench_fail(l->c, "raw: the kernel ran %u times, expected %ld", ran,
                    total_launches(l));
  return rc;
}

static int run(bench_ctx *c) {
  launcher *w = calloc(1, sizeof *w), *raw = calloc(1, sizeof *raw);
  weft_runtime *rt = NULL;
  int rc = w && raw ? 0 : bench_fail(c, "out of memory");
  if (rc == 0)
    rc = bench_runtime_open(c, 0, &rt);
  if (rc == 0) {
    w->c = raw->c = c;
    bench_kernels_init(&w->k);
    bench_kernels_init(&raw->k);
    rc = bench_kernels_preload(&w->k);
    if (rc)
      rc = bench_fail_weft(c, rc, "weft_kernel_preload");
    w->batches = raw->batches = bench_size(c, 80, 40);
    if (rc == 0)
      rc = bench_in_task(c, rt, launch_task, w);
    if (rc == 0 && bench_failed(c))
      rc = BENCH_FAIL;
  }
  if (rc == 0)
    rc = raw_rounds(raw, rt);
  if (bench_runtime_close(c, &rt))
    rc = BENCH_FAIL;
  if (rc == 0) {
    double d = bench_stats_of(&w->s).median - bench_stats_of(&raw->s).median;
    bench_peer(c, "launch", "weft");
    rc = bench_report(c, "weft_launch from a task", "us", &w->s, 0,
                      "raw %+.3f us; target <= raw + 0.1 us (%s); %ld "
                      "launches per repeat",
                      d, d <= 0.1 ? "met" : "MISSED", w->batches * BATCH);
  }
  if (rc == 0) {
    bench_peer(c, "launch", "raw");
    rc = bench_report(c,
                      bench_backend(c) == WEFT_BACKEND_CUDA
                          ? "raw cudaLaunchKernel, own stream"
                          : "raw weft_host_launch, own stream (host ops)",
                      "us", &raw->s, BENCH_BASELINE,
                      "from a plain thread; batches of %d, synced untimed",
                      BATCH);
  }
  free(w);
  free(raw);
  return rc;
}

const bench_scenario bench_sc_launch = {
    "launch", "host cost of weft_launch from a task vs a raw launch", run};
