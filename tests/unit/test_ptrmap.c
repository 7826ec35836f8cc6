/* The allocation registry (src/ptrmap.h) against a plain reference array.
 *
 * Random puts, updates and deletes, with every key re-checked after each
 * step; filling and emptying in insertion, reverse and random order,
 * which splits, empties and joins the registry's leaves; and lookups of
 * addresses inside, between and around disjoint ranges against a linear
 * search of the reference. */
#include <stdlib.h>

#include "expect.h"
#include "weft_internal.h"

enum { NKEYS = 3000 };

typedef struct ref {
  const void *key;
  int live;
  weft__alloc_info info;
} ref;

static ref refs[NKEYS];
static uint64_t rng = 0x243f6a8885a308d3ULL;

static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static void check_all(const weft__ptrmap *m) {
  size_t per_kind[3] = {0, 0, 0};
  for (int i = 0; i < NKEYS; i++) {
    weft__alloc_info got = {0, -1, -1, 0};
    int present = weft__ptrmap_get(m, refs[i].key, &got);
    EXPECT_MSG(present == refs[i].live, "key %d: present %d, live %d", i,
               present, refs[i].live);
    if (present) {
      EXPECT(got.size == refs[i].info.size && got.kind == refs[i].info.kind &&
             got.dev == refs[i].info.dev);
      per_kind[refs[i].info.kind]++;
    } else {
      EXPECT_EQ_INT(got.kind, -1); /* untouched when absent */
    }
  }
  for (int k = 0; k < 3; k++)
    EXPECT_EQ_INT(weft__ptrmap_count(m, k), per_kind[k]);
}

static void put(weft__ptrmap *m, int i) {
  refs[i].info = (weft__alloc_info){(size_t)next() % 100000, (int)(next() % 3),
                                    (int)(next() % 8), 0};
  refs[i].live = 1;
  EXPECT_OK(weft__ptrmap_put(m, refs[i].key, refs[i].info));
}

static void del(weft__ptrmap *m, int i) {
  EXPECT_EQ_INT(weft__ptrmap_del(m, refs[i].key), refs[i].live);
  refs[i].live = 0;
}

/* Found by any address inside; freed ranges remembered (the oldest
 * forgotten past the bound) until memory is handed out there again. */
static void interior_and_freed(void) {
  weft__ptrmap *m = weft__ptrmap_new();
  EXPECT(m != NULL);
  const char *a = (const char *)0x100000, *b2 = (const char *)0x200000;
  weft__alloc_ref r;
  EXPECT_OK(weft__ptrmap_put(m, a, (weft__alloc_info){4096, 1, 0, 0}));
  EXPECT_OK(weft__ptrmap_put(m, b2, (weft__alloc_info){64, 2, 1, 0}));
  EXPECT_EQ_INT(weft__ptrmap_lookup(m, a + 4095, &r), WEFT__PTR_LIVE);
  EXPECT(r.base == a && r.info.size == 4096);
  EXPECT_EQ_INT(weft__ptrmap_lookup(m, a + 4096, &r), WEFT__PTR_UNKNOWN);
  EXPECT_EQ_INT(weft__ptrmap_lookup(m, a - 1, &r), WEFT__PTR_UNKNOWN);
  EXPECT_EQ_INT(weft__ptrmap_lookup(m, b2 + 10, &r), WEFT__PTR_LIVE);
  EXPECT_EQ_INT(r.info.dev, 1);
  EXPECT_EQ_INT(weft__ptrmap_del(m, a), 1);
  EXPECT_EQ_INT(weft__ptrmap_lookup(m, a + 100, &r), WEFT__PTR_FREED);
  EXPECT_EQ_INT(weft__ptrmap_get(m, a, NULL), 0);
  EXPECT_EQ_INT(weft__ptrmap_del(m, a), 0);
  EXPECT_EQ_INT(weft__ptrmap_count(m, 1), 0);
  /* Handed out again over part of it: the freed record goes. */
  EXPECT_OK(weft__ptrmap_put(m, a + 1024, (weft__alloc_info){16, 1, 0, 0}));
  EXPECT_EQ_INT(weft__ptrmap_lookup(m, a + 100, &r), WEFT__PTR_UNKNOWN);
  EXPECT_EQ_INT(weft__ptrmap_lookup(m, a + 1030, &r), WEFT__PTR_LIVE);
  /* Forgotten: given back to the system. */
  EXPECT_EQ_INT(weft__ptrmap_del(m, b2), 1);
  EXPECT_EQ_INT(weft__ptrmap_lookup(m, b2, &r), WEFT__PTR_FREED);
  weft__ptrmap_forget(m, b2 + 8, 1);
  EXPECT_EQ_INT(weft__ptrmap_lookup(m, b2, &r), WEFT__PTR_UNKNOWN);
  /* Bounded: the oldest freed ranges are forgotten first. */
  const char *base = (const char *)0x10000000;
  for (int i = 0; i < WEFT__PTRMAP_FREED_MAX + 10; i++) {
    EXPECT_OK(
        weft__ptrmap_put(m, base + 256 * i, (weft__alloc_info){128, 1, 0, 0}));
    EXPECT_EQ_INT(weft__ptrmap_del(m, base + 256 * i), 1);
  }
  EXPECT_EQ_INT(weft__ptrmap_nfreed(m), WEFT__PTRMAP_FREED_MAX);
  EXPECT_EQ_INT(weft__ptrmap_lookup(m, base + 5, &r), WEFT__PTR_UNKNOWN);
  EXPECT_EQ_INT(
      weft__ptrmap_lookup(m, base + 256 * (WEFT__PTRMAP_FREED_MAX + 9), &r),
      WEFT__PTR_FREED);
  weft__ptrmap_free(m);
}

