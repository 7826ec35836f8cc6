/* The guide's graphed loop: one batch's work (a copy in, a kernel, a copy
 * out) captured once and replayed per batch, with a fresh input each time.
 * Uses first_kernel.cu's scale on CUDA. */
#include <stdio.h>
#include <weft.h>

#define N 4096

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

int main(void) {
  weft_runtime *rt;
  if (weft_init(&rt, NULL))
    return 1;
  float *in, *out, *d;
  unsigned n = N;
  void *args[] = {&d, &n};
  weft_graph *g = NULL;
  int rc = weft_pinned_alloc(N * sizeof(float), (void **)&in);
  rc = rc ? rc : weft_pinned_alloc(N * sizeof(float), (void **)&out);
  rc = rc ? rc : weft_device_alloc(N * sizeof(float), (void **)&d);
  rc = rc ? rc : weft_sync();
  rc = rc ? rc : weft_graph_begin(); /* record from here; nothing runs */
  if (rc == 0) {
    weft_copy(d, in, N * sizeof(float));
    weft_launch(&scale_kernel, WEFT_DIM1(N / 256), WEFT_DIM1(256), 0, args);
    weft_copy(out, d, N * sizeof(float));
    rc = weft_graph_end(&g); /* instantiated once */
  }
  int ok = rc == 0;
  for (int b = 0; ok && b < 8; b++) {
    for (int i = 0; i < N; i++)
      in[i] = (float)(b + i); /* the buffers the graph reads */
    ok = weft_graph_launch(g) == 0 && weft_sync() == 0 &&
         out[N - 1] == 2.0f * (float)(b + N - 1);
  }
  printf("%s\n", ok ? "ok" : weft_last_error_message());
  if (g)
    weft_graph_destroy(g); /* before the memory it holds busy is freed */
  weft_device_free(d);
  weft_pinned_free(in);
  weft_pinned_free(out);
  return weft_shutdown(rt) == 0 && ok ? 0 : 1;
}
