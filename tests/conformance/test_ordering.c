/* In-stream ordering: operations on one stream run in issue order.
 *
 * A chain of axpb launches (x = x*a + b with changing a, b; affine maps do
 * not commute, so any reordering changes the result) and copies is queued
 * with a single sync at the end and compared with the same chain computed
 * sequentially on the CPU. The values stay small dyadic rationals, so float
 * arithmetic is exact on every device and the comparison can be exact too. */
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum { N = (1 << 16) + 5, STEPS = 12, ROUNDS = 16, RBYTES = 4099 };

static float step_a(int k) { return (float[]){2.0f, -1.0f, 0.5f}[k % 3]; }
static float step_b(int k) { return (float)(k % 5) - 2.0f; }

static void launch_axpb(weft__stream *s, float *d, int k) {
  int n = N;
  float a = step_a(k), b = step_b(k);
  void *args[] = {&d, &n, &a, &b};
  unsigned blocks = (N + TEST_THREADS - 1) / TEST_THREADS;
  EXPECT_OK(weft__launch(s, &tk.axpb, WEFT_DIM1(blocks),
                         WEFT_DIM1(TEST_THREADS), 0, args));
}

/* H2D, STEPS launches on d1, D2D into d2, STEPS more on d2, D2H of both. */
static void axpb_chain(weft__stream *s) {
  float *x = malloc(N * sizeof *x), *mid = malloc(N * sizeof *mid);
  float *out = malloc(N * sizeof *out), *ref = malloc(N * sizeof *ref);
  EXPECT(x && mid && out && ref);
  for (int i = 0; i < N; i++)
    ref[i] = x[i] = (float)(i % 1000);

  float *d1, *d2;
  EXPECT_OK(weft__device_alloc(s, N * sizeof(float), (void **)&d1));
  EXPECT_OK(weft__device_alloc(s, N * sizeof(float), (void **)&d2));
  EXPECT_OK(weft__copy(s, d1, x, N * sizeof(float), WEFT__COPY_H2D));
  for (int k = 0; k < STEPS; k++)
    launch_axpb(s, d1, k);
  EXPECT_OK(weft__copy(s, d2, d1, N * sizeof(float), WEFT__COPY_D2D));
  for (int k = STEPS; k < 2 * STEPS; k++)
    launch_axpb(s, d2, k);
  EXPECT_OK(weft__copy(s, mid, d1, N * sizeof(float), WEFT__COPY_D2H));
  EXPECT_OK(weft__copy(s, out, d2, N * sizeof(float), WEFT__COPY_D2H));
  EXPECT_OK(weft__stream_sync(s));

  /* The same chain on the CPU. x is no longer needed as input, so it takes
   * the expected contents of d1 (the state after the first STEPS). */
  for (int k = 0; k < 2 * STEPS; k++) {
    if (k == STEPS)
      memcpy(x, ref, N * sizeof *ref);
    for (int i = 0; i < N; i++)
      ref[i] = ref[i] * step_a(k) + step_b(k);
  }
  for (int i = 0; i < N; i++) {
    EXPECT_MSG(mid[i] == x[i], "after the first chain, x[%d] = %g, expected %g",
               i, (double)mid[i], (double)x[i]);
    EXPECT_MSG(out[i] == ref[i],
               "after the whole chain, x[%d] = %g, expected %g", i,
               (double)out[i], (double)ref[i]);
  }
  EXPECT_OK(weft__device_free(s, d1));
  EXPECT_OK(weft__device_free(s, d2));
  EXPECT_OK(weft__stream_sync(s));
  free(x);
  free(mid);
  free(out);
  free(ref);
}

/* ROUNDS uploads into one device buffer, each followed by a download to
 * its own host buffer: a copy that overtakes another shows up as a row
 * holding another round's bytes. Sources alternate pageable and pinned. */
static void copy_rounds(weft__backend *b, weft__stream *s) {
  uint64_t seed = 12345;
  unsigned char *src[ROUNDS], *dst[ROUNDS], *dev;
  EXPECT_OK(weft__device_alloc(s, RBYTES, (void **)&dev));
  for (int r = 0; r < ROUNDS; r++) {
    if (r % 2)
      EXPECT_OK(weft__pinned_alloc(b, RBYTES, (void **)&src[r]));
    else
      EXPECT((src[r] = malloc(RBYTES)) != NULL);
    EXPECT((dst[r] = calloc(1, RBYTES)) != NULL);
    conf_fill_random(src[r], RBYTES, &seed);
  }
  for (int r = 0; r < ROUNDS; r++) {
    EXPECT_OK(weft__copy(s, dev, src[r], RBYTES, WEFT__COPY_H2D));
    EXPECT_OK(weft__copy(s, dst[r], dev, RBYTES, WEFT__COPY_D2H));
  }
  EXPECT_OK(weft__stream_sync(s));
  for (int r = 0; r < ROUNDS; r++) {
    EXPECT_MSG(memcmp(src[r], dst[r], RBYTES) == 0,
               "round %d's download does not hold round %d's upload", r, r);
    if (r % 2)
      EXPECT_OK(weft__pinned_free(b, src[r]));
    else
      free(src[r]);
    free(dst[r]);
  }
  EXPECT_OK(weft__device_free(s, dev));
  EXPECT_OK(weft__stream_sync(s));
}

int main(void) {
  weft__backend *b = conf_open(0);
  weft__stream *s;
  EXPECT_OK(weft__stream_create(b, 0, 0, &s));
  axpb_chain(s);
  copy_rounds(b, s);
  EXPECT_OK(weft__stream_destroy(&s));
  EXPECT(s == NULL);
  conf_close(b);
  return 0;
}
