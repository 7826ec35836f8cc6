/* Interned strings (intern.h): the bytes in one growing buffer, their
 * offsets by id, and an open-addressing hash table from bytes to id. */
#include "intern.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603u; /* FNV-1a */
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211u;
  return h ^ (h >> 29);
}

static void table_insert(uint32_t *table, size_t cap, const trace_model *m,
                         uint32_t id) {
  const char *s = m->strings + m->string_offsets[id];
  size_t i = hash_bytes(s, strlen(s)) & (cap - 1);
  while (table[i])
    i = (i + 1) & (cap - 1);
  table[i] = id + 1;
}

int trace_intern_init(trace_model *m) {
  if (trace_grow((void **)&m->strings, &m->strings_cap, 1, 1) ||
      trace_grow((void **)&m->string_offsets, &m->string_offsets_cap, 1,
                 sizeof *m->string_offsets))
    return -1;
  m->strings[0] = '\0';
  m->string_offsets[0] = 0;
  m->strings_len = 1;
  m->nstrings = 1;
  return 0;
}

uint32_t trace_intern(trace_model *m, const char *s, size_t n) {
  if (n == 0)
    return 0;
  /* At most half full, so probes stay short. */
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
      trace_grow((void **)&m->strings, &m->strings_cap, m->strings_len + n + 1,
                 1) ||
      trace_grow((void **)&m->string_offsets, &m->string_offsets_cap,
                 m->nstrings + 1, sizeof *m->string_offsets))
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
