/* The one door of every public call that acts for its caller: it finds
 * the calling task or thread (made for a plain thread on its first call),
 * and, as the call's flags ask, refuses the call inside a graph capture,
 * leases the caller's stream, holds a normal-priority task back while
 * high-priority work runs (admission.c), and tells weft check that the
 * caller issues work. Argobots' ABTI_SETUP_* prologue is the model: a new
 * call cannot forget a step. */
#ifndef WEFT__DOOR_H
#define WEFT__DOOR_H

#include <stdint.h>

#include "backend.h"
#include "caller.h"

/* What the door did for the call. */
typedef struct weft__caller {
  weft__exec *x;     /* the calling task's or thread's context */
  weft__backend *bk; /* its runtime's backend */
  weft__stream *s;   /* its stream (WEFT__DOOR_ISSUE), else NULL */
  int dev;           /* the device the caller's work goes to */
  uint64_t epoch;    /* its runtime's: caches made for another are stale */
} weft__caller;

enum {
  /* The call queues work on the caller's stream: lease it (on first use),
   * apply admission, and run weft check's issue hook. */
  WEFT__DOOR_ISSUE = 1 << 0,
  /* The call is refused (WEFT_ESTATE) while the caller captures a graph;
   * the door's `why` says why, for the message. Checked before anything
   * else, so a refused call changes nothing. */
  WEFT__DOOR_NO_CAPTURE = 1 << 1,
};

/* Fills *c for public call `call` (its name, for messages): 0, or the
 * error, reported (WEFT_ESTATE when no runtime is open). */
int weft__door(const char *call, unsigned flags, const char *why,
               weft__caller *c);

#endif
