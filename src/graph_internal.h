/* What graph.c offers the rest of the library: a data-flow step run inline
 * inside a capture, and dropping a capture left open. */
#ifndef WEFT__GRAPH_INTERNAL_H
#define WEFT__GRAPH_INTERNAL_H

#include <stddef.h>

#include "caller.h"
#include "weft/dataflow.h"
#include "weft/task.h"

/* Runs fn(arg) at once as a data-flow step of the graph x's stream is
 * capturing, ordered by its accesses a[0..n) after the earlier steps
 * (graph.c explains how). 0, or the error, reported; the capture then
 * makes no graph. */
int weft__graph_step(weft__exec *x, weft_task_fn fn, void *arg,
                     const weft_access *a, size_t n);
/* Ends and drops a capture x left open (why: for the message), failing x
 * with WEFT_ESTATE so that its join or next weft_sync says so. */
void weft__graph_drop_capture(weft__exec *x, const char *why);

/* Before x frees device memory p on s: s waits for the queued replays of
 * destroyed graphs that used p, which then hold it no longer. 0 or the
 * error of the wait, reported. */
int weft__graph_before_free(weft__exec *x, weft__stream *s, const void *p);
/* Shutdown, all work done: the retired graphs go. */
void weft__graph_retired_release(struct weft_runtime *rt);

#endif
