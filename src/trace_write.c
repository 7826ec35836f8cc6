#define _POSIX_C_SOURCE 200809L /* out_file.h */
/* The tracer's exporter: at weft__trace_close, the recorded buffers
 * (trace_buffers.h) written as one Chrome Trace Event JSON file, laid out
 * as PyTorch's profiler (Kineto) writes its traces. The words written come
 * from trace_format.h, which the reader in trace/ shares. */
#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error_internal.h"
#include "json_write.h"
#include "out_file.h"
#include "trace_buffers.h"
#include "trace_format.h"

/* The state, read only here (the maps' arrays are sorted in place). */
static const struct weft__trace_buffers *const T = &weft__trace_buf;

/* A member name for format strings: keys are literals needing no escape. */
#define KEY(k) "\"" k "\":"

static int cmp_pair(const void *a, const void *b) {
  uint64_t x = ((const pair *)a)->key, y = ((const pair *)b)->key;
  return (x > y) - (x < y);
}

static int cmp_idn(const void *a, const void *b) {
  uint64_t x = ((const id_name *)a)->id, y = ((const id_name *)b)->id;
  return (x > y) - (x < y);
}

static const char *task_name(uint64_t id) {
  if (!T->ntasks)
    return NULL;
  id_name key = {id, NULL};
  id_name *r = bsearch(&key, T->tasks, T->ntasks, sizeof *T->tasks, cmp_idn);
  return r ? r->name : NULL;
}

static uint64_t corr_task(uint64_t corr) {
  if (!T->ncorrs)
    return 0;
  pair key = {corr, 0};
  pair *r = bsearch(&key, T->corrs, T->ncorrs, sizeof *T->corrs, cmp_pair);
  return r ? r->val : 0;
}

static const char *dir_name(int copy) {
  switch (copy) {
  case WEFT__TR_HTOD:
    return WEFT_TRF_DIR_HTOD;
  case WEFT__TR_DTOH:
    return WEFT_TRF_DIR_DTOH;
  case WEFT__TR_DTOD:
    return WEFT_TRF_DIR_DTOD;
  case WEFT__TR_HTOH:
    return WEFT_TRF_DIR_HTOH;
  case WEFT__TR_PTOP:
    return WEFT_TRF_DIR_PTOP;
  }
  return WEFT_TRF_DIR_OTHER;
}

static const char *mem_name(int host, int pinned) {
  if (!host)
    return WEFT_TRF_MEM_DEVICE;
  return pinned ? WEFT_TRF_MEM_PINNED : WEFT_TRF_MEM_PAGEABLE;
}

static const char *const cats[WEFT__TR_NKINDS] = {
    [WEFT__TR_KERNEL] = WEFT_TRF_CAT_KERNEL,
    [WEFT__TR_MEMCPY] = WEFT_TRF_CAT_MEMCPY,
    [WEFT__TR_MEMSET] = WEFT_TRF_CAT_MEMSET,
    [WEFT__TR_API] = WEFT_TRF_CAT_RUNTIME,
    [WEFT__TR_TASK] = WEFT_TRF_CAT_TASK,
    [WEFT__TR_WAIT] = WEFT_TRF_CAT_WAIT,
    [WEFT__TR_CHECK] = WEFT_TRF_CAT_CHECK,
    [WEFT__TR_RANGE] = WEFT_TRF_CAT_RANGE,
    [WEFT__TR_SWAIT] = WEFT_TRF_CAT_STREAM_WAIT,
    [WEFT__TR_TAKEOVER] = WEFT_TRF_CAT_TAKEOVER,
};

/* A task's user ranges go on its own lane with its waits: like a wait, a
 * range may span the task's suspensions, and it encloses the waits inside
 * it (docs/decisions/tracing.md, "A task's ranges are on its own lane"). */
static int on_task_lane(const weft__trace_rec *r) {
  return (r->kind == WEFT__TR_WAIT || r->kind == WEFT__TR_RANGE) && r->task;
}

/* CUPTI names runtime calls with their version ("cudaLaunchKernel_v7000");
 * PyTorch's traces, and the tools that read them (HTA looks launches up by
 * name), use the plain name. */
static const char *api_name(const char *n, char *buf, size_t len) {
  const char *v = strrchr(n, '_');
  if (!v || v[1] != 'v' || !v[2])
    return n;
  for (const char *d = v + 2; *d; d++)
    if (*d < '0' || *d > '9')
      return n;
  size_t k = (size_t)(v - n);
  if (k >= len)
    return n;
  memcpy(buf, n, k);
  buf[k] = '\0';
  return buf;
}

/* A weft check finding: an instant on the thread that found it, which
 * needs no nesting in the slices around it. */
