/* weft_map_chunks when the chunk function fails (map.h: "Returns 0 or an
 * error, which stops the map"; the map returns the first error).
 *
 * - depth 1: chunks run in order, so the failure at chunk k means exactly
 *   k + 1 calls, the error returned, and chunks before k complete;
 * - depth 2, 3 and 8 over many chunks: chunk 0 fails while every other
 *   chunk in flight waits (yielding) until that failure happened; once
 *   they return, the map must start no new chunk. The bound allows each
 *   other stream a couple of chunks for the moment the stop takes to be
 *   seen: a map that carried on would call the function for nearly all
 *   of the 40 * depth chunks.
 * Afterwards nothing is left allocated, the caller's own stream has no
 * error pending, and a new map works. From the main thread and a task. */
#include <stdlib.h>
#include <string.h>

#include "mem_common.h"

static weft_runtime *rt;

typedef struct fail_ctx {
  size_t fail_at;
  int code;             /* what fail_at returns: WEFT_ERANGE if 0 */
  int handle_before;    /* chunks before fail_at handle a failed weft call */
  int wait_for_failure; /* other chunks wait until fail_at has failed */
  int failed;
  int total;
  int after; /* calls that began after the failure */
} fail_ctx;

static int failing_fn(void *dev_in, void *dev_out, size_t index, void *user) {
  fail_ctx *c = user;
  tt_add(&c->total, 1);
  if (index == c->fail_at) {
    tt_store(&c->failed, 1);
    return c->code ? c->code : WEFT_ERANGE;
  }
  if (c->handle_before && index < c->fail_at)
    EXPECT_ERR(weft_copy(dev_in, NULL, 8), WEFT_EINVAL); /* and goes on */
  if (tt_load(&c->failed))
    tt_add(&c->after, 1);
  while (c->wait_for_failure && !tt_load(&c->failed))
    weft_yield();
  return 0;
}

static void after_failure_clean(void) {
  EXPECT_OK(weft_sync()); /* the failure was the map's, not the caller's */
  weft_mem_stats s = mt_stats(rt);
  EXPECT_EQ_INT(s.device_allocs, 0);
  EXPECT_EQ_INT(s.pinned_blocks, 0);
}

/* depth 1: stops right at the failing chunk. */
static void sequential_stop(void) {
  enum { N = 10, FLOATS = 500, FAIL = 4 };
  size_t chunk = FLOATS * sizeof(float);
  float *in = malloc(chunk * N), *out = malloc(chunk * N);
  EXPECT(in != NULL && out != NULL);
  for (int i = 0; i < N * FLOATS; i++)
    in[i] = (float)(i % 1000 + 1);
  memset(out, 0, chunk * N);
  fail_ctx c = {.fail_at = FAIL};
  weft_map_opts o;
  weft_map_opts_init(&o);
  o.depth = 1;
  /* A stale message first: the map's failure must not be described by it. */
  EXPECT_ERR(weft_pinned_free((void *)&c), WEFT_EINVAL);
  EXPECT_ERR(weft_map_chunks(in, chunk, out, 0, N, failing_fn, &c, &o),
             WEFT_ERANGE);
  EXPECT_MSG(strstr(weft_last_error_message(), "chunk 4") != NULL,
             "the map's message does not name the failing chunk: '%s'",
             weft_last_error_message());
  EXPECT_EQ_INT(c.total, FAIL + 1);
  /* The chunks before the failure went through (fn left them as they
   * were: in place, no kernel). */
  mt_check_same(out, in, chunk * FAIL, "chunks before the failure");
  free(in);
  free(out);
  after_failure_clean();
}

/* A chunk function that handled a failed weft call (the same code it
 * later returns itself) does not lend that call's message to the map's
 * failure. */
