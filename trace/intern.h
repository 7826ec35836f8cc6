/* The model's interned strings: every name, category and string id of a
 * trace is stored once and referred to by a 32-bit id, which keeps an op at
 * 64 bytes and makes comparing names comparing numbers. */
#ifndef WEFT_TRACE_INTERN_H
#define WEFT_TRACE_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* Starts m's strings with id 0, the empty string. Returns 0, or -1 when out
 * of memory. */
int trace_intern_init(trace_model *m);

/* The id of s[0, n), added when new, or UINT32_MAX when out of memory. */
uint32_t trace_intern(trace_model *m, const char *s, size_t n);

#endif
