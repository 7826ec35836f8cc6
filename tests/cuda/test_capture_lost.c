/* A capture ended after the CUDA context was lost: weft_graph_end must say
 * WEFT_ELOST ("device errors" in weft/error.h: WEFT_ELOST after a CUDA error
 * that destroyed the context), with CUDA's own error in the message, not
 * WEFT_EDEVICE and "the capture was invalidated by a call CUDA cannot
 * capture". A task opens a capture, a kernel on a stream of its own (not
 * captured: relaxed mode) writes through an invalid pointer, and once that
 * fault is seen the capture is ended. The fault is sticky and ends the CUDA
 * context, so this is the last thing the program does.
 * Skipped (77) without a CUDA device. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "expect.h"
#include "weft.h"
#include "weft/cuda.h"

WEFT_CUDA_KERNEL_DECL(weft_test_fault);

static int end_rc, fault_seen;
static cudaError_t end_raw;
static char end_msg[512];

static void task(void *arg) {
  cudaStream_t side = arg;
  int *bad = (int *)(uintptr_t)0x10; /* not device memory */
  void *args[] = {&bad};
  dim3 one = {1, 1, 1};
  EXPECT_OK(weft_graph_begin());
  EXPECT(cudaLaunchKernel(WEFT_CUDA_KERNEL(weft_test_fault), one, one, args, 0,
                          side) == cudaSuccess);
  fault_seen = cudaStreamSynchronize(side) != cudaSuccess;
  weft_graph *g = NULL;
  end_rc = weft_graph_end(&g);
  end_raw = weft_cuda_last_error();
  snprintf(end_msg, sizeof end_msg, "%s", weft_last_error_message());
}

int main(void) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_CUDA;
  weft_runtime *rt;
  int rc = weft_init(&rt, &o);
  if (rc == WEFT_ENODEV)
    SKIP("no CUDA device");
  EXPECT_OK(rc);
  cudaStream_t side;
  EXPECT(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) ==
         cudaSuccess);
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, task, side, NULL));
  (void)weft_task_join(t);
  fprintf(stderr,
          "weft_graph_end after the context was lost: %s (raw %d): %s\n",
          weft_err_name(end_rc), (int)end_raw, end_msg);
  EXPECT_MSG(fault_seen, "the faulting kernel did not fault");
  EXPECT_MSG(end_rc == WEFT_ELOST,
             "weft_graph_end after a sticky CUDA error returned %s, not "
             "ELOST: %s",
             weft_err_name(end_rc), end_msg);
  /* The context is gone: shutdown is not attempted. */
  puts("ok");
  return 0;
}
