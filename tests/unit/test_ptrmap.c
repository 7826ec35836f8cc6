/* The allocation registry (src/ptrmap.h) against a plain reference array.
 *
 * Random puts, updates and deletes, with every key re-checked after each
 * step, at loads up to the table's growth threshold. Deleting from the
 * middle of long probe runs, in insertion, reverse and random order, is
 * what exercises the backward-shift deletion. */
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

int main(void) {
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