static void write_check(FILE *f, const weft__trace_rec *r, uint64_t t0,
                        long host_pid) {
  fprintf(f,
          "{" KEY(WEFT_TRF_PH) "\"" WEFT_TRF_PH_INSTANT "\",\"s\":\"t\"," KEY(
              WEFT_TRF_CAT) "\"" WEFT_TRF_CAT_CHECK "\"," KEY(WEFT_TRF_NAME));
  json_write_string(f, r->name ? r->name : "check");
  fprintf(
      f,
      "," KEY(WEFT_TRF_PID) "%ld," KEY(WEFT_TRF_TID) "%" PRId64 "," KEY(
          WEFT_TRF_TS) "%.3f," KEY(WEFT_TRF_ARGS) "{" KEY(WEFT_TRF_ARG_MESSAGE),
      host_pid, (int64_t)r->lane, (double)(r->end - t0) / 1e3);
  json_write_string(f, r->detail ? r->detail : "");
  if (r->task)
    fprintf(f, "," KEY(WEFT_TRF_ARG_TASK) "%" PRIu64, r->task);
  if (r->end > r->start)
    fprintf(f, "," KEY(WEFT_TRF_ARG_STALL_US) "%.3f",
            (double)(r->end - r->start) / 1e3);
  fprintf(f, "}}");
}

/* The start of a stream's instant on the calling thread (a stream wait,
 * a takeover: trace.h lays out their stream alike, dev and corr), up to
 * that stream in its args. */
static void write_stream_instant(FILE *f, const char *cat, const char *name,
                                 const weft__trace_rec *r, uint64_t t0,
                                 long host_pid) {
  fprintf(f,
          "{" KEY(WEFT_TRF_PH) "\"" WEFT_TRF_PH_INSTANT "\",\"s\":\"t\"," KEY(
              WEFT_TRF_CAT) "\"%s\"," KEY(WEFT_TRF_NAME) "\"%s\",",
          cat, name);
  fprintf(f,
          KEY(WEFT_TRF_PID) "%ld," KEY(WEFT_TRF_TID) "%" PRId64 "," KEY(
              WEFT_TRF_TS) "%.3f,",
          host_pid, (int64_t)r->lane, (double)(r->end - t0) / 1e3);
  fprintf(f,
          KEY(WEFT_TRF_ARGS) "{" KEY(WEFT_TRF_ARG_WAIT_DEVICE) "%d," KEY(
              WEFT_TRF_ARG_WAIT_STREAM) "%" PRIu64,
          r->dev, r->corr);
}

/* The end of such an instant: the task that made it, if one did. */
static void write_instant_end(FILE *f, const weft__trace_rec *r) {
  if (r->task)
    fprintf(f, "," KEY(WEFT_TRF_ARG_TASK) "%" PRIu64, r->task);
  fprintf(f, "}}");
}

/* A stream wait (trace_order.h). */
static void write_swait(FILE *f, const weft__trace_rec *r, uint64_t t0,
                        long host_pid) {
  write_stream_instant(f, WEFT_TRF_CAT_STREAM_WAIT, WEFT_TRF_NAME_STREAM_WAIT,
                       r, t0, host_pid);
  /* The awaited record, as trace.h's WEFT__TR_SWAIT lays it out. */
  fprintf(f,
          "," KEY(WEFT_TRF_ARG_FOR_DEVICE) "%d," KEY(
              WEFT_TRF_ARG_FOR_STREAM) "%" PRIu32
                                       "," KEY(WEFT_TRF_ARG_RECORDED_AT) "%.3f",
          (int)(int16_t)(uint16_t)(r->bytes >> 32), (uint32_t)r->bytes,
          ((double)r->ready - (double)t0) / 1e3);
  write_instant_end(f, r);
}

/* A stream taken over (trace_order.h). */
static void write_takeover(FILE *f, const weft__trace_rec *r, uint64_t t0,
                           long host_pid) {
  write_stream_instant(f, WEFT_TRF_CAT_TAKEOVER, WEFT_TRF_NAME_TAKEOVER, r, t0,
                       host_pid);
  fprintf(f, "," KEY(WEFT_TRF_ARG_FROM_TASK) "%" PRIu64, r->bytes);
  write_instant_end(f, r);
}

#define WARP 32 /* threads in a warp, on every CUDA device */

/* A kernel's launch under Kineto's keys, and (weft's) the blocks of it one
 * SM holds at once, from which `weft trace explain` tells whether it
 * filled the device. */
