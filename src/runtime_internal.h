/* The runtime object, shared by the core's files. */
#ifndef WEFT__RUNTIME_INTERNAL_H
#define WEFT__RUNTIME_INTERNAL_H

#include "backend.h"
#include "weft/runtime.h"

struct weft_runtime {
  weft_runtime_opts opts;
  weft__backend *bk;
};

/* In-tree tools reach the backend of a public runtime through this. */
static inline weft__backend *weft__runtime_backend(weft_runtime *rt) {
  return rt->bk;
}

#endif
