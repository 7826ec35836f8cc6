/* data: data that moves itself (weft/data.h) against copies written by
 * hand, on the same tasks.
 *
 * Work: K = 8 arrays of n unsigned (16 MiB each; 1 MiB under --quick) in
 * pinned host memory, each run through S = 4 passes of affine (x = x * 3
 * + 1, in place), a task per array and pass, ordered by declared data;
 * the results back in host memory at the end.
 * - hand-written (baseline): the device buffers allocated first, then a
 *   task per array copies it in, one task per pass launches on the
 *   buffer, a last task copies the result out, and the buffers are freed;
 *   each task declares the ranges it touches;
 * - registered: each array registered once (weft_data_register), every
 *   pass's task declares the handle and asks weft_data_get for its
 *   instance; weft_data_unregister_n brings the results back. Its notes give
 *   the bytes weft moved against the minimum (each array in and out once).
 * Both timed from the first spawn until the results are in host memory,
 * checked every repeat against the CPU. Also: the host cost of a
 * weft_data_get on a valid instance, from a task (ns per call). */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "kernels.h"
#include "weft/data.h"

enum { K = 8, S = 4, GETS = 20000 };

typedef struct data_bench {
  bench_ctx *c;
  weft_runtime *rt;
  bench_kernels k;
  unsigned n;
  unsigned *host[K];  /* pinned */
  unsigned *dev[K];   /* the hand-written variant's buffers */
  weft_data *d[K];    /* the registered variant's handles */
  bench_samples s[2]; /* ms: hand-written, registered */
  bench_samples get;  /* ns per weft_data_get */
  weft_data_stats moved;
} data_bench;

typedef struct job {
  data_bench *b;
  int k;
} job;

static int affine(data_bench *b, unsigned *x) {
  unsigned mul = 3, add = 1, n = b->n;
  void *args[] = {&x, &x, &mul, &add, &n};
  return weft_launch(&b->k.affine, WEFT_DIM1(64), WEFT_DIM1(BENCH_THREADS), 0,
                     args);
}

/* ---- hand-written ---- */

static void copy_in(void *arg) {
  job *j = arg;
  data_bench *b = j->b;
  int rc =
      weft_copy(b->dev[j->k], b->host[j->k], (size_t)b->n * sizeof(unsigned));
  if (rc)
    bench_fail_weft(b->c, rc, "copy in");
}
static void pass_hand(void *arg) {
  job *j = arg;
  int rc = affine(j->b, j->b->dev[j->k]);
  if (rc)
    bench_fail_weft(j->b->c, rc, "weft_launch");
}
static void copy_out(void *arg) {
  job *j = arg;
  data_bench *b = j->b;
  int rc =
      weft_copy(b->host[j->k], b->dev[j->k], (size_t)b->n * sizeof(unsigned));
  if (rc == 0)
    rc = weft_sync();
  if (rc)
    bench_fail_weft(b->c, rc, "copy out");
}

/* ---- registered ---- */

static void pass_data(void *arg) {
  job *j = arg;
  unsigned *x;
  int rc = weft_data_get(j->b->d[j->k], WEFT_RW, (void **)&x);
  if (rc == 0)
    rc = affine(j->b, x);
  if (rc)
    bench_fail_weft(j->b->c, rc, "weft_data_get + weft_launch");
}

/* Spawns fn(j) declaring the n accesses at a; into *t. */
static int spawn(data_bench *b, weft_task_fn fn, job *j, const weft_access *a,
                 int n, weft_task **t) {
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.accesses = a;
  o.naccesses = (size_t)n;
  BENCH_TRY(b->c, weft_task_spawn(b->rt, t, fn, j, &o));
  return 0;
}

/* One timed run of a variant from the calling task: 0 hand-written, 1
 * registered; ms into *ms. */
static int run_variant(data_bench *b, int v, double *ms) {
  size_t bytes = (size_t)b->n * sizeof(unsigned);
  job jobs[K];
  weft_task *t[K * (S + 2)];
  int nt = 0, rc = 0;
  uint64_t t0 = bench_now_ns();
  for (int k = 0; k < K; k++) {
    jobs[k] = (job){b, k};
    if (v == 1)
      BENCH_TRY(b->c, weft_data_register(b->rt, b->host[k], bytes, &b->d[k]));
    else
      BENCH_TRY(b->c, weft_device_alloc(bytes, (void **)&b->dev[k]));
  }
  if (v == 0) /* the buffers made before the tasks use them */
    BENCH_TRY(b->c, weft_sync());
  for (int k = 0; rc == 0 && k < K; k++) {
    weft_access host = {b->host[k], bytes, WEFT_RW};
    weft_access dev = {b->dev[k], bytes, WEFT_RW};
    weft_access both[2] = {host, dev};
    if (v == 1) {
      for (int s = 0; rc == 0 && s < S; s++)
        rc = spawn(b, pass_data, &jobs[k], &host, 1, &t[nt++]);
      continue;
    }
    rc = spawn(b, copy_in, &jobs[k], both, 2, &t[nt++]);
    for (int s = 0; rc == 0 && s < S; s++)
      rc = spawn(b, pass_hand, &jobs[k], &dev, 1, &t[nt++]);
    if (rc == 0)
      rc = spawn(b, copy_out, &jobs[k], both, 2, &t[nt++]);
  }
  for (int i = 0; i < nt; i++)
    if (weft_task_join(t[i]) != 0 && rc == 0)
      rc = bench_fail(b->c, "a task of the %s variant failed",
                      v ? "registered" : "hand-written");
  for (int k = 0; v == 0 && k < K; k++)
    if (weft_device_free(b->dev[k]) != 0 && rc == 0)
      rc = bench_fail(b->c, "weft_device_free");
  if (v == 1 && rc == 0) {
    /* The results back and the instances freed, side by side
     * (unregister_n); for one array, first what moving it took (a sync,
     * then its figures). */
    int e = weft_data_sync(b->d[0]);
    if (e == 0)
      e = weft_data_stats_get(b->d[0], &b->moved);
    if (e == 0)
      e = weft_data_unregister_n(b->d, K);
    if (e)
      rc = bench_fail_weft(b->c, e, "weft_data_sync, _unregister_n");
  }
  *ms = (double)(bench_now_ns() - t0) / 1e6;
  return rc ? rc : bench_failed(b->c) ? BENCH_FAIL : 0;
}

