/* The calling task's (or plain thread's) context, as the public calls and
 * the backends' libraries (src/cuda/) see it: its stream, device and
 * runtime, without the scheduler's structs. */
#ifndef WEFT__CALLER_H
#define WEFT__CALLER_H

#include <stdint.h>

#include "backend.h"

typedef struct weft__exec weft__exec;

typedef struct weft__caller {
  weft__exec *x;   /* opaque here; scheduler.h has it */
  weft__stream *s; /* the caller's stream, leased on first use */
  int dev;         /* the device the caller's work goes to */
  uint64_t epoch;  /* its runtime's: caches made for another are stale */
} weft__caller;

/* Fills *c for public call `call` (its name, for messages): 0, or the
 * error, reported (WEFT_ESTATE when no runtime is open). The stream counts
 * as used: the caller is about to queue work on it. */
int weft__caller_get(const char *call, weft__caller *c);

/* Runs fn(arg) on the calling thread's own stack: from a task, by
 * switching to the worker's scheduler context for the call (library code
 * such as cuBLAS's first initialisation needs more stack than a fiber
 * has); elsewhere, directly. */
void weft__call_on_thread_stack(void (*fn)(void *), void *arg);

#endif
