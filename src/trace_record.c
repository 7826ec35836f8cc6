/* The tracer's recording (trace.h): the per-thread buffers the hooks
 * append to, the names and maps kept beside them, and the opening and
 * closing of a trace. trace_write.c writes the file at close. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error_internal.h"
#include "trace_buffers.h"
#include "trace_order.h"
#include "trace_range.h"

struct weft__trace_buffers weft__trace_buf = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};
/* The state, under the short name both halves use. */
static struct weft__trace_buffers *const T = &weft__trace_buf;

atomic_int weft__trace_on;
void *_Atomic weft__trace_owner;
_Thread_local uint64_t weft__trace_task;

static _Thread_local chunk *tls_chunk;
static _Thread_local uint64_t tls_epoch;
static _Thread_local uint32_t tls_lane;
static _Thread_local uint64_t tls_lane_epoch;

uint64_t weft__trace_next_corr(void) {
  return atomic_fetch_add(&T->next_corr, 1) + 1;
}

/* Lock held. */
static chunk *chunk_new(void) {
  chunk *c = calloc(1, sizeof *c);
  if (c) {
    c->next = T->chunks;
    T->chunks = c;
  }
  return c;
}

void weft__trace_emit(const weft__trace_rec *r) {
  if (!atomic_load_explicit(&weft__trace_on, memory_order_relaxed))
    return;
  chunk *c = tls_chunk;
  if (!c || tls_epoch != T->epoch ||
      atomic_load_explicit(&c->n, memory_order_relaxed) == CHUNK_RECS) {
    pthread_mutex_lock(&T->lock);
    c = chunk_new();
    tls_epoch = T->epoch;
    pthread_mutex_unlock(&T->lock);
    tls_chunk = c;
    if (!c) {
      atomic_fetch_add(&T->dropped, 1);
      return;
    }
  }
  unsigned n = atomic_load_explicit(&c->n, memory_order_relaxed);
  c->r[n] = *r;
  atomic_store_explicit(&c->n, n + 1, memory_order_release);
}

void weft__trace_emit_batch(const weft__trace_rec *r, size_t n) {
  pthread_mutex_lock(&T->lock);
  for (size_t i = 0; i < n; i++) {
    chunk *c = T->shared;
    if (!c || atomic_load_explicit(&c->n, memory_order_relaxed) == CHUNK_RECS)
      c = T->shared = chunk_new();
    if (!c) {
      atomic_fetch_add(&T->dropped, n - i);
      break;
    }
    unsigned k = atomic_load_explicit(&c->n, memory_order_relaxed);
    c->r[k] = r[i];
    atomic_store_explicit(&c->n, k + 1, memory_order_release);
  }
  pthread_mutex_unlock(&T->lock);
}

void weft__trace_count_dropped(uint64_t n) { atomic_fetch_add(&T->dropped, n); }

/* Interned strings are the tracer's own copies, one per content, freed
 * when the trace is written: a record never holds a caller's pointer,
 * since the caller may free its string (a kernel description's name) long
 * before weft_shutdown writes the file. */
static uint64_t str_hash(const char *s, size_t *len) {
  uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
  size_t n = 0;
  for (; s[n]; n++)
    h = (h ^ (unsigned char)s[n]) * 0x100000001b3u;
  *len = n;
  return h;
}

enum { NAMES_CAP = 256 }; /* the name table's first size (a power of 2) */

/* Lock held. Doubles the name table; -1 when out of memory (the table is
 * then as it was). */
static int names_grow(void) {
  size_t cap = T->cap_names ? T->cap_names * 2 : NAMES_CAP;
  str **v = calloc(cap, sizeof *v);
  if (!v)
    return -1;
  for (size_t i = 0; i < T->cap_names; i++) {
    str *e = T->names[i];
    if (!e)
      continue;
    size_t j = (size_t)e->hash & (cap - 1);
    while (v[j])
      j = (j + 1) & (cap - 1);
    v[j] = e;
  }
  free(T->names);
  T->names = v;
  T->cap_names = cap;
  return 0;
}

/* Lock held. The tracer's copy of s, made if it has none; "?" when out of
 * memory. A copy the full table cannot take is still made, only not
 * shared. */
static const char *intern_locked(const char *s) {
  size_t len;
  uint64_t h = str_hash(s, &len);
  size_t mask = T->cap_names - 1, i = 0;
  if (T->cap_names) {
    for (i = (size_t)h & mask; T->names[i]; i = (i + 1) & mask)
      if (T->names[i]->hash == h && strcmp(T->names[i]->s, s) == 0)
        return T->names[i]->s;
  }
  str *p = malloc(sizeof *p + len + 1);
  if (!p) {
    atomic_fetch_add(&T->dropped, 1); /* a name lost counts as a record */
    return "?";
  }
  p->hash = h;
  memcpy(p->s, s, len + 1);
  p->next = T->strs;
  T->strs = p;
  if ((T->nnames + 1) * 2 > T->cap_names) {
    if (names_grow() != 0)
      return p->s;
    mask = T->cap_names - 1;
    for (i = (size_t)h & mask; T->names[i]; i = (i + 1) & mask)
      ;
  }
  T->names[i] = p;
  T->nnames++;
  return p->s;
}

