/* The pinned cache through weft_pinned_alloc/free and weft_mem_stats_get,
 * with no stream involved (test_reuse.c covers blocks a copy used).
 *
 * - sizes around every rounding edge (1, 511, 512, 513, 1 MiB, 1 MiB + 1,
 *   3 MiB, 64 MiB): each block is writable over its whole size, aligned,
 *   disjoint from the others, and the stats move by exactly the documented
 *   block size and the bytes asked for;
 * - freeing and allocating the same size again is a cache hit that pins
 *   nothing new, and a large block serves requests it fits with at most an
 *   eighth to spare, and no others;
 * - foreign, interior and double frees fail with WEFT_EINVAL and change
 *   nothing; size 0 and absurd sizes fail without touching the output;
 * - weft_mem_trim gives back chunks with no block in use, keeps the rest
 *   intact, and leaves nothing reserved once every block is free;
 * - tasks allocating and freeing at once never get overlapping blocks;
 * - shutdown with a block still allocated fails with WEFT_EBUSY and closes
 *   nothing; after the free it succeeds.
 * Every stats snapshot is checked for reserved == in_use + pending + cached
 * and requested <= in_use (mt_stats). */
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "mem_common.h"

static weft_runtime *rt;

static const size_t sizes[] = {1,      511,        512,        513,
                               MT_MIB, MT_MIB + 1, 3 * MT_MIB, 64 * MT_MIB};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };

static void check_aligned(const void *p, size_t n) {
  EXPECT_MSG((uintptr_t)p % alignof(max_align_t) == 0,
             "weft_pinned_alloc(%zu) returned %p, not aligned to %zu", n, p,
             (size_t)alignof(max_align_t));
}

/* Each size in turn, all kept live: the stats move by exactly one block. */
static void sizes_and_stats(void) {
  void *p[NSIZES];
  weft_mem_stats before = mt_stats(rt);
  for (int i = 0; i < NSIZES; i++) {
    size_t n = sizes[i];
    weft_mem_stats a = mt_stats(rt);
    p[i] = NULL;
    EXPECT_OK(weft_pinned_alloc(n, &p[i]));
    EXPECT(p[i] != NULL);
    check_aligned(p[i], n);
    weft_mem_stats b = mt_stats(rt);
    EXPECT_MSG(b.pinned_in_use - a.pinned_in_use == mt_block_size(n),
               "alloc %zu: in_use grew by %zu, expected %zu", n,
               b.pinned_in_use - a.pinned_in_use, mt_block_size(n));
    EXPECT_MSG(b.pinned_requested - a.pinned_requested == n,
               "alloc %zu: requested grew by %zu", n,
               b.pinned_requested - a.pinned_requested);
    EXPECT_EQ_INT(b.pinned_blocks, a.pinned_blocks + 1);
    EXPECT_EQ_INT(b.pinned_hits + b.pinned_misses,
                  a.pinned_hits + a.pinned_misses + 1);
    EXPECT_EQ_INT(b.pinned_pending, a.pinned_pending);
    /* The whole block is ours: write all of it now, check it below. */
    memset(p[i], 0x10 + i, n);
  }
  for (int i = 0; i < NSIZES; i++) {
    mt_check_all(p[i], 0x10 + i, sizes[i], "a live pinned block");
    for (int j = 0; j < NSIZES; j++) {
      const char *a = p[i], *b = p[j];
      EXPECT_MSG(i == j || a + sizes[i] <= b || b + sizes[j] <= a,
                 "blocks of %zu and %zu bytes overlap", sizes[i], sizes[j]);
    }
  }

  /* Freeing one block moves its bytes from in_use to cached (no stream
   * used it, so nothing is pending). */
  void *large[NSIZES];
  for (int i = 0; i < NSIZES; i++) {
    weft_mem_stats a = mt_stats(rt);
    EXPECT_OK(weft_pinned_free(p[i]));
    weft_mem_stats b = mt_stats(rt);
    EXPECT_MSG(a.pinned_in_use - b.pinned_in_use == mt_block_size(sizes[i]),
               "free %zu: in_use fell by %zu", sizes[i],
               a.pinned_in_use - b.pinned_in_use);
    EXPECT_EQ_INT(a.pinned_requested - b.pinned_requested, sizes[i]);
    EXPECT_EQ_INT(b.pinned_blocks, a.pinned_blocks - 1);
    EXPECT_EQ_INT(b.pinned_pending, 0);
    EXPECT_EQ_INT(b.pinned_reserved, a.pinned_reserved);
    EXPECT_EQ_INT(b.pinned_cached - a.pinned_cached, mt_block_size(sizes[i]));
    large[i] = p[i];
  }
  weft_mem_stats after = mt_stats(rt);
  EXPECT_EQ_INT(after.pinned_in_use, before.pinned_in_use);
  EXPECT_EQ_INT(after.pinned_requested, before.pinned_requested);

  /* The same sizes again: every one a hit, nothing newly pinned; a large
   * block is the only cached one that fits, so it comes back. */
  for (int i = 0; i < NSIZES; i++) {
    weft_mem_stats a = mt_stats(rt);
    EXPECT_OK(weft_pinned_alloc(sizes[i], &p[i]));
    weft_mem_stats b = mt_stats(rt);
    EXPECT_MSG(b.pinned_hits == a.pinned_hits + 1 &&
                   b.pinned_misses == a.pinned_misses,
               "re-alloc %zu: hits %llu -> %llu, misses %llu -> %llu", sizes[i],
               (unsigned long long)a.pinned_hits,
               (unsigned long long)b.pinned_hits,
               (unsigned long long)a.pinned_misses,
               (unsigned long long)b.pinned_misses);
    EXPECT_EQ_INT(b.pinned_reserved, a.pinned_reserved);
    if (sizes[i] > MT_MIB)
      EXPECT_MSG(p[i] == large[i], "re-alloc %zu: got %p, cached block %p",
                 sizes[i], p[i], large[i]);
    memset(p[i], 0x40 + i, sizes[i]);
  }
  for (int i = 0; i < NSIZES; i++) {
    mt_check_all(p[i], 0x40 + i, sizes[i], "a reused pinned block");
    EXPECT_OK(weft_pinned_free(p[i]));
  }
}

