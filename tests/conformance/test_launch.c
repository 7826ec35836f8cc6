/* Kernel launches: every parameter arrives intact (sizes 1 to 24 bytes,
 * mixed alignment, a struct by value), and every block of a 3-D grid runs
 * once with the right grid and block shape visible to it. */
#include <stdlib.h>
#include <string.h>

#include "common.h"

static void check_args(weft__backend *b, weft__stream *s) {
  test_probe_out *d, h;
  EXPECT_OK(weft__device_alloc(s, sizeof h, (void **)&d));
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
  EXPECT_OK(
      weft__launch(s, &tk.args_probe, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  i = 0;
  dbl = 0;
  st = (test_probe24){0, 0, 0, 0};
  c = 0;
  u = 0;
  conf_gate_open(&g);
  EXPECT_OK(weft__copy(s, &h, d, sizeof h, WEFT__COPY_D2H));
  EXPECT_OK(weft__stream_sync(s));
  EXPECT_EQ_INT(h.i, -123456789);
  EXPECT(h.d == 3.0625e-7);
  EXPECT_EQ_INT(h.s.i, 0x12345678);
  EXPECT(h.s.f == -2.5f);
  EXPECT(h.s.d == 1.0 / 3.0);
  EXPECT_EQ_INT(h.s.ll, -0x123456789abcLL);
  EXPECT_EQ_INT(h.c, 'Q');
  EXPECT(h.u == 0xfedcba9876543210ULL);
  EXPECT_EQ_INT(conf_gate_state(&g), TEST_SPIN_RELEASED);
  conf_gate_fini(&g);
  EXPECT_OK(weft__device_free(s, d));
}

static void check_grid(weft__stream *s, weft_dim3 grid, weft_dim3 block) {
  size_t nblocks = (size_t)grid.x * grid.y * grid.z;
  size_t bytes = 3 * nblocks * sizeof(unsigned);
  unsigned *d, *h = malloc(bytes);
  EXPECT(h != NULL);
  EXPECT_OK(weft__device_alloc(s, bytes, (void **)&d));
  EXPECT_OK(weft__memset(s, d, 0xff, bytes)); /* no block writes ~0u */
  void *args[] = {&d};
  EXPECT_OK(weft__launch(s, &tk.grid_probe, grid, block, 0, args));
  EXPECT_OK(weft__copy(s, h, d, bytes, WEFT__COPY_D2H));
  EXPECT_OK(weft__stream_sync(s));
  unsigned threads = block.x * block.y * block.z;
  for (size_t l = 0; l < nblocks; l++) {
    EXPECT_MSG(h[3 * l] == l, "grid (%u,%u,%u): block %zu wrote %u", grid.x,
               grid.y, grid.z, l, h[3 * l]);
    EXPECT_MSG(h[3 * l + 1] == nblocks, "block %zu saw %u blocks, not %zu", l,
               h[3 * l + 1], nblocks);
    EXPECT_MSG(h[3 * l + 2] == threads, "block %zu saw %u threads, not %u", l,
               h[3 * l + 2], threads);
  }
  EXPECT_OK(weft__device_free(s, d));
  free(h);
}

int main(void) {
  weft__backend *b = conf_open(0);
  weft__stream *s;
  EXPECT_OK(weft__stream_create(b, 0, 0, &s));
  check_args(b, s);
  check_grid(s, WEFT_DIM3(3, 2, 2), WEFT_DIM3(8, 4, 2));
  check_grid(s, WEFT_DIM1(1), WEFT_DIM1(1));
  /* x may exceed 65535 (y and z may not). */
  check_grid(s, WEFT_DIM3(70000, 1, 1), WEFT_DIM1(32));
  check_grid(s, WEFT_DIM3(2, 300, 3), WEFT_DIM3(1, 1, 64));
  EXPECT_OK(weft__stream_sync(s));
  EXPECT_OK(weft__stream_destroy(&s));
  conf_close(b);
  return 0;
}
