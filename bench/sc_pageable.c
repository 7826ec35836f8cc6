/* pageable: copies from and to pageable (malloc) memory.
 *
 * 256 MiB (16 MiB under --quick) of random bytes, host to device and
 * device to host, three ways: weft_copy from or to malloc memory, from a
 * task (weft stages it through pinned 4 MiB chunks, so that no thread
 * waits for the device); raw cudaMemcpyAsync from or to the same malloc
 * memory on a raw non-blocking stream (CUDA stages it itself and holds the
 * calling thread for the whole copy); and (baseline) raw cudaMemcpyAsync
 * from or to pinned memory. Each variant's time runs from the copy call to
 * the end of the wait that follows it (weft_sync, cudaStreamSynchronize),
 * on the host clock, and gives GB/s = bytes / that time. The "in call"
 * rows are the time spent inside the copy call alone: how long the caller
 * was held before it could do anything else. The raw copies are raw_api.h's
 * raw_copy and raw_stream_sync on one raw stream. On the host backend every
 * variant is a memcpy on the backend's executor (nothing is staged), and
 * the raw ones go through its own streams (weft_host_copy, weft/host.h).
 * Before each run the destination is overwritten; after it, every byte is
 * compared with the source. Target: weft from pageable >= 0.8 x raw pinned
 * bandwidth, with a small time in the call. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "raw_api.h"

enum { V_PINNED, V_WEFT, V_PAGEABLE, NVARIANTS };
enum { MC_THREADS_MAX = 64 };

typedef struct pageable_bench {
  bench_ctx *c;
  weft_runtime *rt;
  raw_stream raw; /* the raw copies' stream; zeroed until made */
  size_t n;
  unsigned char *ref;  /* the random bytes (malloc) */
  unsigned char *page; /* pageable side of the pageable copies (malloc) */
  unsigned char *pin;  /* pinned side of the pinned copies */
  unsigned char *chk;  /* pinned, for reading the device back */
  unsigned char *dev;
  int to_device; /* the direction measured now */
  int record;    /* weft_run: add the run's samples */
  int rc;        /* weft_run's result */
  bench_samples gbs[NVARIANTS], call_ms[NVARIANTS];
  /* The staging floor: host memcpy between the pageable and the pinned
   * buffer, [0] one thread, [1] a thread per core, this direction. */
  bench_samples floor[2];
  int threads;
} pageable_bench;

/* xorshift64*: reproducible random bytes. */
static void fill_random(unsigned char *p, size_t n) {
  uint64_t s = 0x9E3779B97F4A7C15ULL;
  for (size_t i = 0; i < n; i += 8) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    uint64_t v = s * 0x2545F4914F6CDD1DULL;
    memcpy(p + i, &v, n - i < 8 ? n - i : 8);
  }
}

static int compare(pageable_bench *p, const unsigned char *got,
                   const char *what) {
  if (memcmp(got, p->ref, p->n) == 0)
    return 0;
  size_t i = 0;
  while (got[i] == p->ref[i])
    i++;
  return bench_fail(p->c, "%s %s: byte %zu of %zu is 0x%02x, expected 0x%02x",
                    what, p->to_device ? "H2D" : "D2H", i, p->n, got[i],
                    p->ref[i]);
}

static unsigned char *host_side(pageable_bench *p, int v) {
  return v == V_PINNED ? p->pin : p->page;
}

/* Overwrites the destination of variant v's copy, from the calling task's
 * or thread's stream. */
static int poison(pageable_bench *p, int v) {
  if (p->to_device) {
    BENCH_TRY(p->c, weft_memset(p->dev, 0x5a, p->n));
    BENCH_TRY(p->c, weft_sync());
  } else {
    memset(host_side(p, v), 0xa5, p->n);
  }
  return 0;
}

static int check(pageable_bench *p, int v, const char *what) {
  if (!p->to_device)
    return compare(p, host_side(p, v), what);
  memset(p->chk, 0xa5, p->n);
  BENCH_TRY(p->c, weft_copy(p->chk, p->dev, p->n));
  BENCH_TRY(p->c, weft_sync());
  return compare(p, p->chk, what);
}

/* One timed copy of variant v; adds its samples when record is set. */
static int timed_copy(pageable_bench *p, int v, int record) {
  bench_ctx *c = p->c;
  static const char *const what[] = {"raw pinned", "weft pageable",
                                     "raw pageable"};
  unsigned char *host = host_side(p, v);
  void *dst = p->to_device ? (void *)p->dev : (void *)host;
  const void *src = p->to_device ? (const void *)host : (const void *)p->dev;
  if (poison(p, v))
    return BENCH_FAIL;
  uint64_t t0 = bench_now_ns(), t1, t2;
  if (v == V_WEFT) {
    int e = weft_copy(dst, src, p->n);
    t1 = bench_now_ns();
    if (e)
      return bench_fail_weft(c, e, "weft_copy");
    e = weft_sync();
    t2 = bench_now_ns();
    if (e)
      return bench_fail_weft(c, e, "weft_sync");
  } else {
    int e = raw_copy(p->raw, dst, src, p->n, p->to_device ? RAW_H2D : RAW_D2H);
    t1 = bench_now_ns();
    if (e)
      return raw_fail(c, e, "raw_copy", __LINE__);
    e = raw_stream_sync(p->raw);
    t2 = bench_now_ns();
    if (e)
      return raw_fail(c, e, "raw_stream_sync(p->raw)", __LINE__);
  }
  if (check(p, v, what[v]))
    return BENCH_FAIL;
  if (record) {
    bench_samples_add(&p->gbs[v], (double)p->n / (double)(t2 - t0));
    bench_samples_add(&p->call_ms[v], (double)(t1 - t0) / 1e6);
  }
  return 0;
}

