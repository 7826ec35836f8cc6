/* Declared data at scale (issue 37): the four shapes whose bookkeeping
 * was quadratic. Each runs in a driver task of its own (a record of its
 * own), and the record's work (weft__flow_work: nodes passed, entries
 * copied or compared) must stay within O(log n) steps an access:
 * - readers of one range, then a writer: the writer's own spawn does a
 *   bounded amount of work, however many read before it (they were
 *   listed and compared one by one: n^2 / 2 steps);
 * - a reader over n gapped ranges (each gap was an insertion into a
 *   sorted array: n^2);
 * - ranges declared in falling address order (each at the array's front);
 * - a matrix declared tile by tile, a range per tile row, the tiles
 *   column by column (each in the middle of the array).
 * The order they declare still holds at the scale where readers are
 * folded into joins: a writer after many gated readers runs after all of
 * them, a reader over many gated writers after all of them. No clock is
 * read: a test of work done cannot pass on a slow machine by luck or
 * fail on a loaded one. Last, a read-mostly program of detached tasks
 * spawned from a plain thread must end (it hung when a woken waiter
 * went on waiting for its recycled object's next task). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task_common.h"
#include "weft_internal.h"

static weft_runtime *rt;
static char *arena; /* the bytes declared: never read or written */
static long n;      /* accesses in each shape */

static uint64_t work_now(void) { return weft__flow_work(weft__caller_self()); }

/* Steps an access may take in a record of r ranges: two searches of a
 * skip list, about 2 log2(r) nodes each, and the ranges it covers with
 * their dependencies; measured at 0.1 to 0.3 of this. */
static uint64_t per_access(size_t r) {
  uint64_t lg = 0;
  while (r >>= 1)
    lg++;
  return 16 * (lg + 2);
}

static void nothing(void *arg) { (void)arg; }

static weft_task *spawn1(void *p, size_t bytes, unsigned mode, int keep,
                         weft_task_fn fn, void *arg) {
  weft_access a = {p, bytes, mode};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.accesses = &a;
  o.naccesses = 1;
  weft_task *t = NULL;
  EXPECT_OK(weft_task_spawn(rt, keep ? &t : NULL, fn, arg, &o));
  return t;
}

static void within(uint64_t work, uint64_t accesses, uint64_t each,
                   const char *what) {
  uint64_t most = accesses * each;
  printf("%s: %llu steps for %llu accesses (%.1f an access, budget %llu)\n",
         what, (unsigned long long)work, (unsigned long long)accesses,
         (double)work / (double)accesses, (unsigned long long)most);
  EXPECT_MSG(work <= most, "%s: %llu steps for %llu accesses, more than %llu",
             what, (unsigned long long)work, (unsigned long long)accesses,
             (unsigned long long)most);
}

/* ---- the order, with gated tasks ---- */

enum { GATED = 200 };
static int gate_open, arrived;

static void gated(void *arg) {
  (void)arg;
  while (!tt_load(&gate_open))
    weft_yield();
  tt_add(&arrived, 1);
}

static void expect_all_arrived(void *arg) {
  EXPECT_MSG(tt_load(&arrived) == GATED,
             "%s ran after %d of the %d tasks it follows", (const char *)arg,
             tt_load(&arrived), GATED);
}

/* GATED readers of one range (folded into joins every 16), then a writer
 * that must run after every one of them. */
static void readers_order(void *arg) {
  (void)arg;
  tt_store(&gate_open, 0);
  tt_store(&arrived, 0);
  for (int i = 0; i < GATED; i++)
    spawn1(arena, 64, WEFT_READ, 0, gated, NULL);
  weft_task *w = spawn1(arena, 64, WEFT_WRITE, 1, expect_all_arrived,
                        "a writer after many readers");
  tt_store(&gate_open, 1);
  EXPECT_OK(weft_task_join(w));
}

/* GATED writers of gapped bytes, then a reader over them all. */
static void gapped_order(void *arg) {
  (void)arg;
  tt_store(&gate_open, 0);
  tt_store(&arrived, 0);
  for (int i = GATED; i-- > 0;)
    spawn1(arena + 2 * i, 1, WEFT_WRITE, 0, gated, NULL);
  weft_task *r = spawn1(arena, 2 * GATED, WEFT_READ, 1, expect_all_arrived,
                        "a reader over gapped writers");
  tt_store(&gate_open, 1);
  EXPECT_OK(weft_task_join(r));
}

/* ---- the work ---- */

static void readers_then_writer(void *arg) {
  (void)arg;
  uint64_t w0 = work_now();
  for (long i = 0; i < n; i++)
    spawn1(arena, 64, WEFT_READ, 0, nothing, NULL);
  uint64_t w1 = work_now();
  spawn1(arena, 64, WEFT_WRITE, 0, nothing, NULL);
  uint64_t w2 = work_now();
  size_t r = weft__flow_ranges(weft__caller_self());
  EXPECT_MSG(r == 1, "%zu ranges for one range read and written", r);
  within(w1 - w0, (uint64_t)n, per_access(1), "readers of one range");
  /* The writer follows a join and fewer than WEFT__FLOW_FOLD readers, not
   * n: a search, then a few steps for each dependency it finds. */
  within(w2 - w1, 1, per_access(1) + 3 * (WEFT__FLOW_FOLD + 1),
         "the writer after them");
}