/* A large block serves a request it fits with at most 1/8 to spare, and a
 * bigger cached block never serves a much smaller request. Expects the
 * blocks of sizes_and_stats (3 MiB and 64 MiB among them) cached. */
static void large_fit(void) {
  void *b3, *p;
  EXPECT_OK(weft_pinned_alloc(3 * MT_MIB, &b3));
  EXPECT_OK(weft_pinned_free(b3));

  size_t close = 3 * MT_MIB - 300 * 1024; /* 300 KiB spare <= n / 8 */
  weft_mem_stats a = mt_stats(rt);
  EXPECT_OK(weft_pinned_alloc(close, &p));
  weft_mem_stats b = mt_stats(rt);
  EXPECT_MSG(p == b3, "alloc %zu: got %p, not the cached 3 MiB block %p", close,
             p, b3);
  EXPECT_EQ_INT(b.pinned_hits, a.pinned_hits + 1);
  EXPECT_EQ_INT(b.pinned_in_use - a.pinned_in_use, 3 * MT_MIB);
  EXPECT_EQ_INT(b.pinned_requested - a.pinned_requested, close);
  memset(p, 0x33, close);
  EXPECT_OK(weft_pinned_free(p));

  /* 2 MiB + 1 would leave ~1 MiB of the 3 MiB block idle: a new block. */
  size_t far = 2 * MT_MIB + 1;
  a = mt_stats(rt);
  EXPECT_OK(weft_pinned_alloc(far, &p));
  b = mt_stats(rt);
  EXPECT_MSG(p != b3, "alloc %zu took the cached 3 MiB block", far);
  EXPECT_EQ_INT(b.pinned_misses, a.pinned_misses + 1);
  EXPECT_EQ_INT(b.pinned_in_use - a.pinned_in_use, mt_block_size(far));
  memset(p, 0x22, far);
  EXPECT_OK(weft_pinned_free(p));

  /* 8 MiB fits only the cached 64 MiB block, which wastes far too much. */
  a = mt_stats(rt);
  EXPECT_OK(weft_pinned_alloc(8 * MT_MIB, &p));
  b = mt_stats(rt);
  EXPECT_EQ_INT(b.pinned_misses, a.pinned_misses + 1);
  EXPECT_EQ_INT(b.pinned_in_use - a.pinned_in_use, 8 * MT_MIB);
  EXPECT_OK(weft_pinned_free(p));
}

