/* What weft_shutdown (runtime.c) asks of registered data
 * (data_handles.c): how many handles of a runtime are still registered, to
 * name them among the objects that keep it open. */
#ifndef WEFT__DATA_LIVE_H
#define WEFT__DATA_LIVE_H

#include <stddef.h>

struct weft_runtime;

size_t weft__data_live(const struct weft_runtime *rt);

#endif
