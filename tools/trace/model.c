/* Loading a Chrome Trace Event file into a trace_model: one pass of the pull
 * parser over the events, then sorting, lane numbering and matching GPU ops
 * to their launch calls. */
#include "model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* ---- interned strings ---------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603u; /* FNV-1a */
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211u;
  return h ^ (h >> 29);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return 0;
  size_t c = *cap ? *cap : 16;
  while (c < need) {
    if (c > SIZE_MAX / 2 / elem)
      return -1;
    c *= 2;
  }
  void *q = realloc(*p, c * elem);
  if (!q)
    return -1;
  *p = q;
  *cap = c;
  return 0;
}

static int table_insert(uint32_t *table, size_t cap, const trace_model *m,
                        uint32_t id) {
  const char *s = m->strings + m->string_offsets[id];
  size_t i = hash_bytes(s, strlen(s)) & (cap - 1);
  while (table[i])
    i = (i + 1) & (cap - 1);
  table[i] = id + 1;
  return 0;
}

/* Returns the id of s[0, n), adding it when new, or UINT32_MAX when out of
 * memory. */
static uint32_t intern(trace_model *m, const char *s, size_t n) {
  if (n == 0)
    return 0;
  if (m->nstrings * 2 >= m->string_table_cap) {
    size_t cap = m->string_table_cap ? m->string_table_cap * 2 : 1024;
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t)
      return UINT32_MAX;
    for (size_t id = 0; id < m->nstrings; id++)
      table_insert(t, cap, m, (uint32_t)id);
    free(m->string_table);
    m->string_table = t;
    m->string_table_cap = cap;
  }
  size_t cap = m->string_table_cap;
  size_t i = hash_bytes(s, n) & (cap - 1);
  while (m->string_table[i]) {
    uint32_t id = m->string_table[i] - 1;
    const char *t = m->strings + m->string_offsets[id];
    if (strncmp(t, s, n) == 0 && t[n] == '\0')
      return id;
    i = (i + 1) & (cap - 1);
  }
  if (m->nstrings >= UINT32_MAX - 1 ||
      grow((void **)&m->strings, &m->strings_cap, m->strings_len + n + 1, 1) ||
      grow((void **)&m->string_offsets, &m->string_offsets_cap, m->nstrings + 1,
           sizeof *m->string_offsets))
    return UINT32_MAX;
  memcpy(m->strings + m->strings_len, s, n);
  m->strings[m->strings_len + n] = '\0';
  m->string_offsets[m->nstrings] = m->strings_len;
  m->strings_len += n + 1;
  uint32_t id = (uint32_t)m->nstrings++;
  m->string_table[i] = id + 1;
  return id;
}

const char *trace_model_str(const trace_model *m, uint32_t id) {
  if (id == 0 || id >= m->nstrings)
    return "";
  return m->strings + m->string_offsets[id];
}

/* ---- a map from three 64-bit words to an index ----------------------------
 */

typedef struct keymap {
  uint64_t *keys; /* 3 per slot */
  uint32_t *vals; /* index + 1, or 0 for an empty slot */
  size_t cap, n;
} keymap;

static uint64_t mix(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t h = a * 0x9E3779B97F4A7C15u;
  h ^= (b + 0x632BE59BD9B4E019u) * 0xC2B2AE3D27D4EB4Fu;
  h ^= (c + 1) * 0x165667B19E3779F9u;
  return h ^ (h >> 31);
}

static void keymap_free(keymap *k) {
  free(k->keys);
  free(k->vals);
  memset(k, 0, sizeof *k);
}

static uint32_t *keymap_slot(const keymap *k, uint64_t a, uint64_t b,
                             uint64_t c) {
  size_t i = mix(a, b, c) & (k->cap - 1);
  while (k->vals[i]) {
    const uint64_t *key = k->keys + 3 * i;
    if (key[0] == a && key[1] == b && key[2] == c)
      return &k->vals[i];
    i = (i + 1) & (k->cap - 1);
  }
  return &k->vals[i];
}

/* The index stored for (a, b, c), or UINT32_MAX when there is none. */
static uint32_t keymap_get(const keymap *k, uint64_t a, uint64_t b,
                           uint64_t c) {
  if (!k->cap)
    return UINT32_MAX;
  uint32_t v = *keymap_slot(k, a, b, c);
  return v ? v - 1 : UINT32_MAX;
}

/* Stores value for (a, b, c) unless a value is there; returns the stored
 * value, or UINT32_MAX when out of memory. */
