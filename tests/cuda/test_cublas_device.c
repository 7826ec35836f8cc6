/* weft_cublas on a thread whose code switched devices itself (weft/cuda.h:
 * "Code that calls cudaSetDevice itself may do so freely; weft notices and
 * switches back"): the plain thread's stream is on device 0, the thread's
 * current device is 1. The workspace weft makes for that stream (a
 * cudaMalloc on the current device) must be device 0's memory, and a GEMM on
 * device 0's memory through the handle must give the right product. Needs
 * two CUDA devices; skipped (77) otherwise. */
#include <cuda_runtime.h>
#include <stdio.h>

#include "expect.h"
#include "weft.h"
#include "weft/cuda.h"

enum { N = 64 };

int main(void) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_CUDA;
  weft_runtime *rt;
  int rc = weft_init(&rt, &o);
  if (rc == WEFT_ENODEV)
    SKIP("no CUDA device");
  EXPECT_OK(rc);
  int n = 0;
  EXPECT_OK(weft_device_count(rt, &n));
  if (n < 2) {
    EXPECT_OK(weft_shutdown(rt));
    SKIP("one CUDA device");
  }
  /* The plain thread's weft calls go to device 0; its own code moves the
   * thread to device 1 (weft_init left it on 0). */
  EXPECT(cudaSetDevice(1) == cudaSuccess);
  cublasHandle_t h = weft_cublas();
  EXPECT_MSG(h != NULL, "weft_cublas: %s", weft_last_error_message());
  void *ws = NULL;
  size_t ws_bytes = 0;
  EXPECT_OK(weft_cublas_workspace(&ws, &ws_bytes));
  if (ws) {
    struct cudaPointerAttributes a;
    EXPECT(cudaPointerGetAttributes(&a, ws) == cudaSuccess);
    EXPECT_MSG(a.device == 0,
               "the workspace of a device-0 stream is device %d's memory",
               a.device);
  }

  size_t bytes = (size_t)N * N * sizeof(float);
  float *hA, *hC, *dA, *dC;
  EXPECT_OK(weft_pinned_alloc(bytes, (void **)&hA));
  EXPECT_OK(weft_pinned_alloc(bytes, (void **)&hC));
  for (int i = 0; i < N * N; i++)
    hA[i] = (float)(i % 7);
  EXPECT_OK(weft_device_alloc(bytes, (void **)&dA));
  EXPECT_OK(weft_device_alloc(bytes, (void **)&dC));
  EXPECT_OK(weft_copy(dA, hA, bytes));
  /* C = 2 A + 0 A. */
  const float two = 2, zero = 0;
  /* cuBLAS wants its handle's device current for its calls: the device
   * weft_cublas() made the handle for, the stream's. */
  EXPECT(cudaSetDevice(0) == cudaSuccess);
  h = weft_cublas();
  EXPECT(h != NULL);
  cublasStatus_t st = cublasSgeam(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, &two, dA,
                                  N, &zero, dA, N, dC, N);
  EXPECT_MSG(st == CUBLAS_STATUS_SUCCESS, "cublasSgeam: %d", (int)st);
  EXPECT_OK(weft_copy(hC, dC, bytes));
  EXPECT_OK(weft_sync());
  for (int i = 0; i < N * N; i++)
    EXPECT_MSG(hC[i] == 2 * hA[i], "C[%d] = %g, not %g", i, hC[i], 2 * hA[i]);
  EXPECT_OK(weft_device_free(dA));
  EXPECT_OK(weft_device_free(dC));
  EXPECT_OK(weft_pinned_free(hA));
  EXPECT_OK(weft_pinned_free(hC));
  EXPECT_OK(weft_shutdown(rt));
  puts("ok");
  return 0;
}