/* Bad frees and bad sizes: WEFT_EINVAL / WEFT_ENOMEM with nothing changed. */
static void bad_calls(void) {
  void *small, *large;
  EXPECT_OK(weft_pinned_alloc(1000, &small)); /* a 1 KiB block */
  EXPECT_OK(weft_pinned_alloc(MT_MIB + 1, &large));
  memset(small, 0x5a, 1000);
  memset(large, 0x6b, MT_MIB + 1);
  char *heap = malloc(4096);
  EXPECT(heap != NULL);
  char local[64];

  weft_mem_stats s0 = mt_stats(rt);
  void *const bad[] = {
      heap,                       /* foreign: malloc */
      local,                      /* foreign: the stack */
      (char *)small + 1,          /* interior, inside the first 512 B */
      (char *)small + 512,        /* interior, second half of 1 KiB */
      (char *)small + 999,        /* last byte */
      (char *)large + 64,         /* interior of a large block */
      (char *)large + (64 << 10), /* a 64 KiB step into a large block */
      (char *)large + MT_MIB,     /* past the requested end - 1 */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    EXPECT_MSG(weft_pinned_free(bad[i]) == WEFT_EINVAL,
               "weft_pinned_free(bad pointer #%zu) did not fail with EINVAL",
               i);
    weft_mem_stats s = mt_stats(rt);
    EXPECT_MSG(mt_stats_equal(&s, &s0), "bad free #%zu changed the stats", i);
  }
  /* The blocks survived and are still freed exactly once. */
  mt_check_all(small, 0x5a, 1000, "block after bad frees");
  mt_check_all(large, 0x6b, MT_MIB + 1, "large block after bad frees");
  EXPECT_OK(weft_pinned_free(small));
  EXPECT_OK(weft_pinned_free(large));
  weft_mem_stats s1 = mt_stats(rt);
  EXPECT_ERR(weft_pinned_free(small), WEFT_EINVAL);
  EXPECT_ERR(weft_pinned_free(large), WEFT_EINVAL);
  weft_mem_stats s2 = mt_stats(rt);
  EXPECT_MSG(mt_stats_equal(&s1, &s2), "a double free changed the stats");
  /* A double free must not have pushed the block twice onto a free list:
   * two allocations of its size must return two different blocks. */
  void *x, *y;
  EXPECT_OK(weft_pinned_alloc(1000, &x));
  EXPECT_OK(weft_pinned_alloc(1000, &y));
  EXPECT(x != y);
  EXPECT_OK(weft_pinned_free(x));
  EXPECT_OK(weft_pinned_free(y));
  EXPECT_OK(weft_pinned_alloc(MT_MIB + 1, &x));
  EXPECT_OK(weft_pinned_alloc(MT_MIB + 1, &y));
  EXPECT(x != y);
  EXPECT_OK(weft_pinned_free(x));
  EXPECT_OK(weft_pinned_free(y));
  EXPECT_OK(weft_pinned_free(NULL));
  free(heap);

  void *const sentinel = (void *)&sentinel;
  void *p = sentinel;
  s1 = mt_stats(rt);
  EXPECT_ERR(weft_pinned_alloc(0, &p), WEFT_EINVAL);
  EXPECT(p == sentinel);
  EXPECT_ERR(weft_pinned_alloc((size_t)1 << 50, &p), WEFT_ENOMEM);
  EXPECT(p == sentinel);
  EXPECT_ERR(weft_pinned_alloc(SIZE_MAX, &p), WEFT_ENOMEM);
  EXPECT(p == sentinel);
  EXPECT_ERR(weft_pinned_alloc(16, NULL), WEFT_EINVAL);
  /* Device sizes near SIZE_MAX: a size plus the allocator's header once
   * wrapped to a block of a few bytes on the host backend. */
  const size_t huge[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 255,
                         (size_t)1 << 50};
  for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
    EXPECT_ERR(weft_device_alloc(huge[i], &p), WEFT_ENOMEM);
    EXPECT(p == sentinel);
  }
  EXPECT_OK(weft_sync()); /* errors returned at once are not reported again */
  s2 = mt_stats(rt);
  EXPECT_MSG(mt_stats_equal(&s1, &s2), "a failed alloc changed the stats");

  weft_mem_stats st;
  st.struct_size = sizeof st - 1;
  EXPECT_ERR(weft_mem_stats_get(rt, &st), WEFT_EINVAL);
  st.struct_size = sizeof st;
  EXPECT_ERR(weft_mem_stats_get(NULL, &st), WEFT_EINVAL);
  EXPECT_ERR(weft_mem_stats_get(rt, NULL), WEFT_EINVAL);
  EXPECT_ERR(weft_mem_trim(NULL), WEFT_EINVAL);
}