static uint32_t keymap_put(keymap *k, uint64_t a, uint64_t b, uint64_t c,
                           uint32_t value) {
  if ((k->n + 1) * 2 > k->cap) {
    keymap bigger = {0};
    bigger.cap = k->cap ? k->cap * 2 : 64;
    bigger.keys = malloc(bigger.cap * 3 * sizeof *bigger.keys);
    bigger.vals = calloc(bigger.cap, sizeof *bigger.vals);
    if (!bigger.keys || !bigger.vals) {
      keymap_free(&bigger);
      return UINT32_MAX;
    }
    for (size_t i = 0; i < k->cap; i++) {
      if (!k->vals[i])
        continue;
      const uint64_t *key = k->keys + 3 * i;
      uint32_t *slot = keymap_slot(&bigger, key[0], key[1], key[2]);
      size_t at = (size_t)(slot - bigger.vals);
      memcpy(bigger.keys + 3 * at, key, 3 * sizeof *key);
      *slot = k->vals[i];
    }
    bigger.n = k->n;
    keymap_free(k);
    *k = bigger;
  }
  uint32_t *slot = keymap_slot(k, a, b, c);
  if (*slot)
    return *slot - 1;
  size_t at = (size_t)(slot - k->vals);
  k->keys[3 * at] = a;
  k->keys[3 * at + 1] = b;
  k->keys[3 * at + 2] = c;
  *slot = value + 1;
  k->n++;
  return value;
}

/* ---- reading events ------------------------------------------------------ */

/* An argument the loader may use. Its type is checked only when the event's
 * kind uses it, so an unrelated event with an odd "stream" is no error. */
typedef struct arg {
  int present, bad;
  size_t offset;
  int64_t v;
  double num; /* number arguments */
  uint32_t str;
  const char *want;
} arg;

typedef struct meta {
  int thread; /* 1 thread_name, 0 process_name */
  trace_id pid, tid;
  uint32_t name;
} meta;

typedef struct loader {
  trace_model *m;
  trace_json j;
  size_t ops_cap;
  keymap lanes, threads;
  trace_gpu_lane *lanes_v;
  size_t lanes_cap;
  trace_thread *threads_v;
  size_t threads_cap;
  meta *metas;
  size_t nmetas, metas_cap;
  /* The last lane and thread found, for runs of events on one. */
  int64_t last_lane_device, last_lane_stream;
  uint32_t last_lane;
  trace_id last_pid, last_tid;
  uint32_t last_thread;
} loader;

typedef struct event {
  size_t offset;
  char ph;
  size_t ph_len;
  int has_ph, has_name, has_ts, has_dur;
  uint32_t name, cat;
  trace_id pid, tid;
  double ts, dur;
  size_t dur_offset, ts_offset;
  arg stream, device, correlation, bytes, task, task_name, direction, meta_name;
  arg ready_by, ready_delay; /* weft task slices: runtime latency */
} event;

static int oom(loader *L) {
  return trace_json_fail(&L->j, L->j.pos, "out of memory");
}

static int fail_type(loader *L, const trace_json_token *t, const char *key,
                     const char *want) {
  return trace_json_fail(&L->j, t->offset, "\"%s\" must be %s, not %s", key,
                         want, trace_json_type_name(t->type));
}

/* Integral numbers beyond 2^53 lose digits as doubles: take them only as
 * integers written without a fraction. */
static int as_integer(const trace_json_token *t, int64_t *out) {
  if (t->type != TRACE_JSON_NUMBER)
    return -1;
  if (t->is_integer) {
    *out = t->integer;
    return 0;
  }
  if (t->num == floor(t->num) && fabs(t->num) <= 9007199254740992.0) {
    *out = (int64_t)t->num;
    return 0;
  }
  return -1;
}

static int read_id(loader *L, const trace_json_token *t, const char *key,
                   trace_id *id) {
  memset(id, 0, sizeof *id);
  if (t->type == TRACE_JSON_STRING) {
    id->is_str = 1;
    id->str = intern(L->m, t->str, t->len);
    return id->str == UINT32_MAX ? oom(L) : 0;
  }
  if (as_integer(t, &id->num) == 0)
    return 0;
  if (t->type == TRACE_JSON_NUMBER)
    return trace_json_fail(&L->j, t->offset,
                           "\"%s\" must be an integer or a string", key);
  return fail_type(L, t, key, "a number or a string");
}

static int read_int_arg(loader *L, const trace_json_token *t, arg *a) {
  a->present = 1;
  a->bad = as_integer(t, &a->v) != 0;
  a->offset = t->offset;
  a->want = "an integer";
  return trace_json_skip(&L->j, t);
}

static int read_num_arg(loader *L, const trace_json_token *t, arg *a) {
  a->present = 1;
  a->bad = t->type != TRACE_JSON_NUMBER;
  a->num = a->bad ? 0 : t->num;
  a->offset = t->offset;
  a->want = "a number";
  return trace_json_skip(&L->j, t);
}

static int read_str_arg(loader *L, const trace_json_token *t, arg *a) {
  a->present = 1;
  a->bad = t->type != TRACE_JSON_STRING;
  a->offset = t->offset;
  a->want = "a string";
  if (!a->bad) {
    a->str = intern(L->m, t->str, t->len);
    if (a->str == UINT32_MAX)
      return oom(L);
  }
  return trace_json_skip(&L->j, t);
}

