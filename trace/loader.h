/* The state of one trace_model_load, shared by its steps: reading the events
 * (load.c, load_event.c) and, once all are read, finishing the model
 * (finish.c). */
#ifndef WEFT_TRACE_LOADER_H
#define WEFT_TRACE_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "json.h"
#include "keymap.h"
#include "model.h"

/* A process_name or thread_name event, applied when all threads are known
 * (an "M" event may come before or after the thread's ops). */
typedef struct trace_meta {
  int thread; /* 1 thread_name, 0 process_name */
  trace_id pid, tid;
  uint32_t name;
} trace_meta;

typedef struct trace_loader {
  trace_model *m;
  trace_json j;
  size_t ops_cap;
  /* Lanes and threads, numbered as first seen, and their maps. */
  trace_keymap lanes, threads, tracks;
  trace_gpu_lane *lanes_v;
  size_t lanes_cap;
  trace_thread *threads_v;
  size_t threads_cap;
  size_t tracks_cap;
  trace_meta *metas;
  size_t nmetas, metas_cap;
  /* The last lane and thread found, for runs of events on one. */
  int64_t last_lane_device, last_lane_stream;
  uint32_t last_lane;
  trace_id last_pid, last_tid;
  uint32_t last_thread;
  trace_id last_track_pid, last_track_tid;
  uint32_t last_track;
} trace_loader;

/* Reads one event, whose '{' at offset was just read, into the model. */
int trace_load_event(trace_loader *L, size_t offset);

/* Fails the load: "key" must be want, not what t is. */
int trace_load_fail_type(trace_loader *L, const trace_json_token *t,
                         const char *key, const char *want);

/* After every event is read: sorts the ops by time, numbers lanes and
 * threads in order, names threads, and matches GPU ops to their launch
 * calls. Returns 0, or -1 when out of memory. */
int trace_load_finish(trace_loader *L);

/* A pid or tid as a key of the thread map: its number or string id, and
 * which of the pair are strings. */
static inline uint64_t trace_id_key(const trace_id *id) {
  return id->is_str ? id->str : (uint64_t)id->num;
}

static inline uint64_t trace_id_tags(const trace_id *pid, const trace_id *tid) {
  return (uint64_t)pid->is_str | (uint64_t)tid->is_str << 1;
}

#endif
