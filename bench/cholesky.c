/* The tiled Cholesky of the dataflow and cholesky scenarios
 * (cholesky.h). */
#include "cholesky.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef WEFT_BENCH_CUDA
#include "weft/cuda.h"
#include "weft/cuda_libraries.h"
#endif

static uint64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

size_t chol_plan(unsigned T, chol_op *ops) {
  size_t n = 0;
  for (unsigned k = 0; k < T; k++) {
    ops[n++] = (chol_op){CHOL_POTRF, (int)k, (int)k, (int)k};
    for (unsigned i = k + 1; i < T; i++)
      ops[n++] = (chol_op){CHOL_TRSM, (int)i, (int)k, (int)k};
    for (unsigned i = k + 1; i < T; i++) {
      ops[n++] = (chol_op){CHOL_SYRK, (int)i, (int)i, (int)k};
      for (unsigned j = k + 1; j < i; j++)
        ops[n++] = (chol_op){CHOL_GEMM, (int)i, (int)j, (int)k};
    }
  }
  return n;
}

int chol_inputs(const chol_op *o, unsigned in[2][2]) {
  switch (o->kind) {
  case CHOL_TRSM:
    in[0][0] = (unsigned)o->k, in[0][1] = (unsigned)o->k;
    return 1;
  case CHOL_SYRK:
    in[0][0] = (unsigned)o->i, in[0][1] = (unsigned)o->k;
    return 1;
  case CHOL_GEMM:
    in[0][0] = (unsigned)o->i, in[0][1] = (unsigned)o->k;
    in[1][0] = (unsigned)o->j, in[1][1] = (unsigned)o->k;
    return 2;
  default:
    return 0;
  }
}

#ifdef WEFT_BENCH_CUDA
/* The S routine in FP32, the D routine in FP64: the same arguments but
 * for the scalars, which are of the precision too. */
static int cuda_op(bench_ctx *c, const chol_lib *lib, int b, const chol_op *o,
                   void *out, void *in0, void *in1) {
  float one = 1, minus = -1;
  double one_d = 1, minus_d = -1;
  int d = lib->prec == CHOL_F64;
  int st = 0;
  switch (o->kind) {
  case CHOL_POTRF:
    st = d ? (int)cusolverDnDpotrf(lib->sol, CUBLAS_FILL_MODE_LOWER, b, out, b,
                                   lib->work, lib->lwork, lib->info)
           : (int)cusolverDnSpotrf(lib->sol, CUBLAS_FILL_MODE_LOWER, b, out, b,
                                   lib->work, lib->lwork, lib->info);
    break;
  case CHOL_TRSM:
    st =
        d ? (int)cublasDtrsm(lib->blas, CUBLAS_SIDE_RIGHT,
                             CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T,
                             CUBLAS_DIAG_NON_UNIT, b, b, &one_d, in0, b, out, b)
          : (int)cublasStrsm(lib->blas, CUBLAS_SIDE_RIGHT,
                             CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T,
                             CUBLAS_DIAG_NON_UNIT, b, b, &one, in0, b, out, b);
    break;
  case CHOL_SYRK:
    st = d ? (int)cublasDsyrk(lib->blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, b,
                              b, &minus_d, in0, b, &one_d, out, b)
           : (int)cublasSsyrk(lib->blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, b,
                              b, &minus, in0, b, &one, out, b);
    break;
  default:
    st = d ? (int)cublasDgemm(lib->blas, CUBLAS_OP_N, CUBLAS_OP_T, b, b, b,
                              &minus_d, in0, b, in1, b, &one_d, out, b)
           : (int)cublasSgemm(lib->blas, CUBLAS_OP_N, CUBLAS_OP_T, b, b, b,
                              &minus, in0, b, in1, b, &one, out, b);
  }
  return st ? bench_fail(c, "tile operation %d (%d,%d,%d): status %d", o->kind,
                         o->i, o->j, o->k, st)
            : 0;
}

/* Points lib->info past lib->work's lwork elements. */
static void place_info(chol_lib *lib) {
  lib->info =
      (int *)((char *)lib->work + (size_t)lib->lwork * chol_elem(lib->prec));
}
#endif