static int read_args(loader *L, event *e) {
  trace_json_token t;
  for (;;) {
    trace_json_type type = trace_json_next(&L->j, &t);
    if (type == TRACE_JSON_END_OBJECT)
      return 0;
    if (type != TRACE_JSON_KEY)
      return -1;
    arg *ia = NULL, *sa = NULL, *na = NULL;
    if (trace_json_is(&t, "stream"))
      ia = &e->stream;
    else if (trace_json_is(&t, "device"))
      ia = &e->device;
    else if (trace_json_is(&t, "correlation"))
      ia = &e->correlation;
    else if (trace_json_is(&t, "bytes"))
      ia = &e->bytes;
    else if (trace_json_is(&t, "task"))
      ia = &e->task;
    else if (trace_json_is(&t, "task_name"))
      sa = &e->task_name;
    else if (trace_json_is(&t, "direction"))
      sa = &e->direction;
    else if (trace_json_is(&t, "name"))
      sa = &e->meta_name;
    else if (trace_json_is(&t, "weft_ready_by"))
      sa = &e->ready_by;
    else if (trace_json_is(&t, "weft_ready_delay_us"))
      na = &e->ready_delay;
    if (trace_json_next(&L->j, &t) == TRACE_JSON_ERROR)
      return -1;
    int rc = ia   ? read_int_arg(L, &t, ia)
             : sa ? read_str_arg(L, &t, sa)
             : na ? read_num_arg(L, &t, na)
                  : trace_json_skip(&L->j, &t);
    if (rc)
      return -1;
  }
}

/* Fails when the event's kind uses a and a had the wrong type. */
static int check_arg(loader *L, const arg *a, const char *key) {
  if (a->present && a->bad)
    return trace_json_fail(&L->j, a->offset, "args.\"%s\" must be %s", key,
                           a->want);
  return 0;
}

static int lower_eq(const char *s, const char *lower) {
  for (; *s && *lower; s++, lower++) {
    char c = *s >= 'A' && *s <= 'Z' ? (char)(*s - 'A' + 'a') : *s;
    if (c != *lower)
      return 0;
  }
  return *s == *lower;
}

static const char *const ready_names[TRACE_READY_NKINDS] = {
    "", "spawn", "gpu", "join", "yield", "other"};

trace_ready_kind trace_ready_kind_of(const char *name) {
  for (int k = TRACE_READY_SPAWN; k < TRACE_READY_OTHER; k++)
    if (strcmp(name, ready_names[k]) == 0)
      return (trace_ready_kind)k;
  return TRACE_READY_OTHER;
}

const char *trace_ready_kind_name(trace_ready_kind k) {
  return k < TRACE_READY_NKINDS ? ready_names[k] : "";
}

/* Categories of Kineto (and of its older releases, capitalised) and weft. */
static trace_op_kind classify(const char *cat) {
  if (lower_eq(cat, "kernel"))
    return TRACE_OP_KERNEL;
  if (lower_eq(cat, "gpu_memcpy") || lower_eq(cat, "memcpy"))
    return TRACE_OP_MEMCPY;
  if (lower_eq(cat, "gpu_memset") || lower_eq(cat, "memset"))
    return TRACE_OP_MEMSET;
  if (lower_eq(cat, "cuda_runtime") || lower_eq(cat, "cuda_driver") ||
      lower_eq(cat, "runtime") || lower_eq(cat, "driver"))
    return TRACE_OP_RUNTIME;
  if (lower_eq(cat, "task"))
    return TRACE_OP_TASK;
  if (lower_eq(cat, "weft_wait"))
    return TRACE_OP_WAIT;
  return TRACE_OP_OTHER;
}

static trace_copy_dir dir_from_arg(const char *s) {
  if (lower_eq(s, "htod") || lower_eq(s, "h2d"))
    return TRACE_COPY_HTOD;
  if (lower_eq(s, "dtoh") || lower_eq(s, "d2h"))
    return TRACE_COPY_DTOH;
  if (lower_eq(s, "dtod") || lower_eq(s, "d2d"))
    return TRACE_COPY_DTOD;
  if (lower_eq(s, "htoh") || lower_eq(s, "h2h"))
    return TRACE_COPY_HTOH;
  return TRACE_COPY_OTHER;
}

/* Kineto names copies "Memcpy HtoD (Pageable -> Device)". */
static trace_copy_dir dir_from_name(const char *s) {
  static const struct {
    const char *word;
    trace_copy_dir dir;
  } words[] = {{"HtoD", TRACE_COPY_HTOD}, {"DtoH", TRACE_COPY_DTOH},
               {"DtoD", TRACE_COPY_DTOD}, {"HtoH", TRACE_COPY_HTOH},
               {"H2D", TRACE_COPY_HTOD},  {"D2H", TRACE_COPY_DTOH},
               {"D2D", TRACE_COPY_DTOD},  {"H2H", TRACE_COPY_HTOH}};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strstr(s, words[i].word))
      return words[i].dir;
  return TRACE_COPY_OTHER;
}

/* The number at the end of a string like "stream 7", or fallback. */
static int64_t trailing_number(const char *s, int64_t fallback) {
  size_t n = strlen(s), i = n;
  while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')
    i--;
  if (i == n || n - i > 15)
    return fallback;
  return strtoll(s + i, NULL, 10);
}

static int64_t id_number(const trace_model *m, const trace_id *id) {
  return id->is_str ? trailing_number(trace_model_str(m, id->str), 0) : id->num;
}

static uint32_t gpu_lane_lookup(loader *L, int64_t device, int64_t stream);
static uint32_t thread_lookup(loader *L, const trace_id *pid,
                              const trace_id *tid);

