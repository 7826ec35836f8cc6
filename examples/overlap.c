/* Two tasks, two streams, no stream written by hand (seed 002's example).
 *
 * Each task multiplies two matrices and takes the sine of the result. The
 * tasks are independent, so weft gives each its own stream and their
 * kernels overlap on the GPU; weft_sync() waits for the task's own stream
 * only, and suspends the task instead of blocking its thread.
 *
 *   build/examples/overlap            (WEFT_BACKEND=host to run on the CPU)
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <weft.h>

#include "overlap_kernels.h"

typedef struct job {
  const float *a, *b; /* device inputs, n x n */
  float *c;           /* device output */
  unsigned n;
} job;

/* The whole task: two launches and a wait. */
static void mul_sin(void *arg) {
  job *j = arg;
  weft_dim3 tiles = WEFT_DIM3((j->n + 15) / 16, (j->n + 15) / 16, 1);
  void *mul_args[] = {&j->a, &j->b, &j->c, &j->n};
  weft_launch(&matmul_kernel, tiles, WEFT_DIM3(16, 16, 1), 0, mul_args);
  unsigned total = j->n * j->n;
  void *sin_args[] = {&j->c, &total};
  weft_launch(&sine_kernel, WEFT_DIM1((total + 255) / 256), WEFT_DIM1(256), 0,
              sin_args);
  if (weft_sync() != 0)
    fprintf(stderr, "task failed: %s\n", weft_last_error_message());
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(void) {
  weft_runtime *rt;
  if (weft_init(&rt, NULL) != 0) {
    fprintf(stderr, "weft_init: %s\n", weft_last_error_message());
    return 1;
  }
  unsigned n = weft_runtime_backend(rt) == WEFT_BACKEND_CUDA ? 2048 : 256;
  size_t bytes = (size_t)n * n * sizeof(float);

  /* Inputs: random matrices copied to the device from this thread, which
   * has a stream of its own just like a task. */
  float *h, *a, *b, *c[2];
  weft_pinned_alloc(bytes, (void **)&h);
  for (size_t i = 0; i < (size_t)n * n; i++)
    h[i] = (float)rand() / RAND_MAX - 0.5f;
  weft_device_alloc(bytes, (void **)&a);
  weft_device_alloc(bytes, (void **)&b);
  weft_device_alloc(bytes, (void **)&c[0]);
  weft_device_alloc(bytes, (void **)&c[1]);
  weft_copy(a, h, bytes);
  weft_copy(b, h, bytes);
  weft_sync();

  job jobs[2] = {{a, b, c[0], n}, {b, a, c[1], n}};
  double serial = 0, overlapped = 0;
  for (int rep = 0; rep < 3; rep++) { /* the first round warms up */
    double t0 = now_ms();
    weft_task *t;
    for (int i = 0; i < 2; i++) { /* one after the other */
      weft_task_spawn(rt, &t, mul_sin, &jobs[i], NULL);
      weft_task_join(t);
    }
    double t1 = now_ms();
    weft_task *ts[2]; /* both at once */
    for (int i = 0; i < 2; i++)
      weft_task_spawn(rt, &ts[i], mul_sin, &jobs[i], NULL);
    for (int i = 0; i < 2; i++)
      weft_task_join(ts[i]);
    double t2 = now_ms();
    if (rep > 0) {
      serial += (t1 - t0) / 2;
      overlapped += (t2 - t1) / 2;
    }
  }

  /* Check one element of each result against the CPU. */
  int ok = 1;
  for (int i = 0; i < 2; i++) {
    weft_copy(h, c[i], bytes);
    weft_sync();
    double ref = 0;
    size_t r = n / 3, col = n / 5;
    float *in = malloc(bytes);
    weft_copy(in, a, bytes);
    weft_sync();
    for (unsigned k = 0; k < n; k++)
      ref += (double)in[r * n + k] * in[(size_t)k * n + col];
    ok &= fabs(sin(ref) - h[r * n + col]) < 1e-3;
    free(in);
  }
  printf("%s backend, two %ux%u matmul+sin tasks\n",
         weft_backend_name(weft_runtime_backend(rt)), n, n);
  printf("  one task after the other: %8.3f ms\n", serial);
  printf("  two tasks at once:        %8.3f ms  (%.2fx)\n", overlapped,
         serial / overlapped);
  printf("  result check: %s\n", ok ? "passed" : "FAILED");

  weft_device_free(a);
  weft_device_free(b);
  weft_device_free(c[0]);
  weft_device_free(c[1]);
  weft_sync();
  weft_pinned_free(h);
  weft_shutdown(rt);
  return ok ? 0 : 1;
}
