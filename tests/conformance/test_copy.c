/* Copies in every direction, byte-exact, with odd and large sizes, from
 * pageable (malloc) and pinned host memory, with explicit directions and
 * with WEFT__COPY_DEFAULT (direction inferred from the pointers).
 *
 * Each round goes host -> device -> device -> host and host -> host, and
 * then the destinations must equal the source. Random source bytes are
 * never 0 and destinations start zeroed, so a short copy is caught. */
#include <stdlib.h>
#include <string.h>

#include "common.h"

static unsigned char *host_alloc(weft__backend *b, int pinned, size_t n) {
  void *p = NULL;
  if (pinned)
    EXPECT_OK(weft__pinned_alloc(b, n, &p));
  else
    p = malloc(n);
  EXPECT(p != NULL);
  return p;
}

static void host_free(weft__backend *b, int pinned, void *p) {
  if (pinned)
    EXPECT_OK(weft__pinned_free(b, p));
  else
    free(p);
}

/* Fails the test at the first byte where got differs from want. */
static void check_same(const unsigned char *got, const unsigned char *want,
                       size_t n, const char *what, int pinned, int dflt) {
  size_t i = 0;
  while (i < n && got[i] == want[i])
    i++;
  EXPECT_MSG(i == n,
             "%s of %zu bytes, %s host memory, %s directions: byte %zu "
             "is %d, expected %d",
             what, n, pinned ? "pinned" : "pageable",
             dflt ? "DEFAULT" : "explicit", i, got[i], want[i]);
}

static void round_trip(weft__backend *b, weft__stream *s, size_t n, int pinned,
                       int dflt, uint64_t *seed) {
  unsigned char *src = host_alloc(b, pinned, n);
  unsigned char *back = host_alloc(b, pinned, n);
  unsigned char *other = host_alloc(b, !pinned, n); /* H2H crosses kinds */
  void *d1, *d2;
  EXPECT_OK(weft__device_alloc(s, n, &d1));
  EXPECT_OK(weft__device_alloc(s, n, &d2));
  conf_fill_random(src, n, seed);
  memset(back, 0, n);
  memset(other, 0, n);

  weft__copy_kind h2d = WEFT__COPY_H2D, d2d = WEFT__COPY_D2D;
  weft__copy_kind d2h = WEFT__COPY_D2H, h2h = WEFT__COPY_H2H;
  if (dflt)
    h2d = d2d = d2h = h2h = WEFT__COPY_DEFAULT;
  EXPECT_OK(weft__copy(s, d1, src, n, h2d));
  EXPECT_OK(weft__copy(s, d2, d1, n, d2d));
  EXPECT_OK(weft__copy(s, back, d2, n, d2h));
  EXPECT_OK(weft__copy(s, other, src, n, h2h));
  EXPECT_OK(weft__stream_sync(s));
  check_same(back, src, n, "H2D + D2D + D2H", pinned, dflt);
  check_same(other, src, n, "H2H", pinned, dflt);

  EXPECT_OK(weft__device_free(s, d1));
  EXPECT_OK(weft__device_free(s, d2));
  EXPECT_OK(weft__stream_sync(s));
  host_free(b, pinned, src);
  host_free(b, pinned, back);
  host_free(b, !pinned, other);
}

int main(void) {
  static const size_t sizes[] = {1, 7, 4096 + 3, (1u << 20) + 1};
  weft__backend *b = conf_open(0);
  weft__stream *s;
  EXPECT_OK(weft__stream_create(b, 0, 0, &s));
  uint64_t seed = 0x5eed;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    for (int pinned = 0; pinned < 2; pinned++)
      for (int dflt = 0; dflt < 2; dflt++)
        round_trip(b, s, sizes[i], pinned, dflt, &seed);
  /* Zero bytes is a successful no-op, even with NULL pointers. */
  EXPECT_OK(weft__copy(s, NULL, NULL, 0, WEFT__COPY_H2D));
  EXPECT_OK(weft__stream_destroy(&s));
  conf_close(b);
  return 0;
}