static int id_eq(const trace_id *a, const trace_id *b) {
  return a->is_str == b->is_str && a->num == b->num && a->str == b->str;
}

static uint32_t gpu_lane(loader *L, int64_t device, int64_t stream) {
  /* Consecutive events mostly share a lane: remember the last one. */
  if (L->m->ngpu_lanes && L->last_lane_device == device &&
      L->last_lane_stream == stream)
    return L->last_lane;
  uint32_t lane = gpu_lane_lookup(L, device, stream);
  if (lane != UINT32_MAX) {
    L->last_lane_device = device;
    L->last_lane_stream = stream;
    L->last_lane = lane;
  }
  return lane;
}

static uint32_t gpu_lane_lookup(loader *L, int64_t device, int64_t stream) {
  uint32_t next = (uint32_t)L->m->ngpu_lanes;
  uint32_t v =
      keymap_put(&L->lanes, (uint64_t)device, (uint64_t)stream, 0, next);
  if (v != next)
    return v;
  if (grow((void **)&L->lanes_v, &L->lanes_cap, next + 1, sizeof *L->lanes_v))
    return UINT32_MAX;
  L->lanes_v[next] = (trace_gpu_lane){.device = device, .stream = stream};
  L->m->ngpu_lanes++;
  return next;
}

static uint64_t id_key(const trace_id *id) {
  return id->is_str ? id->str : (uint64_t)id->num;
}

static uint64_t id_tags(const trace_id *pid, const trace_id *tid) {
  return (uint64_t)pid->is_str | (uint64_t)tid->is_str << 1;
}

static uint32_t thread_of(loader *L, const trace_id *pid, const trace_id *tid) {
  if (L->m->nthreads && id_eq(&L->last_pid, pid) && id_eq(&L->last_tid, tid))
    return L->last_thread;
  uint32_t t = thread_lookup(L, pid, tid);
  if (t != UINT32_MAX) {
    L->last_pid = *pid;
    L->last_tid = *tid;
    L->last_thread = t;
  }
  return t;
}

static uint32_t thread_lookup(loader *L, const trace_id *pid,
                              const trace_id *tid) {
  uint32_t next = (uint32_t)L->m->nthreads;
  uint32_t v = keymap_put(&L->threads, id_key(pid), id_key(tid),
                          id_tags(pid, tid), next);
  if (v != next)
    return v;
  if (grow((void **)&L->threads_v, &L->threads_cap, next + 1,
           sizeof *L->threads_v))
    return UINT32_MAX;
  L->threads_v[next] = (trace_thread){.pid = *pid, .tid = *tid};
  L->m->nthreads++;
  return next;
}

#define TRACE_MAX_TIME 1e15

