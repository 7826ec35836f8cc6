/* pinned: allocating and freeing page-locked host memory, cached vs raw.
 *
 * For 64 MiB and for 4 KiB: weft_pinned_alloc + weft_pinned_free of the
 * same size, over and over, after a warm-up that put a block of that size
 * in weft's cache, against (baseline) the same pair done without a cache,
 * raw_api.h's raw_pinned_alloc + raw_pinned_free: cudaMallocHost +
 * cudaFreeHost on CUDA (64 MiB took 23.7 ms on the H200); on the host
 * backend weft_host_pinned_alloc + weft_host_pinned_free (weft/host.h), the
 * backend's own pinned allocation, which is posix_memalign + free there.
 * Each row is the time of one alloc+free pair. Checks: every call succeeds;
 * every weft allocation is a cache hit (the same block each time,
 * weft_mem_stats misses unchanged, hits up by one per allocation); a block
 * of each size, written whole and read back, holds what was written.
 * Target: <= 1 us on reuse. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "raw_api.h"

typedef struct pinned_bench {
  bench_ctx *c;
  weft_runtime *rt;
  size_t bytes;
  long weft_iters, raw_iters;
  bench_samples weft, base;
  uint64_t hits, misses; /* during weft's timed rounds */
  weft_mem_stats end;    /* after them */
} pinned_bench;

static int mem_stats(pinned_bench *p, weft_mem_stats *st) {
  memset(st, 0, sizeof *st);
  st->struct_size = sizeof *st;
  BENCH_TRY(p->c, weft_mem_stats_get(p->rt, st));
  return 0;
}

/* Writes a pattern over all n bytes of q and reads it back. */
static int check_block(pinned_bench *p, unsigned char *q, size_t n,
                       const char *who) {
  for (size_t i = 0; i < n; i++)
    q[i] = (unsigned char)(i * 131u + 7u);
  for (size_t i = 0; i < n; i++)
    if (q[i] != (unsigned char)(i * 131u + 7u))
      return bench_fail(p->c, "%s: byte %zu of a %zu-byte block reads back %u",
                        who, i, n, q[i]);
  return 0;
}

static int weft_rounds(pinned_bench *p) {
  bench_ctx *c = p->c;
  void *first, *q;
  /* The warm-up: the first allocation pins memory, the free caches it. */
  BENCH_TRY(c, weft_pinned_alloc(p->bytes, &first));
  int rc = check_block(p, first, p->bytes, "weft_pinned_alloc");
  BENCH_TRY(c, weft_pinned_free(first));
  if (rc)
    return rc;
  weft_mem_stats before;
  if (mem_stats(p, &before))
    return BENCH_FAIL;
  for (int r = 0; r <= bench_repeat(c); r++) {
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < p->weft_iters; i++) {
      int e = weft_pinned_alloc(p->bytes, &q);
      if (e)
        return bench_fail_weft(c, e, "weft_pinned_alloc");
      if (q != first) {
        weft_pinned_free(q);
        return bench_fail(c,
                          "weft_pinned_alloc(%zu) returned %p, not the cached "
                          "block %p",
                          p->bytes, q, first);
      }
      if ((e = weft_pinned_free(q)) != 0)
        return bench_fail_weft(c, e, "weft_pinned_free");
    }
    uint64_t ns = bench_now_ns() - t0;
    if (r > 0)
      bench_samples_add(&p->weft, (double)ns / 1e3 / (double)p->weft_iters);
  }
  if (mem_stats(p, &p->end))
    return BENCH_FAIL;
  p->hits = p->end.pinned_hits - before.pinned_hits;
  p->misses = p->end.pinned_misses - before.pinned_misses;
  uint64_t want = (uint64_t)p->weft_iters * (uint64_t)(bench_repeat(c) + 1);
  if (p->misses != 0 || p->hits != want)
    return bench_fail(c,
                      "weft_mem_stats over %llu allocations of %zu bytes: "
                      "%llu hits, %llu misses (expected all hits)",
                      (unsigned long long)want, p->bytes,
                      (unsigned long long)p->hits,
                      (unsigned long long)p->misses);
  return 0;
}