/* ---- the floor: what memcpy alone reaches on this machine ---- */

typedef struct mc_job {
  unsigned char *dst;
  const unsigned char *src;
  size_t n;
} mc_job;

static void *mc_thread(void *arg) {
  mc_job *j = arg;
  memcpy(j->dst, j->src, j->n);
  return NULL;
}

/* Copies the pageable buffer into the pinned one (to the device: what
 * staging does first) or back, split over t threads; GB/s. */
static double memcpy_gbs(pageable_bench *p, int t) {
  pthread_t th[MC_THREADS_MAX];
  int started[MC_THREADS_MAX] = {0};
  mc_job jobs[MC_THREADS_MAX];
  size_t part = (p->n / (size_t)t + 4095) & ~(size_t)4095;
  uint64_t t0 = bench_now_ns();
  for (int i = 0; i < t; i++) {
    size_t off = (size_t)i * part;
    size_t n = off >= p->n ? 0 : p->n - off < part ? p->n - off : part;
    jobs[i] = p->to_device ? (mc_job){p->chk + off, p->page + off, n}
                           : (mc_job){p->page + off, p->chk + off, n};
    /* The last part here; one that cannot get a thread too. */
    started[i] =
        i + 1 < t && pthread_create(&th[i], NULL, mc_thread, &jobs[i]) == 0;
    if (!started[i])
      mc_thread(&jobs[i]);
  }
  for (int i = 0; i < t; i++)
    if (started[i])
      pthread_join(th[i], NULL);
  return (double)p->n / (double)(bench_now_ns() - t0);
}

static void weft_run(void *arg) {
  pageable_bench *p = arg;
  p->rc = timed_copy(p, V_WEFT, p->record);
}

/* Every variant once per round, in turn, so that drift hits them alike;
 * round 0 warms up. */
static int measure(pageable_bench *p) {
  bench_ctx *c = p->c;
  for (int v = 0; v < NVARIANTS; v++)
    p->gbs[v].n = p->call_ms[v].n = 0;
  if (!p->to_device) { /* the device holds the source */
    BENCH_TRY(c, weft_copy(p->dev, p->ref, p->n));
    BENCH_TRY(c, weft_sync());
  }
  p->floor[0].n = p->floor[1].n = 0;
  for (int r = 0; r <= bench_repeat(c); r++) {
    for (int f = 0; f < 2; f++) {
      double g = memcpy_gbs(p, f ? p->threads : 1);
      if (r > 0)
        bench_samples_add(&p->floor[f], g);
    }
    for (int v = 0; v < NVARIANTS; v++) {
      if (v == V_WEFT) {
        p->record = r > 0;
        p->rc = BENCH_FAIL;
        if (bench_in_task(c, p->rt, weft_run, p) || p->rc)
          return BENCH_FAIL;
      } else if (timed_copy(p, v, r > 0)) {
        return BENCH_FAIL;
      }
    }
  }
  return 0;
}

