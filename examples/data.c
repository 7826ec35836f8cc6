/* The README's data program: host memory registered in blocks over the
 * devices, two passes of a task per block, each on the block's device.
 * weft copies each block in, orders the second pass after the first by
 * the declared data, and copies the results back: no device buffer, copy
 * or wait written here. */
#include <stdio.h>
#include <stdlib.h>
#include <weft.h>

#define N (1 << 22)
#define BLOCK (1 << 18) /* floats a block: 16 blocks */

/* The kernel as in first.c: first_kernel.cu's on CUDA. */
WEFT_CUDA_KERNEL_DECL(scale);
static void scale_host(const weft_kernel_ctx *k, void **args) {
  float *x = *(float **)args[0];
  unsigned n = *(unsigned *)args[1];
  unsigned lo = k->block_idx.x * k->block_dim.x, hi = lo + k->block_dim.x;
  for (unsigned i = lo; i < hi && i < n; i++)
    x[i] *= 2.0f;
}
static const weft_kernel scale_kernel = {.cuda = WEFT_CUDA_KERNEL(scale),
                                         .host = scale_host,
                                         .name = "scale",
                                         WEFT_KERNEL_ARGS(float *, unsigned)};

static void pass(void *arg) { /* a task: scales one block where it runs */
  float *x;
  unsigned n = BLOCK;
  int rc = weft_data_get(arg, WEFT_RW, (void **)&x); /* this device's copy */
  if (rc == 0)
    rc = weft_launch(&scale_kernel, WEFT_DIM1(BLOCK / 256), WEFT_DIM1(256), 0,
                     (void *[]){&x, &n});
  if (rc)
    fprintf(stderr, "task: %s\n", weft_last_error_message());
}

int main(void) {
  weft_runtime *rt;
  if (weft_init(&rt, NULL) != 0) {
    fprintf(stderr, "weft_init: %s\n", weft_last_error_message());
    return 1;
  }
  float *a = malloc(N * sizeof(float));
  for (int i = 0; a && i < N; i++)
    a[i] = (float)i;
  weft_data_blocks *m = NULL;
  int rc =
      a ? weft_data_register_blocks(rt, a, N * sizeof(float),
                                    BLOCK * sizeof(float), WEFT_DATA_CYCLIC, &m)
        : 1;
  for (int p = 0; p < 2 && rc == 0; p++) /* the second pass follows */
    for (size_t i = 0; i < weft_data_blocks_count(m) && rc == 0; i++) {
      weft_data *d = weft_data_blocks_at(m, i);
      weft_access acc = weft_data_access(d, WEFT_RW);
      weft_task_opts o;
      weft_task_opts_init(&o);
      o.device = weft_data_blocks_device(m, i); /* the block's home */
      o.accesses = &acc;
      o.naccesses = 1;
      rc = weft_task_spawn(rt, NULL, pass, d, &o); /* NULL: detached */
    }
  if (m && weft_data_unregister_blocks(m) != 0) /* after the tasks: */
    rc = 1;                                     /* a holds the result */
  if (rc)
    fprintf(stderr, "weft: %s\n", weft_last_error_message());
  int ok = rc == 0 && a[N - 1] == 4.0f * (N - 1) && a[7] == 28.0f;
  printf("%s\n", ok ? "ok" : "FAILED");
  free(a);
  return weft_shutdown(rt) == 0 && ok ? 0 : 1;
}
