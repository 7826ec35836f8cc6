/* The map of keymap.h: open addressing with linear probing, at most half
 * full. */
#include "keymap.h"

#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t h = a * 0x9E3779B97F4A7C15u;
  h ^= (b + 0x632BE59BD9B4E019u) * 0xC2B2AE3D27D4EB4Fu;
  h ^= (c + 1) * 0x165667B19E3779F9u;
  return h ^ (h >> 31);
}

void trace_keymap_free(trace_keymap *k) {
  free(k->keys);
  free(k->vals);
  memset(k, 0, sizeof *k);
}

static uint32_t *slot_of(const trace_keymap *k, uint64_t a, uint64_t b,
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

uint32_t trace_keymap_get(const trace_keymap *k, uint64_t a, uint64_t b,
                          uint64_t c) {
  if (!k->cap)
    return UINT32_MAX;
  uint32_t v = *slot_of(k, a, b, c);
  return v ? v - 1 : UINT32_MAX;
}

/* Doubles k's capacity, moving every entry. */
static int grow_map(trace_keymap *k) {
  trace_keymap bigger = {0};
  bigger.cap = k->cap ? k->cap * 2 : 64;
  bigger.keys = malloc(bigger.cap * 3 * sizeof *bigger.keys);
  bigger.vals = calloc(bigger.cap, sizeof *bigger.vals);
  if (!bigger.keys || !bigger.vals) {
    trace_keymap_free(&bigger);
    return -1;
  }
  for (size_t i = 0; i < k->cap; i++) {
    if (!k->vals[i])
      continue;
    const uint64_t *key = k->keys + 3 * i;
    uint32_t *slot = slot_of(&bigger, key[0], key[1], key[2]);
    size_t at = (size_t)(slot - bigger.vals);
    memcpy(bigger.keys + 3 * at, key, 3 * sizeof *key);
    *slot = k->vals[i];
  }
  bigger.n = k->n;
  trace_keymap_free(k);
  *k = bigger;
  return 0;
}

uint32_t trace_keymap_put(trace_keymap *k, uint64_t a, uint64_t b, uint64_t c,
                          uint32_t value) {
  if ((k->n + 1) * 2 > k->cap && grow_map(k))
    return UINT32_MAX;
  uint32_t *slot = slot_of(k, a, b, c);
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
