/* A freed pinned block that a copy used is not reused before the copy
 * completed (memory.h: "freeing right after queuing a copy is safe").
 *
 * A gate (a kernel spinning on a flag) holds the stream; behind it goes a
 * weft_copy from a pinned block to device memory, and the block is freed at
 * once. While the gate is closed the copy cannot have run, so no
 * allocation of any kind may return the block: the test allocates its size
 * many times, keeping some blocks and cycling others, and scribbles over
 * every block it gets. weft_mem_trim meanwhile must not unpin it. When the
 * gate opens, the copy must deliver the block's original bytes, and after
 * weft_sync the block must come back to an allocation as a cache hit.
 *
 * The scenario runs in a task, on a plain thread, and split: the copy
 * queued by a task, the block freed by another thread while the gate holds
 * the task's stream. Sizes cover a small class, a bigger class, and large
 * blocks of their own chunk. */
#include <stdlib.h>
#include <string.h>

#include "mem_common.h"

static weft_runtime *rt;

static const size_t sizes[] = {100, 4096, MT_MIB + 1, 5 * MT_MIB};
enum { NSIZES = sizeof sizes / sizeof sizes[0], KEEP = 12, CYCLE = 40 };

/* Overwrites the ends of a block, which spoils the queued copy if it is
 * the freed one: enough, and cheaper than all of a large block. */
static void scribble(void *p, size_t n, int v) {
  size_t head = n < 65536 ? n : 65536;
  size_t tail = n - head < 4096 ? n - head : 4096;
  memset(p, v, head);
  memset((char *)p + n - tail, v, tail);
}

/* Allocates n bytes many times while blk is pending: never blk. Some
 * blocks are kept (so each allocation must find another), others freed at
 * once (so the cache's free lists are exercised); all get scribbled on. */
static void allocs_avoid(const void *blk, size_t n, const tt_gate *g) {
  void *keep[KEEP];
  for (int i = 0; i < KEEP; i++) {
    EXPECT_OK(weft_pinned_alloc(n, &keep[i]));
    EXPECT_MSG(keep[i] != blk,
               "alloc #%d of %zu bytes returned the freed block %p while "
               "the copy reading it is still queued",
               i, n, blk);
    scribble(keep[i], n, 0xEE);
  }
  int cycle = n > MT_MIB ? CYCLE / 4 : CYCLE;
  for (int i = 0; i < cycle; i++) {
    void *p;
    EXPECT_OK(weft_pinned_alloc(n, &p));
    EXPECT_MSG(p != blk,
               "cycled alloc #%d of %zu bytes returned the freed block %p "
               "while the copy reading it is still queued",
               i, n, blk);
    scribble(p, n, 0xDD);
    EXPECT_OK(weft_pinned_free(p));
  }
  /* Trimming must not unpin memory a queued copy still reads. On CUDA,
   * unpinning (cudaFreeHost) waits for the whole device, so a trim while
   * the gate spins would wait for the gate: the check runs on the host
   * backend only. */
  weft_mem_stats s = mt_stats(rt);
  EXPECT_MSG(s.pinned_pending >= mt_block_size(n),
             "the freed block is not pending: %zu bytes pending",
             s.pinned_pending);
  if (weft_runtime_backend(rt) == WEFT_BACKEND_HOST) {
    EXPECT_OK(weft_mem_trim(rt));
    weft_mem_stats t = mt_stats(rt);
    EXPECT_EQ_INT(t.pinned_pending, s.pinned_pending);
  }
  for (int i = 0; i < KEEP; i++)
    EXPECT_OK(weft_pinned_free(keep[i]));
  /* Everything above happened with the copy still held back. */
  EXPECT_MSG(tt_gate_state(g) == TEST_SPIN_STARTED,
             "the gate stopped holding the stream (state %d): the check "
             "above proved nothing",
             tt_gate_state(g));
}

/* After the copy completed, the block is reusable: allocating its size
 * returns it, as a hit. */
static void eventually_reused(void *blk, size_t n) {
  void *got[KEEP + 2];
  int found = -1, k = 0;
  for (; k < KEEP + 2 && found < 0; k++) {
    weft_mem_stats a = mt_stats(rt);
    EXPECT_OK(weft_pinned_alloc(n, &got[k]));
    weft_mem_stats b = mt_stats(rt);
    if (got[k] == blk) {
      found = k;
      EXPECT_MSG(b.pinned_hits == a.pinned_hits + 1 &&
                     b.pinned_misses == a.pinned_misses,
                 "the block came back without a cache hit");
      /* Nothing else was pending on the host backend; on the H200 another
       * block of the size class sometimes still was (its free's event not
       * yet reported done), so there the hit only must not add any. */
      int host = weft_runtime_backend(rt) == WEFT_BACKEND_HOST;
      EXPECT_MSG(host ? b.pinned_pending == 0
                      : b.pinned_pending <= a.pinned_pending,
                 "%zu bytes pending after the hit (%zu before it), n = %zu, "
                 "allocation %d, in use %zu",
                 b.pinned_pending, a.pinned_pending, n, k, b.pinned_in_use);
    }
  }
  EXPECT_MSG(found >= 0,
             "after weft_sync, %d allocations of %zu bytes never returned "
             "the block freed behind the copy",
             k, n);
  for (int i = 0; i < k; i++)
    EXPECT_OK(weft_pinned_free(got[i]));
}