static void write_shape(FILE *f, const weft__trace_shape *s, int dev) {
  fprintf(f,
          KEY(WEFT_TRF_ARG_GRID) "[%" PRIu32 ",%u,%u]," KEY(
              WEFT_TRF_ARG_BLOCK) "[%u,%u,%u]",
          s->grid_x, s->grid_y, s->grid_z, s->block_x, s->block_y, s->block_z);
  if (s->channel)
    fprintf(f, "," KEY(WEFT_TRF_ARG_CHANNEL) "%" PRIu32, s->channel - 1);
  const weft_device_info *i = dev >= 0 && dev < T->ndev ? &T->devs[dev] : NULL;
  if (!s->resident || !i || i->multiprocessors <= 0 ||
      i->max_threads_per_sm < WARP)
    return;
  double per_sm =
      (double)s->grid_x * s->grid_y * s->grid_z / i->multiprocessors;
  unsigned warps =
      ((unsigned)s->block_x * s->block_y * s->block_z + WARP - 1) / WARP;
  double held = per_sm < s->resident ? per_sm : s->resident;
  fprintf(f, "," KEY(WEFT_TRF_ARG_REGISTERS) "%u", s->regs);
  fprintf(f, "," KEY(WEFT_TRF_ARG_SHARED_MEMORY) "%" PRIu32, s->smem);
  fprintf(f, "," KEY(WEFT_TRF_ARG_BLOCKS_PER_SM) "%.6g", per_sm);
  fprintf(f, "," KEY(WEFT_TRF_ARG_WARPS_PER_SM) "%.6g", per_sm * warps);
  /* The key has a '%': not part of a format. */
  fputs("," KEY(WEFT_TRF_ARG_OCCUPANCY), f);
  fprintf(f, "%.0f", 100.0 * held * warps / (i->max_threads_per_sm / WARP));
  fprintf(f, "," KEY(WEFT_TRF_ARG_RESIDENT) "%u", s->resident);
}

/* paired: for a GPU op, whether its API call is in the file; an op whose
 * call was dropped is written without its correlation, which would name
 * a call that is not there (docs/TRACE.md, "Dropped records"). */
static void write_rec(FILE *f, const weft__trace_rec *r, int paired,
                      uint64_t t0, long host_pid, int64_t tid) {
  if (r->kind == WEFT__TR_CHECK) {
    write_check(f, r, t0, host_pid);
    return;
  }
  if (r->kind == WEFT__TR_SWAIT) {
    write_swait(f, r, t0, host_pid);
    return;
  }
  if (r->kind == WEFT__TR_TAKEOVER) {
    write_takeover(f, r, t0, host_pid);
    return;
  }
  int gpu = r->kind <= WEFT__TR_MEMSET;
  double ts = (double)(r->start - t0) / 1e3;
  double dur = r->end > r->start ? (double)(r->end - r->start) / 1e3 : 0.0;
  uint64_t task = r->task ? r->task : gpu ? corr_task(r->corr) : 0;
  char name[160];
  const char *nm = r->name ? r->name : "";
  if (r->kind == WEFT__TR_MEMCPY) {
    int src_host = r->copy == WEFT__TR_HTOD || r->copy == WEFT__TR_HTOH;
    int dst_host = r->copy == WEFT__TR_DTOH || r->copy == WEFT__TR_HTOH;
    snprintf(name, sizeof name, WEFT_TRF_NAME_MEMCPY_FMT, dir_name(r->copy),
             mem_name(src_host, r->src_pinned),
             mem_name(dst_host, r->dst_pinned));
    nm = name;
  } else if (r->kind == WEFT__TR_MEMSET) {
    nm = WEFT_TRF_NAME_MEMSET;
  } else if (r->kind == WEFT__TR_TASK) {
    const char *tn = task_name(r->task);
    nm = tn ? tn : WEFT_TRF_NAME_TASK;
  } else if (r->kind == WEFT__TR_API) {
    nm = api_name(nm, name, sizeof name);
  }
  /* {"ph":"X","cat":"kernel","name":"...","pid":0,"tid":7,"ts":1.000,
   *  "dur":2.000,"args":{"device":0,"stream":7,...}} */
  fprintf(f,
          "{" KEY(WEFT_TRF_PH) "\"" WEFT_TRF_PH_COMPLETE "\"," KEY(
              WEFT_TRF_CAT) "\"%s\"," KEY(WEFT_TRF_NAME),
          cats[r->kind]);
  json_write_string(f, nm);
  if (gpu)
    fprintf(f, "," KEY(WEFT_TRF_PID) "%d," KEY(WEFT_TRF_TID) "%" PRIu32, r->dev,
            r->lane);
  else
    fprintf(f, "," KEY(WEFT_TRF_PID) "%ld," KEY(WEFT_TRF_TID) "%" PRId64,
            host_pid, tid);
  fprintf(f,
          "," KEY(WEFT_TRF_TS) "%.3f," KEY(WEFT_TRF_DUR) "%.3f," KEY(
              WEFT_TRF_ARGS) "{",
          ts, dur);
  int comma = 0;
#define ARG(...)                                                               \
  do {                                                                         \
    fprintf(f, comma ? "," : "");                                              \
    fprintf(f, __VA_ARGS__);                                                   \
    comma = 1;                                                                 \
  } while (0)
  if (gpu) {
    ARG(KEY(WEFT_TRF_ARG_DEVICE) "%d," KEY(WEFT_TRF_ARG_STREAM) "%" PRIu32,
        r->dev, r->lane);
  }
  if (r->corr && (!gpu || paired))
    ARG(KEY(WEFT_TRF_ARG_CORRELATION) "%" PRIu64, r->corr);
  if (gpu && r->graph)
    ARG(KEY(WEFT_TRF_ARG_GRAPH) "%" PRIu32, r->graph);
  if (r->kind == WEFT__TR_MEMCPY || r->kind == WEFT__TR_MEMSET) {
    ARG(KEY(WEFT_TRF_ARG_BYTES) "%" PRIu64, r->bytes);
    if (dur > 0)
      ARG(KEY(WEFT_TRF_ARG_BANDWIDTH) "%.3f", (double)r->bytes / (dur * 1e3));
  }
  if (r->kind == WEFT__TR_MEMCPY)
    ARG(KEY(WEFT_TRF_ARG_DIRECTION) "\"%s\"", dir_name(r->copy));
  if (r->kind == WEFT__TR_KERNEL && r->shape.grid_x) {
    fprintf(f, comma ? "," : "");
    write_shape(f, &r->shape, r->dev);
    comma = 1;
  }
  const char *why = weft_trf_ready_name(r->why);
  if (r->kind == WEFT__TR_TASK && r->ready && why) {
    /* The runtime's own delay before this slice: docs/TRACE.md. */
    ARG(KEY(WEFT_TRF_ARG_READY_BY) "\"%s\"," KEY(
            WEFT_TRF_ARG_READY_DELAY_US) "%.3f",
        why, (double)(r->start - r->ready) / 1e3);
  }
  if (task) {
    ARG(KEY(WEFT_TRF_ARG_TASK) "%" PRIu64, task);
    const char *tn = task_name(task);
    if (tn) {
      ARG(KEY(WEFT_TRF_ARG_TASK_NAME));
      json_write_string(f, tn);
    }
  }
#undef ARG
  fprintf(f, "}}");
}

