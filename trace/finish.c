/* Finishing a loaded trace (loader.h): once every event is read, the ops go
 * in time order, lanes and threads are numbered in order of their ids
 * instead of as first seen, threads get their names from "M" events, and
 * each GPU op is matched to the API call that launched it. */
#include <stdlib.h>
#include <string.h>

#include "loader.h"
#include "sort.h"

/* ---- ordering ------------------------------------------------------------ */

/* Op indices by start time; the sort is stable, so ties keep file order. */
static int cmp_op_index(const void *pa, const void *pb, const void *ctx) {
  const trace_op *ops = ctx;
  double ta = ops[*(const uint32_t *)pa].ts, tb = ops[*(const uint32_t *)pb].ts;
  return ta < tb ? -1 : ta > tb;
}

static int sort_ops(trace_model *m) {
  int sorted = 1;
  for (size_t i = 1; i < m->nops && sorted; i++)
    sorted = m->ops[i - 1].ts <= m->ops[i].ts;
  if (sorted)
    return 0;
  /* Sorting indices moves 4 bytes per step instead of an op's 64. */
  uint32_t *idx = malloc(m->nops * sizeof *idx);
  trace_op *ops = malloc(m->nops * sizeof *ops);
  if (!idx || !ops) {
    free(idx);
    free(ops);
    return -1;
  }
  for (size_t i = 0; i < m->nops; i++)
    idx[i] = (uint32_t)i;
  if (trace_sort(idx, m->nops, sizeof *idx, cmp_op_index, m->ops)) {
    free(idx);
    free(ops);
    return -1;
  }
  for (size_t i = 0; i < m->nops; i++)
    ops[i] = m->ops[idx[i]];
  free(idx);
  free(m->ops);
  m->ops = ops;
  return 0;
}

/* Lane indices by device, then stream. */
static int cmp_lane_index(const void *pa, const void *pb, const void *ctx) {
  const trace_gpu_lane *lanes = ctx;
  const trace_gpu_lane *a = &lanes[*(const uint32_t *)pa];
  const trace_gpu_lane *b = &lanes[*(const uint32_t *)pb];
  if (a->device != b->device)
    return a->device < b->device ? -1 : 1;
  return a->stream < b->stream ? -1 : a->stream > b->stream;
}

/* Numbers before strings, numbers by value, strings by bytes. */
static int cmp_id(const trace_model *m, const trace_id *a, const trace_id *b) {
  if (a->is_str != b->is_str)
    return a->is_str ? 1 : -1;
  if (a->is_str)
    return strcmp(trace_model_str(m, a->str), trace_model_str(m, b->str));
  return a->num < b->num ? -1 : a->num > b->num;
}

/* Thread indices by pid, then tid. */
static int cmp_thread_index(const void *pa, const void *pb, const void *ctx) {
  const trace_loader *L = ctx;
  const trace_thread *a = &L->threads_v[*(const uint32_t *)pa];
  const trace_thread *b = &L->threads_v[*(const uint32_t *)pb];
  int c = cmp_id(L->m, &a->pid, &b->pid);
  return c ? c : cmp_id(L->m, &a->tid, &b->tid);
}

/* Sorts the n records of size bytes at v, comparing their indices with cmp,
 * and returns the map from old index to new, or NULL when out of memory (v
 * unchanged). */
static uint32_t *sort_with_map(void *v, size_t n, size_t size,
                               trace_sort_cmp cmp, const void *ctx) {
  uint32_t *order = malloc(n * sizeof *order);
  uint32_t *map = malloc(n * sizeof *map);
  unsigned char *sorted = malloc(n * size);
  if (!order || !map || !sorted)
    goto fail;
  for (size_t i = 0; i < n; i++)
    order[i] = (uint32_t)i;
  if (trace_sort(order, n, sizeof *order, cmp, ctx))
    goto fail;
  for (size_t i = 0; i < n; i++) {
    memcpy(sorted + i * size, (unsigned char *)v + (size_t)order[i] * size,
           size);
    map[order[i]] = (uint32_t)i;
  }
  memcpy(v, sorted, n * size);
  free(order);
  free(sorted);
  return map;
fail:
  free(order);
  free(map);
  free(sorted);
  return NULL;
}

/* ---- names --------------------------------------------------------------- */