/* The whole scenario on the calling task or thread. */
static void scenario(size_t n, uint64_t seed) {
  tt_gate g;
  tt_gate_init(&g);
  unsigned char *blk, *want = malloc(n), *back;
  void *dev;
  EXPECT(want != NULL);
  EXPECT_OK(weft_pinned_alloc(n, (void **)&blk));
  EXPECT_OK(weft_pinned_alloc(n, (void **)&back));
  EXPECT_OK(weft_device_alloc(n, &dev));
  mt_fill(blk, n, &seed);
  memcpy(want, blk, n);
  memset(back, 0, n);
  /* Fill the cache first: pinning new memory (cudaHostAlloc) waits for the
   * whole device, so a miss while the gate spins would wait for the gate. */
  void *warm[KEEP + 2];
  for (int i = 0; i < KEEP + 2; i++)
    EXPECT_OK(weft_pinned_alloc(n, &warm[i]));
  for (int i = 0; i < KEEP + 2; i++)
    EXPECT_OK(weft_pinned_free(warm[i]));

  tt_gate_launch(&g);
  tt_gate_wait_started(&g);
  weft_mem_stats s0 = mt_stats(rt);
  EXPECT_OK(weft_copy(dev, blk, n)); /* queued behind the gate */
  EXPECT_OK(weft_pinned_free(blk));
  weft_mem_stats s1 = mt_stats(rt);
  EXPECT_EQ_INT(s1.pinned_pending - s0.pinned_pending, mt_block_size(n));
  EXPECT_EQ_INT(s0.pinned_in_use - s1.pinned_in_use, mt_block_size(n));
  allocs_avoid(blk, n, &g);

  tt_gate_open(&g);
  EXPECT_OK(weft_copy(back, dev, n));
  EXPECT_OK(weft_sync());
  mt_check_same(back, want, n, "data copied from a block freed at once");
  eventually_reused(blk, n);

  EXPECT_OK(weft_device_free(dev));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_pinned_free(back));
  tt_gate_fini(&g);
  free(want);
}

typedef struct run_arg {
  int ok;
} run_arg;

static void scenario_task(void *arg) {
  for (int i = 0; i < NSIZES; i++)
    scenario(sizes[i], 77 + (uint64_t)i);
  ((run_arg *)arg)->ok = 1;
}

/* Split: a task queues the copy and hands the block to this thread, which
 * frees it and allocates while the task's stream is held. */
typedef struct split {
  size_t n;
  unsigned char *blk, *want;
  tt_gate gate;
  int queued, freed, ok;
} split;

static void split_task(void *arg) {
  split *sp = arg;
  unsigned char *back;
  void *dev;
  tt_gate_init(&sp->gate);
  EXPECT_OK(weft_pinned_alloc(sp->n, (void **)&back));
  memset(back, 0, sp->n);
  EXPECT_OK(weft_device_alloc(sp->n, &dev));
  tt_gate_launch(&sp->gate);
  tt_gate_wait_started(&sp->gate);
  EXPECT_OK(weft_copy(dev, sp->blk, sp->n));
  tt_store(&sp->queued, 1);
  while (!tt_load(&sp->freed))
    weft_yield();
  tt_gate_open(&sp->gate);
  EXPECT_OK(weft_copy(back, dev, sp->n));
  EXPECT_OK(weft_device_free(dev));
  EXPECT_OK(weft_sync());
  mt_check_same(back, sp->want, sp->n,
                "data copied from a block another thread freed");
  EXPECT_OK(weft_pinned_free(back));
  tt_gate_fini(&sp->gate);
  sp->ok = 1;
}

static void split_run(size_t n, uint64_t seed) {
  split sp = {.n = n};
  sp.want = malloc(n);
  EXPECT(sp.want != NULL);
  EXPECT_OK(weft_pinned_alloc(n, (void **)&sp.blk));
  mt_fill(sp.blk, n, &seed);
  memcpy(sp.want, sp.blk, n);
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, split_task, &sp, NULL));
  tt_wait_flag(&sp.queued, 20000, "the task to queue its copy");
  EXPECT_OK(weft_pinned_free(sp.blk));
  allocs_avoid(sp.blk, n, &sp.gate);
  tt_store(&sp.freed, 1);
  EXPECT_OK(weft_task_join(t));
  EXPECT(sp.ok);
  eventually_reused(sp.blk, n);
  free(sp.want);
}

int main(void) {
  rt = tt_open_workers(2);
  run_arg ra = {0};
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, scenario_task, &ra, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT(ra.ok);

  for (int i = 0; i < NSIZES; i++)
    scenario(sizes[i], 500 + (uint64_t)i);

  for (int i = 0; i < NSIZES; i++)
    split_run(sizes[i], 900 + (uint64_t)i);

  weft_mem_stats s = mt_stats(rt);
  EXPECT_EQ_INT(s.pinned_blocks, 0);
  tt_close(rt);
  puts("ok");
  return 0;
}
