/* Reading one event of a trace into the model: its fields, the args its
 * kind uses (type-checked only then), its lane or thread, and the op it
 * becomes. "M" events are kept for finish.c, which names threads once all
 * are known. The field names are the trace format's (trace_format.h). */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "classify.h"
#include "grow.h"
#include "intern.h"
#include "loader.h"
#include "trace_format.h"

/* Bounds keep every sum the analysis forms finite: 1e15 us is 31 years,
 * and Kineto's timestamps (us since 1970) are near 1.7e12. */
#define TRACE_MAX_TIME 1e15

/* An argument the loader may use. Its type is checked only when the event's
 * kind uses it, so an unrelated event with an odd "stream" is no error. */
typedef struct arg {
  int present, bad;
  size_t offset;
  int64_t v;
  double num; /* number arguments */
  uint32_t str;
  const char *key, *want;
} arg;

typedef enum phase {
  PH_OTHER,
  PH_COMPLETE,
  PH_METADATA,
  PH_FLOW_START,
  PH_FLOW_END,
  PH_INSTANT
} phase;

typedef struct event {
  size_t offset;
  phase ph;
  int has_ph, has_name, has_ts, has_dur, has_id;
  int64_t id; /* flows: "id", when a whole number */
  uint32_t name, cat;
  trace_id pid, tid;
  double ts, dur;
  size_t dur_offset, ts_offset;
  arg stream, device, correlation, bytes, task, task_name, direction, meta_name;
  arg ready_by, ready_delay; /* weft task slices: runtime latency */
  arg graph;                 /* GPU ops replayed from a graph */
  arg stall;                 /* weft check instants: stall_us */
  arg message;               /* weft check instants: the finding's line */
  arg wait_dev, wait_stream, for_dev, for_stream, recorded; /* stream waits */
  arg from_task;                                            /* takeovers */
  arg per_sm, resident, warps, occupancy, channel; /* kernels' launches */
} event;

static int oom(trace_loader *L) {
  return trace_json_fail(&L->j, L->j.pos, "out of memory");
}

