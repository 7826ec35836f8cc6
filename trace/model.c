/* The model's own small functions (model.h): freeing it, the kinds and
 * directions by name, thread labels. Loading is in load.c, load_event.c and
 * finish.c; the strings in intern.c; what categories mean in classify.c. */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_format.h"

void trace_model_free(trace_model *m) {
  free(m->ops);
  free(m->gpu_lanes);
  free(m->threads);
  free(m->tracks);
  free(m->strings);
  free(m->string_offsets);
  free(m->string_table);
  free(m->flow_starts);
  free(m->flow_ends);
  free(m->syncs);
  free(m->swaits);
  free(m->takeovers);
  memset(m, 0, sizeof *m);
}

int trace_op_is_gpu(const trace_op *op) {
  return op->kind == TRACE_OP_KERNEL || op->kind == TRACE_OP_MEMCPY ||
         op->kind == TRACE_OP_MEMSET;
}

const char *trace_op_kind_name(trace_op_kind kind) {
  static const char *const names[TRACE_OP_NKINDS] = {
      "kernel", "memcpy", "memset", "runtime",
      "task",   "wait",   "range",  "other"};
  return (unsigned)kind < TRACE_OP_NKINDS ? names[kind] : "?";
}

const char *trace_copy_dir_name(trace_copy_dir dir) {
  static const char *const names[TRACE_COPY_NDIRS] = {
      [TRACE_COPY_NONE] = "",
      [TRACE_COPY_HTOD] = WEFT_TRF_DIR_HTOD,
      [TRACE_COPY_DTOH] = WEFT_TRF_DIR_DTOH,
      [TRACE_COPY_DTOD] = WEFT_TRF_DIR_DTOD,
      [TRACE_COPY_HTOH] = WEFT_TRF_DIR_HTOH,
      [TRACE_COPY_PTOP] = WEFT_TRF_DIR_PTOP,
      [TRACE_COPY_OTHER] = WEFT_TRF_DIR_OTHER};
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