static int add_complete(loader *L, event *e) {
  trace_model *m = L->m;
  if (!e->has_name)
    return trace_json_fail(&L->j, e->offset, "\"X\" event without \"name\"");
  if (!e->has_ts)
    return trace_json_fail(&L->j, e->offset, "\"X\" event without \"ts\"");
  if (!e->has_dur)
    return trace_json_fail(&L->j, e->offset, "\"X\" event without \"dur\"");
  if (e->dur < 0)
    return trace_json_fail(&L->j, e->dur_offset, "negative \"dur\"");
  /* Bounds keep every sum the analysis forms finite: 1e15 us is 31 years,
   * and Kineto's timestamps (us since 1970) are near 1.7e12. */
  if (fabs(e->ts) > TRACE_MAX_TIME)
    return trace_json_fail(&L->j, e->ts_offset,
                           "\"ts\" beyond +-1e15 microseconds");
  if (e->dur > TRACE_MAX_TIME)
    return trace_json_fail(&L->j, e->dur_offset,
                           "\"dur\" beyond 1e15 microseconds");
  if (m->nops >= UINT32_MAX - 1)
    return trace_json_fail(&L->j, e->offset, "too many events");

  trace_op op = {.ts = e->ts,
                 .dur = e->dur,
                 .correlation = TRACE_NONE,
                 .bytes = -1,
                 .task = TRACE_NONE,
                 .name = e->name,
                 .cat = e->cat,
                 .launch = TRACE_NO_OP};
  trace_op_kind kind = classify(trace_model_str(m, e->cat));
  op.kind = (uint8_t)kind;
  int gpu = trace_op_is_gpu(&op);
  if (gpu || kind == TRACE_OP_RUNTIME) {
    if (check_arg(L, &e->correlation, "correlation"))
      return -1;
    if (e->correlation.present)
      op.correlation = e->correlation.v;
  }
  if (kind != TRACE_OP_OTHER) {
    if (check_arg(L, &e->task, "task") ||
        check_arg(L, &e->task_name, "task_name"))
      return -1;
    if (e->task.present)
      op.task = e->task.v;
    if (e->task_name.present)
      op.task_name = e->task_name.str;
  }
  if (kind == TRACE_OP_TASK && e->ready_by.present) {
    if (check_arg(L, &e->ready_by, "weft_ready_by") ||
        check_arg(L, &e->ready_delay, "weft_ready_delay_us"))
      return -1;
    if (!e->ready_delay.present)
      return trace_json_fail(&L->j, e->ready_by.offset,
                             "args.\"weft_ready_by\" without "
                             "\"weft_ready_delay_us\"");
    double d = e->ready_delay.num;
    if (!(d >= 0 && d <= TRACE_MAX_TIME))
      return trace_json_fail(&L->j, e->ready_delay.offset,
                             "args.\"weft_ready_delay_us\" must be a "
                             "duration in [0, 1e15]");
    op.ready_by =
        (uint8_t)trace_ready_kind_of(trace_model_str(m, e->ready_by.str));
    op.ready_delay = d;
  }
  if (gpu) {
    if (check_arg(L, &e->stream, "stream") ||
        check_arg(L, &e->device, "device"))
      return -1;
    /* Sizes and directions belong to copies and memsets only. */
    if (kind != TRACE_OP_KERNEL &&
        (check_arg(L, &e->bytes, "bytes") ||
         (kind == TRACE_OP_MEMCPY && check_arg(L, &e->direction, "direction"))))
      return -1;
    if (kind != TRACE_OP_KERNEL && e->bytes.present) {
      if (e->bytes.v < 0)
        return trace_json_fail(&L->j, e->bytes.offset,
                               "args.\"bytes\" is negative");
      op.bytes = e->bytes.v;
    }
    int64_t device = e->device.present ? e->device.v : id_number(m, &e->pid);
    int64_t stream = e->stream.present ? e->stream.v : id_number(m, &e->tid);
    op.lane = gpu_lane(L, device, stream);
    if (kind == TRACE_OP_MEMCPY) {
      const char *name = trace_model_str(m, e->name);
      op.copy =
          (uint8_t)(e->direction.present
                        ? dir_from_arg(trace_model_str(m, e->direction.str))
                        : dir_from_name(name));
      op.host_mem = strstr(name, "Pageable") ? TRACE_MEM_PAGEABLE
                    : strstr(name, "Pinned") ? TRACE_MEM_PINNED
                                             : TRACE_MEM_UNKNOWN;
    }
    if (op.lane == UINT32_MAX)
      return oom(L);
  } else if (kind != TRACE_OP_OTHER) {
    op.lane = thread_of(L, &e->pid, &e->tid);
    if (op.lane == UINT32_MAX)
      return oom(L);
  } else {
    /* Other ops (PyTorch's cpu_op, annotations, ...) are counted but not
     * analysed or drawn, so they make no lanes. */
    op.lane = TRACE_NO_OP;
  }
  if (grow((void **)&m->ops, &L->ops_cap, m->nops + 1, sizeof *m->ops))
    return oom(L);
  m->ops[m->nops++] = op;
  return 0;
}

static int add_meta(loader *L, event *e) {
  const char *name = trace_model_str(L->m, e->name);
  int thread = strcmp(name, "thread_name") == 0;
  if (!thread && strcmp(name, "process_name") != 0)
    return 0;
  if (check_arg(L, &e->meta_name, "name"))
    return -1;
  if (!e->meta_name.present)
    return 0;
  if (grow((void **)&L->metas, &L->metas_cap, L->nmetas + 1, sizeof *L->metas))
    return oom(L);
  L->metas[L->nmetas++] = (meta){thread, e->pid, e->tid, e->meta_name.str};
  return 0;
}

/* Reads one event; its '{' was just read. */
static int read_event(loader *L, size_t offset) {
  event e;
  memset(&e, 0, sizeof e);
  e.offset = offset;
  trace_json_token t;
  for (;;) {
    trace_json_type type = trace_json_next(&L->j, &t);
    if (type == TRACE_JSON_END_OBJECT)
      break;
    if (type != TRACE_JSON_KEY)
      return -1;
    /* Which key: compare before reading the value, which reuses t. */
    enum { K_OTHER, K_PH, K_NAME, K_CAT, K_PID, K_TID, K_TS, K_DUR, K_ARGS };
    int k = K_OTHER;
    if (trace_json_is(&t, "ph"))
      k = K_PH;
    else if (trace_json_is(&t, "name"))
      k = K_NAME;
    else if (trace_json_is(&t, "cat"))
      k = K_CAT;
    else if (trace_json_is(&t, "pid"))
      k = K_PID;
    else if (trace_json_is(&t, "tid"))
      k = K_TID;
    else if (trace_json_is(&t, "ts"))
      k = K_TS;
    else if (trace_json_is(&t, "dur"))
      k = K_DUR;
    else if (trace_json_is(&t, "args"))
      k = K_ARGS;
    static const char *const keys[] = {"",    "ph", "name", "cat", "pid",
                                       "tid", "ts", "dur",  "args"};
    if (trace_json_next(&L->j, &t) == TRACE_JSON_ERROR)
      return -1;
    switch (k) {
    case K_PH:
      if (t.type != TRACE_JSON_STRING)
        return fail_type(L, &t, keys[k], "a string");
      e.has_ph = 1;
      e.ph_len = t.len;
      e.ph = t.len ? t.str[0] : '\0';
      break;
    case K_NAME:
    case K_CAT: {
      if (t.type != TRACE_JSON_STRING)
        return fail_type(L, &t, keys[k], "a string");
      uint32_t id = intern(L->m, t.str, t.len);
      if (id == UINT32_MAX)
        return oom(L);
      if (k == K_NAME) {
        e.name = id;
        e.has_name = 1;
      } else {
        e.cat = id;
      }
      break;
    }
    case K_PID:
    case K_TID:
      if (read_id(L, &t, keys[k], k == K_PID ? &e.pid : &e.tid))
        return -1;
      break;
    case K_TS:
    case K_DUR:
      if (t.type != TRACE_JSON_NUMBER)
        return fail_type(L, &t, keys[k], "a number");
      if (k == K_TS) {
        e.ts = t.num;
        e.has_ts = 1;
        e.ts_offset = t.offset;
      } else {
        e.dur = t.num;
        e.has_dur = 1;
        e.dur_offset = t.offset;
      }
      break;
    case K_ARGS:
      if (t.type != TRACE_JSON_OBJECT)
        return fail_type(L, &t, keys[k], "an object");
      if (read_args(L, &e))
        return -1;
      break;
    default:
      if (trace_json_skip(&L->j, &t))
        return -1;
    }
  }
  L->m->events++;
  if (!e.has_ph)
    return trace_json_fail(&L->j, offset, "event without \"ph\"");
  if (e.ph_len == 1 && e.ph == 'X') {
    L->m->complete++;
    return add_complete(L, &e);
  }
  if (e.ph_len == 1 && e.ph == 'M') {
    L->m->metadata++;
    return add_meta(L, &e);
  }
  L->m->ignored++;
  return 0;
}

