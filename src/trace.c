/* The tracer's buffers and the JSON writer (trace.h). The words written
 * come from trace_format.h, which the reader in tools/trace/ shares. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "error_internal.h"
#include "json_write.h"
#include "trace.h"
#include "trace_format.h"

#define CHUNK_RECS 4096

typedef struct chunk {
  struct chunk *next;
  atomic_uint n; /* records filled; written with release by the owner */
  weft__trace_rec r[CHUNK_RECS];
} chunk;

typedef struct str {
  struct str *next;
  char s[];
} str;

typedef struct id_name {
  uint64_t id;
  const char *name;
} id_name;

typedef struct pair {
  uint64_t key, val;
} pair;

static struct {
  pthread_mutex_t lock;
  char *path;
  char backend[16];
  int rank, world_size;   /* from the MPI launcher, else 0 and 1 */
  weft_device_info *devs; /* the traced runtime's devices */
  int ndev;
  atomic_uint_fast64_t epoch; /* a new trace invalidates thread buffers */
  chunk *chunks;              /* every chunk, for writing */
  chunk *shared;              /* the chunk batches go to (under lock) */
  str *strs;
  id_name *tasks;
  size_t ntasks, cap_tasks;
  id_name *lanes;
  size_t nlanes, cap_lanes;
  pair *corrs;
  size_t ncorrs, cap_corrs;
  atomic_uint next_lane;
  atomic_uint_fast64_t next_corr;
  atomic_uint_fast64_t dropped;
} T = {.lock = PTHREAD_MUTEX_INITIALIZER};

atomic_int weft__trace_on;
void *_Atomic weft__trace_owner;
_Thread_local uint64_t weft__trace_task;

static _Thread_local chunk *tls_chunk;
static _Thread_local uint64_t tls_epoch;
static _Thread_local uint32_t tls_lane;
static _Thread_local uint64_t tls_lane_epoch;

uint64_t weft__trace_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t weft__trace_next_corr(void) {
  return atomic_fetch_add(&T.next_corr, 1) + 1;
}

/* Lock held. */
static chunk *chunk_new(void) {
  chunk *c = calloc(1, sizeof *c);
  if (c) {
    c->next = T.chunks;
    T.chunks = c;
  }
  return c;
}

void weft__trace_emit(const weft__trace_rec *r) {
  if (!atomic_load_explicit(&weft__trace_on, memory_order_relaxed))
    return;
  chunk *c = tls_chunk;
  if (!c || tls_epoch != T.epoch ||
      atomic_load_explicit(&c->n, memory_order_relaxed) == CHUNK_RECS) {
    pthread_mutex_lock(&T.lock);
    c = chunk_new();
    tls_epoch = T.epoch;
    pthread_mutex_unlock(&T.lock);
    tls_chunk = c;
    if (!c) {
      atomic_fetch_add(&T.dropped, 1);
      return;
    }
  }
  unsigned n = atomic_load_explicit(&c->n, memory_order_relaxed);
  c->r[n] = *r;
  atomic_store_explicit(&c->n, n + 1, memory_order_release);
}

void weft__trace_emit_batch(const weft__trace_rec *r, size_t n) {
  pthread_mutex_lock(&T.lock);
  for (size_t i = 0; i < n; i++) {
    chunk *c = T.shared;
    if (!c || atomic_load_explicit(&c->n, memory_order_relaxed) == CHUNK_RECS)
      c = T.shared = chunk_new();
    if (!c) {
      atomic_fetch_add(&T.dropped, n - i);
      break;
    }
    unsigned k = atomic_load_explicit(&c->n, memory_order_relaxed);
    c->r[k] = r[i];
    atomic_store_explicit(&c->n, k + 1, memory_order_release);
  }
  pthread_mutex_unlock(&T.lock);
}

/* Lock held. */
static const char *intern_locked(const char *s) {
  size_t len = strlen(s);
  str *p = malloc(sizeof *p + len + 1);
  if (!p)
    return "?";
  memcpy(p->s, s, len + 1);
  p->next = T.strs;
  T.strs = p;
  return p->s;
}

const char *weft__trace_intern(const char *s) {
  pthread_mutex_lock(&T.lock);
  const char *r = intern_locked(s ? s : "");
  pthread_mutex_unlock(&T.lock);
  return r;
}

