// The `saturation` scenario's raw CUDA baseline (raw_saturation.h): what a
// careful programmer writes with the CUDA runtime API alone for an
// inference loop that reads every batch's result. One non-blocking stream,
// cudaLaunchKernel of seed_kernels' layer (the very function weft launches),
// cudaMemcpyAsync of the output into pinned memory, cudaStreamSynchronize;
// every CUDA call checked, with the call, the error's name and text, and
// the file and line kept for the report.
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#include "raw_check_cuda.h"
#include "raw_saturation.h"
#include "seed_kernels.h"

namespace {

struct sat_cuda {
  bench_sat_raw base;
  int dev;
  cudaStream_t stream;
};

sat_cuda *of(bench_sat_raw *r) { return reinterpret_cast<sat_cuda *>(r); }

int sat_open(weft_runtime *rt, bench_sat_raw **out, char *err, size_t errlen) {
  (void)rt; // weft's device 0 is CUDA device 0
  sat_cuda *x = static_cast<sat_cuda *>(calloc(1, sizeof(sat_cuda)));
  if (!x) {
    snprintf(err, errlen, "raw CUDA: out of memory");
    return -1;
  }
  x->base.ops = &bench_sat_raw_cuda;
  x->dev = 0;
  cudaError_t e = cudaSetDevice(x->dev);
  const char *call = "cudaSetDevice(0)";
  if (e == cudaSuccess) {
    call = "cudaStreamCreateWithFlags(cudaStreamNonBlocking)";
    e = cudaStreamCreateWithFlags(&x->stream, cudaStreamNonBlocking);
  }
  if (e != cudaSuccess) {
    raw_record(err, errlen, e, call, __FILE__, __LINE__);
    free(x);
    return -1;
  }
  *out = &x->base;
  return 0;
}

void sat_close(bench_sat_raw *r) {
  sat_cuda *x = of(r);
  // Errors here would only repeat one already reported by a checked call.
  cudaSetDevice(x->dev);
  cudaStreamSynchronize(x->stream);
  cudaStreamDestroy(x->stream);
  free(x);
}

int sat_infer(bench_sat_raw *r, const bench_sat_model *m, long nb) {
  sat_cuda *x = of(r);
  bench_sat_args a;
  if (bench_sat_args_init(&a, m)) {
    snprintf(x->base.err, sizeof x->base.err, "raw CUDA: %u layers", m->layers);
    return -1;
  }
  size_t bytes = (size_t)m->batch * m->width * sizeof(float);
  dim3 grid(seed_blocks((unsigned long)m->batch * m->width));
  dim3 block(SEED_THREADS);
  const float *result = m->out[m->layers - 1];
  CK(cudaSetDevice(x->dev));
  for (long i = 0; i < nb; i++) {
    for (unsigned l = 0; l < m->layers; l++)
      CK(cudaLaunchKernel(seed_cuda_layer, grid, block, a.p[l], 0, x->stream));
    CK(cudaMemcpyAsync(m->out_h, result, bytes, cudaMemcpyDeviceToHost,
                       x->stream));
    CK(cudaStreamSynchronize(x->stream));
  }
  return 0;
}

} // namespace

extern "C" const bench_sat_raw_ops bench_sat_raw_cuda = {sat_open, sat_close,
                                                         sat_infer};
