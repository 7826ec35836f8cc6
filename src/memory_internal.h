/* What memory.c offers the rest of the library: the copies into pageable
 * memory an exec has staged through helper tasks. */
#ifndef WEFT__MEMORY_INTERNAL_H
#define WEFT__MEMORY_INTERNAL_H

#include "caller.h"

/* Joins x's pending staging tasks (weft_sync, a task's end); returns
 * their first error. */
int weft__memory_join_pending(weft__exec *x);

#endif