static int grow(void **v, size_t *cap, size_t n, size_t elem) {
  if (n < *cap)
    return 0;
  size_t nc = *cap ? *cap * 2 : 64;
  void *nv = realloc(*v, nc * elem);
  if (!nv)
    return -1;
  *v = nv;
  *cap = nc;
  return 0;
}

void weft__trace_task_name(uint64_t id, const char *name) {
  if (!atomic_load(&weft__trace_on))
    return;
  pthread_mutex_lock(&T.lock);
  if (grow((void **)&T.tasks, &T.cap_tasks, T.ntasks, sizeof *T.tasks) == 0)
    T.tasks[T.ntasks++] = (id_name){id, intern_locked(name)};
  pthread_mutex_unlock(&T.lock);
}

void weft__trace_corr_task(uint64_t corr, uint64_t task) {
  pthread_mutex_lock(&T.lock);
  if (grow((void **)&T.corrs, &T.cap_corrs, T.ncorrs, sizeof *T.corrs) == 0)
    T.corrs[T.ncorrs++] = (pair){corr, task};
  pthread_mutex_unlock(&T.lock);
}

/* The low 32 bits of pthread_self(), which is what CUPTI reports as the
 * thread of a runtime API record on Linux: a task's run slices and the
 * CUDA calls it made then share one row. */
uint32_t weft__trace_thread_lane(void) {
  if (tls_lane_epoch != T.epoch || tls_lane == 0) {
    tls_lane = (uint32_t)(uintptr_t)pthread_self();
    if (tls_lane == 0)
      tls_lane = atomic_fetch_add(&T.next_lane, 1) + 1;
    tls_lane_epoch = T.epoch;
  }
  return tls_lane;
}

void weft__trace_thread_name(const char *name) {
  if (!atomic_load(&weft__trace_on))
    return;
  uint32_t lane = weft__trace_thread_lane();
  pthread_mutex_lock(&T.lock);
  if (grow((void **)&T.lanes, &T.cap_lanes, T.nlanes, sizeof *T.lanes) == 0)
    T.lanes[T.nlanes++] = (id_name){lane, intern_locked(name)};
  pthread_mutex_unlock(&T.lock);
}

/* The process's rank and the job's size as an MPI launcher sets them
 * (Open MPI, PMIx, MPICH's PMI, Slurm), else 0 and 1: read from the
 * environment, so that the core needs no MPI. */
static long env_number(const char *const names[], long fallback) {
  for (int i = 0; names[i]; i++) {
    const char *v = getenv(names[i]);
    char *end;
    if (v && *v) {
      long n = strtol(v, &end, 10);
      if (*end == '\0' && n >= 0 && n < (1L << 30))
        return n;
    }
  }
  return fallback;
}

void weft__trace_rank(int *rank, int *size) {
  static const char *const ranks[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                      "PMI_RANK", "SLURM_PROCID", NULL};
  static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                      "SLURM_NTASKS", NULL};
  *rank = (int)env_number(ranks, 0);
  *size = (int)env_number(sizes, 1);
  if (*size < *rank + 1)
    *size = *rank + 1;
}

int weft__trace_rank_path(const char *path, char *out, size_t len) {
  int rank, size;
  weft__trace_rank(&rank, &size);
  size_t o = 0;
  int marked = 0;
  for (const char *p = path; *p; p++) {
    int n;
    if (p[0] == '%' && p[1] == 'r') {
      n = snprintf(out + o, o < len ? len - o : 0, "%d", rank);
      p++;
      marked = 1;
    } else {
      n = 1;
      if (o + 1 < len)
        out[o] = *p;
    }
    o += (size_t)n;
  }
  if (o >= len)
    return WEFT_ERANGE;
  out[o] = '\0';
  if (marked || size <= 1)
    return 0;
  /* Several ranks and no %r: each its own file, -rankN before .json. */
  char tail[16] = "";
  size_t keep = o;
  if (o >= 5 && strcmp(out + o - 5, ".json") == 0) {
    keep = o - 5;
    strcpy(tail, ".json");
  }
  int n = snprintf(out + keep, len - keep, "-rank%d%s", rank, tail);
  return n < 0 || (size_t)n >= len - keep ? WEFT_ERANGE : 0;
}

