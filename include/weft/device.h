/* Backends and devices: which backends this build has, and what a device is. */
#ifndef WEFT_DEVICE_H
#define WEFT_DEVICE_H

#include "common.h"

WEFT_BEGIN_DECLS

typedef enum weft_backend_kind {
  WEFT_BACKEND_AUTO = 0, /* CUDA when a device is present, else host */
  WEFT_BACKEND_HOST = 1, /* streams executed by CPU threads */
  WEFT_BACKEND_CUDA = 2  /* the CUDA runtime API */
} weft_backend_kind;

/* "auto", "host", "cuda"; "unknown" for other values. Static storage.
 * Errors: none. Context: any thread; never blocks. */
WEFT_API const char *weft_backend_name(weft_backend_kind kind);

/* Parses "auto", "host" or "cuda", in any case, into *out.
 * Errors: WEFT_EINVAL (name or out NULL, or another name).
 * Context: any thread; never blocks. */
WEFT_API int weft_backend_parse(const char *name, weft_backend_kind *out);

/* 1 if this build of the library contains the backend, else 0 (also for
 * WEFT_BACKEND_AUTO and other values).
 * Errors: none. Context: any thread; never blocks. */
WEFT_API int weft_backend_built(weft_backend_kind kind);

/* Device properties. On the host backend, "device memory" is host memory and
 * multiprocessors are the executor threads. */
typedef struct weft_device_info {
  char name[256];
  weft_backend_kind backend;
  int ordinal;
  int cc_major, cc_minor;    /* compute capability; 0.0 on the host */
  int multiprocessors;       /* SMs, or host executor threads */
  int copy_engines;          /* asyncEngineCount */
  int concurrent_kernels;    /* 1 if kernels of different streams overlap */
  int max_resident_grids;    /* kernels that can run at once */
  int max_threads_per_block; /* launch limit checked by weft */
  int max_threads_per_sm;    /* threads resident on one SM; 0 on the host */
  int priority_least;        /* numerically largest priority (lowest) */
  int priority_greatest;     /* numerically smallest priority (highest) */
  size_t memory_total;       /* bytes */
  size_t memory_free;        /* bytes, at the time of the query */
  int unified_addressing;    /* 1 if host and device share an address space */
  int driver_version;        /* e.g. 13000; 0 on the host */
  int runtime_version;       /* e.g. 13000; 0 on the host */
} weft_device_info;

WEFT_END_DECLS

#endif