/* Applies the "M" events to the sorted threads. */
static int name_threads(trace_loader *L) {
  trace_model *m = L->m;
  /* Rebuild the thread map on the sorted threads. */
  trace_keymap_free(&L->threads);
  for (size_t i = 0; i < m->nthreads; i++) {
    trace_thread *t = &m->threads[i];
    if (trace_keymap_put(&L->threads, trace_id_key(&t->pid),
                         trace_id_key(&t->tid), trace_id_tags(&t->pid, &t->tid),
                         (uint32_t)i) == UINT32_MAX)
      return -1;
  }
  /* Process names go through a map by pid, so hostile input with many of
   * them and many threads stays linear. */
  trace_keymap procs = {0};
  for (size_t i = 0; i < L->nmetas; i++) {
    const trace_meta *md = &L->metas[i];
    if (md->thread) {
      uint32_t t = trace_keymap_get(&L->threads, trace_id_key(&md->pid),
                                    trace_id_key(&md->tid),
                                    trace_id_tags(&md->pid, &md->tid));
      if (t != UINT32_MAX)
        m->threads[t].name = md->name;
    } else if (trace_keymap_put(&procs, trace_id_key(&md->pid),
                                (uint64_t)md->pid.is_str, 0,
                                md->name) == UINT32_MAX) {
      trace_keymap_free(&procs);
      return -1;
    }
  }
  for (size_t k = 0; k < m->nthreads && procs.n; k++) {
    trace_thread *t = &m->threads[k];
    uint32_t name = trace_keymap_get(&procs, trace_id_key(&t->pid),
                                     (uint64_t)t->pid.is_str, 0);
    if (name != UINT32_MAX)
      t->process_name = name;
  }
  trace_keymap_free(&procs);
  return 0;
}

/* ---- launches, counts ---------------------------------------------------- */

/* Renumbers each op's lane or thread, counts ops per kind and lane, and
 * links each GPU op to the first API call in time with its correlation. */
static int link_ops(trace_model *m, const uint32_t *lane_map,
                    const uint32_t *thread_map) {
  trace_keymap corr = {0};
  for (size_t i = 0; i < m->nops; i++) {
    trace_op *op = &m->ops[i];
    if (op->kind == TRACE_OP_RUNTIME && op->correlation != TRACE_NONE &&
        trace_keymap_put(&corr, (uint64_t)op->correlation, 0, 0, (uint32_t)i) ==
            UINT32_MAX) {
      trace_keymap_free(&corr);
      return -1;
    }
  }
  for (size_t i = 0; i < m->nops; i++) {
    trace_op *op = &m->ops[i];
    m->count[op->kind]++;
    if (trace_op_is_gpu(op)) {
      if (op->fill < 0) /* Kineto's occupancy: read_launch in load_event.c */
        op->fill = m->warps_per_sm > 0 && -op->fill > 1.001f * m->warps_per_sm
                       ? -op->fill / (float)m->warps_per_sm
                       : 0;
      op->lane = lane_map[op->lane];
      m->gpu_lanes[op->lane].nops++;
      if (op->correlation != TRACE_NONE)
        op->launch = trace_keymap_get(&corr, (uint64_t)op->correlation, 0, 0);
    } else if (op->lane != TRACE_NO_OP) {
      op->lane = thread_map[op->lane];
      m->threads[op->lane].nops++;
    }
  }
  trace_keymap_free(&corr);
  return 0;
}

int trace_load_finish(trace_loader *L) {
  trace_model *m = L->m;
  if (sort_ops(m))
    return -1;
  /* Lanes and threads were numbered as first seen; number them in order. */
  uint32_t *lane_map = NULL, *thread_map = NULL;
  if (m->ngpu_lanes &&
      !(lane_map = sort_with_map(L->lanes_v, m->ngpu_lanes, sizeof *L->lanes_v,
                                 cmp_lane_index, L->lanes_v)))
    return -1;
  if (m->nthreads && !(thread_map = sort_with_map(L->threads_v, m->nthreads,
                                                  sizeof *L->threads_v,
                                                  cmp_thread_index, L))) {
    free(lane_map);
    return -1;
  }
  m->gpu_lanes = L->lanes_v;
  m->threads = L->threads_v;
  L->lanes_v = NULL;
  L->threads_v = NULL;
  int rc = name_threads(L) || link_ops(m, lane_map, thread_map) ? -1 : 0;
  free(lane_map);
  free(thread_map);
  return rc;
}
