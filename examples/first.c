/* The README's first program: two tasks, each copying its buffer to the
 * device, scaling it there and copying it back, overlapping on the GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <weft.h>

#define N (1 << 18)

/* The kernel, once for both backends: the CUDA version is first_kernel.cu's
 * (NULL in a build without CUDA), the host backend calls this once per
 * block. */
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

static void work(void *arg) { /* a task: an ordinary C function */
  float *x = arg, *d;
  unsigned n = N;
  void *args[] = {&d, &n};
  int rc = weft_device_alloc(N * sizeof(float), (void **)&d); /* my stream */
  if (rc == 0) {
    weft_copy(d, x, N * sizeof(float)); /* direction from the pointers */
    weft_launch(&scale_kernel, WEFT_DIM1(N / 256), WEFT_DIM1(256), 0, args);
    weft_copy(x, d, N * sizeof(float));
    weft_device_free(d);
  }
  rc = rc ? rc : weft_sync(); /* waits for my stream only, yielding */
  if (rc)
    fprintf(stderr, "task: %s\n", weft_last_error_message());
}

int main(void) {
  weft_runtime *rt;
  if (weft_init(&rt, NULL) != 0) { /* WEFT_BACKEND=host|cuda|auto */
    fprintf(stderr, "weft_init: %s\n", weft_last_error_message());
    return 1;
  }
  float *a = malloc(N * sizeof(float)), *b = malloc(N * sizeof(float));
  for (int i = 0; a && b && i < N; i++)
    a[i] = b[i] = (float)i;
  weft_task *ta, *tb;
  int rc = !a || !b;
  rc = rc ? rc : weft_task_spawn(rt, &ta, work, a, NULL); /* two tasks, */
  rc = rc ? rc : weft_task_spawn(rt, &tb, work, b, NULL); /* two streams */
  if (rc == 0)
    rc = weft_task_join(ta) | weft_task_join(tb);
  int ok = rc == 0 && a[N - 1] == 2.0f * (N - 1) && b[7] == 14.0f;
  printf("%s\n", ok ? "ok" : "FAILED");
  free(a);
  free(b);
  return weft_shutdown(rt) == 0 && ok ? 0 : 1;
}