int chol_task_lib(bench_ctx *c, int cuda, chol_prec p, const chol_op *o,
                  int lwork, void *work, chol_lib *lib) {
  memset(lib, 0, sizeof *lib);
  lib->prec = p;
#ifdef WEFT_BENCH_CUDA
  if (!cuda)
    return 0;
  int potrf = o->kind == CHOL_POTRF;
  if (potrf ? !(lib->sol = weft_cusolver_dn()) : !(lib->blas = weft_cublas()))
    return bench_fail(c, "weft_cublas/weft_cusolver_dn: %s",
                      weft_last_error_message());
  if (!potrf)
    return 0;
  lib->lwork = lwork;
  if (!work) {
    int e = weft_device_alloc(chol_work_bytes(p, lwork), &work);
    if (e)
      return bench_fail_weft(c, e, "weft_device_alloc(potrf workspace)");
    lib->owned = 1;
  }
  lib->work = work;
  place_info(lib);
#else
  (void)c, (void)cuda, (void)o, (void)lwork, (void)work;
#endif
  return 0;
}

void chol_task_lib_done(chol_lib *lib) {
  if (lib->owned)
    weft_device_free(lib->work);
  lib->owned = 0;
}

int chol_run_op(bench_ctx *c, int cuda, const tile_kernels *k,
                const chol_lib *lib, unsigned b, const chol_op *o, void *out,
                void *in0, void *in1, raw_stream *s) {
#ifdef WEFT_BENCH_CUDA
  if (cuda)
    return cuda_op(c, lib, (int)b, o, out, in0, in1);
#endif
  (void)cuda;
  (void)lib;
  const weft_kernel *kern;
  void *a1[] = {&out, &b}, *a2[] = {&in0, &out, &b},
       *a3[] = {&in0, &in1, &out, &b}, **args;
  switch (o->kind) {
  case CHOL_POTRF:
    kern = &k->potrf, args = a1;
    break;
  case CHOL_TRSM:
    kern = &k->trsm, args = a2;
    break;
  case CHOL_SYRK:
    kern = &k->syrk, args = a2;
    break;
  default:
    kern = &k->gemm, args = a3;
  }
  if (s) {
    RAW_TRY(c, raw_launch(*s, kern, WEFT_DIM1(1), WEFT_DIM1(1), args));
    return 0;
  }
  int e = weft_launch(kern, WEFT_DIM1(1), WEFT_DIM1(1), 0, args);
  return e ? bench_fail_weft(c, e, "weft_launch(tile)") : 0;
}

int chol_raw_open(bench_ctx *c, weft_runtime *rt, chol_prec p, unsigned T,
                  unsigned b, void *tile0, int *lwork, chol_raw *r) {
  memset(r, 0, sizeof *r);
  r->cuda = raw_on_cuda(rt);
  r->prec = p;
  r->T = T;
  r->b = b;
  *lwork = 0;
  for (int i = 0; i < CHOL_NS; i++)
    RAW_TRY(c, raw_stream_create(rt, 0, &r->rs[i]));
  size_t nt = (size_t)T * T;
  r->ev = calloc(nt, sizeof *r->ev);
  r->written = calloc(nt, sizeof *r->written);
  if (!r->ev || !r->written)
    return bench_fail(c, "out of memory");
  for (size_t i = 0; i < nt; i++)
    RAW_TRY(c, raw_event_create(rt, 0, &r->ev[i]));
#ifdef WEFT_BENCH_CUDA
  for (int i = 0; r->cuda && i < CHOL_NS; i++) {
    chol_lib *l = &r->lib[i];
    l->prec = p;
    if (cublasCreate(&l->blas) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(l->blas, r->rs[i].cs) != CUBLAS_STATUS_SUCCESS ||
        cusolverDnCreate(&l->sol) != CUSOLVER_STATUS_SUCCESS ||
        cusolverDnSetStream(l->sol, r->rs[i].cs) != CUSOLVER_STATUS_SUCCESS)
      return bench_fail(c, "raw CUDA: cuBLAS/cuSOLVER set-up failed");
    if (i == 0 &&
        (p == CHOL_F64
             ? cusolverDnDpotrf_bufferSize(l->sol, CUBLAS_FILL_MODE_LOWER,
                                           (int)b, tile0, (int)b, lwork)
             : cusolverDnSpotrf_bufferSize(l->sol, CUBLAS_FILL_MODE_LOWER,
                                           (int)b, tile0, (int)b, lwork)) !=
            CUSOLVER_STATUS_SUCCESS)
      return bench_fail(c, "cusolverDn%spotrf_bufferSize failed",
                        p == CHOL_F64 ? "D" : "S");
    l->lwork = *lwork;
    RAW_TRY(c, cudaMalloc(&l->work, chol_work_bytes(p, *lwork)));
    place_info(l);
  }
#else
  (void)tile0;
#endif
  return 0;
}

