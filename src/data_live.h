/* What weft_shutdown (runtime.c) asks of registered data
 * (data_handles.c): the handles of a runtime still registered, with the
 * device allocations and events their instances hold, to name them among
 * the objects that keep it open. */
#ifndef WEFT__DATA_LIVE_H
#define WEFT__DATA_LIVE_H

#include <stddef.h>

struct weft_runtime;

typedef struct weft__data_left {
  size_t handles;
  size_t blocks;         /* of them, blocks of weft_data_register_blocks */
  size_t allocs, events; /* their instances' */
  const void *host;      /* the first handle's (lowest address) */
  size_t bytes;
} weft__data_left;

void weft__data_live(const struct weft_runtime *rt, weft__data_left *out);

#endif