static int raw_rounds(pinned_bench *p) {
  bench_ctx *c = p->c;
  void *q;
  RAW_TRY(c, raw_pinned_alloc(p->rt, p->bytes, &q));
  int rc = check_block(p, q, p->bytes, "raw pinned alloc");
  int e = raw_pinned_free(p->rt, q);
  if (e && rc == 0)
    rc = raw_fail(c, e, "raw_pinned_free(p->rt, q)", __LINE__);
  for (int r = 0; rc == 0 && r <= bench_repeat(c); r++) {
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < p->raw_iters; i++) {
      RAW_TRY(c, raw_pinned_alloc(p->rt, p->bytes, &q));
      if (!q)
        return bench_fail(c, "raw pinned alloc of %zu bytes gave NULL",
                          p->bytes);
      RAW_TRY(c, raw_pinned_free(p->rt, q));
    }
    uint64_t ns = bench_now_ns() - t0;
    if (r > 0)
      bench_samples_add(&p->base, (double)ns / 1e3 / (double)p->raw_iters);
  }
  return rc;
}

static int report(pinned_bench *p, const char *size) {
  bench_ctx *c = p->c;
  char name[96];
  if (bench_backend(c) == WEFT_BACKEND_CUDA)
    snprintf(name, sizeof name, "raw cudaMallocHost+cudaFreeHost %s", size);
  else
    snprintf(name, sizeof name, "raw backend pinned alloc+free %s (malloc)",
             size);
  bench_group(c);
  int rc =
      bench_report(c, name, "us", &p->base, BENCH_BASELINE,
                   "per pair, %ld pairs per repeat; no cache", p->raw_iters);
  if (rc)
    return rc;
  snprintf(name, sizeof name, "weft_pinned_alloc+free %s, cached", size);
  double us = bench_stats_of(&p->weft).median;
  return bench_report(
      c, name, "us", &p->weft, 0,
      "per pair, %ld pairs per repeat; target <= 1 us on reuse (%s); "
      "weft_mem_stats in the timed rounds: %llu hits, %llu misses; in all: "
      "%llu hits, %llu misses, %zu bytes reserved",
      p->weft_iters, us <= 1.0 ? "met" : "MISSED", (unsigned long long)p->hits,
      (unsigned long long)p->misses, (unsigned long long)p->end.pinned_hits,
      (unsigned long long)p->end.pinned_misses, p->end.pinned_reserved);
}

static int run(bench_ctx *c) {
  static const struct {
    size_t bytes;
    const char *name;
    long raw_iters, raw_iters_quick;
  } sizes[] = {
      {(size_t)64 << 20, "64 MiB", 3, 1},
      {(size_t)4 << 10, "4 KiB", 200, 50},
  };
  pinned_bench *p = calloc(1, sizeof *p);
  if (!p)
    return bench_fail(c, "out of memory");
  p->c = c;
  bench_untraced(c, "it runs no task and no GPU operation, only "
                    "weft_pinned_alloc and weft_pinned_free from this thread "
                    "(the raw baseline's cudaHostAlloc is not weft's)");
  /* One worker: nothing here runs as a task, and idle workers only add
   * noise. */
  int rc = bench_runtime_open(c, 1, &p->rt);
  for (size_t i = 0; rc == 0 && i < sizeof sizes / sizeof sizes[0]; i++) {
    p->bytes = sizes[i].bytes;
    p->weft_iters = bench_size(c, 2000, 500);
    p->raw_iters = bench_size(c, sizes[i].raw_iters, sizes[i].raw_iters_quick);
    p->weft.n = p->base.n = 0;
    rc = raw_rounds(p);
    if (rc == 0)
      rc = weft_rounds(p);
    if (rc == 0)
      rc = report(p, sizes[i].name);
  }
  if (p->rt && weft_mem_trim(p->rt) != 0 && rc == 0)
    rc = bench_fail(c, "weft_mem_trim failed");
  if (bench_runtime_close(c, &p->rt))
    rc = BENCH_FAIL;
  free(p);
  return rc;
}

const bench_scenario bench_sc_pinned = {
    "pinned",
    "cached weft_pinned_alloc+free of 64 MiB and 4 KiB vs raw pinned "
    "allocation",
    run};
