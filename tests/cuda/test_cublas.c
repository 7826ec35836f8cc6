/* weft_cublas: each task's handle runs on that task's stream, results are
 * right, handles are reused across tasks on a thread (one worker, tasks
 * yielding between cuBLAS calls, so the thread's handle moves between
 * their streams), each stream has its own workspace of the documented
 * size (with 80 streams at once, 32 of that size and the rest 256 KiB
 * slices, none overlapping), WEFT_CUBLAS_WORKSPACE_KIB sets or disables it and
 * a bad value is an error, and shutdown frees everything. A graph captures
 * cuBLAS and a raw CUDA call on the task's stream (weft/graph.h), across a
 * yield, and its replay gives the same product. Skipped (77) without a CUDA
 * device. */
/* setenv, unsetenv */
#define _POSIX_C_SOURCE 200809L

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"
#include "weft.h"
#include "weft/cuda.h"

enum { N = 128, TASKS = 8, MANY = 80, FULL = 32, SLICE = 256 << 10 };

/* Tasks that hold (job.hold) wait after taking their workspace until all
 * have, so that MANY streams have one at once. */
static _Atomic int held, hold_for;

typedef struct job {
  float *a, *b, *c; /* pinned host, N x N, column-major */
  int rc, hold;
  cudaStream_t stream; /* the task's, and its workspace */
  void *ws;
  size_t ws_bytes;
} job;

static void gemm_task(void *arg) {
  job *j = arg;
  size_t bytes = (size_t)N * N * sizeof(float);
  float *da, *db, *dc;
  EXPECT_OK(weft_device_alloc(bytes, (void **)&da));
  EXPECT_OK(weft_device_alloc(bytes, (void **)&db));
  EXPECT_OK(weft_device_alloc(bytes, (void **)&dc));
  EXPECT_OK(weft_copy(da, j->a, bytes));
  EXPECT_OK(weft_copy(db, j->b, bytes));
  cublasHandle_t h = weft_cublas();
  EXPECT_MSG(h != NULL, "weft_cublas: %s", weft_last_error_message());
  cudaStream_t hs;
  EXPECT(cublasGetStream(h, &hs) == CUBLAS_STATUS_SUCCESS);
  EXPECT_MSG(hs == weft_cuda_stream(),
             "the handle is not on the task's stream");
  EXPECT_OK(weft_cublas_workspace(&j->ws, &j->ws_bytes));
  j->stream = hs;
  if (j->hold) {
    held++;
    while (held < hold_for)
      weft_yield();
  }
  const float one = 1, zero = 0;
  EXPECT(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, da, N, db, N,
                     &zero, dc, N) == CUBLAS_STATUS_SUCCESS);
  /* Let the worker's other tasks use its handle, then ask again. */
  weft_yield();
  h = weft_cublas();
  EXPECT_MSG(h != NULL, "weft_cublas: %s", weft_last_error_message());
  EXPECT(cublasGetStream(h, &hs) == CUBLAS_STATUS_SUCCESS);
  EXPECT_MSG(hs == weft_cuda_stream(), "after a yield: not the task's stream");
  EXPECT(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, da, N, db, N,
                     &zero, dc, N) == CUBLAS_STATUS_SUCCESS);
  EXPECT_OK(weft_copy(j->c, dc, bytes));
  EXPECT_OK(weft_device_free(da));
  EXPECT_OK(weft_device_free(db));
  EXPECT_OK(weft_device_free(dc));
  j->rc = weft_sync();
}

/* The product as a graph: a raw cudaMemsetAsync of c on the task's stream
 * and cuBLAS's SGEMM, captured across a yield, then the copy back. */