/* An "M" event naming a process (tid < 0) or a thread. */
static void write_meta(FILE *f, const char *what, long pid, int64_t tid,
                       const char *name) {
  fprintf(f,
          "{" KEY(WEFT_TRF_PH) "\"" WEFT_TRF_PH_METADATA "\"," KEY(
              WEFT_TRF_NAME) "\"%s\"," KEY(WEFT_TRF_PID) "%ld",
          what, pid);
  if (tid >= 0)
    fprintf(f, "," KEY(WEFT_TRF_TID) "%" PRId64, tid);
  fprintf(f, "," KEY(WEFT_TRF_ARGS) "{" KEY(WEFT_TRF_ARG_NAME));
  json_write_string(f, name);
  fprintf(f, "}}");
}

/* HTA finds a file's rank with the pattern "rank":\s+(\d+), a space
 * included, and the GPU's model in deviceProperties, as Kineto writes
 * them; a process outside an MPI job is rank 0 of 1. */
static void write_devices(FILE *f) {
  fprintf(f, "\"distributedInfo\": {\"rank\": %d, \"world_size\": %d},\n",
          T->rank, T->world_size);
  fprintf(f, "\"" WEFT_TRF_DEVICE_PROPERTIES "\": [");
  for (int d = 0; d < T->ndev; d++) {
    const weft_device_info *i = &T->devs[d];
    fprintf(f, "%s{\"id\": %d, \"name\": ", d ? ", " : "", d);
    json_write_string(f, i->name);
    fprintf(f,
            ", \"totalGlobalMem\": %zu, \"computeMajor\": %d, "
            "\"computeMinor\": %d, \"maxThreadsPerBlock\": %d, "
            "\"" WEFT_TRF_NUM_SMS "\": %d",
            i->memory_total, i->cc_major, i->cc_minor, i->max_threads_per_block,
            i->multiprocessors);
    if (i->max_threads_per_sm > 0)
      fprintf(f,
              ", \"" WEFT_TRF_MAX_THREADS_PER_SM "\": %d, \"" WEFT_TRF_WARP_SIZE
              "\": %d",
              i->max_threads_per_sm, WARP);
    fprintf(f, "}");
  }
  fprintf(f, "],\n");
}

/* The CPU side, indexed for the GPU records and the API calls: every API
 * call by correlation (for the flow arrows), every task slice by lane and
 * start (for nesting). */
typedef struct cpu_slice {
  uint64_t key; /* correlation, or lane */
  uint64_t start, end;
  uint32_t lane;
} cpu_slice;

