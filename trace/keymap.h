/* A hash map from three 64-bit words to an index, for finding a trace's
 * lanes (device, stream), threads (pid, tid, which of them are strings) and
 * launch calls (correlation) in time linear in the input, however hostile. */
#ifndef WEFT_TRACE_KEYMAP_H
#define WEFT_TRACE_KEYMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct trace_keymap {
  uint64_t *keys; /* 3 per slot */
  uint32_t *vals; /* index + 1, or 0 for an empty slot */
  size_t cap, n;
} trace_keymap;

/* Empties k; a zeroed trace_keymap is an empty map too. */
void trace_keymap_free(trace_keymap *k);

/* The index stored for (a, b, c), or UINT32_MAX when there is none. */
uint32_t trace_keymap_get(const trace_keymap *k, uint64_t a, uint64_t b,
                          uint64_t c);

/* Stores value for (a, b, c) unless a value is there; returns the stored
 * value, or UINT32_MAX when out of memory. */
uint32_t trace_keymap_put(trace_keymap *k, uint64_t a, uint64_t b, uint64_t c,
                          uint32_t value);

#endif
