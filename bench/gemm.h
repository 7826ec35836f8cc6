/* The matrix multiply of the seeds' experiments: c = a · b for n x n
 * row-major float matrices.
 *
 * On CUDA it is cuBLAS's SGEMM, as torch.matmul (seed 001) and CUDA.jl's
 * mul! (seed 002) are: weft's variants take their handle from weft_cublas(),
 * which follows the task's stream; the raw baselines hold their own handle
 * and set its stream by hand. Both go through bench_sgemm, so they make the
 * very same call. In FP32 (cuBLAS's default math mode, and PyTorch's since
 * allow_tf32 defaults to off): no TF32 tensor cores on either side. On the
 * host backend it is the seed_kernels matmul kernel. */
#ifndef WEFT_BENCH_GEMM_H
#define WEFT_BENCH_GEMM_H

#include "bench.h"
#include "kernels.h"

#ifdef WEFT_BENCH_CUDA
#include <cublas_v2.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Queues out = a · b on the calling task's (or thread's) stream, for a
 * rows x n and b n x n (out rows x n). Returns 0, or BENCH_FAIL after
 * bench_fail with the reason. */
int bench_gemm_rows(bench_ctx *c, const seed_kernels *k, unsigned rows,
                    unsigned n, const float *a, const float *b, float *out);

/* On CUDA, has every worker of rt make its cuBLAS handle now
 * (weft_cublas_warm), as the raw baselines make theirs before timing:
 * creating one calls cudaMalloc, which holds every stream of the device,
 * inside whichever timed run first lands on a new worker. WEFT_BENCH_COLD=1
 * skips it (to measure that cost). Returns 0 or BENCH_FAIL. */
int bench_gemm_warm(bench_ctx *c, weft_runtime *rt);

/* The square case, n x n. */
static inline int bench_gemm(bench_ctx *c, const seed_kernels *k, unsigned n,
                             const float *a, const float *b, float *out) {
  return bench_gemm_rows(c, k, n, n, a, b, out);
}

/* The launch of the host matmul kernel for rows of c: one block per row. */
weft_dim3 seed_matmul_grid(unsigned rows);

#ifdef WEFT_BENCH_CUDA
/* out = a · b through handle h, on whatever stream h is set to. cuBLAS is
 * column-major: a row-major matrix is its transpose, so out^T = b^T · a^T
 * is one plain SGEMM with the operands swapped. */
cublasStatus_t bench_sgemm_rows(cublasHandle_t h, unsigned rows, unsigned n,
                                const float *a, const float *b, float *out);

/* Returns BENCH_FAIL from the enclosing function, after bench_fail, if a
 * cuBLAS call of a raw baseline fails; RAW_TRY's counterpart. */
#define BLAS_TRY(c, call)                                                      \
  do {                                                                         \
    cublasStatus_t st_ = (call);                                               \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                          \
      return bench_fail((c), "raw CUDA: %s: %s: %s (line %d)", #call,          \
                        cublasGetStatusName(st_), cublasGetStatusString(st_),  \
                        __LINE__);                                             \
  } while (0)

static inline cublasStatus_t bench_sgemm(cublasHandle_t h, unsigned n,
                                         const float *a, const float *b,
                                         float *out) {
  return bench_sgemm_rows(h, n, n, a, b, out);
}
#endif

/* The reference for checks: sum_k a[i][k] * b[k][j], in double. */
double bench_gemm_ref(unsigned n, const float *a, const float *b, unsigned i,
                      unsigned j);

#ifdef __cplusplus
}
#endif

#endif
