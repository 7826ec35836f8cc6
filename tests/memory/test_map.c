/* weft_map_chunks: results, argument checks, and the contexts it runs in.
 *
 * The chunk function applies x*a + b(index) with the axpb kernel, b
 * depending on the chunk index so that a chunk written to the wrong place
 * shows. Three shapes:
 * - in place (out_chunk 0): axpb on dev_in, in_chunk bytes copied out;
 * - out of place, out_chunk == in_chunk: dev_in copied to dev_out on the
 *   device, axpb on dev_out;
 * - out of place, out_chunk == in_chunk / 2: the first half only.
 * Every combination of depth (1, 2, 3, 8), chunk count (1, 2, and counts
 * below, at and above the depth), pinned or pageable host buffers, runs
 * with small chunks; a few runs use chunks of several staging blocks
 * (over 1 MiB only under tt_quick), and depth 64, the largest allowed.
 * Each output byte is checked, the input must be unchanged, and the
 * function must be called exactly once per index, with dev_out == dev_in
 * exactly when out_chunk is 0. Maps run from the main thread, from a
 * task, and from two tasks at once. Invalid arguments fail with
 * WEFT_EINVAL before the function is ever called. */
#include <stdlib.h>
#include <string.h>

#include "mem_common.h"

static weft_runtime *rt;

typedef enum shape { IN_PLACE, SAME_SIZE, HALF } shape;
static const char *const shape_name[] = {"in place", "out of place",
                                         "half out"};

typedef struct map_ctx {
  shape sh;
  int n; /* floats per input chunk */
  float a;
  int *calls; /* per index */
  int total;
  int bad_buffers; /* dev_in == NULL, or dev_in/out aliasing when they must
                      not, or not aliasing when they must */
} map_ctx;

static float b_of(size_t index) { return (float)((int)(index % 61) - 30); }

static void launch_axpb(float *d, int n, float a, float b) {
  void *args[] = {&d, &n, &a, &b};
  unsigned blocks = (unsigned)((n + TEST_THREADS - 1) / TEST_THREADS);
  EXPECT_OK(weft_launch(&tk.axpb, WEFT_DIM1(blocks), WEFT_DIM1(TEST_THREADS), 0,
                        args));
}

static int chunk_fn(void *dev_in, void *dev_out, size_t index, void *user) {
  map_ctx *c = user;
  tt_add(&c->calls[index], 1);
  tt_add(&c->total, 1);
  int alias_ok = c->sh == IN_PLACE ? dev_out == dev_in : dev_out != dev_in;
  if (!dev_in || !dev_out || !alias_ok)
    tt_add(&c->bad_buffers, 1);
  if (c->sh == IN_PLACE) {
    launch_axpb(dev_in, c->n, c->a, b_of(index));
    return 0;
  }
  int m = c->sh == HALF ? c->n / 2 : c->n;
  int rc = weft_copy(dev_out, dev_in, (size_t)m * sizeof(float));
  if (rc)
    return rc;
  launch_axpb(dev_out, m, c->a, b_of(index));
  return 0;
}

