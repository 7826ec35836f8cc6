/* bench_gemm: cuBLAS on CUDA, the host matmul kernel on the host backend.
 * See gemm.h. */
#include "gemm.h"

#include <stdlib.h>
#include <string.h>

#ifdef WEFT_BENCH_CUDA
#include "weft/cuda.h"

cublasStatus_t bench_sgemm_rows(cublasHandle_t h, unsigned rows, unsigned n,
                                const float *a, const float *b, float *out) {
  const float one = 1.0f, zero = 0.0f;
  int m = (int)n;
  return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, (int)rows, m, &one, b, m,
                     a, m, &zero, out, m);
}
#endif

weft_dim3 seed_matmul_grid(unsigned n) { return WEFT_DIM1(n ? n : 1); }

int bench_gemm_rows(bench_ctx *c, const seed_kernels *k, unsigned rows,
                    unsigned n, const float *a, const float *b, float *out) {
#ifdef WEFT_BENCH_CUDA
  if (bench_backend(c) == WEFT_BACKEND_CUDA) {
    cublasHandle_t h = weft_cublas();
    if (!h)
      return bench_fail(c, "weft_cublas: %s", weft_last_error_message());
    cublasStatus_t st = bench_sgemm_rows(h, rows, n, a, b, out);
    if (st != CUBLAS_STATUS_SUCCESS)
      return bench_fail(c, "cublasSgemm: %s", cublasGetStatusString(st));
    return 0;
  }
#endif
  void *args[] = {&a, &b, &out, &n, &rows};
  int rc =
      weft_launch(&k->matmul, seed_matmul_grid(rows), WEFT_DIM1(1), 0, args);
  return rc ? bench_fail_weft(c, rc, "weft_launch(seed_matmul)") : 0;
}

int bench_gemm_warm(bench_ctx *c, weft_runtime *rt) {
#ifdef WEFT_BENCH_CUDA
  const char *cold = getenv("WEFT_BENCH_COLD");
  if (bench_backend(c) == WEFT_BACKEND_CUDA && !(cold && !strcmp(cold, "1")))
    BENCH_TRY(c, weft_cublas_warm(rt));
#else
  (void)c;
  (void)rt;
#endif
  return 0;
}

double bench_gemm_ref(unsigned n, const float *a, const float *b, unsigned i,
                      unsigned j) {
  double acc = 0.0;
  for (unsigned k = 0; k < n; k++)
    acc += (double)a[(size_t)i * n + k] * (double)b[(size_t)k * n + j];
  return acc;
}
