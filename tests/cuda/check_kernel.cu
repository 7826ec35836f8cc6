// Launches for the CUDA side of weft check (test_check_cuda.c): an empty
// kernel on the legacy default stream, or on a given stream.
#include <cuda_runtime.h>

__global__ void weft_test_nop(void) {}

extern "C" void weft_test_nop_on(cudaStream_t s) {
  weft_test_nop<<<1, 1, 0, s>>>();
}