static int read_events(loader *L) {
  trace_json_token t;
  for (;;) {
    trace_json_type type = trace_json_next(&L->j, &t);
    if (type == TRACE_JSON_END_ARRAY)
      return 0;
    if (type == TRACE_JSON_ERROR)
      return -1;
    if (type != TRACE_JSON_OBJECT)
      return trace_json_fail(&L->j, t.offset,
                             "an event must be an object, not %s",
                             trace_json_type_name(type));
    if (read_event(L, t.offset))
      return -1;
  }
}

static int read_document(loader *L) {
  trace_json_token t;
  trace_json_type type = trace_json_next(&L->j, &t);
  if (type == TRACE_JSON_ARRAY) {
    if (read_events(L))
      return -1;
  } else if (type == TRACE_JSON_OBJECT) {
    int seen = 0;
    for (;;) {
      type = trace_json_next(&L->j, &t);
      if (type == TRACE_JSON_END_OBJECT)
        break;
      if (type != TRACE_JSON_KEY)
        return -1;
      int events = trace_json_is(&t, "traceEvents");
      type = trace_json_next(&L->j, &t);
      if (type == TRACE_JSON_ERROR)
        return -1;
      if (!events) {
        if (trace_json_skip(&L->j, &t))
          return -1;
        continue;
      }
      if (seen)
        return trace_json_fail(&L->j, t.offset, "\"traceEvents\" given twice");
      if (type != TRACE_JSON_ARRAY)
        return fail_type(L, &t, "traceEvents", "an array");
      seen = 1;
      if (read_events(L))
        return -1;
    }
    if (!seen)
      return trace_json_fail(&L->j, 0,
                             "no \"traceEvents\" array in the top-level "
                             "object");
  } else if (type != TRACE_JSON_ERROR) {
    return trace_json_fail(&L->j, t.offset,
                           "a trace is an object with a \"traceEvents\" "
                           "array, or an array of events, not %s",
                           trace_json_type_name(type));
  } else {
    return -1;
  }
  return trace_json_next(&L->j, &t) == TRACE_JSON_EOF ? 0 : -1;
}

/* ---- after reading: order, lanes, names, launches ------------------------ */

static const trace_op *sort_ops_base;

static int cmp_op_index(const void *pa, const void *pb) {
  uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
  double ta = sort_ops_base[a].ts, tb = sort_ops_base[b].ts;
  if (ta != tb)
    return ta < tb ? -1 : 1;
  return a < b ? -1 : a > b;
}

static int sort_ops(trace_model *m) {
  int sorted = 1;
  for (size_t i = 1; i < m->nops && sorted; i++)
    sorted = m->ops[i - 1].ts <= m->ops[i].ts;
  if (sorted)
    return 0;
  uint32_t *idx = malloc(m->nops * sizeof *idx);
  trace_op *ops = malloc(m->nops * sizeof *ops);
  if (!idx || !ops) {
    free(idx);
    free(ops);
    return -1;
  }
  for (size_t i = 0; i < m->nops; i++)
    idx[i] = (uint32_t)i;
  sort_ops_base = m->ops;
  qsort(idx, m->nops, sizeof *idx, cmp_op_index);
  for (size_t i = 0; i < m->nops; i++)
    ops[i] = m->ops[idx[i]];
  free(idx);
  free(m->ops);
  m->ops = ops;
  return 0;
}

static int cmp_lane(const void *pa, const void *pb) {
  const trace_gpu_lane *a = pa, *b = pb;
  if (a->device != b->device)
    return a->device < b->device ? -1 : 1;
  return a->stream < b->stream ? -1 : a->stream > b->stream;
}

static const trace_model *sort_model;