static void handled_failure_not_the_message(void) {
  enum { N = 6, BYTES = 256 };
  unsigned char in[N * BYTES], out[N * BYTES];
  memset(in, 1, sizeof in);
  fail_ctx c = {.fail_at = 3, .code = WEFT_EINVAL, .handle_before = 1};
  weft_map_opts o;
  weft_map_opts_init(&o);
  o.depth = 1;
  EXPECT_ERR(weft_map_chunks(in, BYTES, out, 0, N, failing_fn, &c, &o),
             WEFT_EINVAL);
  EXPECT_MSG(strstr(weft_last_error_message(), "chunk 3") != NULL,
             "the map's message does not name the failing chunk: '%s'",
             weft_last_error_message());
  after_failure_clean();
}

/* Several streams: a failure on one stops the others. */
static void parallel_stop(int depth) {
  size_t n = 40 * (size_t)depth, chunk = 256 * sizeof(float);
  float *in = calloc(n, chunk), *out = calloc(n, chunk);
  EXPECT(in != NULL && out != NULL);
  fail_ctx c = {.fail_at = 0, .wait_for_failure = 1};
  weft_map_opts o;
  weft_map_opts_init(&o);
  o.depth = depth;
  EXPECT_ERR(weft_map_chunks(in, chunk, out, chunk, n, failing_fn, &c, &o),
             WEFT_ERANGE);
  int limit = 3 * (depth - 1);
  EXPECT_MSG(c.after <= limit,
             "depth %d: after chunk 0 failed, the map went on to call the "
             "chunk function %d more times (of %zu chunks; at most %d "
             "expected): the failure did not stop the map",
             depth, c.after, n, limit);
  free(in);
  free(out);
  after_failure_clean();
}

static int ok_fn(void *dev_in, void *dev_out, size_t index, void *user) {
  tt_add((int *)user, 1);
  return weft_copy(dev_out, dev_in, 64);
}

static void still_works(void) {
  unsigned char in[64 * 5], out[64 * 5];
  uint64_t seed = 5;
  mt_fill(in, sizeof in, &seed);
  memset(out, 0, sizeof out);
  int calls = 0;
  EXPECT_OK(weft_map_chunks(in, 64, out, 64, 5, ok_fn, &calls, NULL));
  EXPECT_EQ_INT(calls, 5);
  mt_check_same(out, in, sizeof in, "a map after failed maps");
}

/* A function returning what is no weft code (1): the map fails with
 * WEFT_EINVAL saying so, not with the number (error.h: 0 or a negative
 * code). */
static void positive_return(void) {
  unsigned char in[64 * 5], out[64 * 5];
  memset(in, 0, sizeof in);
  fail_ctx c = {.fail_at = 2, .code = 1};
  EXPECT_ERR(weft_map_chunks(in, 64, out, 64, 5, failing_fn, &c, NULL),
             WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "returned 1 for chunk 2") != NULL);
  after_failure_clean();
}

/* A map of depth 8 from a task on a 32 KiB fiber stack: the map's own
 * frame is small (its jobs, 38 KiB on the stack once, overflowed it). */
static void small_stack_task(void *arg) {
  int calls = 0;
  unsigned char in[64 * 8], out[64 * 8];
  memset(in, 3, sizeof in);
  weft_map_opts o;
  weft_map_opts_init(&o);
  o.depth = 8;
  EXPECT_OK(weft_map_chunks(in, 64, out, 64, 8, ok_fn, &calls, &o));
  EXPECT_EQ_INT(calls, 8);
  *(int *)arg = out[64 * 8 - 1] == 3;
}

static void small_stack(void) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.stack_size = 32 << 10;
  o.workers = 2;
  weft_runtime *small = tt_open(&o);
  int ok = 0;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(small, &t, small_stack_task, &ok, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT(ok);
  tt_close(small);
}

static void all(void) {
  positive_return();
  sequential_stop();
  handled_failure_not_the_message();
  static const int depths[] = {2, 3, 8};
  for (int i = 0; i < 3; i++)
    parallel_stop(depths[i]);
  still_works();
}

static void all_task(void *arg) {
  all();
  *(int *)arg = 1;
}

int main(void) {
  rt = tt_open(NULL);
  all();
  int ok = 0;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, all_task, &ok, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT(ok);
  tt_close(rt);
  small_stack();
  puts("ok");
  return 0;
}
