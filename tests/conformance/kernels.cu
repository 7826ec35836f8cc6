// CUDA versions of the test kernels (see kernels.h). Only their addresses
// leave this file; the tests launch them through weft like any weft_kernel.
#include "kernels.h"

__global__ void test_axpb(float *x, int n, float a, float b) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] = x[i] * a + b;
}

// Nanoseconds of the GPU's global timer, which ticks regardless of the
// SM clock, so the timeout does not depend on clock speed.
__device__ static unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// flag and state are in pinned host memory: volatile makes every read go
// to memory, and the system fence makes the state visible to the host.
__global__ void test_spin_until(const int *flag, int *state,
                                long long timeout_ns) {
  volatile const int *f = flag;
  volatile int *st = state;
  unsigned long long t0 = global_ns();
  *st = TEST_SPIN_STARTED;
  __threadfence_system();
  while (*f == 0) {
    if ((long long)(global_ns() - t0) > timeout_ns) {
      *st = TEST_SPIN_TIMED_OUT;
      __threadfence_system();
      return;
    }
    __nanosleep(1000);
  }
  *st = TEST_SPIN_RELEASED;
  __threadfence_system();
}

__global__ void test_set_value(int *out, int v) { *out = v; }

__global__ void test_copy_int(int *dst, const int *src) { *dst = *src; }

__global__ void test_args_probe(test_probe_out *out, int i, double d,
                                test_probe24 s, char c, unsigned long long u) {
  out->i = i;
  out->d = d;
  out->s = s;
  out->c = c;
  out->u = u;
}

__global__ void test_grid_probe(unsigned *out) {
  if (threadIdx.x || threadIdx.y || threadIdx.z)
    return;
  unsigned long long l = blockIdx.x +
                         (unsigned long long)blockIdx.y * gridDim.x +
                         (unsigned long long)blockIdx.z * gridDim.x * gridDim.y;
  out[3 * l] = (unsigned)l;
  out[3 * l + 1] = gridDim.x * gridDim.y * gridDim.z;
  out[3 * l + 2] = blockDim.x * blockDim.y * blockDim.z;
}

__global__ void test_append_order(int *counter, int *out, int slot) {
  out[slot] = atomicAdd(counter, 1);
}

extern "C" const void *const weft_test_cuda_axpb = (const void *)test_axpb;
extern "C" const void *const weft_test_cuda_spin_until =
    (const void *)test_spin_until;
extern "C" const void *const weft_test_cuda_set_value =
    (const void *)test_set_value;
extern "C" const void *const weft_test_cuda_copy_int =
    (const void *)test_copy_int;
extern "C" const void *const weft_test_cuda_args_probe =
    (const void *)test_args_probe;
extern "C" const void *const weft_test_cuda_grid_probe =
    (const void *)test_grid_probe;
extern "C" const void *const weft_test_cuda_append_order =
    (const void *)test_append_order;