static int cmp_id(const trace_id *a, const trace_id *b) {
  if (a->is_str != b->is_str)
    return a->is_str ? 1 : -1; /* numbers first */
  if (a->is_str)
    return strcmp(trace_model_str(sort_model, a->str),
                  trace_model_str(sort_model, b->str));
  return a->num < b->num ? -1 : a->num > b->num;
}

static int cmp_thread(const void *pa, const void *pb) {
  const trace_thread *a = pa, *b = pb;
  int c = cmp_id(&a->pid, &b->pid);
  return c ? c : cmp_id(&a->tid, &b->tid);
}

/* Sorts n records (with their original index in slot 'orig' of a parallel
 * array) and returns old -> new index, or NULL when out of memory. */
static uint32_t *sort_with_map(void *v, size_t n, size_t size,
                               int (*cmp)(const void *, const void *)) {
  /* Sort (record, original index) pairs so the mapping survives. */
  size_t pair = size + 8; /* records hold int64s: keep them aligned */
  unsigned char *tmp = malloc(n * pair + 1);
  uint32_t *map = malloc(n * sizeof *map + 1);
  if (!tmp || !map) {
    free(tmp);
    free(map);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    memcpy(tmp + i * pair, (unsigned char *)v + i * size, size);
    uint32_t k = (uint32_t)i;
    memcpy(tmp + i * pair + size, &k, sizeof k);
  }
  /* The comparators read only the record at the start of each pair. */
  qsort(tmp, n, pair, cmp);
  for (size_t i = 0; i < n; i++) {
    uint32_t k;
    memcpy(&k, tmp + i * pair + size, sizeof k);
    memcpy((unsigned char *)v + i * size, tmp + i * pair, size);
    map[k] = (uint32_t)i;
  }
  free(tmp);
  return map;
}

static int finish(loader *L) {
  trace_model *m = L->m;
  if (sort_ops(m))
    return -1;
  /* Lanes and threads were numbered as first seen; number them in order. */
  uint32_t *lane_map = NULL, *thread_map = NULL;
  if (m->ngpu_lanes &&
      !(lane_map = sort_with_map(L->lanes_v, m->ngpu_lanes, sizeof *L->lanes_v,
                                 cmp_lane)))
    return -1;
  sort_model = m;
  if (m->nthreads &&
      !(thread_map = sort_with_map(L->threads_v, m->nthreads,
                                   sizeof *L->threads_v, cmp_thread))) {
    free(lane_map);
    return -1;
  }
  m->gpu_lanes = L->lanes_v;
  m->threads = L->threads_v;
  L->lanes_v = NULL;
  L->threads_v = NULL;

  /* Thread names: rebuild the map on the sorted threads. */
  keymap_free(&L->threads);
  for (size_t i = 0; i < m->nthreads; i++) {
    trace_thread *t = &m->threads[i];
    if (keymap_put(&L->threads, id_key(&t->pid), id_key(&t->tid),
                   id_tags(&t->pid, &t->tid), (uint32_t)i) == UINT32_MAX)
      goto fail;
  }
  /* Process names go through a map by pid, so hostile input with many of
   * them and many threads stays linear. */
  keymap procs = {0};
  for (size_t i = 0; i < L->nmetas; i++) {
    const meta *md = &L->metas[i];
    if (md->thread) {
      uint32_t t = keymap_get(&L->threads, id_key(&md->pid), id_key(&md->tid),
                              id_tags(&md->pid, &md->tid));
      if (t != UINT32_MAX)
        m->threads[t].name = md->name;
    } else if (keymap_put(&procs, id_key(&md->pid), (uint64_t)md->pid.is_str, 0,
                          md->name) == UINT32_MAX) {
      keymap_free(&procs);
      goto fail;
    }
  }
  for (size_t k = 0; k < m->nthreads && procs.n; k++) {
    trace_thread *t = &m->threads[k];
    uint32_t name =
        keymap_get(&procs, id_key(&t->pid), (uint64_t)t->pid.is_str, 0);
    if (name != UINT32_MAX)
      t->process_name = name;
  }
  keymap_free(&procs);

  /* Launch calls by correlation: the first API call with each id. */
  keymap corr = {0};
  for (size_t i = 0; i < m->nops; i++) {
    trace_op *op = &m->ops[i];
    if (op->kind == TRACE_OP_RUNTIME && op->correlation != TRACE_NONE &&
        keymap_put(&corr, (uint64_t)op->correlation, 0, 0, (uint32_t)i) ==
            UINT32_MAX) {
      keymap_free(&corr);
      goto fail;
    }
  }
  for (size_t i = 0; i < m->nops; i++) {
    trace_op *op = &m->ops[i];
    m->count[op->kind]++;
    if (trace_op_is_gpu(op)) {
      op->lane = lane_map[op->lane];
      m->gpu_lanes[op->lane].nops++;
      if (op->correlation != TRACE_NONE)
        op->launch = keymap_get(&corr, (uint64_t)op->correlation, 0, 0);
    } else if (op->lane != TRACE_NO_OP) {
      op->lane = thread_map[op->lane];
      m->threads[op->lane].nops++;
    }
  }
  keymap_free(&corr);
  free(lane_map);
  free(thread_map);
  return 0;
fail:
  free(lane_map);
  free(thread_map);
  return -1;
}