/* Fills the arrays, runs a variant, checks them against the CPU. */
static int checked(data_bench *b, int v, double *ms) {
  for (int k = 0; k < K; k++)
    for (unsigned i = 0; i < b->n; i++)
      b->host[k][i] = i + (unsigned)k;
  int rc = run_variant(b, v, ms);
  for (int k = 0; rc == 0 && k < K; k++)
    for (unsigned i = 0; i < b->n; i += 997) {
      unsigned want = i + (unsigned)k;
      for (int s = 0; s < S; s++)
        want = want * 3 + 1;
      if (b->host[k][i] != want)
        return bench_fail(b->c, "%s: array %d element %u is %u, not %u",
                          v ? "registered" : "hand-written", k, i,
                          b->host[k][i], want);
    }
  return rc;
}

/* The host cost of a get on a valid instance, from a task. */
static void gets(void *arg) {
  data_bench *b = arg;
  unsigned *x;
  for (int r = 0; r <= bench_repeat(b->c); r++) {
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < GETS; i++) {
      int rc = weft_data_get(b->d[0], WEFT_READ, (void **)&x);
      if (rc) {
        bench_fail_weft(b->c, rc, "weft_data_get");
        return;
      }
    }
    if (r > 0)
      bench_samples_add(&b->get, (double)(bench_now_ns() - t0) / GETS);
  }
}

static void rounds(void *arg) {
  data_bench *b = arg;
  for (int r = 0; r <= bench_repeat(b->c); r++)
    for (int v = 0; v < 2; v++) { /* the two take turns */
      double ms;
      if (checked(b, v, &ms))
        return;
      if (r > 0)
        bench_samples_add(&b->s[v], ms);
    }
}

static int run(bench_ctx *c) {
  data_bench *b = calloc(1, sizeof *b);
  if (!b)
    return bench_fail(c, "out of memory");
  b->c = c;
  b->n = (unsigned)bench_size(c, 4 << 20, 256 << 10);
  size_t bytes = (size_t)b->n * sizeof(unsigned);
  int rc = bench_runtime_open(c, 0, &b->rt);
  bench_kernels_init(&b->k);
  for (int k = 0; rc == 0 && k < K; k++)
    if ((rc = weft_pinned_alloc(bytes, (void **)&b->host[k])) != 0)
      rc = bench_fail_weft(c, rc, "weft_pinned_alloc");
  if (rc == 0 && (rc = bench_kernels_preload(&b->k)) != 0)
    rc = bench_fail_weft(c, rc, "weft_kernel_preload");
  if (rc == 0)
    rc = bench_in_task(c, b->rt, rounds, b);
  if (rc == 0 && !bench_failed(c)) {
    rc = weft_data_register(b->rt, b->host[0], bytes, &b->d[0]);
    if (rc == 0) {
      /* The getting task declares the handle, as every one must. */
      weft_access a = weft_data_access(b->d[0], WEFT_READ);
      weft_task_opts o;
      weft_task_opts_init(&o);
      o.name = "data/gets";
      o.accesses = &a;
      o.naccesses = 1;
      weft_task *t;
      rc = weft_task_spawn(b->rt, &t, gets, b, &o);
      if (rc == 0)
        rc = weft_task_join(t);
      if (rc)
        rc = bench_fail_weft(c, rc, "the gets' task");
      int e = weft_data_unregister(b->d[0]);
      if (e && rc == 0)
        rc = bench_fail_weft(c, e, "weft_data_unregister");
    } else {
      rc = bench_fail_weft(c, rc, "weft_data_register");
    }
  }
  for (int k = 0; k < K; k++)
    if (b->host[k])
      weft_pinned_free(b->host[k]);
  if (bench_runtime_close(c, &b->rt) || bench_failed(c))
    rc = BENCH_FAIL;
  if (rc == 0)
    rc = bench_report(c, "hand-written: copies in tasks of their own", "ms",
                      &b->s[0], BENCH_BASELINE,
                      "%d arrays of %zu MiB, %d passes each; device buffers "
                      "allocated, filled and freed by hand",
                      K, bytes >> 20 ? bytes >> 20 : 1, S);
  if (rc == 0) {
    uint64_t min = 2 * (uint64_t)bytes;
    uint64_t got =
        b->moved.to_device + b->moved.to_host + b->moved.device_to_device;
    rc = bench_report(c, "registered: weft_data_get in each task", "ms",
                      &b->s[1], 0,
                      "weft moved %.2f x the minimum per array (%llu of "
                      "%llu bytes)",
                      (double)got / (double)min, (unsigned long long)got,
                      (unsigned long long)min);
  }
  if (rc == 0)
    rc = bench_report(c, "weft_data_get, instance valid, from a task", "ns",
                      &b->get, 0, "the host cost of a get that moves nothing");
  free(b);
  return rc;
}

const bench_scenario bench_sc_data = {
    "data", "registered data that moves itself vs copies by hand", run};