/* One map over nchunks chunks of n floats, checked. */
static void map_run(shape sh, int n, size_t nchunks, int depth, int pinned,
                    uint64_t seed) {
  size_t in_chunk = (size_t)n * sizeof(float);
  size_t out_chunk = sh == IN_PLACE    ? 0
                     : sh == SAME_SIZE ? in_chunk
                                       : (size_t)(n / 2) * sizeof(float);
  size_t out_each = out_chunk ? out_chunk : in_chunk;
  int m = (int)(out_each / sizeof(float));
  size_t in_bytes = in_chunk * nchunks, out_bytes = out_each * nchunks;
  float *in, *out, *orig = malloc(in_bytes);
  EXPECT(orig != NULL);
  if (pinned) {
    EXPECT_OK(weft_pinned_alloc(in_bytes, (void **)&in));
    EXPECT_OK(weft_pinned_alloc(out_bytes + 64, (void **)&out));
  } else {
    in = malloc(in_bytes);
    out = malloc(out_bytes + 64);
    EXPECT(in != NULL && out != NULL);
  }
  for (size_t i = 0; i < (size_t)n * nchunks; i++)
    in[i] = (float)tt_rand_range(&seed, -500, 500);
  memcpy(orig, in, in_bytes);
  memset(out, 0xC3, out_bytes + 64); /* -391.5...: never a result */

  map_ctx c = {.sh = sh, .n = n, .a = (seed & 1) ? 2.0f : -3.0f};
  c.calls = calloc(nchunks, sizeof *c.calls);
  EXPECT(c.calls != NULL);
  weft_map_opts o;
  weft_map_opts_init(&o);
  EXPECT_EQ_INT(o.struct_size, sizeof o);
  EXPECT_EQ_INT(o.depth, 3);
  o.depth = depth;
  int rc =
      weft_map_chunks(in, in_chunk, out, out_chunk, nchunks, chunk_fn, &c, &o);
  EXPECT_MSG(rc == 0, "map (%s, %d floats x %zu, depth %d, %s): %s: %s",
             shape_name[sh], n, nchunks, depth, pinned ? "pinned" : "pageable",
             weft_err_name(rc), weft_last_error_message());

  EXPECT_EQ_INT(c.total, nchunks);
  for (size_t i = 0; i < nchunks; i++)
    EXPECT_MSG(c.calls[i] == 1, "chunk %zu: fn called %d times", i, c.calls[i]);
  EXPECT_EQ_INT(c.bad_buffers, 0);
  for (size_t i = 0; i < nchunks; i++)
    for (int k = 0; k < m; k++) {
      float want = orig[i * (size_t)n + k] * c.a + b_of(i);
      float got = out[i * (size_t)m + k];
      EXPECT_MSG(got == want,
                 "map (%s, %d floats x %zu, depth %d, %s): chunk %zu [%d] = "
                 "%g, expected %g",
                 shape_name[sh], n, nchunks, depth,
                 pinned ? "pinned" : "pageable", i, k, (double)got,
                 (double)want);
    }
  mt_check_all((char *)out + out_bytes, 0xC3, 64, "bytes after the output");
  mt_check_same(in, orig, in_bytes, "map input");

  free(c.calls);
  free(orig);
  if (pinned) {
    EXPECT_OK(weft_pinned_free(in));
    EXPECT_OK(weft_pinned_free(out));
  } else {
    free(in);
    free(out);
  }
}

/* The full matrix with small chunks (3000 floats: not a power of two). */
static void matrix(uint64_t seed) {
  static const int depths[] = {1, 2, 3, 8};
  static const size_t nchunks[] = {1, 2, 5, 17};
  for (int s = 0; s < 3; s++)
    for (int d = 0; d < 4; d++)
      for (int k = 0; k < 4; k++)
        for (int pinned = 0; pinned < 2; pinned++)
          map_run((shape)s, 3000, nchunks[k], depths[d], pinned, seed++);
}

/* Chunks bigger than a 4 MiB staging block (under tt_quick, where the
 * sanitizers slow every float, bigger than 1 MiB only). */
static void big_chunks(uint64_t seed) {
  size_t bytes = tt_quick() ? MT_MIB + 4 : 5 * MT_MIB + 4;
  int n = (int)(bytes / sizeof(float));
  size_t nchunks = tt_quick() ? 2 : 5;
  map_run(IN_PLACE, n, nchunks, 3, 0, seed++);
  map_run(SAME_SIZE, n, nchunks, 2, 0, seed++);
  map_run(SAME_SIZE, n, nchunks, 3, 1, seed++);
  /* depth 64, with more and with fewer chunks than that. */
  map_run(IN_PLACE, 100, 70, 64, 0, seed++);
  map_run(IN_PLACE, 100, 20, 64, 1, seed++);
}