static void loader_free(loader *L) {
  keymap_free(&L->lanes);
  keymap_free(&L->threads);
  free(L->lanes_v);
  free(L->threads_v);
  free(L->metas);
  trace_json_free(&L->j);
}

static int load(trace_model *m, const void *buf, size_t len, trace_error *err,
                void *to_free) {
  memset(m, 0, sizeof *m);
  loader L;
  memset(&L, 0, sizeof L);
  L.m = m;
  /* String id 0 is the empty string. */
  if (grow((void **)&m->strings, &m->strings_cap, 1, 1) ||
      grow((void **)&m->string_offsets, &m->string_offsets_cap, 1,
           sizeof *m->string_offsets)) {
    snprintf(err->message, sizeof err->message, "out of memory");
    free(to_free);
    return -1;
  }
  m->strings[0] = '\0';
  m->string_offsets[0] = 0;
  m->strings_len = 1;
  m->nstrings = 1;

  /* Events take 100 bytes or more, so this capacity is rarely outgrown;
   * pages of it that are never written cost no memory. */
  size_t guess = len / 100 + 16;
  if (grow((void **)&m->ops, &L.ops_cap, guess, sizeof *m->ops))
    L.ops_cap = 0;
  trace_json_init(&L.j, buf, len);
  int rc = read_document(&L);
  if (rc)
    snprintf(err->message, sizeof err->message, "%s", trace_json_error(&L.j));
  /* The input is no longer needed: free it before sorting, which briefly
   * needs a second copy of the operations. */
  trace_json_free(&L.j);
  free(to_free);
  if (rc == 0 && finish(&L) != 0) {
    snprintf(err->message, sizeof err->message,
             "out of memory sorting %zu operations", m->nops);
    rc = -1;
  }
  loader_free(&L);
  return rc;
}

int trace_model_load(trace_model *m, const void *buf, size_t len,
                     trace_error *err) {
  return load(m, buf, len, err, NULL);
}

int trace_model_load_file(trace_model *m, const char *path, trace_error *err) {
  memset(m, 0, sizeof *m);
  int is_stdin = strcmp(path, "-") == 0;
  FILE *f = is_stdin ? stdin : fopen(path, "rb");
  if (!f) {
    snprintf(err->message, sizeof err->message, "cannot open: %s",
             strerror(errno));
    return -1;
  }
  /* A regular file is read in one piece of its size; a pipe in doubling
   * pieces. */
  size_t cap = 1 << 16, len = 0;
  if (!is_stdin && fseek(f, 0, SEEK_END) == 0) {
    long size = ftell(f);
    if (size > 0 && (unsigned long)size < SIZE_MAX - 1)
      cap = (size_t)size + 1;
    rewind(f);
  }
  char *buf = malloc(cap);
  for (;;) {
    if (!buf) {
      snprintf(err->message, sizeof err->message, "out of memory reading");
      break;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (len < cap) {
      if (ferror(f)) {
        snprintf(err->message, sizeof err->message, "read error: %s",
                 strerror(errno));
        free(buf);
        buf = NULL;
      }
      break;
    }
    char *bigger = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
    if (!bigger)
      free(buf);
    buf = bigger;
    cap *= 2;
  }
  if (!is_stdin)
    fclose(f);
  if (!buf)
    return -1;
  return load(m, buf, len, err, buf);
}

void trace_model_free(trace_model *m) {
  free(m->ops);
  free(m->gpu_lanes);
  free(m->threads);
  free(m->strings);
  free(m->string_offsets);
  free(m->string_table);
  memset(m, 0, sizeof *m);
}

int trace_op_is_gpu(const trace_op *op) {
  return op->kind == TRACE_OP_KERNEL || op->kind == TRACE_OP_MEMCPY ||
         op->kind == TRACE_OP_MEMSET;
}

const char *trace_op_kind_name(trace_op_kind kind) {
  static const char *const names[] = {"kernel", "memcpy", "memset", "runtime",
                                      "task",   "wait",   "other"};
  return (unsigned)kind < TRACE_OP_NKINDS ? names[kind] : "?";
}

const char *trace_copy_dir_name(trace_copy_dir dir) {
  static const char *const names[] = {"",     "HtoD", "DtoH",
                                      "DtoD", "HtoH", "other"};
  return (unsigned)dir < TRACE_COPY_NDIRS ? names[dir] : "?";
}

static void id_text(const trace_model *m, const trace_id *id, char *out,
                    size_t size) {
  if (id->is_str)
    snprintf(out, size, "%s", trace_model_str(m, id->str));
  else
    snprintf(out, size, "%lld", (long long)id->num);
}

void trace_thread_label(const trace_model *m, const trace_thread *t, char *out,
                        size_t size) {
  if (t->name) {
    snprintf(out, size, "%s", trace_model_str(m, t->name));
    return;
  }
  char pid[64], tid[64];
  id_text(m, &t->pid, pid, sizeof pid);
  id_text(m, &t->tid, tid, sizeof tid);
  snprintf(out, size, "pid %s tid %s", pid, tid);
}
