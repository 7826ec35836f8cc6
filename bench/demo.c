/* Seed 000's normalisation, once (demo.h). */
#include <math.h>
#include <string.h>

#include "demo.h"

/* Records a failed weft call in s->err and returns -1. */
static int weft_failed(demo *s, int rc, const char *call) {
  const char *msg = weft_last_error_message();
  snprintf(s->err, sizeof s->err, "%s: %s: %s", call, weft_err_name(rc),
           *msg ? msg : weft_strerror(rc));
  return -1;
}

#define S_WEFT(s, call)                                                        \
  do {                                                                         \
    int rc_ = (call);                                                          \
    if (rc_ != 0)                                                              \
      return weft_failed((s), rc_, #call);                                     \
  } while (0)

#define S_RAW(s, call)                                                         \
  do {                                                                         \
    int e_ = (call);                                                           \
    if (e_ != 0) {                                                             \
      raw_describe(e_, #call, __LINE__, (s)->err, sizeof(s)->err);             \
      return -1;                                                               \
    }                                                                          \
  } while (0)

const char *demo_name(demo_variant v) {
  static const char *const names[DEMO_NVARIANTS] = {
      "raw 1 stream", "raw streams", "weft tasks", "weft pipelined"};
  return v < DEMO_NVARIANTS ? names[v] : "?";
}

/* ---- setup ---- */

static int make_raw(demo *s) {
  S_RAW(s, raw_stream_create(s->rt, 0, &s->main));
  for (; s->nstreams < s->narrays; s->nstreams++)
    S_RAW(s, raw_stream_create(s->rt, 0, &s->streams[s->nstreams]));
  S_RAW(s, raw_event_create(s->rt, 1, &s->start));
  S_RAW(s, raw_event_create(s->rt, 1, &s->final));
  /* The per-stream end events only order streams; timing would cost. */
  for (; s->nend < s->narrays; s->nend++)
    S_RAW(s, raw_event_create(s->rt, 0, &s->end[s->nend]));
  return 0;
}

int demo_open(demo *s, weft_runtime *rt, int narrays, unsigned log2n) {
  memset(s, 0, sizeof *s);
  s->rt = rt;
  demo_kernels_init(&s->k);
  if (narrays < 1 || narrays > DEMO_MAX_ARRAYS) {
    snprintf(s->err, sizeof s->err, "%d arrays: 1 to %d", narrays,
             DEMO_MAX_ARRAYS);
    return -1;
  }
  s->narrays = narrays;
  s->log2n = log2n;
  s->n = 1ull << log2n;
  unsigned long long need = (s->n + DEMO_THREADS - 1) / DEMO_THREADS;
  s->blocks = need < DEMO_MAX_BLOCKS ? (unsigned)need : DEMO_MAX_BLOCKS;
  s->bytes = (size_t)s->n * sizeof(float);
  size_t all = s->bytes * (size_t)narrays;
  S_WEFT(s, weft_kernel_preload(&s->k.partial_reduce));
  S_WEFT(s, weft_kernel_preload(&s->k.single_thread_sum));
  S_WEFT(s, weft_kernel_preload(&s->k.divide_by));
  /* One contiguous buffer each, so the pipelined variant can map over the
   * arrays as chunks. */
  S_WEFT(s, weft_pinned_alloc(all, (void **)&s->in_all));
  S_WEFT(s, weft_pinned_alloc(all, (void **)&s->out_all));
  S_WEFT(s, weft_device_alloc(all, (void **)&s->dev_all));
  S_WEFT(s, weft_device_alloc((size_t)s->blocks * narrays * sizeof(float),
                              (void **)&s->dev_partial_all));
  S_WEFT(s, weft_device_alloc((size_t)narrays * sizeof(float),
                              (void **)&s->dev_sum_all));
  /* The allocations are ordered on this thread's stream: other streams use
   * them once it has passed them. */
  S_WEFT(s, weft_sync());
  uint64_t seed = 0x9E3779B97F4A7C15ULL;
  for (int i = 0; i < narrays; i++) {
    s->in[i] = s->in_all + (size_t)i * s->n;
    s->out[i] = s->out_all + (size_t)i * s->n;
    s->dev_a[i] = s->dev_all + (size_t)i * s->n;
    s->dev_partial[i] = s->dev_partial_all + (size_t)i * s->blocks;
    s->dev_sum[i] = s->dev_sum_all + i;
    s->cpu_sum[i] = demo_fill_input(s->in[i], s->n, &seed);
  }
  return make_raw(s);
}

int demo_close(demo *s) {
  int first = 0;
  char err[sizeof s->err] = "";
#define KEEP(call)                                                             \
  do {                                                                         \
    int e_ = (call);                                                           \
    if (e_ != 0 && !first) {                                                   \
      first = -1;                                                              \
      if (e_ < 0)                                                              \
        weft_failed(s, e_, #call);                                             \
      else                                                                     \
        raw_describe(e_, #call, __LINE__, s->err, sizeof s->err);              \
      memcpy(err, s->err, sizeof err);                                         \
    }                                                                          \
  } while (0)
  /* The raw streams first: their work may still use the memory. */
  KEEP(raw_stream_destroy(&s->main));
  for (int i = 0; i < s->nstreams; i++)
    KEEP(raw_stream_destroy(&s->streams[i]));
  KEEP(raw_event_destroy(&s->start));
  KEEP(raw_event_destroy(&s->final));
  for (int i = 0; i < s->nend; i++)
    KEEP(raw_event_destroy(&s->end[i]));
  s->nstreams = s->nend = 0;
  float *dev[] = {s->dev_all, s->dev_partial_all, s->dev_sum_all};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i])
      KEEP(weft_device_free(dev[i]));
  s->dev_all = s->dev_partial_all = s->dev_sum_all = NULL;
  KEEP(weft_sync());
  if (s->in_all)
    KEEP(weft_pinned_free(s->in_all));
  if (s->out_all)
    KEEP(weft_pinned_free(s->out_all));
  s->in_all = s->out_all = NULL;
#undef KEEP
  if (first)
    memcpy(s->err, err, sizeof err);
  return first;
}

/* One array's three kernels' arguments, for raw and weft launches alike:
 * partial_reduce(a, partial, n), single_thread_sum(partial, sum, blocks),
 * divide_by(a, sum, n). The arrays point into the struct itself: fill it
 * where it stays (launches copy the values when queued). */
typedef struct norm_args {
  unsigned long long n;
  unsigned blocks;
  float *a, *partial, *sum;
  void *reduce[3], *total[3], *divide[3];
  weft_dim3 grid, block;
} norm_args;

static void norm_args_init(norm_args *g, const demo *s, float *a, size_t i) {
  g->n = s->n;
  g->blocks = s->blocks;
  g->a = a;
  g->partial = s->dev_partial[i];
  g->sum = s->dev_sum[i];
  g->reduce[0] = &g->a;
  g->reduce[1] = &g->partial;
  g->reduce[2] = &g->n;
  g->total[0] = &g->partial;
  g->total[1] = &g->sum;
  g->total[2] = &g->blocks;
  g->divide[0] = &g->a;
  g->divide[1] = &g->sum;
  g->divide[2] = &g->n;
  g->grid = WEFT_DIM1(s->blocks);
  g->block = WEFT_DIM1(DEMO_THREADS);
}

/* ---- raw ---- */

/* One array's work on stream st. */
static int raw_array(demo *s, int i, raw_stream st) {
  norm_args g;
  norm_args_init(&g, s, s->dev_a[i], (size_t)i);
  S_RAW(s, raw_copy(st, s->dev_a[i], s->in[i], s->bytes, RAW_H2D));
  S_RAW(s, raw_launch(st, &s->k.partial_reduce, g.grid, g.block, g.reduce));
  S_RAW(s, raw_launch(st, &s->k.single_thread_sum, WEFT_DIM1(1), WEFT_DIM1(1),
                      g.total));
  S_RAW(s, raw_launch(st, &s->k.divide_by, g.grid, g.block, g.divide));
  S_RAW(s, raw_copy(st, s->out[i], s->dev_a[i], s->bytes, RAW_D2H));
  return 0;
}

/* Every stream starts after the start event on the main stream, and the
 * main stream waits for every stream's end event before it records the
 * final one, so start -> final spans all the work. */
static int run_raw(demo *s, int many, float *ms) {
  S_RAW(s, raw_event_record(s->start, s->main));
  for (int k = 0; many && k < s->narrays; k++)
    S_RAW(s, raw_stream_wait(s->streams[k], s->start));
  for (int i = 0; i < s->narrays; i++)
    if (raw_array(s, i, many ? s->streams[i] : s->main))
      return -1;
  for (int k = 0; many && k < s->narrays; k++) {
    S_RAW(s, raw_event_record(s->end[k], s->streams[k]));
    S_RAW(s, raw_stream_wait(s->main, s->end[k]));
  }
  S_RAW(s, raw_event_record(s->final, s->main));
  S_RAW(s, raw_event_sync(s->final));
  S_RAW(s, raw_elapsed_ms(s->start, s->final, ms));
  return 0;
}

/* ---- weft: a task per array ---- */

/* The three kernels on the calling task's stream. */
static int launch_norm(const demo *s, norm_args *g) {
  int rc = weft_launch(&s->k.partial_reduce, g->grid, g->block, 0, g->reduce);
  if (!rc)
    rc = weft_launch(&s->k.single_thread_sum, WEFT_DIM1(1), WEFT_DIM1(1), 0,
                     g->total);
  if (!rc)
    rc = weft_launch(&s->k.divide_by, g->grid, g->block, 0, g->divide);
  return rc;
}

typedef struct array_job {
  demo *s;
  int i;
  weft_event *start;
  int rc;
} array_job;

static void array_task(void *arg) {
  array_job *j = arg;
  demo *s = j->s;
  int i = j->i;
  norm_args g;
  norm_args_init(&g, s, s->dev_a[i], (size_t)i);
  /* The first operation orders the task's stream after the start event,
   * so that start..final brackets all the work. */
  int rc = weft_event_wait(j->start);
  if (!rc)
    rc = weft_copy(s->dev_a[i], s->in[i], s->bytes);
  if (!rc)
    rc = launch_norm(s, &g);
  if (!rc)
    rc = weft_copy(s->out[i], s->dev_a[i], s->bytes);
  j->rc = rc; /* no weft_sync: the task completes when its GPU work does */
}

/* The events that time a weft variant on the calling thread's stream:
 * start recorded before the work is queued, final after all of it. call
 * names what failed. */
typedef struct frame {
  weft_event *start, *final;
  const char *call;
} frame;

static int frame_begin(frame *f) {
  *f = (frame){NULL, NULL, "weft_event_create"};
  int rc = weft_event_create(&f->start);
  if (!rc)
    rc = weft_event_create(&f->final);
  if (!rc) {
    f->call = "weft_event_record(start)";
    rc = weft_event_record(f->start);
  }
  return rc;
}

/* After the work (rc: how queuing it went): records final, waits for it
 * and reads the time. Returns the first failure. */
static int frame_end(frame *f, int rc, float *ms) {
  if (!rc) {
    f->call = "weft_event_record(final)";
    rc = weft_event_record(f->final);
  }
  if (!rc) {
    f->call = "weft_event_sync";
    rc = weft_event_sync(f->final);
  }
  if (!rc) {
    f->call = "weft_event_elapsed_ms";
    rc = weft_event_elapsed_ms(f->start, f->final, ms);
  }
  return rc;
}

static void frame_free(frame *f) {
  weft_event_destroy(&f->start);
  weft_event_destroy(&f->final);
}

/* Records start, spawns the tasks, orders this thread's stream after each
 * task's GPU work (no host wait for the GPU), records final and waits for
 * it; then joins the tasks. */
static int run_tasks(demo *s, float *ms) {
  weft_task *tasks[DEMO_MAX_ARRAYS] = {0};
  array_job jobs[DEMO_MAX_ARRAYS];
  frame f;
  int rc = frame_begin(&f);
  for (int i = 0; i < s->narrays && !rc; i++) {
    jobs[i] = (array_job){s, i, f.start, 0};
    f.call = "weft_task_spawn";
    rc = weft_task_spawn(s->rt, &tasks[i], array_task, &jobs[i], NULL);
  }
  for (int i = 0; i < s->narrays && !rc; i++) {
    f.call = "weft_task_after";
    rc = weft_task_after(tasks[i]);
  }
  rc = frame_end(&f, rc, ms);
  int failed = rc ? weft_failed(s, rc, f.call) : 0;
  for (int i = 0; i < s->narrays; i++) {
    if (!tasks[i])
      continue;
    int e = weft_task_join(tasks[i]);
    if (!failed && (e || jobs[i].rc))
      failed = weft_failed(s, e ? e : jobs[i].rc,
                           e ? "weft_task_join" : "array task");
  }
  frame_free(&f);
  return failed;
}

/* ---- weft: pipelined ---- */

static int normalise_chunk(void *dev_in, void *dev_out, size_t index,
                           void *user) {
  (void)dev_out; /* in place */
  norm_args g;
  norm_args_init(&g, user, dev_in, index);
  return launch_norm(user, &g);
}

static int run_pipelined(demo *s, float *ms) {
  frame f;
  int rc = frame_begin(&f);
  if (!rc) {
    f.call = "weft_map_chunks";
    weft_map_opts o;
    weft_map_opts_init(&o);
    if (s->depth > 0)
      o.depth = s->depth;
    rc = weft_map_chunks(s->in_all, s->bytes, s->out_all, 0, (size_t)s->narrays,
                         normalise_chunk, s, &o);
  }
  /* The map returned: all its work is done; final marks that. */
  rc = frame_end(&f, rc, ms);
  int failed = rc ? weft_failed(s, rc, f.call) : 0;
  frame_free(&f);
  return failed;
}

/* ---- running and checking ---- */

static int run_variant(demo *s, demo_variant v, float *ms) {
  switch (v) {
  case DEMO_RAW1:
  case DEMO_RAWN:
    return run_raw(s, v == DEMO_RAWN, ms);
  case DEMO_TASKS:
    return run_tasks(s, ms);
  case DEMO_PIPELINED:
    return run_pipelined(s, ms);
  default:
    snprintf(s->err, sizeof s->err, "no variant %d", (int)v);
    return -1;
  }
}

/* Each run is a range named for its variant, so that the trace's report
 * can be read per variant (`weft trace report --range NAME`). */
int demo_run(demo *s, demo_variant v, float *ms) {
  *ms = 0;
  S_WEFT(s, weft_range_push(demo_name(v)));
  int rc = run_variant(s, v, ms);
  int e = weft_range_pop();
  if (rc == 0 && e != 0)
    return weft_failed(s, e, "weft_range_pop()");
  return rc;
}

void demo_poison(demo *s) {
  memset(s->out_all, 0xff, s->bytes * (size_t)s->narrays); /* NaN */
}

int demo_check(demo *s, const char *name) {
  for (int i = 0; i < s->narrays; i++) {
    const float *in = s->in[i], *out = s->out[i];
    float inv = (float)(1.0 / s->cpu_sum[i]);
    /* Counting first, without an early exit, keeps the loop vectorisable;
     * the negated comparison catches NaN. */
    size_t bad = 0;
    double total = 0.0;
    for (unsigned long long j = 0; j < s->n; j++) {
      float want = in[j] * inv;
      bad += !(fabsf(out[j] - want) <= 1e-4f * want);
      total += out[j];
    }
    if (!bad && !(fabs(total - 1.0) <= 1e-3)) {
      snprintf(s->err, sizeof s->err, "%s: array %d sums to %.9g, not 1", name,
               i, total);
      return -1;
    }
    if (!bad)
      continue;
    unsigned long long j = 0;
    for (; j + 1 < s->n; j++) {
      float want = in[j] * inv;
      if (!(fabsf(out[j] - want) <= 1e-4f * want))
        break;
    }
    snprintf(s->err, sizeof s->err,
             "%s: array %d: %zu bad elements, the first at %llu: got %.9g, "
             "want %.9g (input %.9g, CPU sum %.9g)",
             name, i, bad, j, out[j], in[j] / s->cpu_sum[i], in[j],
             s->cpu_sum[i]);
    return -1;
  }
  return 0;
}
