/* memset on device memory: the value's low byte fills exactly the range
 * asked for, at odd offsets and sizes, in stream order with copies. */
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum { N = 4096 + 3 };

int main(void) {
  weft__backend *b = conf_open(0);
  weft__stream *s;
  EXPECT_OK(weft__stream_create(b, 0, 0, &s));
  unsigned char *d, *h = malloc(N), *want = malloc(N);
  EXPECT(h && want);
  EXPECT_OK(weft__device_alloc(s, N, (void **)&d));

  /* Whole buffer, then an unaligned middle part, then single bytes at both
   * ends; one download at the end sees them all in order. */
  EXPECT_OK(weft__memset(s, d, 0x11, N));
  EXPECT_OK(weft__memset(s, d + 5, 0xcd, N - 12));
  EXPECT_OK(weft__memset(s, d, 0, 1));
  EXPECT_OK(weft__memset(s, d + N - 1, 0x7f, 1));
  EXPECT_OK(weft__memset(s, d + 100, 0, 0)); /* zero bytes: no-op */
  memset(h, 0xee, N);
  EXPECT_OK(weft__copy(s, h, d, N, WEFT__COPY_D2H));
  EXPECT_OK(weft__stream_sync(s));

  memset(want, 0x11, N);
  memset(want + 5, 0xcd, N - 12);
  want[0] = 0;
  want[N - 1] = 0x7f;
  for (size_t i = 0; i < N; i++)
    EXPECT_MSG(h[i] == want[i], "byte %zu is 0x%02x, expected 0x%02x", i, h[i],
               want[i]);

  /* memset after an upload, then a download: stream order is kept. */
  memset(want, 0x5a, N);
  EXPECT_OK(weft__copy(s, d, want, N, WEFT__COPY_H2D));
  EXPECT_OK(weft__memset(s, d + 1, 0xa5, 2));
  EXPECT_OK(weft__copy(s, h, d, N, WEFT__COPY_D2H));
  EXPECT_OK(weft__stream_sync(s));
  EXPECT(h[0] == 0x5a && h[1] == 0xa5 && h[2] == 0xa5 && h[3] == 0x5a);
  EXPECT(memcmp(h + 3, want + 3, N - 3) == 0);

  EXPECT_OK(weft__device_free(s, d));
  EXPECT_OK(weft__stream_sync(s));
  free(h);
  free(want);
  EXPECT_OK(weft__stream_destroy(&s));
  conf_close(b);
  return 0;
}
