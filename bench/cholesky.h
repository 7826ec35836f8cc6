/* The tiled Cholesky factorisation that the dataflow and cholesky
 * scenarios factor: its operations in the loop's order, one operation run
 * on given tiles (cuSOLVER and cuBLAS on CUDA, the bench's tile kernels on
 * the host backend; weft's way or raw on a stream), the matrix and the
 * check of its factor.
 *
 * The matrix is n x n, symmetric positive definite (off-diagonal entries
 * in [-1, 1], n + 1 on the diagonal), stored as T x T tiles of b x b,
 * column-major, tile-major, the lower triangle factored in place:
 *   for k: potrf(A_kk)
 *          for i > k: trsm(A_kk, A_ik)
 *          for i > k: syrk(A_ik, A_ii); for k < j < i: gemm(A_ik, A_jk, A_ij)
 */
#ifndef WEFT_BENCH_CHOLESKY_H
#define WEFT_BENCH_CHOLESKY_H

#include <stddef.h>

#include "bench.h"
#include "kernels.h"
#include "raw_api.h"
#ifdef WEFT_BENCH_CUDA
#include <cublas_v2.h>
#include <cusolverDn.h>
#endif

enum { CHOL_POTRF, CHOL_TRSM, CHOL_SYRK, CHOL_GEMM };

/* One tile operation: writes A_ij (potrf: A_kk). */
typedef struct chol_op {
  int kind, i, j, k;
} chol_op;

/* The operations of T x T tiles in the loop's order, into ops (room for
 * T^3); returns how many. */
size_t chol_plan(unsigned T, chol_op *ops);

/* The tiles o reads, (row, column) in in[0..n); returns n (0 to 2):
 * trsm A_kk; syrk A_ik; gemm A_ik then A_jk. */
int chol_inputs(const chol_op *o, unsigned in[2][2]);

/* What an operation runs with on CUDA: the library handles and potrf's
 * workspace (lwork floats, then info). Unused on the host backend. */
typedef struct chol_lib {
#ifdef WEFT_BENCH_CUDA
  cublasHandle_t blas;
  cusolverDnHandle_t sol;
#endif
  float *work;
  int *info;
  int lwork;
  int owned; /* work is chol_task_lib's */
} chol_lib;

/* Fills *lib for o in the calling task: weft_cublas() or
 * weft_cusolver_dn() (the task's own), and for potrf a workspace of
 * lwork floats: work when given (a graph capture allocates nothing), else
 * weft_device_alloc'd, freed by chol_task_lib_done. On the host backend
 * nothing. Returns 0 or BENCH_FAIL (reported). */
int chol_task_lib(bench_ctx *c, int cuda, const chol_op *o, int lwork,
                  float *work, chol_lib *lib);
void chol_task_lib_done(chol_lib *lib);

/* Runs o on tiles of b x b: out is A_ij, in0 and in1 its inputs in
 * chol_inputs' order. On CUDA through lib's handles (on their streams);
 * on the host backend the tile kernels, on s when given, else weft_launch
 * on the calling task's stream. Returns 0 or BENCH_FAIL (reported). */
int chol_run_op(bench_ctx *c, int cuda, const tile_kernels *k,
                const chol_lib *lib, unsigned b, const chol_op *o, float *out,
                float *in0, float *in1, raw_stream *s);

/* Fills the tile-major n x n matrix a (T = n / b tiles a side). */
void chol_matrix(float *a, unsigned n, unsigned b);

/* L L^T of the factored tile-major l against a, at 64 sampled entries of
 * the lower triangle, within 1e-3 relative; who names the variant in the
 * failure. Returns 0 or BENCH_FAIL. */
int chol_check(bench_ctx *c, const float *a, const float *l, unsigned n,
               unsigned b, const char *who);

/* Element (r, col) of a tile-major matrix m of n / b tiles a side. */
static inline size_t chol_at(unsigned n, unsigned b, unsigned r, unsigned col) {
  return ((size_t)(r / b) * (n / b) + col / b) * b * b + (size_t)(col % b) * b +
         r % b;
}

#endif
