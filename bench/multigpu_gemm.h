/* The multigpu scenario's tiled SGEMM across devices (multigpu_gemm.c). */
#ifndef WEFT_BENCH_MULTIGPU_GEMM_H
#define WEFT_BENCH_MULTIGPU_GEMM_H

#include "bench.h"
#include "weft.h"

/* The most devices the multigpu scenario spreads over. */
#define MULTIGPU_MAXDEV 16

/* Runs the SGEMM's variants on rt's first ndev devices and reports their
 * rows. Returns 0 or BENCH_FAIL (after bench_fail). */
int multigpu_gemm(bench_ctx *c, weft_runtime *rt, int ndev);

#endif