/* Disjoint ranges, live or freed, found by every address inside and
 * nothing between them, while leaves split and join: each step compares
 * lookups at a range's first, middle and last byte and at the gap after
 * it with a linear search of the reference. */
enum { NR = 700 };

static void check_ranges(const weft__ptrmap *m, const int *state) {
  const char *base = (const char *)0x40000000;
  for (int i = 0; i < NR; i++) {
    const char *b = base + 4096 * i;
    size_t size = 512 + 8 * (size_t)(i % 50); /* a gap always follows */
    const char *probe[4] = {b, b + size / 2, b + size - 1, b + size};
    for (int k = 0; k < 4; k++) {
      weft__alloc_ref r = {NULL, {0, 0, 0, 0}};
      int want = k == 3          ? WEFT__PTR_UNKNOWN
                 : state[i] == 1 ? WEFT__PTR_LIVE
                 : state[i] == 2 ? WEFT__PTR_FREED
                                 : WEFT__PTR_UNKNOWN;
      int got = weft__ptrmap_lookup(m, probe[k], &r);
      EXPECT_MSG(got == want, "range %d probe %d: %d, expected %d", i, k, got,
                 want);
      if (got != WEFT__PTR_UNKNOWN)
        EXPECT(r.base == b && r.info.size == size && r.info.dev == i % 8);
    }
  }
}

static void ranges(void) {
  static int state[NR]; /* 0 never or forgotten, 1 live, 2 freed */
  const char *base = (const char *)0x40000000;
  weft__ptrmap *m = weft__ptrmap_new();
  EXPECT(m != NULL);
  for (int round = 0; round < 3; round++) {
    for (int j = 0; j < NR; j++) {
      int i = round == 1 ? NR - 1 - j : round == 2 ? (int)(next() % NR) : j;
      if (state[i] == 1)
        continue;
      size_t size = 512 + 8 * (size_t)(i % 50);
      EXPECT_OK(weft__ptrmap_put(m, base + 4096 * i,
                                 (weft__alloc_info){size, 1, i % 8, 0}));
      state[i] = 1;
      if (j % 53 == 0)
        check_ranges(m, state);
    }
    check_ranges(m, state);
    /* Free every other live one, forget a stretch (past the live ones in
     * it), then free the rest. */
    for (int i = round % 2; i < NR; i += 2) {
      EXPECT_EQ_INT(weft__ptrmap_del(m, base + 4096 * i), state[i] == 1);
      if (state[i] == 1)
        state[i] = 2;
    }
    check_ranges(m, state);
    weft__ptrmap_forget(m, base + 4096 * 100, 4096 * 200);
    for (int i = 100; i < 300; i++)
      if (state[i] == 2)
        state[i] = 0;
    check_ranges(m, state);
    for (int j = 0; j < NR; j++) {
      int i = (int)(next() % NR);
      if (state[i] == 1) {
        EXPECT_EQ_INT(weft__ptrmap_del(m, base + 4096 * i), 1);
        state[i] = 2;
      }
    }
    for (int i = 0; i < NR; i++)
      if (state[i] == 1) {
        EXPECT_EQ_INT(weft__ptrmap_del(m, base + 4096 * i), 1);
        state[i] = 2;
      }
    check_ranges(m, state);
    EXPECT_EQ_INT(weft__ptrmap_count(m, 1), 0);
    weft__ptrmap_forget(m, base, 4096 * NR);
    for (int i = 0; i < NR; i++)
      state[i] = 0;
    EXPECT_EQ_INT(weft__ptrmap_nfreed(m), 0);
    check_ranges(m, state);
  }
  weft__ptrmap_free(m);
}

int main(void) {
  interior_and_freed();
  ranges();
  /* Keys look like allocations: aligned, clustered, never NULL. */
  for (int i = 0; i < NKEYS; i++)
    refs[i].key = (const void *)(uintptr_t)(0x7f0000001000ULL + 64ULL * i +
                                            (i % 7) * 0x100000ULL);
  weft__ptrmap *m = weft__ptrmap_new();
  EXPECT(m != NULL);
  check_all(m);

  /* Fill in order, delete in insertion order, fill, delete in reverse. */
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < NKEYS; i++)
      put(m, i);
    check_all(m);
    for (int i = 0; i < NKEYS; i++) {
      del(m, round == 0 ? i : NKEYS - 1 - i);
      if (i % 97 == 0)
        check_all(m);
    }
    check_all(m);
  }

  /* Random mix of put, update, delete and double delete. */
  for (int step = 0; step < 20000; step++) {
    int i = (int)(next() % NKEYS);
    if (next() % 3)
      put(m, i);
    else
      del(m, i);
    if (step % 499 == 0)
      check_all(m);
  }
  check_all(m);

  /* Small table, heavy churn: at most 48 live keys, so the table stays
   * small and crowded; everything is checked after every delete. */
  weft__ptrmap_free(m);
  m = weft__ptrmap_new();
  for (int i = 0; i < NKEYS; i++)
    refs[i].live = 0;
  for (int step = 0; step < 4000; step++) {
    int i = (int)(next() % 48);
    if (refs[i].live) {
      del(m, i);
      check_all(m);
    } else {
      put(m, i);
    }
  }
  EXPECT_EQ_INT(weft__ptrmap_del(m, (const void *)0x10), 0); /* never present */
  weft__ptrmap_free(m);
  weft__ptrmap_free(NULL);
  return 0;
}
