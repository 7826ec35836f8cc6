/* What the memory tests share beyond task_common.h: random fills that never
 * write a zero byte (so a copy that falls short is caught), byte-exact
 * comparison that names the first difference, the pinned cache's stats with
 * their invariants, and the block sizes the cache documents. */
#ifndef WEFT_TEST_MEM_COMMON_H
#define WEFT_TEST_MEM_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "task_common.h"

/* Fills n bytes with random non-zero bytes. */
void mt_fill(void *p, size_t n, uint64_t *seed);

/* Fails the test, naming what and the offset, at the first byte where got
 * differs from want. */
void mt_check_same(const void *got, const void *want, size_t n,
                   const char *what);

/* Fails the test unless every one of n bytes is v. */
void mt_check_all(const void *p, int v, size_t n, const char *what);

/* weft_mem_stats_get, checked: reserved == in_use + pending + cached,
 * requested <= in_use, and no counter above reserved. */
weft_mem_stats mt_stats(weft_runtime *rt);

/* Whether two stats snapshots are equal in every field. */
int mt_stats_equal(const weft_mem_stats *a, const weft_mem_stats *b);

/* The bytes weft_pinned_alloc(n) takes from the cache (memory.h): a power
 * of two of at least 512 up to 1 MiB, else n rounded up to 64 KiB. */
size_t mt_block_size(size_t n);

#define MT_MIB ((size_t)1 << 20)

#endif