int weft__trace_open(const char *path, const char *backend, void *owner,
                     const weft_device_info *devs, int ndev) {
  pthread_mutex_lock(&T.lock);
  if (atomic_load(&weft__trace_on)) {
    pthread_mutex_unlock(&T.lock);
    return weft__err(WEFT_EBUSY, "weft trace: another runtime is tracing");
  }
  T.path = strdup(path);
  T.devs = ndev > 0 ? malloc((size_t)ndev * sizeof *devs) : NULL;
  if (!T.path || (ndev > 0 && !T.devs)) {
    free(T.path);
    free(T.devs);
    T.path = NULL;
    T.devs = NULL;
    pthread_mutex_unlock(&T.lock);
    return weft__err(WEFT_ENOMEM, "weft trace: out of memory");
  }
  if (ndev > 0)
    memcpy(T.devs, devs, (size_t)ndev * sizeof *devs);
  T.ndev = ndev > 0 ? ndev : 0;
  snprintf(T.backend, sizeof T.backend, "%s", backend);
  weft__trace_rank(&T.rank, &T.world_size);
  T.epoch++;
  atomic_store(&T.next_lane, 0);
  atomic_store(&T.dropped, 0);
  atomic_store(&weft__trace_owner, owner);
  atomic_store(&weft__trace_on, 1);
  pthread_mutex_unlock(&T.lock);
  return 0;
}

/* ---- writing ---- */

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
  if (!T.ntasks)
    return NULL;
  id_name key = {id, NULL};
  id_name *r = bsearch(&key, T.tasks, T.ntasks, sizeof *T.tasks, cmp_idn);
  return r ? r->name : NULL;
}

static uint64_t corr_task(uint64_t corr) {
  if (!T.ncorrs)
    return 0;
  pair key = {corr, 0};
  pair *r = bsearch(&key, T.corrs, T.ncorrs, sizeof *T.corrs, cmp_pair);
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
};

/* A task's waits go on a lane of the task's own, not on a worker's: a
 * wait spans the task's suspension, from inside one run slice to inside
 * the next, often on another worker, with other tasks' slices between, so
 * on a worker's lane it overlapped them, which Perfetto (whose slices on a
 * thread must nest) cannot draw. A task waits for one thing at a time, so
 * on its own lane its waits never overlap. Thread lanes are 32-bit
 * numbers; a task's wait lane is 2^32 + its id. */
#define WAIT_TID(task) (((int64_t)1 << 32) | (int64_t)(uint32_t)(task))