static void graph_task(void *arg) {
  job *j = arg;
  size_t bytes = (size_t)N * N * sizeof(float);
  float *da, *db, *dc;
  EXPECT_OK(weft_device_alloc(bytes, (void **)&da));
  EXPECT_OK(weft_device_alloc(bytes, (void **)&db));
  EXPECT_OK(weft_device_alloc(bytes, (void **)&dc));
  EXPECT_OK(weft_copy(da, j->a, bytes));
  EXPECT_OK(weft_copy(db, j->b, bytes));
  EXPECT_OK(weft_sync());
  weft_graph *g;
  EXPECT_OK(weft_graph_begin());
  EXPECT(cudaMemsetAsync(dc, 0xff, bytes, weft_cuda_stream()) == cudaSuccess);
  weft_yield(); /* may resume on another worker: the capture goes on */
  cublasHandle_t h = weft_cublas();
  EXPECT_MSG(h != NULL, "weft_cublas: %s", weft_last_error_message());
  const float one = 1, zero = 0;
  EXPECT(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, da, N, db, N,
                     &zero, dc, N) == CUBLAS_STATUS_SUCCESS);
  EXPECT_OK(weft_copy(j->c, dc, bytes));
  EXPECT_OK(weft_graph_end(&g));
  weft_graph_info info;
  EXPECT_OK(weft_graph_get_info(g, &info));
  EXPECT_MSG(info.kernels >= 1 && info.copies >= 2,
             "graph of %zu ops: %zu kernels, %zu copies", info.ops,
             info.kernels, info.copies);
  EXPECT_MSG(isnan(j->c[0]), "the captured work ran during the capture");
  for (int r = 0; r < 2; r++) {
    EXPECT_OK(weft_graph_launch(g));
    EXPECT_OK(weft_sync());
  }
  EXPECT_OK(weft_graph_destroy(g));
  EXPECT_OK(weft_device_free(da));
  EXPECT_OK(weft_device_free(db));
  EXPECT_OK(weft_device_free(dc));
  j->ws_bytes = 0;
  j->rc = weft_sync();
}

/* The size weft documents for device 0 when the variable is unset. */
static size_t default_workspace(void) {
  int major = 0;
  EXPECT(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) ==
         cudaSuccess);
  return major >= 9 ? (size_t)32 << 20 : (size_t)4 << 20;
}

static void bad_env_task(void *arg) {
  int *rc = arg;
  *rc = weft_cublas() == NULL ? 0 : -1;
  if (*rc == 0 &&
      !strstr(weft_last_error_message(), "WEFT_CUBLAS_WORKSPACE_KIB"))
    *rc = -2;
  void *p;
  size_t b;
  if (*rc == 0 && weft_cublas_workspace(NULL, &b) != WEFT_EINVAL)
    *rc = -3;
  if (*rc == 0 && weft_cublas_workspace(&p, NULL) != WEFT_EINVAL)
    *rc = -3;
}

/* Runs ntasks gemm tasks on workers worker threads and checks them; wsb is
 * the workspace size each stream should have. With ntasks > FULL, all are
 * alive at once: FULL streams have wsb, the others a slice of SLICE, all
 * disjoint. */
