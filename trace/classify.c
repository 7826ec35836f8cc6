/* The meanings of classify.h, and the names of ready kinds (model.h). */
#include "classify.h"

#include <string.h>

#include "trace_format.h"

/* ASCII case-insensitive equality: older Kineto releases capitalise. */
static int same_word(const char *s, const char *t) {
  for (; *s && *t; s++, t++) {
    char c = *s >= 'A' && *s <= 'Z' ? (char)(*s - 'A' + 'a') : *s;
    char d = *t >= 'A' && *t <= 'Z' ? (char)(*t - 'A' + 'a') : *t;
    if (c != d)
      return 0;
  }
  return *s == *t;
}

trace_op_kind trace_classify_cat(const char *cat) {
  if (same_word(cat, WEFT_TRF_CAT_KERNEL))
    return TRACE_OP_KERNEL;
  if (same_word(cat, WEFT_TRF_CAT_MEMCPY) ||
      same_word(cat, WEFT_TRF_CAT_MEMCPY_ALT))
    return TRACE_OP_MEMCPY;
  if (same_word(cat, WEFT_TRF_CAT_MEMSET) ||
      same_word(cat, WEFT_TRF_CAT_MEMSET_ALT))
    return TRACE_OP_MEMSET;
  if (same_word(cat, WEFT_TRF_CAT_RUNTIME) ||
      same_word(cat, WEFT_TRF_CAT_DRIVER) ||
      same_word(cat, WEFT_TRF_CAT_RUNTIME_ALT) ||
      same_word(cat, WEFT_TRF_CAT_DRIVER_ALT))
    return TRACE_OP_RUNTIME;
  if (same_word(cat, WEFT_TRF_CAT_TASK))
    return TRACE_OP_TASK;
  if (same_word(cat, WEFT_TRF_CAT_WAIT))
    return TRACE_OP_WAIT;
  if (same_word(cat, WEFT_TRF_CAT_RANGE))
    return TRACE_OP_RANGE;
  return TRACE_OP_OTHER;
}

/* Each direction's spellings, in the order a name is searched for them. */
static const struct {
  const char *word;
  trace_copy_dir dir;
} dir_words[] = {
    {WEFT_TRF_DIR_HTOD, TRACE_COPY_HTOD},
    {WEFT_TRF_DIR_DTOH, TRACE_COPY_DTOH},
    {WEFT_TRF_DIR_DTOD, TRACE_COPY_DTOD},
    {WEFT_TRF_DIR_HTOH, TRACE_COPY_HTOH},
    {WEFT_TRF_DIR_PTOP, TRACE_COPY_PTOP},
    {WEFT_TRF_DIR_HTOD_ALT, TRACE_COPY_HTOD},
    {WEFT_TRF_DIR_DTOH_ALT, TRACE_COPY_DTOH},
    {WEFT_TRF_DIR_DTOD_ALT, TRACE_COPY_DTOD},
    {WEFT_TRF_DIR_HTOH_ALT, TRACE_COPY_HTOH},
};
enum { NDIR_WORDS = sizeof dir_words / sizeof dir_words[0] };

trace_copy_dir trace_classify_dir_arg(const char *direction) {
  for (size_t i = 0; i < NDIR_WORDS; i++)
    if (same_word(direction, dir_words[i].word))
      return dir_words[i].dir;
  return TRACE_COPY_OTHER;
}

trace_copy_dir trace_classify_dir_name(const char *name) {
  for (size_t i = 0; i < NDIR_WORDS; i++)
    if (strstr(name, dir_words[i].word))
      return dir_words[i].dir;
  return TRACE_COPY_OTHER;
}

trace_host_mem trace_classify_host_mem(const char *name) {
  if (strstr(name, WEFT_TRF_MEM_PAGEABLE))
    return TRACE_MEM_PAGEABLE;
  if (strstr(name, WEFT_TRF_MEM_PINNED))
    return TRACE_MEM_PINNED;
  return TRACE_MEM_UNKNOWN;
}

trace_ready_kind trace_ready_kind_of(const char *name) {
  for (int k = TRACE_READY_SPAWN; k < TRACE_READY_OTHER; k++)
    if (strcmp(name, weft_trf_ready_name(k)) == 0)
      return (trace_ready_kind)k;
  return TRACE_READY_OTHER;
}

const char *trace_ready_kind_name(trace_ready_kind k) {
  if (k == TRACE_READY_OTHER)
    return "other";
  const char *name = weft_trf_ready_name((int)k);
  return name ? name : "";
}
