/* The raw baseline of the `saturation` scenario (seed 004): an inference
 * loop written without weft's task runtime, one thread issuing every batch
 * on one stream of its own and waiting for each batch's result.
 *
 * Two implementations share this interface, as raw.h's do:
 * - bench_sat_raw_cuda (raw_saturation_cuda.cu, CUDA builds only):
 *   hand-written CUDA runtime code: a cudaStreamNonBlocking stream,
 *   cudaLaunchKernel of seed_kernels' layer, cudaMemcpyAsync into pinned
 *   memory and cudaStreamSynchronize per batch, every call checked.
 * - bench_sat_raw_host (raw_saturation_host.c): the host backend driven
 *   through the core's internal entry points (weft__stream_create,
 *   weft__launch, weft__copy, weft__stream_sync).
 *
 * The buffers come from the caller (allocated through weft), who also
 * checks the results. A context is used by one thread at a time. */
#ifndef WEFT_BENCH_RAW_SATURATION_H
#define WEFT_BENCH_RAW_SATURATION_H

#include <stddef.h>

#include "weft.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BENCH_SAT_MAX_LAYERS 8

/* One stream's view of the model: layer l computes
 *   out[l][b][j] = tanh(sum_k w[l][j][k] * in[l][b][k])
 * for b < batch, j < width (seed_kernels' layer, grid
 * seed_blocks(batch * width) of SEED_THREADS threads), where in[0] is the
 * input and in[l] = out[l - 1] otherwise (the caller points them at two
 * activation buffers in turn). A batch runs the layers in order, then
 * copies out[layers - 1] (batch * width floats, device) to out_h (pinned
 * host memory) and waits for the copy. */
typedef struct bench_sat_model {
  unsigned batch, width, layers; /* layers <= BENCH_SAT_MAX_LAYERS */
  const float *in[BENCH_SAT_MAX_LAYERS];
  const float *w[BENCH_SAT_MAX_LAYERS];
  float *out[BENCH_SAT_MAX_LAYERS];
  float *out_h;
} bench_sat_model;

/* The launch arguments of m's layers, laid out as cudaLaunchKernel's
 * kernelParams: p[l] for layer l. Launches copy the values they are
 * pointed at, so one bench_sat_args serves every batch of a loop. It points
 * into itself: fill it in place with bench_sat_args_init and do not copy
 * it. */
typedef struct bench_sat_args {
  const float *in[BENCH_SAT_MAX_LAYERS], *w[BENCH_SAT_MAX_LAYERS];
  float *out[BENCH_SAT_MAX_LAYERS];
  unsigned batch, width;
  void *p[BENCH_SAT_MAX_LAYERS][5];
} bench_sat_args;

/* Fills *a for m (defined in raw_saturation_host.c, which every build
 * compiles, for the weft variant and both baselines). Returns 0, or -1 when
 * m->layers is 0 or more than BENCH_SAT_MAX_LAYERS. */
int bench_sat_args_init(bench_sat_args *a, const bench_sat_model *m);

typedef struct bench_sat_raw bench_sat_raw;

typedef struct bench_sat_raw_ops {
  /* Opens a context with one stream on rt's device 0 (the CUDA version
   * uses rt only for that; the host version drives rt's backend). On
   * failure writes why to err and returns -1. */
  int (*open)(weft_runtime *rt, bench_sat_raw **out, char *err, size_t errlen);
  /* Waits for the stream and frees the context. */
  void (*close)(bench_sat_raw *r);
  /* Runs nb batches of m on the context's stream, each waited for before
   * the next is issued, as a loop that reads every batch's result does.
   * Returns 0, or -1 with the reason in r->err. */
  int (*infer)(bench_sat_raw *r, const bench_sat_model *m, long nb);
} bench_sat_raw_ops;

/* Every implementation's context starts with this. */
struct bench_sat_raw {
  const bench_sat_raw_ops *ops;
  char err[512]; /* why the last failed call failed */
};

#ifdef WEFT_BENCH_CUDA
extern const bench_sat_raw_ops bench_sat_raw_cuda;
#endif
extern const bench_sat_raw_ops bench_sat_raw_host;

/* The implementation for a backend: the CUDA one for CUDA (NULL in a build
 * without CUDA, which has no CUDA backend to ask for it), else the host
 * one. */
const bench_sat_raw_ops *bench_sat_raw_for(weft_backend_kind kind);

#ifdef __cplusplus
}
#endif

#endif
