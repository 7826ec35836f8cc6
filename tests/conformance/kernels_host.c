/* Host-backend versions of the test kernels (see kernels.h). Each function
 * runs once per block and does the work of all the block's threads. */
#include <time.h>

#include "kernels.h"

/* Parameter i of a launch, as the given type: args[i] points at its value. */
#define ARG(type, i) (*(type *)args[i])

static void axpb_host(const weft_kernel_ctx *ctx, void **args) {
  float *x = ARG(float *, 0);
  int n = ARG(int, 1);
  float a = ARG(float, 2), b = ARG(float, 3);
  long long first = (long long)ctx->block_idx.x * ctx->block_dim.x;
  for (long long i = first; i < first + ctx->block_dim.x && i < n; i++)
    x[i] = x[i] * a + b;
}

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The flag is written by the test's thread while this runs on an executor
 * thread, hence atomics; the short sleep leaves the CPU to other executors. */
static void spin_until_host(const weft_kernel_ctx *ctx, void **args) {
  const int *flag = ARG(const int *, 0);
  int *state = ARG(int *, 1);
  long long timeout = ARG(long long, 2);
  long long t0 = now_ns();
  __atomic_store_n(state, TEST_SPIN_STARTED, __ATOMIC_RELEASE);
  while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE)) {
    if (now_ns() - t0 > timeout) {
      __atomic_store_n(state, TEST_SPIN_TIMED_OUT, __ATOMIC_RELEASE);
      return;
    }
    nanosleep(&(struct timespec){0, 20000}, NULL);
  }
  __atomic_store_n(state, TEST_SPIN_RELEASED, __ATOMIC_RELEASE);
}

static void set_value_host(const weft_kernel_ctx *ctx, void **args) {
  *ARG(int *, 0) = ARG(int, 1);
}

static void copy_int_host(const weft_kernel_ctx *ctx, void **args) {
  *ARG(int *, 0) = *ARG(const int *, 1);
}

static void args_probe_host(const weft_kernel_ctx *ctx, void **args) {
  test_probe_out *out = ARG(test_probe_out *, 0);
  out->i = ARG(int, 1);
  out->d = ARG(double, 2);
  out->s = ARG(test_probe24, 3);
  out->c = ARG(char, 4);
  out->u = ARG(unsigned long long, 5);
}

static void grid_probe_host(const weft_kernel_ctx *ctx, void **args) {
  unsigned *out = ARG(unsigned *, 0);
  weft_dim3 g = ctx->grid_dim, b = ctx->block_dim, i = ctx->block_idx;
  unsigned long long l =
      i.x + (unsigned long long)i.y * g.x + (unsigned long long)i.z * g.x * g.y;
  out[3 * l] = (unsigned)l;
  out[3 * l + 1] = g.x * g.y * g.z;
  out[3 * l + 2] = b.x * b.y * b.z;
}

static void append_order_host(const weft_kernel_ctx *ctx, void **args) {
  int *counter = ARG(int *, 0);
  int *out = ARG(int *, 1);
  out[ARG(int, 2)] = __atomic_fetch_add(counter, 1, __ATOMIC_SEQ_CST);
}

void test_kernels_init(test_kernels *k) {
  *k = (test_kernels){
      .axpb = {.cuda = weft_test_cuda_axpb,
               .host = axpb_host,
               .name = "axpb",
               WEFT_KERNEL_ARGS(float *, int, float, float)},
      .spin_until = {.cuda = weft_test_cuda_spin_until,
                     .host = spin_until_host,
                     .name = "spin_until",
                     WEFT_KERNEL_ARGS(const int *, int *, long long),
                     .reads = WEFT_ARG_READ(0)},
      .set_value = {.cuda = weft_test_cuda_set_value,
                    .host = set_value_host,
                    .name = "set_value",
                    WEFT_KERNEL_ARGS(int *, int)},
      .copy_int = {.cuda = weft_test_cuda_copy_int,
                   .host = copy_int_host,
                   .name = "copy_int",
                   WEFT_KERNEL_ARGS(int *, const int *),
                   .reads = WEFT_ARG_READ(1)},
      .args_probe = {.cuda = weft_test_cuda_args_probe,
                     .host = args_probe_host,
                     .name = "args_probe",
                     WEFT_KERNEL_ARGS(test_probe_out *, int, double,
                                      test_probe24, char, unsigned long long)},
      .grid_probe = {.cuda = weft_test_cuda_grid_probe,
                     .host = grid_probe_host,
                     .name = "grid_probe",
                     WEFT_KERNEL_ARGS(unsigned *)},
      .append_order = {.cuda = weft_test_cuda_append_order,
                       .host = append_order_host,
                       .name = "append_order",
                       WEFT_KERNEL_ARGS(int *, int *, int)},
  };
}