typedef struct cpu_index {
  cpu_slice *apis, *tasks;
  size_t napis, ntasks;
} cpu_index;

static int cmp_slice(const void *a, const void *b) {
  const cpu_slice *x = a, *y = b;
  if (x->key != y->key)
    return x->key < y->key ? -1 : 1;
  return x->start < y->start ? -1 : x->start > y->start;
}

/* Lock held. 0, or -1 with the index empty when out of memory. */
static int index_cpu(cpu_index *ix) {
  *ix = (cpu_index){0};
  size_t na = 0, nt = 0;
  for (chunk *c = T->chunks; c; c = c->next) {
    unsigned n = atomic_load_explicit(&c->n, memory_order_acquire);
    for (unsigned i = 0; i < n; i++) {
      na += c->r[i].kind == WEFT__TR_API && c->r[i].corr;
      nt += c->r[i].kind == WEFT__TR_TASK;
    }
  }
  ix->apis = na ? malloc(na * sizeof *ix->apis) : NULL;
  ix->tasks = nt ? malloc(nt * sizeof *ix->tasks) : NULL;
  if ((na && !ix->apis) || (nt && !ix->tasks)) {
    free(ix->apis);
    free(ix->tasks);
    *ix = (cpu_index){0};
    return -1;
  }
  for (chunk *c = T->chunks; c; c = c->next) {
    unsigned n = atomic_load_explicit(&c->n, memory_order_acquire);
    for (unsigned i = 0; i < n; i++) {
      const weft__trace_rec *r = &c->r[i];
      if (r->kind == WEFT__TR_API && r->corr)
        ix->apis[ix->napis++] = (cpu_slice){r->corr, r->start, r->end, r->lane};
      else if (r->kind == WEFT__TR_TASK)
        ix->tasks[ix->ntasks++] =
            (cpu_slice){r->lane, r->start, r->end, r->lane};
    }
  }
  if (ix->napis)
    qsort(ix->apis, ix->napis, sizeof *ix->apis, cmp_slice);
  if (ix->ntasks)
    qsort(ix->tasks, ix->ntasks, sizeof *ix->tasks, cmp_slice);
  return 0;
}

/* The index of the first slice of v (sorted by key, then start) past
 * (key, t). */
static size_t slice_past(const cpu_slice *v, size_t n, uint64_t key,
                         uint64_t t) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].key < key || (v[mid].key == key && v[mid].start <= t))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The last slice of v with key and a start at or before t, or NULL. */
static const cpu_slice *find_slice(const cpu_slice *v, size_t n, uint64_t key,
                                   uint64_t t) {
  size_t lo = slice_past(v, n, key, t);
  return lo > 0 && v[lo - 1].key == key ? &v[lo - 1] : NULL;
}

/* An API call is made inside a task slice on its thread, but CUPTI stamps
 * it with its own clock, converted to weft's: it can end a little after
 * the slice that holds it, which Perfetto, needing slices on a thread to
 * nest, cannot draw. Such a call is clamped into its slice. A call between
 * slices (the poller's event queries on a worker) is clamped to end where
 * the next slice on its thread begins, for the same reason
 * (docs/decisions/tracing.md, "API calls are clamped into the task slices
 * around them"). */
static void nest_in_task(const cpu_index *ix, weft__trace_rec *r) {
  size_t i = slice_past(ix->tasks, ix->ntasks, r->lane, r->start);
  const cpu_slice *t =
      i > 0 && ix->tasks[i - 1].key == r->lane ? &ix->tasks[i - 1] : NULL;
  if (t && r->start < t->end) { /* inside a task slice */
    if (r->end > t->end)
      r->end = t->end;
    return;
  }
  const cpu_slice *next =
      i < ix->ntasks && ix->tasks[i].key == r->lane ? &ix->tasks[i] : NULL;
  if (next && r->end > next->start)
    r->end = next->start;
}

/* A task's waits go on a lane of the task's own, not on a worker's: a
 * wait spans the task's suspension, from inside one run slice to inside
 * the next, often on another worker, with other tasks' slices between, so
 * on a worker's lane it overlapped them, which Perfetto (whose slices on a
 * thread must nest) cannot draw. A task waits for one thing at a time, so
 * on its own lane its waits never overlap. Perfetto keeps 32 bits of a tid
 * and HTA reads tids as integers, so each lane is a positive signed 32-bit
 * tid from WEFT_TRF_WAIT_TID_BASE up, one per waiting task in order of
 * id, passing over the tids of the file's threads (docs/decisions/
 * tracing.md, "Wait lanes are 31-bit tids of their own"). */