/* Each thread's recent strings by the caller's pointer, which a launch
 * passes unchanged every time (its kernel's name): found here without the
 * lock. The content is compared too, since a freed string's address can
 * come back holding another. Valid for the trace of tls_names_epoch. */
enum { NAME_CACHE = 32 };
typedef struct name_hit {
  const char *key, *copy;
} name_hit;
static _Thread_local name_hit tls_names[NAME_CACHE];
static _Thread_local uint64_t tls_names_epoch;

const char *weft__trace_intern(const char *s) {
  if (!s)
    s = "";
  uint64_t epoch = atomic_load_explicit(&T->epoch, memory_order_relaxed);
  if (tls_names_epoch != epoch) {
    memset(tls_names, 0, sizeof tls_names);
    tls_names_epoch = epoch;
  }
  /* The slot: the top 5 bits of the pointer's Fibonacci hash. */
  _Static_assert(NAME_CACHE == 32, "the slot is 5 bits");
  name_hit *c =
      &tls_names[((uint64_t)(uintptr_t)s * 0x9E3779B97F4A7C15u) >> 59];
  if (c->key == s && strcmp(c->copy, s) == 0)
    return c->copy;
  pthread_mutex_lock(&T->lock);
  const char *r = intern_locked(s);
  pthread_mutex_unlock(&T->lock);
  *c = (name_hit){s, r};
  return r;
}

void weft__trace_task_name(uint64_t id, const char *name) {
  if (!atomic_load(&weft__trace_on))
    return;
  pthread_mutex_lock(&T->lock);
  if (weft__trace_grow((void **)&T->tasks, &T->cap_tasks, T->ntasks,
                       sizeof *T->tasks) == 0)
    T->tasks[T->ntasks++] = (id_name){id, intern_locked(name)};
  else
    atomic_fetch_add(&T->dropped, 1);
  pthread_mutex_unlock(&T->lock);
}

void weft__trace_corr_task(uint64_t corr, uint64_t task) {
  pthread_mutex_lock(&T->lock);
  if (weft__trace_grow((void **)&T->corrs, &T->cap_corrs, T->ncorrs,
                       sizeof *T->corrs) == 0)
    T->corrs[T->ncorrs++] = (pair){corr, task};
  else
    atomic_fetch_add(&T->dropped, 1);
  pthread_mutex_unlock(&T->lock);
}

/* The low 32 bits of pthread_self(), which is what CUPTI reports as the
 * thread of a runtime API record on Linux: a task's run slices and the
 * CUDA calls it made then share one row. */
uint32_t weft__trace_thread_lane(void) {
  if (tls_lane_epoch != T->epoch || tls_lane == 0) {
    tls_lane = (uint32_t)(uintptr_t)pthread_self();
    if (tls_lane == 0)
      tls_lane = atomic_fetch_add(&T->next_lane, 1) + 1;
    tls_lane_epoch = T->epoch;
  }
  return tls_lane;
}

void weft__trace_thread_name(const char *name) {
  if (!atomic_load(&weft__trace_on))
    return;
  uint32_t lane = weft__trace_thread_lane();
  pthread_mutex_lock(&T->lock);
  if (weft__trace_grow((void **)&T->lanes, &T->cap_lanes, T->nlanes,
                       sizeof *T->lanes) == 0)
    T->lanes[T->nlanes++] = (id_name){lane, intern_locked(name)};
  else
    atomic_fetch_add(&T->dropped, 1);
  pthread_mutex_unlock(&T->lock);
}

void weft__trace_range_begin(weft__trace_range *r, const void *owner,
                             const char *name) {
  if (!weft__trace_on_for(owner)) {
    r->name = NULL;
    return;
  }
  r->name = weft__trace_intern(name);
  r->epoch = atomic_load_explicit(&T->epoch, memory_order_relaxed);
  r->task = weft__trace_task;
  r->lane = weft__trace_thread_lane();
  r->start = weft__clock_ns();
}

void weft__trace_range_end(const weft__trace_range *r) {
  /* A range begun in another trace would name a string that trace freed. */
  if (!r->name ||
      r->epoch != atomic_load_explicit(&T->epoch, memory_order_relaxed))
    return;
  weft__trace_rec rec = {.start = r->start,
                         .end = weft__clock_ns(),
                         .task = r->task,
                         .name = r->name,
                         .lane = r->lane,
                         .kind = WEFT__TR_RANGE};
  weft__trace_emit(&rec);
}

