/* The launch loop that the launch and trace scenarios share, written once
 * with weft's launches and once as raw code writes them (raw_api.h). */
#ifndef WEFT_BENCH_LAUNCH_ROUNDS_H
#define WEFT_BENCH_LAUNCH_ROUNDS_H

#include "bench.h"
#include "weft.h"

/* Both loops run repeat+1 rounds (the first a warm-up) when round < 0,
 * else round `round` alone (0: the warm-up, not sampled), so that a
 * caller can make the two loops' rounds take turns.
 *
 * weft's loop, run in a task: rounds of
 * `batches` batches of `batch` launches of tick (one-thread kernel
 * counting its runs), timing only the launch calls and draining each batch
 * with weft_sync untimed; adds the microseconds per launch of each timed
 * round to s. With typed_s (a build with WEFT_BENCH_CXX), each round also
 * runs as many batches launched through weft.hpp (cpp_rows.h), taking
 * turns batch by batch with weft_launch's, into typed_s. On success *ran
 * holds the kernel's run count, for the caller to check. Returns 0 or
 * BENCH_FAIL. */
int bench_launch_rounds(bench_ctx *c, const weft_kernel *tick, long batches,
                        int batch, int round, bench_samples *s,
                        bench_samples *typed_s, unsigned *ran);

/* The same loop as raw code writes it, from the calling plain thread: the
 * launches on a raw stream of rt (raw_api.h), each batch drained by a
 * stream sync, untimed. */
int bench_raw_launch_rounds(bench_ctx *c, weft_runtime *rt,
                            const weft_kernel *tick, long batches, int batch,
                            int round, bench_samples *s, unsigned *ran);

#endif