int trace_load_fail_type(trace_loader *L, const trace_json_token *t,
                         const char *key, const char *want) {
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

static int read_id(trace_loader *L, const trace_json_token *t, const char *key,
                   trace_id *id) {
  memset(id, 0, sizeof *id);
  if (t->type == TRACE_JSON_STRING) {
    id->is_str = 1;
    id->str = trace_intern(L->m, t->str, t->len);
    return id->str == UINT32_MAX ? oom(L) : 0;
  }
  if (as_integer(t, &id->num) == 0)
    return 0;
  if (t->type == TRACE_JSON_NUMBER)
    return trace_json_fail(&L->j, t->offset,
                           "\"%s\" must be an integer or a string", key);
  return trace_load_fail_type(L, t, key, "a number or a string");
}

/* ---- args ---------------------------------------------------------------- */

typedef enum arg_type { ARG_INT, ARG_NUM, ARG_STR } arg_type;

/* The args read, where each goes in an event, and the type its users want. */
static const struct {
  const char *key;
  size_t at;
  arg_type type;
} arg_keys[] = {
    {WEFT_TRF_ARG_STREAM, offsetof(event, stream), ARG_INT},
    {WEFT_TRF_ARG_DEVICE, offsetof(event, device), ARG_INT},
    {WEFT_TRF_ARG_CORRELATION, offsetof(event, correlation), ARG_INT},
    {WEFT_TRF_ARG_BYTES, offsetof(event, bytes), ARG_INT},
    {WEFT_TRF_ARG_TASK, offsetof(event, task), ARG_INT},
    {WEFT_TRF_ARG_TASK_NAME, offsetof(event, task_name), ARG_STR},
    {WEFT_TRF_ARG_DIRECTION, offsetof(event, direction), ARG_STR},
    {WEFT_TRF_ARG_NAME, offsetof(event, meta_name), ARG_STR},
    {WEFT_TRF_ARG_READY_BY, offsetof(event, ready_by), ARG_STR},
    {WEFT_TRF_ARG_READY_DELAY_US, offsetof(event, ready_delay), ARG_NUM},
    {WEFT_TRF_ARG_GRAPH, offsetof(event, graph), ARG_INT},
    {WEFT_TRF_ARG_STALL_US, offsetof(event, stall), ARG_NUM},
    {WEFT_TRF_ARG_MESSAGE, offsetof(event, message), ARG_STR},
    {WEFT_TRF_ARG_WAIT_DEVICE, offsetof(event, wait_dev), ARG_INT},
    {WEFT_TRF_ARG_WAIT_STREAM, offsetof(event, wait_stream), ARG_INT},
    {WEFT_TRF_ARG_FOR_DEVICE, offsetof(event, for_dev), ARG_INT},
    {WEFT_TRF_ARG_FOR_STREAM, offsetof(event, for_stream), ARG_INT},
    {WEFT_TRF_ARG_RECORDED_AT, offsetof(event, recorded), ARG_NUM},
    {WEFT_TRF_ARG_FROM_TASK, offsetof(event, from_task), ARG_INT},
    {WEFT_TRF_ARG_BLOCKS_PER_SM, offsetof(event, per_sm), ARG_NUM},
    {WEFT_TRF_ARG_RESIDENT, offsetof(event, resident), ARG_NUM},
    {WEFT_TRF_ARG_WARPS_PER_SM, offsetof(event, warps), ARG_NUM},
    {WEFT_TRF_ARG_OCCUPANCY, offsetof(event, occupancy), ARG_NUM},
    {WEFT_TRF_ARG_CHANNEL, offsetof(event, channel), ARG_INT},
};
enum { NARG_KEYS = sizeof arg_keys / sizeof arg_keys[0] };

/* Notes the value t of arg a (key: arg_keys[k]), and whether its type is
 * right, for check_arg to judge once the event's kind is known. */
static int read_arg(trace_loader *L, const trace_json_token *t, arg *a,
                    size_t k) {
  a->present = 1;
  a->offset = t->offset;
  a->key = arg_keys[k].key;
  switch (arg_keys[k].type) {
  case ARG_INT:
    a->bad = as_integer(t, &a->v) != 0;
    a->want = "an integer between -2^63 and 2^63";
    break;
  case ARG_NUM:
    a->bad = t->type != TRACE_JSON_NUMBER;
    a->num = a->bad ? 0 : t->num;
    a->want = "a number";
    break;
  case ARG_STR:
    a->bad = t->type != TRACE_JSON_STRING;
    a->want = "a string";
    if (!a->bad) {
      a->str = trace_intern(L->m, t->str, t->len);
      if (a->str == UINT32_MAX)
        return oom(L);
    }
    break;
  }
  return trace_json_skip(&L->j, t);
}

static int read_args(trace_loader *L, event *e) {
  trace_json_token t;
  for (;;) {
    trace_json_type type = trace_json_next(&L->j, &t);
    if (type == TRACE_JSON_END_OBJECT)
      return 0;
    if (type != TRACE_JSON_KEY)
      return -1;
    /* Which key: compare before reading the value, which reuses t. */
    size_t k = 0;
    while (k < NARG_KEYS && !trace_json_is(&t, arg_keys[k].key))
      k++;
    if (trace_json_next(&L->j, &t) == TRACE_JSON_ERROR)
      return -1;
    int rc = k < NARG_KEYS
                 ? read_arg(L, &t, (arg *)((char *)e + arg_keys[k].at), k)
                 : trace_json_skip(&L->j, &t);
    if (rc)
      return -1;
  }
}

/* Fails when the event's kind uses a and a had the wrong type. */
static int check_arg(trace_loader *L, const arg *a) {
  if (a->present && a->bad)
    return trace_json_fail(&L->j, a->offset, "args.\"%s\" must be %s", a->key,
                           a->want);
  return 0;
}

/* ---- lanes and threads --------------------------------------------------- */

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

static int id_eq(const trace_id *a, const trace_id *b) {
  return a->is_str == b->is_str && a->num == b->num && a->str == b->str;
}

static uint32_t gpu_lane_lookup(trace_loader *L, int64_t device,
                                int64_t stream) {
  uint32_t next = (uint32_t)L->m->ngpu_lanes;
  uint32_t v =
      trace_keymap_put(&L->lanes, (uint64_t)device, (uint64_t)stream, 0, next);
  if (v != next)
    return v;
  if (trace_grow((void **)&L->lanes_v, &L->lanes_cap, next + 1,
                 sizeof *L->lanes_v))
    return UINT32_MAX;
  L->lanes_v[next] = (trace_gpu_lane){.device = device, .stream = stream};
  L->m->ngpu_lanes++;
  return next;
}

/* The lane of (device, stream), numbered as first seen, or UINT32_MAX when
 * out of memory. */
static uint32_t gpu_lane(trace_loader *L, int64_t device, int64_t stream) {
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

static uint32_t thread_lookup(trace_loader *L, const trace_id *pid,
                              const trace_id *tid) {
  uint32_t next = (uint32_t)L->m->nthreads;
  uint32_t v =
      trace_keymap_put(&L->threads, trace_id_key(pid), trace_id_key(tid),
                       trace_id_tags(pid, tid), next);
  if (v != next)
    return v;
  if (trace_grow((void **)&L->threads_v, &L->threads_cap, next + 1,
                 sizeof *L->threads_v))
    return UINT32_MAX;
  L->threads_v[next] = (trace_thread){.pid = *pid, .tid = *tid};
  L->m->nthreads++;
  return next;
}

/* The thread of (pid, tid), numbered as first seen, or UINT32_MAX when out
 * of memory. */
static uint32_t thread_of(trace_loader *L, const trace_id *pid,
                          const trace_id *tid) {
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

/* The track of (pid, tid) as written, numbered as first seen, or
 * UINT32_MAX when out of memory. */
static uint32_t track_of(trace_loader *L, const trace_id *pid,
                         const trace_id *tid) {
  trace_model *m = L->m;
  if (m->ntracks && id_eq(&L->last_track_pid, pid) &&
      id_eq(&L->last_track_tid, tid))
    return L->last_track;
  uint32_t next = (uint32_t)m->ntracks;
  uint32_t v =
      trace_keymap_put(&L->tracks, trace_id_key(pid), trace_id_key(tid),
                       trace_id_tags(pid, tid), next);
  if (v == next) {
    if (trace_grow((void **)&m->tracks, &L->tracks_cap, next + 1,
                   sizeof *m->tracks))
      return UINT32_MAX;
    m->tracks[next] = (trace_track){.pid = *pid, .tid = *tid};
    m->ntracks++;
  } else if (v == UINT32_MAX) {
    return UINT32_MAX;
  }
  L->last_track_pid = *pid;
  L->last_track_tid = *tid;
  L->last_track = v;
  return v;
}

/* 1 when a numeric pid or tid does not fit in 32 bits, signed or not. */
static int wide(const trace_id *id) {
  return !id->is_str && (id->num < INT32_MIN || id->num > (int64_t)UINT32_MAX);
}

/* ---- the op an event becomes --------------------------------------------- */

/* The fields every "X" event needs, and their bounds. */
static int check_complete(trace_loader *L, const event *e) {
  if (!e->has_name)
    return trace_json_fail(&L->j, e->offset,
                           "\"" WEFT_TRF_PH_COMPLETE "\" event without "
                           "\"" WEFT_TRF_NAME "\"");
  if (!e->has_ts)
    return trace_json_fail(&L->j, e->offset,
                           "\"" WEFT_TRF_PH_COMPLETE "\" event without "
                           "\"" WEFT_TRF_TS "\"");
  if (!e->has_dur)
    return trace_json_fail(&L->j, e->offset,
                           "\"" WEFT_TRF_PH_COMPLETE "\" event without "
                           "\"" WEFT_TRF_DUR "\"");
  if (e->dur < 0)
    return trace_json_fail(&L->j, e->dur_offset,
                           "negative \"" WEFT_TRF_DUR "\"");
  if (fabs(e->ts) > TRACE_MAX_TIME)
    return trace_json_fail(&L->j, e->ts_offset,
                           "\"" WEFT_TRF_TS "\" beyond +-1e15 microseconds");
  if (e->dur > TRACE_MAX_TIME)
    return trace_json_fail(&L->j, e->dur_offset,
                           "\"" WEFT_TRF_DUR "\" beyond 1e15 microseconds");
  if (L->m->nops >= UINT32_MAX - 1)
    return trace_json_fail(&L->j, e->offset, "too many events");
  return 0;
}

/* A weft task slice's runtime latency: why it was ready, and how long
 * before its start. */
static int read_ready(trace_loader *L, const event *e, trace_op *op) {
  if (check_arg(L, &e->ready_by) || check_arg(L, &e->ready_delay))
    return -1;
  if (!e->ready_delay.present)
    return trace_json_fail(&L->j, e->ready_by.offset,
                           "args.\"" WEFT_TRF_ARG_READY_BY "\" without "
                           "\"" WEFT_TRF_ARG_READY_DELAY_US "\"");
  double d = e->ready_delay.num;
  if (!(d >= 0 && d <= TRACE_MAX_TIME))
    return trace_json_fail(&L->j, e->ready_delay.offset,
                           "args.\"" WEFT_TRF_ARG_READY_DELAY_US "\" must be a "
                           "duration in [0, 1e15]");
  op->ready_by =
      (uint8_t)trace_ready_kind_of(trace_model_str(L->m, e->ready_by.str));
  op->ready_delay = d;
  return 0;
}

/* A kernel's fill of the device (trace_op.fill) and channel. From
 * Kineto's occupancy alone the fill is known only above 1: warps per SM
 * over the occupancy's share of the SM's warp slots is then the fill
 * times those slots, which the device properties give once the whole file
 * is read; kept negative until then (finish.c). */
static int read_launch(trace_loader *L, const event *e, trace_op *op) {
  if (check_arg(L, &e->per_sm) || check_arg(L, &e->resident) ||
      check_arg(L, &e->warps) || check_arg(L, &e->occupancy) ||
      check_arg(L, &e->channel))
    return -1;
  if (e->per_sm.present && e->resident.present && e->per_sm.num >= 0 &&
      e->resident.num >= 1 && e->per_sm.num <= 1e12)
    op->fill = (float)(e->per_sm.num / e->resident.num);
  else if (e->warps.present && e->occupancy.present && e->warps.num > 0 &&
           e->warps.num <= 1e12 && e->occupancy.num > 0)
    op->fill = (float)(-e->warps.num * 100 / e->occupancy.num);
  if (e->channel.present && e->channel.v >= 0 && e->channel.v < UINT32_MAX)
    op->channel = (uint32_t)e->channel.v + 1;
  return 0;
}

/* A GPU op's lane, and a copy's or memset's size and direction. */
static int read_gpu(trace_loader *L, const event *e, trace_op *op) {
  trace_model *m = L->m;
  trace_op_kind kind = (trace_op_kind)op->kind;
  if (check_arg(L, &e->stream) || check_arg(L, &e->device))
    return -1;
  /* Sizes and directions belong to copies and memsets only. */
  if (kind != TRACE_OP_KERNEL &&
      (check_arg(L, &e->bytes) ||
       (kind == TRACE_OP_MEMCPY && check_arg(L, &e->direction))))
    return -1;
  if (kind != TRACE_OP_KERNEL && e->bytes.present) {
    if (e->bytes.v < 0)
      return trace_json_fail(&L->j, e->bytes.offset,
                             "args.\"" WEFT_TRF_ARG_BYTES "\" is negative");
    op->bytes = e->bytes.v;
  }
  if (kind == TRACE_OP_KERNEL && read_launch(L, e, op))
    return -1;
  int64_t device = e->device.present ? e->device.v : id_number(m, &e->pid);
  int64_t stream = e->stream.present ? e->stream.v : id_number(m, &e->tid);
  op->lane = gpu_lane(L, device, stream);
  if (kind == TRACE_OP_MEMCPY) {
    const char *name = trace_model_str(m, e->name);
    op->copy = (uint8_t)(e->direction.present
                             ? trace_classify_dir_arg(
                                   trace_model_str(m, e->direction.str))
                             : trace_classify_dir_name(name));
    op->host_mem = (uint8_t)trace_classify_host_mem(name);
  }
  return op->lane == UINT32_MAX ? oom(L) : 0;
}

static int add_complete(trace_loader *L, const event *e) {
  trace_model *m = L->m;
  if (check_complete(L, e))
    return -1;
  trace_op op = {.ts = e->ts,
                 .dur = e->dur,
                 .correlation = TRACE_NONE,
                 .bytes = -1,
                 .task = TRACE_NONE,
                 .graph = TRACE_NONE,
                 .name = e->name,
                 .cat = e->cat,
                 .launch = TRACE_NO_OP};
  trace_op_kind kind = trace_classify_cat(trace_model_str(m, e->cat));
  op.kind = (uint8_t)kind;
  int gpu = trace_op_is_gpu(&op);
  if (gpu || kind == TRACE_OP_RUNTIME) {
    if (check_arg(L, &e->correlation))
      return -1;
    if (e->correlation.present)
      op.correlation = e->correlation.v;
  }
  if (gpu) {
    if (check_arg(L, &e->graph))
      return -1;
    if (e->graph.present)
      op.graph = e->graph.v;
  }
  if (kind != TRACE_OP_OTHER) {
    if (check_arg(L, &e->task) || check_arg(L, &e->task_name))
      return -1;
    if (e->task.present)
      op.task = e->task.v;
    if (e->task_name.present)
      op.task_name = e->task_name.str;
  }
  if (kind == TRACE_OP_TASK && e->ready_by.present && read_ready(L, e, &op))
    return -1;
  if (gpu) {
    if (read_gpu(L, e, &op))
      return -1;
  } else if (kind != TRACE_OP_OTHER) {
    op.lane = thread_of(L, &e->pid, &e->tid);
    if (op.lane == UINT32_MAX)
      return oom(L);
  } else {
    /* Other ops (PyTorch's cpu_op, annotations, ...) are counted but not
     * analysed or drawn, so they make no lanes. */
    op.lane = TRACE_NO_OP;
  }
  op.track = track_of(L, &e->pid, &e->tid);
  if (op.track == UINT32_MAX)
    return oom(L);
  if (trace_grow((void **)&m->ops, &L->ops_cap, m->nops + 1, sizeof *m->ops))
    return oom(L);
  m->ops[m->nops++] = op;
  return 0;
}

static int add_meta(trace_loader *L, const event *e) {
  const char *name = trace_model_str(L->m, e->name);
  int thread = strcmp(name, WEFT_TRF_META_THREAD_NAME) == 0;
  if (!thread && strcmp(name, WEFT_TRF_META_PROCESS_NAME) != 0)
    return 0;
  if (check_arg(L, &e->meta_name))
    return -1;
  if (!e->meta_name.present)
    return 0;
  if (trace_grow((void **)&L->metas, &L->metas_cap, L->nmetas + 1,
                 sizeof *L->metas))
    return oom(L);
  L->metas[L->nmetas++] =
      (trace_meta){thread, e->pid, e->tid, e->meta_name.str};
  return 0;
}

/* A launch flow's end: kept by id for `weft trace check` (and still
 * counted as ignored: the analysis pairs launches by correlation). */
static int add_flow(trace_loader *L, const event *e) {
  trace_model *m = L->m;
  int start = e->ph == PH_FLOW_START;
  int64_t **v = start ? &m->flow_starts : &m->flow_ends;
  size_t *n = start ? &m->nflow_starts : &m->nflow_ends;
  size_t *cap = start ? &m->cap_flow_starts : &m->cap_flow_ends;
  if (trace_grow((void **)v, cap, *n + 1, sizeof **v))
    return oom(L);
  (*v)[(*n)++] = e->id;
  m->ignored++;
  return 0;
}

/* A weft instant's args need[0..n), the last (its task) optional, and
 * its time: -1 when one is malformed (reported), 0 when one of the rest
 * is missing (the instant is skipped), 1 to keep it. */
static int instant_args(trace_loader *L, const event *e, const arg *const *need,
                        size_t n) {
  for (size_t i = 0; i < n; i++)
    if (check_arg(L, need[i]))
      return -1;
  for (size_t i = 0; i + 1 < n; i++)
    if (!need[i]->present)
      return 0;
  if (!e->has_ts || !(fabs(e->ts) <= TRACE_MAX_TIME))
    return trace_json_fail(&L->j, e->ts_offset,
                           "\"" WEFT_TRF_TS "\" must be in [-1e15, 1e15]");
  return 1;
}

/* A stream wait: kept when every field is there (a wait without one
 * names nothing to follow). */
static int add_stream_wait(trace_loader *L, const event *e) {
  trace_model *m = L->m;
  const arg *need[] = {&e->wait_dev,   &e->wait_stream, &e->for_dev,
                       &e->for_stream, &e->recorded,    &e->task};
  int rc = instant_args(L, e, need, sizeof need / sizeof need[0]);
  if (rc <= 0)
    return rc;
  if (!(fabs(e->recorded.num) <= TRACE_MAX_TIME))
    return trace_json_fail(&L->j, e->recorded.offset,
                           "args.\"" WEFT_TRF_ARG_RECORDED_AT
                           "\" must be in [-1e15, 1e15]");
  if (trace_grow((void **)&m->swaits, &m->cap_swaits, m->nswaits + 1,
                 sizeof *m->swaits))
    return oom(L);
  m->swaits[m->nswaits++] =
      (trace_stream_wait){.ts = e->ts,
                          .recorded = e->recorded.num,
                          .device = e->wait_dev.v,
                          .stream = e->wait_stream.v,
                          .for_device = e->for_dev.v,
                          .for_stream = e->for_stream.v,
                          .task = e->task.present ? e->task.v : TRACE_NONE};
  return 0;
}

/* A stream taken over: kept when the stream and both tasks' ids are
 * there (the taker's is absent for a plain thread). */
static int add_takeover(trace_loader *L, const event *e) {
  trace_model *m = L->m;
  const arg *need[] = {&e->wait_dev, &e->wait_stream, &e->from_task, &e->task};
  int rc = instant_args(L, e, need, sizeof need / sizeof need[0]);
  if (rc <= 0)
    return rc;
  if (trace_grow((void **)&m->takeovers, &m->cap_takeovers, m->ntakeovers + 1,
                 sizeof *m->takeovers))
    return oom(L);
  m->takeovers[m->ntakeovers++] =
      (trace_takeover){.ts = e->ts,
                       .device = e->wait_dev.v,
                       .stream = e->wait_stream.v,
                       .task = e->task.present ? e->task.v : TRACE_NONE,
                       .from = e->from_task.v};
  return 0;
}

/* An implicit synchronisation, for `weft trace explain`. */
static int add_sync(trace_loader *L, const event *e) {
  trace_model *m = L->m;
  if (check_arg(L, &e->task) || check_arg(L, &e->message))
    return -1;
  if (!(fabs(e->ts) <= TRACE_MAX_TIME))
    return trace_json_fail(&L->j, e->ts_offset,
                           "\"" WEFT_TRF_TS "\" must be in [-1e15, 1e15]");
  if (trace_grow((void **)&m->syncs, &m->cap_syncs, m->nsyncs + 1,
                 sizeof *m->syncs))
    return oom(L);
  double stall = e->stall.present ? e->stall.num : 0;
  m->syncs[m->nsyncs++] =
      (trace_sync){.start = e->ts - stall,
                   .end = e->ts,
                   .task = e->task.present ? e->task.v : TRACE_NONE,
                   .message = e->message.present ? e->message.str : 0};
  return 0;
}

/* ---- the event's fields -------------------------------------------------- */

enum {
  K_OTHER,
  K_PH,
  K_NAME,
  K_CAT,
  K_PID,
  K_TID,
  K_TS,
  K_DUR,
  K_ARGS,
  K_ID,
  NKEYS
};

static const char *const keys[NKEYS] = {
    [K_OTHER] = "",         [K_PH] = WEFT_TRF_PH,   [K_NAME] = WEFT_TRF_NAME,
    [K_CAT] = WEFT_TRF_CAT, [K_PID] = WEFT_TRF_PID, [K_TID] = WEFT_TRF_TID,
    [K_TS] = WEFT_TRF_TS,   [K_DUR] = WEFT_TRF_DUR, [K_ARGS] = WEFT_TRF_ARGS,
    [K_ID] = WEFT_TRF_ID};

/* Reads the value t of field k into e. */
static int read_field(trace_loader *L, event *e, int k,
                      const trace_json_token *t) {
  switch (k) {
  case K_PH:
    if (t->type != TRACE_JSON_STRING)
      return trace_load_fail_type(L, t, keys[k], "a string");
    e->has_ph = 1;
    e->ph = trace_json_is(t, WEFT_TRF_PH_COMPLETE)     ? PH_COMPLETE
            : trace_json_is(t, WEFT_TRF_PH_METADATA)   ? PH_METADATA
            : trace_json_is(t, WEFT_TRF_PH_FLOW_START) ? PH_FLOW_START
            : trace_json_is(t, WEFT_TRF_PH_FLOW_END)   ? PH_FLOW_END
            : trace_json_is(t, WEFT_TRF_PH_INSTANT)    ? PH_INSTANT
                                                       : PH_OTHER;
    return 0;
  case K_ID:
    if (as_integer(t, &e->id) == 0)
      e->has_id = 1;
    else if (t->type != TRACE_JSON_NUMBER)
      return trace_json_skip(&L->j, t); /* string ids: not weft's flows */
    return 0;
  case K_NAME:
  case K_CAT: {
    if (t->type != TRACE_JSON_STRING)
      return trace_load_fail_type(L, t, keys[k], "a string");
    uint32_t id = trace_intern(L->m, t->str, t->len);
    if (id == UINT32_MAX)
      return oom(L);
    if (k == K_NAME) {
      e->name = id;
      e->has_name = 1;
    } else {
      e->cat = id;
    }
    return 0;
  }
  case K_PID:
  case K_TID:
    return read_id(L, t, keys[k], k == K_PID ? &e->pid : &e->tid);
  case K_TS:
  case K_DUR:
    if (t->type != TRACE_JSON_NUMBER)
      return trace_load_fail_type(L, t, keys[k], "a number");
    if (k == K_TS) {
      e->ts = t->num;
      e->has_ts = 1;
      e->ts_offset = t->offset;
    } else {
      e->dur = t->num;
      e->has_dur = 1;
      e->dur_offset = t->offset;
    }
    return 0;
  case K_ARGS:
    if (t->type != TRACE_JSON_OBJECT)
      return trace_load_fail_type(L, t, keys[k], "an object");
    return read_args(L, e);
  default:
    return trace_json_skip(&L->j, t);
  }
}

int trace_load_event(trace_loader *L, size_t offset) {
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
    int k = K_PH;
    while (k < NKEYS && !trace_json_is(&t, keys[k]))
      k++;
    if (k == NKEYS)
      k = K_OTHER;
    if (trace_json_next(&L->j, &t) == TRACE_JSON_ERROR ||
        read_field(L, &e, k, &t))
      return -1;
  }
  L->m->events++;
  if (!e.has_ph)
    return trace_json_fail(&L->j, offset, "event without \"" WEFT_TRF_PH "\"");
  if ((wide(&e.pid) || wide(&e.tid)) && L->m->wide.count++ == 0)
    L->m->wide =
        (trace_wide_id){1, e.name, e.has_ts, e.ts, e.pid.num, e.tid.num};
  if (e.ph == PH_COMPLETE) {
    L->m->complete++;
    return add_complete(L, &e);
  }
  if (e.ph == PH_METADATA) {
    L->m->metadata++;
    return add_meta(L, &e);
  }
  if (e.ph == PH_INSTANT &&
      strcmp(trace_model_str(L->m, e.cat), WEFT_TRF_CAT_CHECK) == 0) {
    /* weft check's findings, by kind (the event's name) */
    const char *kind = trace_model_str(L->m, e.name);
    L->m->checks++;
    L->m->check_races += strcmp(kind, "race") == 0;
    L->m->check_syncs += strcmp(kind, "implicit sync") == 0;
    if (check_arg(L, &e.stall))
      return -1;
    /* Bounded as durations are, so that the sum stays finite. */
    if (e.stall.present && !(e.stall.num >= 0 && e.stall.num <= TRACE_MAX_TIME))
      return trace_json_fail(&L->j, e.stall.offset,
                             "args.\"" WEFT_TRF_ARG_STALL_US "\" must be a "
                             "duration in [0, 1e15]");
    if (e.stall.present)
      L->m->check_stall_us += e.stall.num;
    if (strcmp(kind, "implicit sync") == 0 && e.has_ts)
      return add_sync(L, &e);
    return 0;
  }
  if (e.ph == PH_INSTANT &&
      strcmp(trace_model_str(L->m, e.cat), WEFT_TRF_CAT_STREAM_WAIT) == 0)
    return add_stream_wait(L, &e);
  if (e.ph == PH_INSTANT &&
      strcmp(trace_model_str(L->m, e.cat), WEFT_TRF_CAT_TAKEOVER) == 0)
    return add_takeover(L, &e);
  if ((e.ph == PH_FLOW_START || e.ph == PH_FLOW_END) && e.has_id &&
      strcmp(trace_model_str(L->m, e.cat), WEFT_TRF_CAT_FLOW) == 0)
    return add_flow(L, &e);
  L->m->ignored++;
  return 0;
}
