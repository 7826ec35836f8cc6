/* The launch loops that the launch and trace scenarios share
 * (launch_rounds.h). */
#include "launch_rounds.h"
#include "cpp_rows.h"
#include "raw_api.h"

int bench_launch_rounds(bench_ctx *c, const weft_kernel *tick, long batches,
                        int batch, int round, bench_samples *s,
                        bench_samples *typed_s, unsigned *ran) {
#ifndef WEFT_BENCH_CXX
  if (typed_s)
    return bench_fail(c, "typed launches need a build with C++");
#endif
  unsigned *counter;
  BENCH_TRY(c, weft_device_alloc(sizeof *counter, (void **)&counter));
  int rc = 0, e = weft_memset(counter, 0, sizeof *counter);
  if (e)
    rc = bench_fail_weft(c, e, "weft_memset");
  void *args[] = {&counter};
  /* With typed_s, batches take turns between the two ways of launching,
   * so that drift over the run favours neither. */
  int ways = typed_s ? 2 : 1;
  for (int r = round < 0 ? 0 : round;
       rc == 0 && r <= (round < 0 ? bench_repeat(c) : round); r++) {
    uint64_t ns[2] = {0, 0};
    for (long b = 0; rc == 0 && b < batches * ways; b++) {
      int typed = (int)(b % ways);
      uint64_t t0 = bench_now_ns();
      for (int i = 0; i < batch; i++) {
#ifdef WEFT_BENCH_CXX
        if (typed)
          e = bench_cpp_launch(tick, counter);
        else
#endif
          e = weft_launch(tick, WEFT_DIM1(1), WEFT_DIM1(1), 0, args);
        if (e) {
          rc = bench_fail_weft(c, e, "weft_launch");
          break;
        }
      }
      ns[typed] += bench_now_ns() - t0;
      e = weft_sync();
      if (e && rc == 0)
        rc = bench_fail_weft(c, e, "weft_sync");
    }
    if (r > 0) {
      bench_samples_add(s, (double)ns[0] / 1e3 / (double)(batches * batch));
      if (typed_s)
        bench_samples_add(typed_s,
                          (double)ns[1] / 1e3 / (double)(batches * batch));
    }
  }
  if (rc == 0)
    rc = bench_fetch(c, ran, counter, sizeof *ran);
  e = weft_device_free(counter);
  if (e && rc == 0)
    rc = bench_fail_weft(c, e, "weft_device_free");
  if ((e = weft_sync()) != 0 && rc == 0)
    rc = bench_fail_weft(c, e, "weft_sync");
  return rc;
}

int bench_raw_launch_rounds(bench_ctx *c, weft_runtime *rt,
                            const weft_kernel *tick, long batches, int batch,
                            int round, bench_samples *s, unsigned *ran) {
  raw_stream st;
  RAW_TRY(c, raw_stream_create(rt, 0, &st));
  unsigned *counter = NULL;
  int rc = 0, e;
  if ((e = weft_device_alloc(sizeof *counter, (void **)&counter)) != 0 ||
      (e = weft_memset(counter, 0, sizeof *counter)) != 0 ||
      (e = weft_sync()) != 0)
    rc = bench_fail_weft(c, e, "counter setup");
  void *args[] = {&counter};
  for (int r = round < 0 ? 0 : round;
       rc == 0 && r <= (round < 0 ? bench_repeat(c) : round); r++) {
    uint64_t ns = 0;
    for (long b = 0; rc == 0 && b < batches; b++) {
      uint64_t t0 = bench_now_ns();
      for (int i = 0; rc == 0 && i < batch; i++)
        if ((e = raw_launch(st, tick, WEFT_DIM1(1), WEFT_DIM1(1), args)) != 0)
          rc = raw_fail(c, e, "raw_launch", __LINE__);
      ns += bench_now_ns() - t0;
      if (rc == 0 && (e = raw_stream_sync(st)) != 0)
        rc = raw_fail(c, e, "raw_stream_sync", __LINE__);
    }
    if (r > 0)
      bench_samples_add(s, (double)ns / 1e3 / (double)(batches * batch));
  }
  if (rc == 0)
    rc = bench_fetch(c, ran, counter, sizeof *ran);
  /* Destroying the stream waits for it, before the counter is freed. */
  if ((e = raw_stream_destroy(&st)) != 0 && rc == 0)
    rc = raw_fail(c, e, "raw_stream_destroy", __LINE__);
  if (counter && (e = weft_device_free(counter)) != 0 && rc == 0)
    rc = bench_fail_weft(c, e, "weft_device_free");
  if ((e = weft_sync()) != 0 && rc == 0)
    rc = bench_fail_weft(c, e, "weft_sync");
  return rc;
}