typedef struct wait_lanes {
  uint64_t *task; /* the tasks that waited, sorted, each once */
  int64_t *tid;   /* the tid of each one's lane */
  size_t n;
} wait_lanes;

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static size_t unique_u64(uint64_t *v, size_t n) {
  if (n)
    qsort(v, n, sizeof *v, cmp_u64);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (k == 0 || v[i] != v[k - 1])
      v[k++] = v[i];
  return k;
}

/* A record on a host thread's lane (its tid), not a GPU's or a wait's. */
static int on_thread(const weft__trace_rec *r) {
  return r->kind > WEFT__TR_MEMSET && !on_task_lane(r);
}

/* Lock held. Fills w; 0, or -1 with w empty when out of memory. */
static int wait_lanes_make(wait_lanes *w) {
  *w = (wait_lanes){0};
  size_t nw = 0, nt = T->nlanes;
  for (chunk *c = T->chunks; c; c = c->next) {
    unsigned n = atomic_load_explicit(&c->n, memory_order_acquire);
    for (unsigned i = 0; i < n; i++) {
      nw += on_task_lane(&c->r[i]);
      nt += on_thread(&c->r[i]);
    }
  }
  if (!nw)
    return 0;
  uint64_t *threads = malloc((nt ? nt : 1) * sizeof *threads);
  w->task = malloc(nw * sizeof *w->task);
  w->tid = malloc(nw * sizeof *w->tid);
  if (!threads || !w->task || !w->tid) {
    free(threads);
    free(w->task);
    free(w->tid);
    *w = (wait_lanes){0};
    return -1;
  }
  size_t k = 0, t = 0;
  for (size_t i = 0; i < T->nlanes; i++)
    threads[t++] = T->lanes[i].id;
  for (chunk *c = T->chunks; c; c = c->next) {
    unsigned n = atomic_load_explicit(&c->n, memory_order_acquire);
    for (unsigned i = 0; i < n; i++) {
      const weft__trace_rec *r = &c->r[i];
      if (on_task_lane(r))
        w->task[k++] = r->task;
      else if (on_thread(r))
        threads[t++] = r->lane;
    }
  }
  w->n = unique_u64(w->task, k);
  t = unique_u64(threads, t);
  int64_t next = WEFT_TRF_WAIT_TID_BASE;
  size_t j = 0;
  for (size_t i = 0; i < w->n; i++) {
    for (;;) { /* pass over the threads' tids */
      while (j < t && (int64_t)threads[j] < next)
        j++;
      if (j == t || (int64_t)threads[j] != next)
        break;
      next++;
    }
    w->tid[i] = next++;
  }
  free(threads);
  return 0;
}

/* The tid of task's wait lane, or -1 when it has none. */
static int64_t wait_tid(const wait_lanes *w, uint64_t task) {
  if (!w->n)
    return -1;
  const uint64_t *p = bsearch(&task, w->task, w->n, sizeof *w->task, cmp_u64);
  return p ? w->tid[p - w->task] : -1;
}

/* Kineto's launch arrows: a flow from the API call that queued a GPU op
 * to the op, with the correlation as its id ("ac2g"), so that Perfetto
 * draws them. */
static void write_flow(FILE *f, const cpu_slice *a, const weft__trace_rec *r,
                       uint64_t t0, long host_pid) {
  fprintf(f,
          ",\n{\"ph\":\"s\",\"id\":%" PRIu64 ",\"pid\":%ld,\"tid\":%" PRIu32
          ",\"ts\":%.3f,\"cat\":\"ac2g\",\"name\":\"ac2g\"}",
          r->corr, host_pid, a->lane, (double)(a->start - t0) / 1e3);
  fprintf(f,
          ",\n{\"ph\":\"f\",\"id\":%" PRIu64 ",\"pid\":%d,\"tid\":%" PRIu32
          ",\"ts\":%.3f,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}",
          r->corr, r->dev, r->lane, (double)(r->start - t0) / 1e3);
}

/* The API call of GPU op r: the first in time with its correlation, as
 * the reader pairs them; NULL when the file has none. */
static const cpu_slice *api_of(const cpu_index *ix, const weft__trace_rec *r) {
  if (!r->corr)
    return NULL;
  const cpu_slice *a = find_slice(ix->apis, ix->napis, r->corr, UINT64_MAX);
  while (a && a > ix->apis && (a - 1)->key == r->corr)
    a--;
  return a;
}

/* The graph replays' arrows: the ops of one replay share the launch's
 * correlation, and one flow per id is what Perfetto binds, so the arrow
 * goes to the replay's first op in time. The records are not written in
 * time order (each thread's chunks, the newest first), so a first pass
 * notes each replay's first start. An open-addressing map; a map that
 * could not be allocated only costs duplicate arrows. */
