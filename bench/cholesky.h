/* The tiled Cholesky factorisation that the dataflow and cholesky
 * scenarios factor: its operations in the loop's order, one operation run
 * on given tiles (cuSOLVER and cuBLAS on CUDA, the bench's tile kernels on
 * the host backend; weft's way or raw on a stream), the matrix and the
 * check of its factor; in FP32 or FP64 (chol_prec), the same code for both.
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

/* The element type of the matrix, its tiles and potrf's workspace: float
 * (cuSOLVER's and cuBLAS's S routines, the tile kernels) or double (the D
 * routines, the tile kernels' _f64 versions). */
typedef enum { CHOL_F32, CHOL_F64 } chol_prec;

/* The bytes of one element of precision p. */
static inline size_t chol_elem(chol_prec p) {
  return p == CHOL_F64 ? sizeof(double) : sizeof(float);
}

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

/* What an operation runs with on CUDA: the precision, the library
 * handles and potrf's workspace (lwork elements of the precision, then
 * info). Unused on the host backend. */
typedef struct chol_lib {
  chol_prec prec;
#ifdef WEFT_BENCH_CUDA
  cublasHandle_t blas;
  cusolverDnHandle_t sol;
#endif
  void *work;
  int *info;
  int lwork;
  int owned; /* work is chol_task_lib's */
} chol_lib;

/* The bytes of a potrf workspace of lwork elements of p with room after
 * it for info. */
static inline size_t chol_work_bytes(chol_prec p, int lwork) {
  return ((size_t)lwork + 64) * chol_elem(p);
}

/* Fills *lib for o of precision p in the calling task: weft_cublas() or
 * weft_cusolver_dn() (the task's own), and for potrf a workspace of
 * lwork elements: work when given (a graph capture allocates nothing), else
 * weft_device_alloc'd, freed by chol_task_lib_done. On the host backend
 * nothing. Returns 0 or BENCH_FAIL (reported). */
int chol_task_lib(bench_ctx *c, int cuda, chol_prec p, const chol_op *o,
                  int lwork, void *work, chol_lib *lib);
void chol_task_lib_done(chol_lib *lib);

/* Runs o on tiles of b x b: out is A_ij, in0 and in1 its inputs in
 * chol_inputs' order. On CUDA through lib's handles (on their streams), in
 * lib's precision; on the host backend the tile kernels k (of the same
 * precision), on s when given, else weft_launch on the calling task's
 * stream. Returns 0 or BENCH_FAIL (reported). */
int chol_run_op(bench_ctx *c, int cuda, const tile_kernels *k,
                const chol_lib *lib, unsigned b, const chol_op *o, void *out,
                void *in0, void *in1, raw_stream *s);

/* The factorisation as raw code orders it by hand: CHOL_NS raw streams,
 * each tile's operations on its tile's stream, an event per tile recorded
 * after each write (written: recorded since chol_raw_reset) and waited
 * for by the operations on other streams that read the tile; on CUDA a
 * cuBLAS and a cuSOLVER handle per stream, potrf's workspace with it. */
enum { CHOL_NS = 8 };
typedef struct chol_raw {
  int cuda;
  chol_prec prec;
  unsigned T, b;
  raw_stream rs[CHOL_NS];
  raw_event *ev;
  int *written;
  chol_lib lib[CHOL_NS];
} chol_raw;

/* Makes r's streams, events and handles for T x T tiles of b in
 * precision p (tile0 any device tile, for the workspace query); *lwork:
 * potrf's workspace in elements of p (0 on the host backend). Returns 0 or
 * BENCH_FAIL (reported); chol_raw_close frees what was made either way. */
int chol_raw_open(bench_ctx *c, weft_runtime *rt, chol_prec p, unsigned T,
                  unsigned b, void *tile0, int *lwork, chol_raw *r);
void chol_raw_close(chol_raw *r);
/* Forgets which tiles' events were recorded (before a run). */
void chol_raw_reset(chol_raw *r);
/* Issues o on the tile-major device matrix tiles: with hand, on its
 * tile's stream after its inputs' events, recording its own; without, in
 * order on the first stream. Returns 0 or BENCH_FAIL (reported). */
int chol_raw_issue(bench_ctx *c, const tile_kernels *k, chol_raw *r,
                   void *tiles, const chol_op *o, int hand);
/* Waits for the first n streams. */
int chol_raw_sync(bench_ctx *c, chol_raw *r, int n);

/* A row's label: what, followed by ", n=N b=B" when sized (a run of
 * several sizes), written into buf. */
const char *chol_label(char *buf, size_t len, const char *what, unsigned n,
                       unsigned b, int sized);

/* Fills the tile-major n x n matrix a of precision p (T = n / b tiles a
 * side). */
void chol_matrix(void *a, chol_prec p, unsigned n, unsigned b);

/* L L^T of the factored tile-major l against a, both of precision p, at
 * 64 sampled entries of the lower triangle, within 1e-3 relative in FP32,
 * 1e-9 in FP64; who names the variant in the failure. Returns 0 or
 * BENCH_FAIL. */
int chol_check(bench_ctx *c, chol_prec p, const void *a, const void *l,
               unsigned n, unsigned b, const char *who);

/* Element (r, col) of a tile-major matrix m of n / b tiles a side. */
static inline size_t chol_at(unsigned n, unsigned b, unsigned r, unsigned col) {
  return ((size_t)(r / b) * (n / b) + col / b) * b * b + (size_t)(col % b) * b +
         r % b;
}

#endif