void chol_raw_close(chol_raw *r) {
  for (int i = 0; i < CHOL_NS; i++)
    raw_stream_destroy(&r->rs[i]);
  if (r->ev)
    for (size_t i = 0; i < (size_t)r->T * r->T; i++)
      raw_event_destroy(&r->ev[i]);
  free(r->ev);
  free(r->written);
  r->ev = NULL;
  r->written = NULL;
#ifdef WEFT_BENCH_CUDA
  for (int i = 0; r->cuda && i < CHOL_NS; i++) {
    if (r->lib[i].blas)
      cublasDestroy(r->lib[i].blas);
    if (r->lib[i].sol)
      cusolverDnDestroy(r->lib[i].sol);
    cudaFree(r->lib[i].work);
    r->lib[i] = (chol_lib){0};
  }
#endif
}

void chol_raw_reset(chol_raw *r) {
  memset(r->written, 0, (size_t)r->T * r->T * sizeof *r->written);
}

int chol_raw_issue(bench_ctx *c, const tile_kernels *k, chol_raw *r,
                   void *tiles, const chol_op *o, int hand) {
  size_t tb = (size_t)r->b * r->b * chol_elem(r->prec);
  size_t out = (size_t)o->i * r->T + (unsigned)o->j;
  int si = hand ? (int)(out % CHOL_NS) : 0;
  unsigned in[2][2];
  int nin = chol_inputs(o, in);
  void *p[2] = {NULL, NULL};
  for (int t = 0; t < nin; t++) {
    size_t ti = (size_t)in[t][0] * r->T + in[t][1];
    p[t] = (char *)tiles + ti * tb;
    if (hand && r->written[ti] && (int)(ti % CHOL_NS) != si)
      RAW_TRY(c, raw_stream_wait(r->rs[si], r->ev[ti]));
  }
  if (chol_run_op(c, r->cuda, k, &r->lib[si], r->b, o, (char *)tiles + out * tb,
                  p[0], p[1], &r->rs[si]))
    return BENCH_FAIL;
  if (hand) {
    RAW_TRY(c, raw_event_record(r->ev[out], r->rs[si]));
    r->written[out] = 1;
  }
  return 0;
}

int chol_raw_sync(bench_ctx *c, chol_raw *r, int n) {
  for (int i = 0; i < n; i++)
    RAW_TRY(c, raw_stream_sync(r->rs[i]));
  return 0;
}

const char *chol_label(char *buf, size_t len, const char *what, unsigned n,
                       unsigned b, int sized) {
  if (!sized)
    return what;
  snprintf(buf, len, "%s, n=%u b=%u", what, n, b);
  return buf;
}

/* Element i of m, of precision p. */
static double get(const void *m, chol_prec p, size_t i) {
  return p == CHOL_F64 ? ((const double *)m)[i] : ((const float *)m)[i];
}

static void put(void *m, chol_prec p, size_t i, double v) {
  if (p == CHOL_F64)
    ((double *)m)[i] = v;
  else
    ((float *)m)[i] = (float)v;
}

void chol_matrix(void *a, chol_prec p, unsigned n, unsigned b) {
  memset(a, 0, (size_t)n * n * chol_elem(p));
  uint64_t seed = 12345;
  for (unsigned col = 0; col < n; col++)
    for (unsigned r = col; r < n; r++) {
      unsigned u = r == col ? 0 : (unsigned)(lcg(&seed) % 2001);
      /* FP32 computes in float, as it always has: rounding u / 1000 - 1
       * once from double gives a different float for about half of u. */
      double v = r == col        ? (double)n + 1
                 : p == CHOL_F64 ? (double)u / 1000.0 - 1.0
                                 : (double)((float)u / 1000.0f - 1.0f);
      put(a, p, chol_at(n, b, r, col), v);
      put(a, p, chol_at(n, b, col, r), v); /* the upper tiles are never read */
    }
}

int chol_check(bench_ctx *c, chol_prec p, const void *a, const void *l,
               unsigned n, unsigned b, const char *who) {
  double tol = p == CHOL_F64 ? 1e-9 : 1e-3;
  uint64_t seed = 77;
  for (int s = 0; s < 64; s++) {
    unsigned r = (unsigned)(lcg(&seed) % n);
    unsigned col = (unsigned)(lcg(&seed) % (r + 1));
    double sum = 0;
    for (unsigned k = 0; k <= col; k++)
      sum += get(l, p, chol_at(n, b, r, k)) * get(l, p, chol_at(n, b, col, k));
    double want = get(a, p, chol_at(n, b, r, col));
    if (!(fabs(sum - want) <= tol * (fabs(want) + 1)))
      return bench_fail(c, "%s: (L L^T)[%u][%u] = %g, A has %g", who, r, col,
                        sum, want);
  }
  return 0;
}