/* weft_mem_trim releases whole cached chunks and nothing in use. */
static void trim(void) {
  /* Start from nothing cached, so what trim keeps is what is in use. */
  EXPECT_OK(weft_mem_trim(rt));
  weft_mem_stats s = mt_stats(rt);
  EXPECT_EQ_INT(s.pinned_cached, 0);
  EXPECT_EQ_INT(s.pinned_reserved, s.pinned_in_use);

  void *a, *b, *l1, *l2;
  EXPECT_OK(weft_pinned_alloc(4096, &a));
  EXPECT_OK(weft_pinned_alloc(4096, &b)); /* same 2 MiB chunk as a */
  EXPECT_OK(weft_pinned_alloc(5 * MT_MIB, &l1));
  EXPECT_OK(weft_pinned_alloc(5 * MT_MIB + 7, &l2));
  memset(a, 0x11, 4096);
  memset(l2, 0x22, 5 * MT_MIB + 7);
  EXPECT_OK(weft_pinned_free(b));
  EXPECT_OK(weft_pinned_free(l1));
  weft_mem_stats before = mt_stats(rt);
  EXPECT(before.pinned_cached >= 5 * MT_MIB + 4096);

  EXPECT_OK(weft_mem_trim(rt));
  weft_mem_stats after = mt_stats(rt);
  /* l1's chunk went back; a's chunk stays (a is in use), and so does b's
   * slot in it. */
  EXPECT_MSG(before.pinned_reserved - after.pinned_reserved >= 5 * MT_MIB,
             "trim released %zu bytes, expected the 5 MiB free block",
             before.pinned_reserved - after.pinned_reserved);
  EXPECT_EQ_INT(after.pinned_in_use, before.pinned_in_use);
  EXPECT_EQ_INT(after.pinned_requested, before.pinned_requested);
  EXPECT_EQ_INT(after.pinned_blocks, before.pinned_blocks);
  EXPECT(after.pinned_reserved >= after.pinned_in_use);
  mt_check_all(a, 0x11, 4096, "small block in use across trim");
  mt_check_all(l2, 0x22, 5 * MT_MIB + 7, "large block in use across trim");
  memset(a, 0x12, 4096); /* still writable */
  memset(l2, 0x23, 5 * MT_MIB + 7);

  /* Everything free: trim leaves nothing reserved. */
  EXPECT_OK(weft_pinned_free(a));
  EXPECT_OK(weft_pinned_free(l2));
  EXPECT_OK(weft_mem_trim(rt));
  s = mt_stats(rt);
  EXPECT_EQ_INT(s.pinned_blocks, 0);
  EXPECT_EQ_INT(s.pinned_in_use, 0);
  EXPECT_EQ_INT(s.pinned_requested, 0);
  EXPECT_EQ_INT(s.pinned_reserved, 0);

  /* And the cache works after it: a miss, then a hit. */
  weft_mem_stats m0 = mt_stats(rt);
  EXPECT_OK(weft_pinned_alloc(4096, &a));
  memset(a, 1, 4096);
  EXPECT_OK(weft_pinned_free(a));
  EXPECT_OK(weft_pinned_alloc(4096, &a));
  weft_mem_stats m1 = mt_stats(rt);
  EXPECT_EQ_INT(m1.pinned_misses, m0.pinned_misses + 1);
  EXPECT_EQ_INT(m1.pinned_hits, m0.pinned_hits + 1);
  EXPECT_OK(weft_pinned_free(a));
}

/* Tasks allocating and freeing at once: every block holds its owner's
 * pattern until freed. */
enum { STRESS_TASKS = 6, STRESS_LIVE = 8 };