typedef struct corr_set {
  uint64_t *v;     /* correlations; 0: a free slot */
  uint64_t *first; /* each one's first op's start; UINT64_MAX once drawn */
  size_t cap, n;
  int full; /* out of memory: every op of a replay gets an arrow */
} corr_set;

/* The slot of c, added if absent; SIZE_MAX when out of memory. */
static size_t corr_slot(corr_set *s, uint64_t c) {
  if ((s->n + 1) * 2 > s->cap) {
    size_t ncap = s->cap ? 2 * s->cap : 256;
    uint64_t *nv = calloc(ncap, sizeof *nv);
    uint64_t *nf = malloc(ncap * sizeof *nf);
    if (!nv || !nf) {
      free(nv);
      free(nf);
      return SIZE_MAX;
    }
    for (size_t i = 0; i < s->cap; i++)
      if (s->v[i]) {
        size_t j = (s->v[i] * 0x9E3779B97F4A7C15ull) & (ncap - 1);
        while (nv[j])
          j = (j + 1) & (ncap - 1);
        nv[j] = s->v[i];
        nf[j] = s->first[i];
      }
    free(s->v);
    free(s->first);
    s->v = nv;
    s->first = nf;
    s->cap = ncap;
  }
  size_t j = (c * 0x9E3779B97F4A7C15ull) & (s->cap - 1);
  while (s->v[j] && s->v[j] != c)
    j = (j + 1) & (s->cap - 1);
  if (!s->v[j]) {
    s->v[j] = c;
    s->first[j] = UINT64_MAX;
    s->n++;
  }
  return j;
}

/* First pass: an op of the replay of correlation c started at start. */
static void corr_note(corr_set *s, uint64_t c, uint64_t start) {
  if (s->full)
    return;
  size_t j = corr_slot(s, c);
  if (j == SIZE_MAX)
    s->full = 1;
  else if (start < s->first[j])
    s->first[j] = start;
}

/* 1 if the op of replay c started at start gets the replay's arrow (its
 * first op, once). */
static int corr_first(corr_set *s, uint64_t c, uint64_t start) {
  if (s->full)
    return 1;
  if (!s->cap) /* the first pass noted every replay */
    return 0;
  size_t j = (c * 0x9E3779B97F4A7C15ull) & (s->cap - 1);
  while (s->v[j] && s->v[j] != c)
    j = (j + 1) & (s->cap - 1);
  if (s->v[j] != c || s->first[j] != start)
    return 0;
  s->first[j] = UINT64_MAX;
  return 1;
}

/* Lock held. The whole file: the header, the host's names, every record,
 * then a name for each GPU lane the records used, and last weft's own
 * member, whose count of dropped records includes what could not be
 * written here. Returns that count. */
