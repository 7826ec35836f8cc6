/* The staging copy (src/host_copy.h) against memcpy: every size around its
 * switch to non-temporal stores and around the 16- and 64-byte steps of
 * its loop, at every alignment of source and destination within 64
 * bytes; the bytes around the destination stay as they were. */
#include <stdlib.h>
#include <string.h>

#include "expect.h"
#include "host_copy.h"

enum { GUARD = 64 };

static unsigned char pattern(size_t i, unsigned salt) {
  return (unsigned char)((i * 131u + salt) % 251u + 1u);
}

static void one(unsigned char *dbuf, unsigned char *sbuf, size_t n, size_t doff,
                size_t soff, unsigned salt) {
  unsigned char *d = dbuf + GUARD + doff;
  const unsigned char *s = sbuf + soff;
  for (size_t i = 0; i < n; i++)
    sbuf[soff + i] = pattern(i, salt);
  memset(dbuf, 0, n + 2 * GUARD + 64);
  weft__copy_for_dma(d, s, n);
  for (size_t i = 0; i < n; i++)
    if (d[i] != pattern(i, salt)) {
      EXPECT_MSG(0, "%zu bytes, offsets %zu/%zu: byte %zu is %u, not %u", n,
                 doff, soff, i, d[i], pattern(i, salt));
      return;
    }
  for (size_t i = 0; i < GUARD + doff; i++)
    EXPECT_MSG(dbuf[i] == 0, "%zu bytes: written %zu bytes before dst", n,
               GUARD + doff - i);
  for (size_t i = 0; i < GUARD; i++)
    EXPECT_MSG(d[n + i] == 0, "%zu bytes: written %zu bytes past dst", n, i);
}

int main(void) {
  const size_t big = (size_t)1 << 20;
  const size_t sizes[] = {0,
                          1,
                          15,
                          16,
                          17,
                          63,
                          64,
                          65,
                          4096,
                          (256u << 10) - 1,
                          256u << 10,
                          (256u << 10) + 1,
                          (256u << 10) + 15,
                          (256u << 10) + 63,
                          (256u << 10) + 64 + 17,
                          big + 13};
  unsigned char *dbuf = malloc(big + 2 * GUARD + 128);
  unsigned char *sbuf = malloc(big + 128);
  EXPECT(dbuf && sbuf);
  unsigned salt = 0;
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
    for (size_t doff = 0; doff<64; doff += sizes[k]> 4096 ? 7 : 1)
      for (size_t soff = 0; soff<64; soff += sizes[k]> 4096 ? 13 : 1)
        one(dbuf, sbuf, sizes[k], doff, soff, salt++);
  free(dbuf);
  free(sbuf);
  puts("ok");
  return 0;
}
