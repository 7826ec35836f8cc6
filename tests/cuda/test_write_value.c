/* What CUDA's completion flags (src/cuda/cuda_completion.c) take from CUDA,
 * with CUDA alone: a cuStreamWriteValue32 to mapped pinned memory lands only
 * once the work ahead of it on its stream is done, a kernel or a
 * cudaStreamWaitEvent on another stream's record; and when the record
 * queued after it is complete, the write can already be read. A closed
 * gate (the test kernel spinning until a pinned word is set) holds the
 * work ahead; 20 ms after the gate started, the word must still hold its
 * old value. Skipped (77) without a CUDA device. */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <time.h>

#include "expect.h"
#include "kernels.h"

typedef CUresult (*write_value_fn)(CUstream, CUdeviceptr, cuuint32_t,
                                   unsigned int);

static volatile int *gate; /* [0] the flag the test sets, [1] the state */
static volatile uint32_t *word;
static CUdeviceptr word_dev;
static write_value_fn write_value;

#define CUDA_OK(call) EXPECT_MSG((call) == cudaSuccess, "%s", #call)

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Closes the gate and launches the spin on s; returns once it spins. */
static void close_gate(cudaStream_t s) {
  gate[0] = 0;
  gate[1] = TEST_SPIN_IDLE;
  const int *flag = (const int *)gate;
  int *state = (int *)gate + 1;
  long long timeout = 15LL * 1000000000LL;
  void *args[] = {&flag, &state, &timeout};
  dim3 one = {1, 1, 1};
  CUDA_OK(cudaLaunchKernel(weft_test_cuda_spin_until, one, one, args, 0, s));
  for (int i = 0; i < 10000 && gate[1] != TEST_SPIN_STARTED; i++)
    sleep_ms(1);
  EXPECT_EQ_INT(gate[1], TEST_SPIN_STARTED);
}

static void expect_held(uint32_t old, const char *what) {
  sleep_ms(20);
  EXPECT_MSG(*word == old, "%s: the write landed (%u) with the gate closed",
             what, (unsigned)*word);
  EXPECT_EQ_INT(gate[1], TEST_SPIN_STARTED);
}

int main(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    printf("skipped: no CUDA device\n");
    return 77;
  }
  void *fn = NULL;
#if CUDART_VERSION >= 12050
  enum cudaDriverEntryPointQueryResult found;
  CUDA_OK(cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &fn, 12000,
                                           cudaEnableDefault, &found));
#elif CUDART_VERSION >= 12000
  enum cudaDriverEntryPointQueryResult found;
  CUDA_OK(cudaGetDriverEntryPoint("cuStreamWriteValue32", &fn,
                                  cudaEnableDefault, &found));
#else
  CUDA_OK(
      cudaGetDriverEntryPoint("cuStreamWriteValue32", &fn, cudaEnableDefault));
#endif
  EXPECT(fn != NULL);
  write_value = (write_value_fn)fn;
  void *p, *d;
  CUDA_OK(cudaHostAlloc(&p, 64, cudaHostAllocPortable | cudaHostAllocMapped));
  gate = p;
  word = (volatile uint32_t *)((char *)p + 32);
  *word = 0;
  CUDA_OK(cudaHostGetDevicePointer(&d, p, 0));
  word_dev = (CUdeviceptr)d + 32;
  cudaStream_t a, b;
  CUDA_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  cudaEvent_t e;
  CUDA_OK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));

  /* A kernel ahead on the same stream. */
  close_gate(a);
  EXPECT(write_value(a, word_dev, 1, 0) == CUDA_SUCCESS);
  expect_held(0, "behind a kernel");
  gate[0] = 1;
  CUDA_OK(cudaStreamSynchronize(a));
  EXPECT_EQ_INT((int)*word, 1);

  /* Another stream's record ahead, through cudaStreamWaitEvent. */
  close_gate(a);
  CUDA_OK(cudaEventRecord(e, a));
  CUDA_OK(cudaStreamWaitEvent(b, e, 0));
  EXPECT(write_value(b, word_dev, 2, 0) == CUDA_SUCCESS);
  expect_held(1, "behind a cudaStreamWaitEvent");
  gate[0] = 1;
  CUDA_OK(cudaStreamSynchronize(b));
  EXPECT_EQ_INT((int)*word, 2);

  /* The order cuda_completion.c uses: the write, then the record; once the
   * record is complete, the write reads back at once. */
  for (uint32_t v = 3; v < 1003; v++) {
    EXPECT(write_value(a, word_dev, v, 0) == CUDA_SUCCESS);
    CUDA_OK(cudaEventRecord(e, a));
    CUDA_OK(cudaEventSynchronize(e));
    EXPECT_MSG(*word == v, "record %u complete, the word reads %u", (unsigned)v,
               (unsigned)*word);
  }

  CUDA_OK(cudaEventDestroy(e));
  CUDA_OK(cudaStreamDestroy(a));
  CUDA_OK(cudaStreamDestroy(b));
  CUDA_OK(cudaFreeHost(p));
  printf("ok\n");
  return 0;
}