static int64_t cpu_tid(const weft__trace_rec *r) {
  return r->kind == WEFT__TR_WAIT && r->task ? WAIT_TID(r->task)
                                             : (int64_t)r->lane;
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

static void write_rec(FILE *f, const weft__trace_rec *r, uint64_t t0,
                      long host_pid) {
  if (r->kind == WEFT__TR_CHECK) {
    write_check(f, r, t0, host_pid);
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
            host_pid, cpu_tid(r));
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
  if (r->corr)
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
          T.rank, T.world_size);
  fprintf(f, "\"deviceProperties\": [");
  for (int d = 0; d < T.ndev; d++) {
    const weft_device_info *i = &T.devs[d];
    fprintf(f, "%s{\"id\": %d, \"name\": ", d ? ", " : "", d);
    json_write_string(f, i->name);
    fprintf(f,
            ", \"totalGlobalMem\": %zu, \"computeMajor\": %d, "
            "\"computeMinor\": %d, \"maxThreadsPerBlock\": %d, "
            "\"numSms\": %d}",
            i->memory_total, i->cc_major, i->cc_minor, i->max_threads_per_block,
            i->multiprocessors);
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

/* Lock held. Out of memory leaves the index empty: the file is written
 * without flows and without nesting, not lost. */
static void index_cpu(cpu_index *ix) {
  *ix = (cpu_index){0};
  size_t na = 0, nt = 0;
  for (chunk *c = T.chunks; c; c = c->next) {
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
    return;
  }
  for (chunk *c = T.chunks; c; c = c->next) {
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
}

/* The last slice of v (sorted by key, then start) with key and a start at
 * or before t, or NULL. */
/* The index of the first slice past (key, t). */
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

static const cpu_slice *find_slice(const cpu_slice *v, size_t n, uint64_t key,
                                   uint64_t t) {
  size_t lo = slice_past(v, n, key, t);
  return lo > 0 && v[lo - 1].key == key ? &v[lo - 1] : NULL;
}

/* An API call is made inside a task slice on its thread, but CUPTI stamps
 * it with its own clock, converted to weft's: it could end 0.05-0.16 us
 * after the slice that holds it, which Perfetto, needing slices on a
 * thread to nest, cannot draw. Such a call is clamped into its slice. A
 * call between slices (the poller's event queries on a worker) is clamped
 * to end where the next slice on its thread begins: one ended 0.9 us into
 * the task slice that followed it on the H200. */
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

/* Appends lane (a task id) to *v; a name per lane is written from it once
 * sorted and made unique (a search here would cost a pass per wait). */
static void note_lane(uint32_t **v, size_t *n, size_t *cap, uint32_t lane) {
  if (*n && (*v)[*n - 1] == lane)
    return;
  if (grow((void **)v, cap, *n, sizeof **v) == 0)
    (*v)[(*n)++] = lane;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* Kineto's launch arrows: a flow from the API call that queued a GPU op
 * to the op, with the correlation as its id ("ac2g"), so that Perfetto
 * draws them. */
static void write_flow(FILE *f, const cpu_index *ix, const weft__trace_rec *r,
                       uint64_t t0, long host_pid) {
  if (!r->corr)
    return;
  const cpu_slice *a = find_slice(ix->apis, ix->napis, r->corr, UINT64_MAX);
  if (!a)
    return;
  /* The first call in time with the correlation, as the reader pairs. */
  while (a > ix->apis && (a - 1)->key == r->corr)
    a--;
  fprintf(f,
          ",\n{\"ph\":\"s\",\"id\":%" PRIu64 ",\"pid\":%ld,\"tid\":%" PRIu32
          ",\"ts\":%.3f,\"cat\":\"ac2g\",\"name\":\"ac2g\"}",
          r->corr, host_pid, a->lane, (double)(a->start - t0) / 1e3);
  fprintf(f,
          ",\n{\"ph\":\"f\",\"id\":%" PRIu64 ",\"pid\":%d,\"tid\":%" PRIu32
          ",\"ts\":%.3f,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}",
          r->corr, r->dev, r->lane, (double)(r->start - t0) / 1e3);
}

/* The correlations of graph launches that already have their arrow: the
 * ops of one replay share the launch's correlation, and one flow per id
 * is what Perfetto binds (to the replay's first op). An open-addressing
 * set; a full or unallocatable set only costs duplicate arrows. */
typedef struct corr_set {
  uint64_t *v;
  size_t cap, n;
} corr_set;

/* 1 if c was not in the set (and now is). */
static int corr_first(corr_set *s, uint64_t c) {
  if ((s->n + 1) * 2 > s->cap) {
    size_t ncap = s->cap ? 2 * s->cap : 256;
    uint64_t *nv = calloc(ncap, sizeof *nv);
    if (!nv)
      return 1;
    for (size_t i = 0; i < s->cap; i++)
      if (s->v[i]) {
        size_t j = (s->v[i] * 0x9E3779B97F4A7C15ull) & (ncap - 1);
        while (nv[j])
          j = (j + 1) & (ncap - 1);
        nv[j] = s->v[i];
      }
    free(s->v);
    s->v = nv;
    s->cap = ncap;
  }
  size_t j = (c * 0x9E3779B97F4A7C15ull) & (s->cap - 1);
  while (s->v[j] && s->v[j] != c)
    j = (j + 1) & (s->cap - 1);
  if (s->v[j])
    return 0;
  s->v[j] = c;
  s->n++;
  return 1;
}

/* Lock held. The whole file: the header, the host's names, every record,
 * then a name for each GPU lane the records used. */
static void write_trace(FILE *f, uint64_t t0) {
  long pid = (long)getpid();
  fprintf(f, "{" KEY(WEFT_TRF_SCHEMA_VERSION) "1," KEY(
                 WEFT_TRF_DISPLAY_TIME_UNIT) "\"ms\",");
  fprintf(f,
          KEY(WEFT_TRF_WEFT) "{\"version\":\"0.1.0\",\"backend\":\"%s\","
                             "\"dropped_records\":%" PRIu64 "},\n",
          T.backend, (uint64_t)atomic_load(&T.dropped));
  write_devices(f);
  fprintf(f, KEY(WEFT_TRF_TRACE_EVENTS) "[\n");
  write_meta(f, WEFT_TRF_META_PROCESS_NAME, pid, -1, "weft host");
  for (size_t i = 0; i < T.nlanes; i++) {
    fprintf(f, ",\n");
    write_meta(f, WEFT_TRF_META_THREAD_NAME, pid, (int64_t)T.lanes[i].id,
               T.lanes[i].name);
  }
  /* Name each GPU lane once: "stream N" under "GPU d". */
  pair *seen = NULL;
  size_t nseen = 0, cap = 0;
  cpu_index ix;
  index_cpu(&ix);
  corr_set graphs = {0};  /* graph launches already given an arrow */
  uint32_t *waits = NULL; /* the tasks with wait lanes, to name them */
  size_t nwaits = 0, wcap = 0;
  for (chunk *c = T.chunks; c; c = c->next) {
    unsigned n = atomic_load_explicit(&c->n, memory_order_acquire);
    for (unsigned i = 0; i < n; i++) {
      weft__trace_rec r1 = c->r[i];
      const weft__trace_rec *r = &r1;
      if (r->kind == WEFT__TR_API)
        nest_in_task(&ix, &r1);
      if (r->kind == WEFT__TR_WAIT && r->task)
        note_lane(&waits, &nwaits, &wcap, (uint32_t)r->task);
      fprintf(f, ",\n");
      write_rec(f, r, t0, pid);
      if (r->kind > WEFT__TR_MEMSET)
        continue;
      if (!r->graph || corr_first(&graphs, r->corr))
        write_flow(f, &ix, r, t0, pid);
      uint64_t key = ((uint64_t)(uint16_t)r->dev << 32) | r->lane;
      size_t k = 0;
      while (k < nseen && seen[k].key != key)
        k++;
      if (k == nseen && grow((void **)&seen, &cap, nseen, sizeof *seen) == 0)
        seen[nseen++] = (pair){key, 0};
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
  if (nwaits)
    qsort(waits, nwaits, sizeof *waits, cmp_u32);
  for (size_t k = 0; k < nwaits; k++) {
    if (k && waits[k] == waits[k - 1])
      continue;
    const char *tn = task_name(waits[k]);
    char name[96];
    snprintf(name, sizeof name, "waits: %s", tn ? tn : "task");
    fprintf(f, ",\n");
    write_meta(f, WEFT_TRF_META_THREAD_NAME, pid, WAIT_TID(waits[k]), name);
  }
  free(waits);
  free(graphs.v);
  free(ix.apis);
  free(ix.tasks);
  fprintf(f, "\n]}\n");
}

/* Lock held. Frees what the trace recorded, ready for the next one. */
static void free_records(void) {
  while (T.chunks) {
    chunk *c = T.chunks;
    T.chunks = c->next;
    free(c);
  }
  T.shared = NULL;
  while (T.strs) {
    str *s = T.strs;
    T.strs = s->next;
    free(s);
  }
  free(T.tasks);
  free(T.lanes);
  free(T.corrs);
  T.tasks = T.lanes = NULL;
  T.corrs = NULL;
  T.ntasks = T.cap_tasks = T.nlanes = T.cap_lanes = T.ncorrs = T.cap_corrs = 0;
  free(T.path);
  T.path = NULL;
  free(T.devs);
  T.devs = NULL;
  T.ndev = 0;
}

int weft__trace_close(void) {
  pthread_mutex_lock(&T.lock);
  if (!atomic_load(&weft__trace_on)) {
    pthread_mutex_unlock(&T.lock);
    return 0;
  }
  atomic_store(&weft__trace_on, 0);
  atomic_store(&weft__trace_owner, NULL);
  if (T.ncorrs) /* qsort and bsearch want a non-NULL array */
    qsort(T.corrs, T.ncorrs, sizeof *T.corrs, cmp_pair);
  if (T.ntasks)
    qsort(T.tasks, T.ntasks, sizeof *T.tasks, cmp_idn);
  uint64_t t0 = UINT64_MAX;
  for (chunk *c = T.chunks; c; c = c->next) {
    unsigned n = atomic_load_explicit(&c->n, memory_order_acquire);
    for (unsigned i = 0; i < n; i++)
      if (c->r[i].start < t0)
        t0 = c->r[i].start;
  }
  int rc = 0;
  FILE *f = fopen(T.path, "w");
  if (!f) {
    rc = weft__err(WEFT_EIO, "weft trace: cannot write %s", T.path);
  } else {
    write_trace(f, t0);
    if (fclose(f) != 0)
      rc = weft__err(WEFT_EIO, "weft trace: error writing %s", T.path);
  }
  free_records();
  T.epoch++;
  pthread_mutex_unlock(&T.lock);
  return rc;
}
