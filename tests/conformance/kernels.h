/* The conformance suite's kernels, each runnable on both backends.
 *
 * Every kernel exists twice: a __global__ function in kernels.cu, whose
 * address is exported as weft_test_cuda_<name> (NULL in a build without
 * CUDA, from kernels_nocuda.c), and a host function in kernels_host.c that
 * does the work of all of one block's threads. Parameters, in order:
 *
 *   axpb(float *x, int n, float a, float b)
 *       x[i] = x[i]*a + b for the n elements, one thread each; launch
 *       ceil(n / TEST_THREADS) blocks of TEST_THREADS threads. Chained
 *       launches with different a, b give results that depend on order.
 *   spin_until(const int *flag, int *state, long long timeout_ns)
 *       sets *state to TEST_SPIN_STARTED, spins until *flag != 0, then sets
 *       *state to TEST_SPIN_RELEASED, or to TEST_SPIN_TIMED_OUT after
 *       timeout_ns. flag and state live in pinned memory, which both
 *       backends can read and write while the kernel runs. Launch 1x1.
 *   set_value(int *out, int v)                  *out = v; launch 1x1
 *   copy_int(int *dst, const int *src)          *dst = *src; launch 1x1
 *   args_probe(test_probe_out *out, int i, double d, test_probe24 s, char c,
 *              unsigned long long u)
 *       writes every parameter back into *out, so a test sees that each
 *       one arrived with the right size and alignment. Launch 1x1.
 *   grid_probe(unsigned *out)
 *       block L (linear index x + y*gx + z*gx*gy) writes out[3L] = L,
 *       out[3L+1] = gx*gy*gz and out[3L+2] = threads per block.
 *   append_order(int *counter, int *out, int slot)
 *       out[slot] = atomic fetch-and-add of *counter: the order in which
 *       launches ran. Launch 1x1. */
#ifndef WEFT_TEST_KERNELS_H
#define WEFT_TEST_KERNELS_H

#include "weft/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TEST_THREADS 256

enum {
  TEST_SPIN_IDLE = 0,
  TEST_SPIN_STARTED = 1,
  TEST_SPIN_RELEASED = 2,
  TEST_SPIN_TIMED_OUT = 3,
};

/* 24 bytes with 4- and 8-byte members, passed by value to args_probe. */
typedef struct test_probe24 {
  int i;
  float f;
  double d;
  long long ll;
} test_probe24;

typedef struct test_probe_out {
  int i;
  double d;
  test_probe24 s;
  char c;
  unsigned long long u;
} test_probe_out;

extern const void *const weft_test_cuda_axpb;
extern const void *const weft_test_cuda_spin_until;
extern const void *const weft_test_cuda_set_value;
extern const void *const weft_test_cuda_copy_int;
extern const void *const weft_test_cuda_args_probe;
extern const void *const weft_test_cuda_grid_probe;
extern const void *const weft_test_cuda_append_order;

/* The kernels as weft describes them, ready to launch on either backend. */
typedef struct test_kernels {
  weft_kernel axpb, spin_until, set_value, copy_int, args_probe, grid_probe,
      append_order;
} test_kernels;

void test_kernels_init(test_kernels *k);

#ifdef __cplusplus
}
#endif

#endif