static int never_fn(void *dev_in, void *dev_out, size_t index, void *user) {
  tt_add((int *)user, 1);
  return 0;
}

static void bad_args(void) {
  float in[64], out[64];
  for (int i = 0; i < 64; i++) {
    in[i] = (float)i;
    out[i] = -1.0f;
  }
  int called = 0;
  weft_map_opts o;
  weft_map_opts_init(&o);
  size_t cb = sizeof in / 4; /* 4 chunks of 16 floats */

  EXPECT_ERR(weft_map_chunks(in, cb, out, cb, 4, NULL, &called, &o),
             WEFT_EINVAL);
  EXPECT_ERR(weft_map_chunks(in, 0, out, cb, 4, never_fn, &called, &o),
             WEFT_EINVAL);
  EXPECT_ERR(weft_map_chunks(NULL, cb, out, cb, 4, never_fn, &called, &o),
             WEFT_EINVAL);
  EXPECT_ERR(weft_map_chunks(in, cb, NULL, cb, 4, never_fn, &called, &o),
             WEFT_EINVAL);
  static const int bad_depths[] = {0, -1, 65, 1000};
  for (int i = 0; i < 4; i++) {
    o.depth = bad_depths[i];
    EXPECT_MSG(weft_map_chunks(in, cb, out, cb, 4, never_fn, &called, &o) ==
                   WEFT_EINVAL,
               "depth %d accepted", bad_depths[i]);
  }
  weft_map_opts_init(&o);
  static const size_t bad_sizes[] = {0, sizeof o - 1, sizeof o + 8};
  for (int i = 0; i < 3; i++) {
    o.struct_size = bad_sizes[i];
    EXPECT_MSG(weft_map_chunks(in, cb, out, cb, 4, never_fn, &called, &o) ==
                   WEFT_EINVAL,
               "struct_size %zu accepted", bad_sizes[i]);
  }
  EXPECT_EQ_INT(called, 0);
  for (int i = 0; i < 64; i++)
    EXPECT(out[i] == -1.0f && in[i] == (float)i);

  /* Zero chunks: nothing to do, successfully. NULL opts: the defaults. */
  EXPECT_OK(weft_map_chunks(in, cb, out, cb, 0, never_fn, &called, NULL));
  EXPECT_EQ_INT(called, 0);
  EXPECT_OK(weft_map_chunks(in, cb, out, cb, 4, never_fn, &called, NULL));
  EXPECT_EQ_INT(called, 4);
}

typedef struct task_arg {
  uint64_t seed;
  int full;
  int ok;
} task_arg;

static void map_task(void *arg) {
  task_arg *a = arg;
  if (a->full)
    matrix(a->seed);
  else
    big_chunks(a->seed);
  bad_args();
  a->ok = 1;
}

int main(void) {
  rt = tt_open(NULL);
  /* From the plain main thread. */
  bad_args();
  matrix(1);
  big_chunks(1000);

  /* From a task. */
  task_arg one = {.seed = 2000, .full = 1};
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, map_task, &one, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT(one.ok);

  /* Two tasks mapping at once. */
  task_arg two[2] = {{.seed = 3000, .full = 1}, {.seed = 4000, .full = 0}};
  weft_task *tt[2];
  for (int i = 0; i < 2; i++)
    EXPECT_OK(weft_task_spawn(rt, &tt[i], map_task, &two[i], NULL));
  for (int i = 0; i < 2; i++) {
    EXPECT_OK(weft_task_join(tt[i]));
    EXPECT(two[i].ok);
  }

  weft_mem_stats s = mt_stats(rt);
  EXPECT_EQ_INT(s.pinned_blocks, 0);
  EXPECT_EQ_INT(s.device_allocs, 0);
  tt_close(rt);
  puts("ok");
  return 0;
}