void weft__trace_mark_set(weft__trace_mark *m, const void *owner, int dev,
                          uint32_t stream) {
  if (!weft__trace_on_for(owner))
    return;
  /* Two stores another thread may read between: a wait then sees a
   * stream with the other record's time, which explain takes as it is. */
  atomic_store_explicit(&m->ns, weft__clock_ns(), memory_order_relaxed);
  atomic_store_explicit(&m->at, ((uint64_t)(uint16_t)dev << 32 | stream) + 1,
                        memory_order_relaxed);
}

/* An instant of kind about stream (trace id) of device dev, now, on this
 * thread, by its task: bytes and ready as trace.h lays out the kind. */
static void stream_instant(uint8_t kind, int dev, uint32_t stream,
                           uint64_t bytes, uint64_t ready) {
  uint64_t now = weft__clock_ns();
  weft__trace_rec rec = {.start = now,
                         .end = now,
                         .task = weft__trace_task,
                         .corr = stream,
                         .bytes = bytes,
                         .ready = ready,
                         .lane = weft__trace_thread_lane(),
                         .dev = (int16_t)dev,
                         .kind = kind};
  weft__trace_emit(&rec);
}

void weft__trace_stream_wait(const weft__trace_mark *m, const void *owner,
                             int dev, uint32_t stream) {
  uint64_t at = atomic_load_explicit(&m->at, memory_order_relaxed);
  if (!at || !weft__trace_on_for(owner))
    return;
  stream_instant(WEFT__TR_SWAIT, dev, stream, at - 1,
                 atomic_load_explicit(&m->ns, memory_order_relaxed));
}

void weft__trace_takeover(const void *owner, int dev, uint32_t stream,
                          uint64_t from) {
  if (weft__trace_on_for(owner))
    stream_instant(WEFT__TR_TAKEOVER, dev, stream, from, 0);
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
  pthread_mutex_lock(&T->lock);
  if (atomic_load(&weft__trace_on)) {
    pthread_mutex_unlock(&T->lock);
    return weft__err(WEFT_EBUSY, "weft trace: another runtime is tracing");
  }
  T->path = strdup(path);
  T->devs = ndev > 0 ? malloc((size_t)ndev * sizeof *devs) : NULL;
  /* The name table is made now, so that a launch's first intern does not
   * allocate it (one made by an intern while no trace was open is kept). */
  str **names = T->names ? NULL : calloc(NAMES_CAP, sizeof *names);
  if (!T->path || (ndev > 0 && !T->devs) || (!T->names && !names)) {
    free(T->path);
    free(T->devs);
    free(names);
    T->path = NULL;
    T->devs = NULL;
    pthread_mutex_unlock(&T->lock);
    return weft__err(WEFT_ENOMEM, "weft trace: out of memory");
  }
  if (names) {
    T->names = names;
    T->cap_names = NAMES_CAP;
  }
  if (ndev > 0)
    memcpy(T->devs, devs, (size_t)ndev * sizeof *devs);
  T->ndev = ndev > 0 ? ndev : 0;
  snprintf(T->backend, sizeof T->backend, "%s", backend);
  weft__trace_rank(&T->rank, &T->world_size);
  T->epoch++;
  atomic_store(&T->next_lane, 0);
  atomic_store(&T->dropped, 0);
  atomic_store(&weft__trace_owner, owner);
  atomic_store(&weft__trace_on, 1);
  pthread_mutex_unlock(&T->lock);
  return 0;
}

/* Lock held. Frees what the trace recorded, ready for the next one. */
static void free_records(void) {
  while (T->chunks) {
    chunk *c = T->chunks;
    T->chunks = c->next;
    free(c);
  }
  T->shared = NULL;
  while (T->strs) {
    str *s = T->strs;
    T->strs = s->next;
    free(s);
  }
  free(T->names);
  T->names = NULL;
  T->nnames = T->cap_names = 0;
  free(T->tasks);
  free(T->lanes);
  free(T->corrs);
  T->tasks = T->lanes = NULL;
  T->corrs = NULL;
  T->ntasks = T->cap_tasks = T->nlanes = T->cap_lanes = T->ncorrs =
      T->cap_corrs = 0;
  free(T->path);
  T->path = NULL;
  free(T->devs);
  T->devs = NULL;
  T->ndev = 0;
}

int weft__trace_close(void) {
  pthread_mutex_lock(&T->lock);
  if (!atomic_load(&weft__trace_on)) {
    pthread_mutex_unlock(&T->lock);
    return 0;
  }
  atomic_store(&weft__trace_on, 0);
  atomic_store(&weft__trace_owner, NULL);
  int rc = weft__trace_write();
  free_records();
  T->epoch++;
  pthread_mutex_unlock(&T->lock);
  return rc;
}