static int report(pageable_bench *p) {
  bench_ctx *c = p->c;
  int cuda = bench_backend(c) == WEFT_BACKEND_CUDA;
  const char *dir = p->to_device ? "H2D" : "D2H";
  const char *raw = cuda ? "cudaMemcpyAsync" : "weft_host_copy";
  char names[NVARIANTS][64];
  snprintf(names[V_PINNED], sizeof names[0], "raw pinned %s %s", raw, dir);
  snprintf(names[V_WEFT], sizeof names[0], "weft_copy %s %s pageable%s", dir,
           p->to_device ? "from" : "to", cuda ? " (staged)" : "");
  snprintf(names[V_PAGEABLE], sizeof names[0], "raw pageable %s %s", raw, dir);
  double pinned = bench_stats_of(&p->gbs[V_PINNED]).median;
  double weft = bench_stats_of(&p->gbs[V_WEFT]).median;
  double mib = (double)p->n / (1 << 20);
  bench_group(c);
  int rc = bench_report(c, names[V_PINNED], "GB/s", &p->gbs[V_PINNED],
                        BENCH_BASELINE,
                        "%.0f MiB; call to end of stream sync, host clock%s",
                        mib, cuda ? "" : "; host backend: a memcpy");
  if (rc == 0)
    rc = bench_report(
        c, names[V_WEFT], "GB/s", &p->gbs[V_WEFT], 0,
        "from a task, call to end of weft_sync; target >= 0.8 x pinned "
        "(%s); in the call %.3f ms (median)%s",
        weft >= 0.8 * pinned ? "met" : "MISSED",
        bench_stats_of(&p->call_ms[V_WEFT]).median,
        cuda ? "" : "; host backend: not staged, a memcpy");
  if (rc == 0)
    rc = bench_report(c, names[V_PAGEABLE], "GB/s", &p->gbs[V_PAGEABLE], 0,
                      "from a plain thread; in the call %.3f ms (median)",
                      bench_stats_of(&p->call_ms[V_PAGEABLE]).median);
  for (int f = 0; rc == 0 && f < 2; f++) {
    char name[80];
    snprintf(name, sizeof name, "host memcpy %s pinned, %d thread%s",
             p->to_device ? "pageable to" : "to pageable from",
             f ? p->threads : 1, f && p->threads > 1 ? "s" : "");
    rc = bench_report(
        c, name, "GB/s", &p->floor[f], 0,
        "the staging floor: the same buffers, memcpy alone%s; weft reached "
        "%.2f x it",
        f ? " split over a thread per core" : "",
        weft / bench_stats_of(&p->floor[f]).median);
  }
  static const char *const call_notes[NVARIANTS] = {
      "queues the copy",
      "H2D: returns once its chunks are staged; D2H: once queued",
      "pageable copies are staged inside the call",
  };
  for (int v = 0; rc == 0 && v < NVARIANTS; v++) {
    char name[80];
    snprintf(name, sizeof name, "%.63s, in call", names[v]);
    rc = bench_report(
        c, name, "ms", &p->call_ms[v], v == V_PAGEABLE ? BENCH_BASELINE : 0,
        "host clock around the copy call only; %s", call_notes[v]);
  }
  return rc;
}

static int setup(pageable_bench *p) {
  bench_ctx *c = p->c;
  p->ref = malloc(p->n);
  p->page = malloc(p->n);
  if (!p->ref || !p->page)
    return bench_fail(c, "out of memory (2 x %zu bytes)", p->n);
  fill_random(p->ref, p->n);
  memcpy(p->page, p->ref, p->n); /* also faults its pages in, untimed */
  BENCH_TRY(c, weft_pinned_alloc(p->n, (void **)&p->pin));
  BENCH_TRY(c, weft_pinned_alloc(p->n, (void **)&p->chk));
  memcpy(p->pin, p->ref, p->n);
  BENCH_TRY(c, weft_device_alloc(p->n, (void **)&p->dev));
  BENCH_TRY(c, weft_sync()); /* the allocation, before other streams */
  return 0;
}

static int teardown(pageable_bench *p) {
  bench_ctx *c = p->c;
  int rc = 0, e;
  if (p->dev && (e = weft_device_free(p->dev)) != 0)
    rc = bench_fail_weft(c, e, "weft_device_free");
  if ((e = weft_sync()) != 0)
    rc = bench_fail_weft(c, e, "weft_sync");
  if (p->pin && (e = weft_pinned_free(p->pin)) != 0)
    rc = bench_fail_weft(c, e, "weft_pinned_free");
  if (p->chk && (e = weft_pinned_free(p->chk)) != 0)
    rc = bench_fail_weft(c, e, "weft_pinned_free");
  free(p->ref);
  free(p->page);
  return rc;
}

static int raw_open(pageable_bench *p) {
  RAW_TRY(p->c, raw_stream_create(p->rt, 0, &p->raw));
  return 0;
}

/* Waits for the raw stream and frees it (nothing if it was not made); an
 * error here would only repeat one that a checked call already reported. */
static void raw_close(pageable_bench *p) { raw_stream_destroy(&p->raw); }

static int run(bench_ctx *c) {
  pageable_bench *p = calloc(1, sizeof *p);
  if (!p)
    return bench_fail(c, "out of memory");
  p->c = c;
  p->n = (size_t)bench_size(c, 256L << 20, 16L << 20);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  p->threads = cores < 1                ? 1
               : cores > MC_THREADS_MAX ? MC_THREADS_MAX
                                        : (int)cores;
  int rc = bench_runtime_open(c, 0, &p->rt);
  if (rc == 0)
    rc = raw_open(p);
  if (rc == 0) {
    rc = setup(p);
    for (int d = 1; rc == 0 && d >= 0; d--) {
      p->to_device = d;
      rc = measure(p);
      if (rc == 0)
        rc = report(p);
    }
  }
  /* The raw stream is waited for before the buffers that a failed copy
   * may still use are freed. */
  raw_close(p);
  if (p->rt && teardown(p))
    rc = BENCH_FAIL;
  if (bench_runtime_close(c, &p->rt))
    rc = BENCH_FAIL;
  free(p);
  return rc;
}

const bench_scenario bench_sc_pageable = {
    "pageable",
    "256 MiB copies from/to malloc memory: weft_copy (staged) vs raw "
    "pageable and pinned copies",
    run};
