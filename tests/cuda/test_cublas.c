/* weft_cublas: each task's handle runs on that task's stream, results are
 * right, handles are reused across tasks on a thread, and shutdown frees
 * them. Skipped (77) without a CUDA device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "weft.h"
#include "weft/cuda.h"

enum { N = 128, TASKS = 8 };

typedef struct job {
  float *a, *b, *c; /* pinned host, N x N, column-major */
  int rc;
} job;

static void gemm_task(void *arg) {
  job *j = arg;
  size_t bytes = (size_t)N * N * sizeof(float);
  float *da, *db, *dc;
  CHECK_OK(weft_device_alloc(bytes, (void **)&da));
  CHECK_OK(weft_device_alloc(bytes, (void **)&db));
  CHECK_OK(weft_device_alloc(bytes, (void **)&dc));
  CHECK_OK(weft_copy(da, j->a, bytes));
  CHECK_OK(weft_copy(db, j->b, bytes));
  cublasHandle_t h = weft_cublas();
  CHECK_MSG(h != NULL, "weft_cublas: %s", weft_last_error_message());
  cudaStream_t hs;
  CHECK(cublasGetStream(h, &hs) == CUBLAS_STATUS_SUCCESS);
  CHECK_MSG(hs == weft_cuda_stream(), "the handle is not on the task's stream");
  const float one = 1, zero = 0;
  CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, da, N, db, N,
                    &zero, dc, N) == CUBLAS_STATUS_SUCCESS);
  CHECK_OK(weft_copy(j->c, dc, bytes));
  CHECK_OK(weft_device_free(da));
  CHECK_OK(weft_device_free(db));
  CHECK_OK(weft_device_free(dc));
  j->rc = weft_sync();
}

int main(void) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_CUDA;
  /* cuBLAS's first calls (library and kernel loading) need deep stacks:
   * with the default 64 KiB a task overflowed its guard page. */
  o.stack_size = (size_t)1 << 20;
  weft_runtime *rt;
  int rc = weft_init(&rt, &o);
  if (rc == WEFT_ENODEV)
    SKIP("no CUDA device");
  CHECK_OK(rc);
  job jobs[TASKS];
  weft_task *t[TASKS];
  srand(7);
  for (int k = 0; k < TASKS; k++) {
    size_t bytes = (size_t)N * N * sizeof(float);
    CHECK_OK(weft_pinned_alloc(bytes, (void **)&jobs[k].a));
    CHECK_OK(weft_pinned_alloc(bytes, (void **)&jobs[k].b));
    CHECK_OK(weft_pinned_alloc(bytes, (void **)&jobs[k].c));
    for (int i = 0; i < N * N; i++) {
      jobs[k].a[i] = (float)rand() / RAND_MAX - 0.5f;
      jobs[k].b[i] = (float)rand() / RAND_MAX - 0.5f;
      jobs[k].c[i] = NAN;
    }
    CHECK_OK(weft_task_spawn(rt, &t[k], gemm_task, &jobs[k], NULL));
  }
  for (int k = 0; k < TASKS; k++) {
    CHECK_OK(weft_task_join(t[k]));
    CHECK_OK(jobs[k].rc);
    for (int col = 0; col < N; col += 17)
      for (int row = 0; row < N; row += 13) {
        double want = 0;
        for (int i = 0; i < N; i++)
          want += (double)jobs[k].a[i * N + row] * jobs[k].b[col * N + i];
        double got = jobs[k].c[col * N + row];
        CHECK_MSG(fabs(got - want) <= 1e-3 * (1 + fabs(want)),
                  "task %d: C[%d,%d] = %g, want %g", k, row, col, got, want);
      }
    CHECK_OK(weft_pinned_free(jobs[k].a));
    CHECK_OK(weft_pinned_free(jobs[k].b));
    CHECK_OK(weft_pinned_free(jobs[k].c));
  }
  CHECK_OK(weft_shutdown(rt));
  puts("ok");
  return 0;
}