static void gapped_reader(void *arg) {
  (void)arg;
  uint64_t w0 = work_now();
  for (long i = 0; i < n; i++)
    spawn1(arena + 2 * i, 1, WEFT_WRITE, 0, nothing, NULL);
  spawn1(arena, (size_t)(2 * n), WEFT_READ, 0, nothing, NULL);
  uint64_t w1 = work_now();
  size_t r = weft__flow_ranges(weft__caller_self());
  EXPECT_MSG(r == (size_t)(2 * n), "%zu ranges, want %ld (n and the gaps)", r,
             2 * n);
  /* The reader covers 2n ranges and follows n writers: counted as the n
   * accesses it stands for. */
  within(w1 - w0, (uint64_t)(2 * n), per_access(r),
         "writers of gapped bytes, a reader");
}

static void falling(void *arg) {
  (void)arg;
  uint64_t w0 = work_now();
  for (long i = n; i-- > 0;)
    spawn1(arena + 16 * i, 8, WEFT_WRITE, 0, nothing, NULL);
  uint64_t w1 = work_now();
  size_t r = weft__flow_ranges(weft__caller_self());
  EXPECT_MSG(r == (size_t)n, "%zu ranges, want %ld", r, n);
  within(w1 - w0, (uint64_t)n, per_access(r), "falling addresses");
}

/* A side x side matrix of floats, rows contiguous, in tiles of b x b,
 * declared tile by tile down the columns, each tile as its b rows. */
static void tiles(void *arg) {
  (void)arg;
  long b = 16, side = 1;
  while (side * side / b < n)
    side *= 2;
  long t = side / b;
  weft_access *acc = malloc((size_t)b * sizeof *acc);
  EXPECT(acc != NULL);
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.accesses = acc;
  o.naccesses = (size_t)b;
  uint64_t w0 = work_now();
  for (long j = 0; j < t; j++)
    for (long i = 0; i < t; i++) {
      for (long r = 0; r < b; r++)
        acc[r] = (weft_access){arena + 4 * ((i * b + r) * side + j * b),
                               (size_t)(4 * b), WEFT_RW};
      EXPECT_OK(weft_task_spawn(rt, NULL, nothing, NULL, &o));
    }
  uint64_t w1 = work_now();
  size_t r = weft__flow_ranges(weft__caller_self());
  EXPECT_MSG(r == (size_t)(side * side / b), "%zu ranges, want %ld", r,
             side * side / b);
  within(w1 - w0, (uint64_t)(side * side / b), per_access(r),
         "tiles down the columns");
  free(acc);
}

/* ---- detached, read-mostly ---- */

static int all_done;

static void last_one(void *arg) {
  (void)arg;
  tt_store(&all_done, 1);
}

/* Tasks copying a random piece of buffer 0 or 1 onto a piece of one of
 * 22 others (buffers of 1 KiB in the arena), now and then writing 0 or 1
 * themselves, none joined; then one task writing everything, which ends
 * only after all of them. */
static void detached_read_mostly(long tasks) {
  uint64_t seed = 37;
  for (long i = 0; i < tasks; i++) {
    int len = tt_rand_range(&seed, 1, 128), dst = tt_rand_range(&seed, 2, 23);
    if (tt_rand(&seed) % 64 == 0)
      dst = (int)(tt_rand(&seed) % 2);
    int src = (int)(tt_rand(&seed) % 2);
    weft_access acc[2] = {
        {arena + 1024 * dst + 4 * tt_rand_range(&seed, 0, 256 - len),
         (size_t)(4 * len), WEFT_RW},
        {arena + 1024 * src + 4 * tt_rand_range(&seed, 0, 256 - len),
         (size_t)(4 * len), WEFT_READ}};
    weft_task_opts o;
    weft_task_opts_init(&o);
    o.accesses = acc;
    o.naccesses = 2;
    EXPECT_OK(weft_task_spawn(rt, NULL, nothing, NULL, &o));
  }
  tt_store(&all_done, 0);
  spawn1(arena, 24 * 1024, WEFT_RW, 0, last_one, NULL);
  tt_wait_flag(&all_done, 120000, "the last of a detached read-mostly program");
}

static void in_task(weft_task_fn fn) {
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, fn, NULL, NULL));
  EXPECT_OK(weft_task_join(t));
}

int main(void) {
  rt = tt_open_workers(4);
  /* TSan makes each task's fiber a thread of its own, at a cost of
   * milliseconds: fewer tasks there. */
  n = TT_TSAN ? 1000 : tt_quick() ? 4000 : 20000;
  /* The largest shape: the tiles' matrix, side^2 < 64 n elements of 4
   * bytes. */
  arena = malloc((size_t)(256 * n));
  EXPECT(arena != NULL);
  in_task(readers_order);
  in_task(gapped_order);
  in_task(readers_then_writer);
  in_task(gapped_reader);
  in_task(falling);
  in_task(tiles);
  /* weft check's clocks grow with the tasks it has seen: a smaller
   * program under it. */
  const char *check = getenv("WEFT_CHECK");
  int checked = check && *check && strcmp(check, "0") != 0;
  detached_read_mostly(checked      ? 5000
                       : TT_TSAN    ? 1000
                       : tt_quick() ? 4000
                                    : 100000);
  tt_close(rt);
  free(arena);
  puts("ok");
  return 0;
}
