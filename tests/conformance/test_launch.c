/* Kernel launches: every parameter arrives intact (sizes 1 to 24 bytes,
 * mixed alignment, a struct by value), and every block of a 3-D grid runs
 * once with the right grid and block shape visible to it. */
#include <stdlib.h>
#include <string.h>

#include "common.h"

static void check_args(weft__backend *b, weft__stream *s) {
  test_probe_out *d, h;
  CHECK_OK(weft__device_alloc(s, sizeof h, (void **)&d));
  int i = -123456789;
  double dbl = 3.0625e-7;
  test_probe24 st = {
      .i = 0x12345678, .f = -2.5f, .d = 1.0 / 3.0, .ll = -0x123456789abcLL};
  char c = 'Q';
  unsigned long long u = 0xfedcba9876543210ULL;
  void *args[] = {&d, &i, &dbl, &st, &c, &u};
  memset(&h, 0, sizeof h);
  /* Parameter values are copied at launch: the kernel, held back behind a
   * gate on its stream, must not see the changes made after the call. */
  conf_gate g;
  conf_gate_init(b, &g);
  conf_gate_launch(&g, s);
  CHECK_OK(
      weft__launch(s, &tk.args_probe, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  i = 0;
  dbl = 0;
  st = (test_probe24){0, 0, 0, 0};
  c = 0;
  u = 0;
  conf_gate_open(&g);
  CHECK_OK(weft__copy(s, &h, d, sizeof h, WEFT__COPY_D2H));
  CHECK_OK(weft__stream_sync(s));
  CHECK_EQ_INT(h.i, -123456789);
  CHECK(h.d == 3.0625e-7);
  CHECK_EQ_INT(h.s.i, 0x12345678);
  CHECK(h.s.f == -2.5f);
  CHECK(h.s.d == 1.0 / 3.0);
  CHECK_EQ_INT(h.s.ll, -0x123456789abcLL);
  CHECK_EQ_INT(h.c, 'Q');
  CHECK(h.u == 0xfedcba9876543210ULL);
  CHECK_EQ_INT(conf_gate_state(&g), TEST_SPIN_RELEASED);
  conf_gate_fini(&g);
  CHECK_OK(weft__device_free(s, d));
}

static void check_grid(weft__stream *s, weft_dim3 grid, weft_dim3 block) {
  size_t nblocks = (size_t)grid.x * grid.y * grid.z;
  size_t bytes = 3 * nblocks * sizeof(unsigned);
  unsigned *d, *h = malloc(bytes);
  CHECK(h != NULL);
  CHECK_OK(weft__device_alloc(s, bytes, (void **)&d));
  CHECK_OK(weft__memset(s, d, 0xff, bytes)); /* no block writes ~0u */
  void *args[] = {&d};
  CHECK_OK(weft__launch(s, &tk.grid_probe, grid, block, 0, args));
  CHECK_OK(weft__copy(s, h, d, bytes, WEFT__COPY_D2H));
  CHECK_OK(weft__stream_sync(s));
  unsigned threads = block.x * block.y * block.z;
  for (size_t l = 0; l < nblocks; l++) {
    CHECK_MSG(h[3 * l] == l, "grid (%u,%u,%u): block %zu wrote %u", grid.x,
              grid.y, grid.z, l, h[3 * l]);
    CHECK_MSG(h[3 * l + 1] == nblocks, "block %zu saw %u blocks, not %zu", l,
              h[3 * l + 1], nblocks);
    CHECK_MSG(h[3 * l + 2] == threads, "block %zu saw %u threads, not %u", l,
              h[3 * l + 2], threads);
  }
  CHECK_OK(weft__device_free(s, d));
  free(h);
}

int main(void) {
  weft__backend *b = conf_open(0);
  weft__stream *s;
  CHECK_OK(weft__stream_create(b, 0, 0, &s));
  check_args(b, s);
  check_grid(s, WEFT_DIM3(3, 2, 2), WEFT_DIM3(8, 4, 2));
  check_grid(s, WEFT_DIM1(1), WEFT_DIM1(1));
  /* x may exceed 65535 (y and z may not). */
  check_grid(s, WEFT_DIM3(70000, 1, 1), WEFT_DIM1(32));
  check_grid(s, WEFT_DIM3(2, 300, 3), WEFT_DIM3(1, 1, 64));
  CHECK_OK(weft__stream_sync(s));
  CHECK_OK(weft__stream_destroy(&s));
  conf_close(b);
  return 0;
}