static uint64_t write_trace(FILE *f, uint64_t t0) {
  long pid = (long)getpid();
  uint64_t dropped = atomic_load(&T->dropped);
  fprintf(f, "{" KEY(WEFT_TRF_SCHEMA_VERSION) "1," KEY(
                 WEFT_TRF_DISPLAY_TIME_UNIT) "\"ms\",\n");
  write_devices(f);
  fprintf(f, KEY(WEFT_TRF_TRACE_EVENTS) "[\n");
  write_meta(f, WEFT_TRF_META_PROCESS_NAME, pid, -1, "weft host");
  for (size_t i = 0; i < T->nlanes; i++) {
    fprintf(f, ",\n");
    write_meta(f, WEFT_TRF_META_THREAD_NAME, pid, (int64_t)T->lanes[i].id,
               T->lanes[i].name);
  }
  /* Name each GPU lane once: "stream N" under "GPU d". */
  pair *seen = NULL;
  size_t nseen = 0, cap = 0;
  cpu_index ix;
  /* Without the index, API calls can be neither paired with their ops nor
   * nested in their slices: they are left out, and counted. */
  int no_index = index_cpu(&ix) != 0;
  corr_set graphs = {0}; /* graph replays: the first op of each */
  for (chunk *c = T->chunks; c; c = c->next) {
    unsigned n = atomic_load_explicit(&c->n, memory_order_acquire);
    for (unsigned i = 0; i < n; i++)
      if (c->r[i].kind <= WEFT__TR_MEMSET && c->r[i].graph && c->r[i].corr)
        corr_note(&graphs, c->r[i].corr, c->r[i].start);
  }
  /* Without the wait lanes, the waits of tasks have nowhere to go that
   * Perfetto draws: they are left out, and counted. */
  wait_lanes waits;
  int no_waits = wait_lanes_make(&waits) != 0;
  for (chunk *c = T->chunks; c; c = c->next) {
    unsigned n = atomic_load_explicit(&c->n, memory_order_acquire);
    for (unsigned i = 0; i < n; i++) {
      weft__trace_rec r1 = c->r[i];
      const weft__trace_rec *r = &r1;
      if (r->kind == WEFT__TR_API) {
        if (no_index) {
          dropped++;
          continue;
        }
        nest_in_task(&ix, &r1);
      }
      int64_t tid = r->lane;
      if (on_task_lane(r)) {
        tid = no_waits ? -1 : wait_tid(&waits, r->task);
        if (tid < 0) {
          dropped++;
          continue;
        }
      }
      const cpu_slice *api = r->kind <= WEFT__TR_MEMSET ? api_of(&ix, r) : NULL;
      fprintf(f, ",\n");
      write_rec(f, r, api != NULL, t0, pid, tid);
      if (r->kind > WEFT__TR_MEMSET)
        continue;
      if (api && (!r->graph || corr_first(&graphs, r->corr, r->start)))
        write_flow(f, api, r, t0, pid);
      uint64_t key = ((uint64_t)(uint16_t)r->dev << 32) | r->lane;
      size_t k = 0;
      while (k < nseen && seen[k].key != key)
        k++;
      if (k < nseen)
        continue;
      if (weft__trace_grow((void **)&seen, &cap, nseen, sizeof *seen) == 0)
        seen[nseen++] = (pair){key, 0};
      else
        dropped++; /* the lane's name */
    }
  }
  for (size_t k = 0; k < nseen; k++) {
    int dev = (int)(seen[k].key >> 32);
    uint32_t lane = (uint32_t)seen[k].key;
    char name[32];
    snprintf(name, sizeof name, "GPU %d", dev);
    fprintf(f, ",\n");
    write_meta(f, WEFT_TRF_META_PROCESS_NAME, dev, -1, name);
    snprintf(name, sizeof name, "stream %" PRIu32, lane);
    fprintf(f, ",\n");
    write_meta(f, WEFT_TRF_META_THREAD_NAME, dev, lane, name);
  }
  free(seen);
  for (size_t k = 0; k < waits.n; k++) {
    const char *tn = task_name(waits.task[k]);
    char name[96];
    snprintf(name, sizeof name, "waits: %s", tn ? tn : "task");
    fprintf(f, ",\n");
    write_meta(f, WEFT_TRF_META_THREAD_NAME, pid, waits.tid[k], name);
  }
  free(waits.task);
  free(waits.tid);
  free(graphs.v);
  free(graphs.first);
  free(ix.apis);
  free(ix.tasks);
  fprintf(f,
          "\n],\n" KEY(WEFT_TRF_WEFT) "{\"version\":\"0.1.0\"," KEY(
              WEFT_TRF_BACKEND) "\"%s\","
                                "\"dropped_records\":%" PRIu64 "}}\n",
          T->backend, dropped);
  return dropped;
}

int weft__trace_write(void) {
  if (T->ncorrs) /* qsort and bsearch want a non-NULL array */
    qsort(T->corrs, T->ncorrs, sizeof *T->corrs, cmp_pair);
  if (T->ntasks)
    qsort(T->tasks, T->ntasks, sizeof *T->tasks, cmp_idn);
  uint64_t t0 = UINT64_MAX;
  for (chunk *c = T->chunks; c; c = c->next) {
    unsigned n = atomic_load_explicit(&c->n, memory_order_acquire);
    for (unsigned i = 0; i < n; i++)
      if (c->r[i].start < t0)
        t0 = c->r[i].start;
  }
  int rc = 0;
  /* JSON numbers take a '.', whatever locale the program set: under an
   * LC_NUMERIC such as de_DE's, "%.3f" writes "1,500" and the file is no
   * longer JSON. The C locale's numbers, on this thread, while writing. */
  locale_t c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
  locale_t prev = c_numeric ? uselocale(c_numeric) : (locale_t)0;
  out_file out;
  if (!c_numeric && strcmp(localeconv()->decimal_point, ".") != 0) {
    rc = weft__err(WEFT_EIO,
                   "weft trace: cannot write %s: no memory for the C "
                   "locale, and this one's numbers are not JSON's",
                   T->path);
  } else if (out_file_open(&out, T->path) != 0) {
    rc = weft__err(WEFT_EIO, "weft trace: cannot write %s: %s", T->path,
                   strerror(errno));
  } else {
    uint64_t dropped = write_trace(out.f, t0);
    if (out_file_close(&out, 1) != 0)
      rc = weft__err(WEFT_EIO, "weft trace: error writing %s: %s", T->path,
                     strerror(errno));
    else if (dropped)
      rc = weft__err(WEFT_ENOMEM,
                     "weft trace: %" PRIu64 " records dropped for want of "
                     "memory; %s is valid but incomplete (its "
                     "\"dropped_records\" says how many)",
                     dropped, T->path);
  }
  if (c_numeric) {
    uselocale(prev);
    freelocale(c_numeric);
  }
  return rc;
}
