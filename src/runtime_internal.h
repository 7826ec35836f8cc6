/* The runtime object, shared by the core's files and in-tree tools. */
#ifndef WEFT__RUNTIME_INTERNAL_H
#define WEFT__RUNTIME_INTERNAL_H

#include "scheduler.h"

/* In-tree tools reach the backend of a public runtime through this. */
static inline weft__backend *weft__runtime_backend(weft_runtime *rt) {
  return rt->bk;
}

void weft__runtime_register(weft_runtime *rt);
void weft__runtime_unregister(weft_runtime *rt);

#endif