static void run(int workers, const char *env, size_t wsb, int graphed,
                int ntasks) {
  if (env)
    setenv("WEFT_CUBLAS_WORKSPACE_KIB", env, 1);
  else
    unsetenv("WEFT_CUBLAS_WORKSPACE_KIB");
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_CUDA;
  o.workers = workers;
  /* cuBLAS's first calls (library and kernel loading) need deep stacks:
   * with the default 64 KiB a task overflowed its guard page. */
  o.stack_size = (size_t)1 << 20;
  weft_runtime *rt;
  EXPECT_OK(weft_init(&rt, &o));
  static job jobs[MANY];
  weft_task *t[MANY];
  int many = ntasks > FULL;
  held = 0;
  hold_for = ntasks;
  srand(7);
  for (int k = 0; k < ntasks; k++) {
    size_t bytes = (size_t)N * N * sizeof(float);
    memset(&jobs[k], 0, sizeof jobs[k]);
    EXPECT_OK(weft_pinned_alloc(bytes, (void **)&jobs[k].a));
    EXPECT_OK(weft_pinned_alloc(bytes, (void **)&jobs[k].b));
    EXPECT_OK(weft_pinned_alloc(bytes, (void **)&jobs[k].c));
    for (int i = 0; i < N * N; i++) {
      jobs[k].a[i] = (float)rand() / RAND_MAX - 0.5f;
      jobs[k].b[i] = (float)rand() / RAND_MAX - 0.5f;
      jobs[k].c[i] = NAN;
    }
    jobs[k].hold = many;
    EXPECT_OK(weft_task_spawn(rt, &t[k], graphed ? graph_task : gemm_task,
                              &jobs[k], NULL));
  }
  int full = 0;
  for (int k = 0; k < ntasks; k++) {
    EXPECT_OK(weft_task_join(t[k]));
    EXPECT_OK(jobs[k].rc);
    for (int col = 0; col < N; col += 17)
      for (int row = 0; row < N; row += 13) {
        double want = 0;
        for (int i = 0; i < N; i++)
          want += (double)jobs[k].a[i * N + row] * jobs[k].b[col * N + i];
        double got = jobs[k].c[col * N + row];
        EXPECT_MSG(fabs(got - want) <= 1e-3 * (1 + fabs(want)),
                   "task %d: C[%d,%d] = %g, want %g", k, row, col, got, want);
      }
    if (graphed)
      goto next;
    if (many) {
      full += jobs[k].ws_bytes == wsb;
      EXPECT_MSG(jobs[k].ws_bytes == wsb || jobs[k].ws_bytes == SLICE,
                 "task %d of %d: workspace %zu bytes, want %zu or %d", k,
                 ntasks, jobs[k].ws_bytes, wsb, SLICE);
      for (int m = 0; m < k; m++) {
        const char *a = jobs[m].ws, *b = jobs[k].ws;
        EXPECT_MSG(a + jobs[m].ws_bytes <= b || b + jobs[k].ws_bytes <= a,
                   "tasks %d and %d, alive at once: workspaces overlap", m, k);
      }
      goto next;
    }
    EXPECT_MSG(jobs[k].ws_bytes == wsb,
               "task %d: workspace %zu bytes, want %zu", k, jobs[k].ws_bytes,
               wsb);
    EXPECT((jobs[k].ws != NULL) == (wsb != 0));
    /* One workspace per stream: the same stream, the same workspace (with
     * none of their own, every stream has NULL). */
    for (int m = 0; m < k && wsb != 0; m++)
      EXPECT_MSG((jobs[m].stream == jobs[k].stream) ==
                     (jobs[m].ws == jobs[k].ws),
                 "tasks %d and %d: streams %s, workspaces %s", m, k,
                 jobs[m].stream == jobs[k].stream ? "equal" : "differ",
                 jobs[m].ws == jobs[k].ws ? "equal" : "differ");
  next:
    EXPECT_OK(weft_pinned_free(jobs[k].a));
    EXPECT_OK(weft_pinned_free(jobs[k].b));
    EXPECT_OK(weft_pinned_free(jobs[k].c));
  }
  EXPECT_MSG(!many || full == FULL,
             "%d streams at once: %d with the full workspace, want %d", ntasks,
             full, FULL);
  EXPECT_OK(weft_shutdown(rt));
}

int main(void) {
  /* Set before weft_init: setenv is unsafe beside threads that read the
   * environment, and the CUDA driver's are starting then. */
  setenv("WEFT_CUBLAS_WORKSPACE_KIB", "12abc", 1);
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_CUDA;
  o.stack_size = (size_t)1 << 20;
  weft_runtime *rt;
  int rc = weft_init(&rt, &o);
  if (rc == WEFT_ENODEV)
    SKIP("no CUDA device");
  EXPECT_OK(rc);
  weft_task *bad;
  int bad_rc = 1;
  EXPECT_OK(weft_task_spawn(rt, &bad, bad_env_task, &bad_rc, NULL));
  EXPECT_OK(weft_task_join(bad));
  EXPECT_MSG(bad_rc == 0, "a bad WEFT_CUBLAS_WORKSPACE_KIB: step %d", bad_rc);
  size_t wsb = default_workspace();
  EXPECT_OK(weft_shutdown(rt));

  run(0, NULL, wsb, 0, TASKS);       /* workers: one per core */
  run(1, NULL, wsb, 0, TASKS);       /* one thread's handle for every task */
  run(1, "0", 0, 0, TASKS);          /* cuBLAS's own workspace */
  run(2, "1024", 1 << 20, 0, TASKS); /* 1 MiB */
  run(2, NULL, wsb, 1, TASKS);       /* graphs of cuBLAS and raw CUDA calls */
  /* More streams than full workspaces; not under compute-sanitizer
   * (WEFT_TEST_QUICK), where 80 tasks' cuBLAS set-up took minutes. */
  if (!getenv("WEFT_TEST_QUICK"))
    run(4, NULL, wsb, 0, MANY);
  puts("ok");
  return 0;
}
