/* The one door into weft's internals from outside src/, for tests alone:
 * the backend contract (backend.h), the scheduler's structs, the pointer
 * registry, the error slots, weft check's counters, the data-flow
 * record's size, the CPU count's parts and the watchdog's reports. The demo,
 * the benchmarks and the tools use the public API (include/weft/). A test of
 * the CUDA backend's own code defines WEFT_INTERNAL_CUDA before including this,
 * for cuda/cuda_internal.h. */
#ifndef WEFT__WEFT_INTERNAL_H
#define WEFT__WEFT_INTERNAL_H

#include "backend.h"
#include "checker.h"
#include "cpus.h"
#include "dataflow.h"
#include "error_internal.h"
#include "ptrmap.h"
#include "runtime_state.h"
#include "watchdog.h"

#ifdef WEFT_INTERNAL_CUDA
#include "cuda/cuda_internal.h"
#endif

/* The backend of a public runtime. */
static inline weft__backend *weft__runtime_backend(weft_runtime *rt) {
  return rt->h.bk;
}

#endif
