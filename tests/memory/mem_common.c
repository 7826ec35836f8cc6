/* Helpers shared by the memory tests (see mem_common.h). */
#include "mem_common.h"

#include <string.h>

void mt_fill(void *p, size_t n, uint64_t *seed) {
  const uint64_t lo7 = 0x7f7f7f7f7f7f7f7fULL;
  unsigned char *b = p;
  for (size_t i = 0; i < n; i += 8) {
    uint64_t r = tt_rand(seed);
    /* 0x80 in each zero byte of r, then 0xA5 in its place. */
    uint64_t zero = ~(((r & lo7) + lo7) | r | lo7);
    r |= (zero >> 7) * 0xA5;
    memcpy(b + i, &r, n - i < 8 ? n - i : 8);
  }
}

void mt_check_same(const void *got, const void *want, size_t n,
                   const char *what) {
  if (memcmp(got, want, n) == 0)
    return;
  const unsigned char *g = got, *w = want;
  size_t i = 0;
  while (g[i] == w[i])
    i++;
  EXPECT_MSG(0, "%s (%zu bytes): byte %zu is 0x%02x, expected 0x%02x", what, n,
             i, g[i], w[i]);
}

void mt_check_all(const void *p, int v, size_t n, const char *what) {
  /* memcmp against a block of v: fast under the sanitizers too. */
  unsigned char ref[4096];
  memset(ref, v, sizeof ref);
  const unsigned char *b = p;
  for (size_t off = 0; off < n; off += sizeof ref) {
    size_t len = n - off < sizeof ref ? n - off : sizeof ref;
    if (memcmp(b + off, ref, len) == 0)
      continue;
    size_t i = off;
    while (b[i] == (unsigned char)v)
      i++;
    EXPECT_MSG(0, "%s (%zu bytes): byte %zu is 0x%02x, expected 0x%02x", what,
               n, i, b[i], (unsigned char)v);
  }
}

weft_mem_stats mt_stats(weft_runtime *rt) {
  weft_mem_stats s;
  memset(&s, 0xff, sizeof s);
  s.struct_size = sizeof s;
  EXPECT_OK(weft_mem_stats_get(rt, &s));
  EXPECT_MSG(
      s.pinned_reserved == s.pinned_in_use + s.pinned_pending + s.pinned_cached,
      "reserved %zu != in_use %zu + pending %zu + cached %zu",
      s.pinned_reserved, s.pinned_in_use, s.pinned_pending, s.pinned_cached);
  EXPECT_MSG(s.pinned_in_use <= s.pinned_reserved &&
                 s.pinned_pending <= s.pinned_reserved &&
                 s.pinned_cached <= s.pinned_reserved,
             "a part exceeds reserved %zu: in_use %zu pending %zu cached %zu",
             s.pinned_reserved, s.pinned_in_use, s.pinned_pending,
             s.pinned_cached);
  EXPECT_MSG(s.pinned_requested <= s.pinned_in_use,
             "requested %zu > in_use %zu", s.pinned_requested, s.pinned_in_use);
  EXPECT_MSG(s.pinned_blocks <= s.pinned_requested,
             "%zu blocks in use but only %zu bytes requested", s.pinned_blocks,
             s.pinned_requested);
  EXPECT_MSG((s.pinned_blocks == 0) == (s.pinned_in_use == 0),
             "%zu blocks in use holding %zu bytes", s.pinned_blocks,
             s.pinned_in_use);
  return s;
}

int mt_stats_equal(const weft_mem_stats *a, const weft_mem_stats *b) {
  return a->pinned_reserved == b->pinned_reserved &&
         a->pinned_in_use == b->pinned_in_use &&
         a->pinned_requested == b->pinned_requested &&
         a->pinned_pending == b->pinned_pending &&
         a->pinned_cached == b->pinned_cached &&
         a->pinned_blocks == b->pinned_blocks &&
         a->pinned_hits == b->pinned_hits &&
         a->pinned_misses == b->pinned_misses &&
         a->device_allocs == b->device_allocs &&
         a->device_bytes == b->device_bytes;
}

size_t mt_block_size(size_t n) {
  if (n <= MT_MIB) {
    size_t s = 512;
    while (s < n)
      s <<= 1;
    return s;
  }
  size_t a = (size_t)64 << 10;
  return (n + a - 1) / a * a;
}