typedef struct stress {
  uint64_t seed;
  int ops;
  int ok;
} stress;

static void stress_task(void *arg) {
  stress *st = arg;
  unsigned char *live[STRESS_LIVE] = {0};
  size_t len[STRESS_LIVE] = {0};
  unsigned char tag[STRESS_LIVE];
  uint64_t r = st->seed;
  for (int op = 0; op < st->ops; op++) {
    int k = (int)(tt_rand(&r) % STRESS_LIVE);
    if (live[k]) {
      mt_check_all(live[k], tag[k], len[k], "a concurrently used block");
      EXPECT_OK(weft_pinned_free(live[k]));
      live[k] = NULL;
      continue;
    }
    uint64_t pick = tt_rand(&r);
    size_t n = pick % 16 == 0 ? MT_MIB + pick % (MT_MIB / 2) /* large */
                              : 1 + pick % 20000;
    EXPECT_OK(weft_pinned_alloc(n, (void **)&live[k]));
    len[k] = n;
    tag[k] = (unsigned char)(1 + tt_rand(&r) % 255);
    memset(live[k], tag[k], n);
    if (op % 7 == 0)
      weft_yield();
  }
  for (int k = 0; k < STRESS_LIVE; k++)
    if (live[k]) {
      mt_check_all(live[k], tag[k], len[k], "a concurrently used block");
      EXPECT_OK(weft_pinned_free(live[k]));
    }
  st->ok = 1;
}

static void concurrent(void) {
  stress st[STRESS_TASKS];
  weft_task *t[STRESS_TASKS];
  weft_mem_stats s0 = mt_stats(rt);
  for (int i = 0; i < STRESS_TASKS; i++) {
    st[i] = (stress){.seed = 1000 + (uint64_t)i, .ops = tt_quick() ? 150 : 400};
    EXPECT_OK(weft_task_spawn(rt, &t[i], stress_task, &st[i], NULL));
  }
  for (int i = 0; i < STRESS_TASKS; i++) {
    EXPECT_OK(weft_task_join(t[i]));
    EXPECT(st[i].ok);
  }
  weft_mem_stats s1 = mt_stats(rt);
  EXPECT_EQ_INT(s1.pinned_blocks, s0.pinned_blocks);
  EXPECT_EQ_INT(s1.pinned_in_use, s0.pinned_in_use);
  EXPECT_EQ_INT(s1.pinned_requested, s0.pinned_requested);
  EXPECT(s1.pinned_hits > s0.pinned_hits); /* the cache was used */
}

/* Shutdown refuses while a block is live, then works once it is freed. */
static void shutdown_busy(void) {
  void *p;
  EXPECT_OK(weft_pinned_alloc(777, &p));
  memset(p, 0x77, 777);
  EXPECT_ERR(weft_shutdown(rt), WEFT_EBUSY);
  /* Nothing was closed: the runtime and the block still work. */
  mt_check_all(p, 0x77, 777, "a block across a refused shutdown");
  void *q;
  EXPECT_OK(weft_pinned_alloc(100, &q));
  EXPECT_OK(weft_pinned_free(q));
  weft_mem_stats s = mt_stats(rt);
  EXPECT_EQ_INT(s.pinned_blocks, 1);
  EXPECT_OK(weft_pinned_free(p));
  tt_close(rt);
  rt = NULL;
  void *const sentinel = (void *)&sentinel;
  q = sentinel;
  EXPECT_ERR(weft_pinned_alloc(100, &q), WEFT_ESTATE);
  EXPECT(q == sentinel);
}

int main(void) {
  /* No runtime yet. */
  void *const sentinel = (void *)&sentinel;
  void *p = sentinel;
  EXPECT_ERR(weft_pinned_alloc(16, &p), WEFT_ESTATE);
  EXPECT(p == sentinel);

  /* The pinned cache itself, used from concurrent tasks: weft check
   * rightly reports its misses as device-wide waits, so it stays off for
   * this test even under WEFT_CHECK=1. */
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.check = 0;
  rt = tt_open(&o);
  weft_mem_stats s = mt_stats(rt);
  EXPECT_EQ_INT(s.pinned_blocks, 0);
  sizes_and_stats();
  large_fit();
  bad_calls();
  trim();
  concurrent();
  shutdown_busy();
  puts("ok");
  return 0;
}
