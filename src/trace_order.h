/* The tracer's side of declared order: which stream's work an event stands
 * for, and a stream told to wait for it, so that `weft trace explain`
 * names the waits a program declared (weft_event_wait, weft_task_after,
 * data flow, a graph's replay) instead of inferring them from times
 * (docs/decisions/tracing.md, "Stream waits are recorded"); and the
 * order no one declared, a stream taken over with work queued. backend.c
 * calls it at the two choke points, apart from trace.h, whose includers
 * are many enough (DESIGN.md's header rule); trace_record.c implements
 * it. */
#ifndef WEFT__TRACE_ORDER_H
#define WEFT__TRACE_ORDER_H

#include <stdatomic.h>
#include <stdint.h>

extern atomic_int weft__trace_on;

/* What an event's last traced record stood for: the stream's work queued
 * up to then. */
typedef struct weft__trace_mark {
  _Atomic uint64_t at; /* (device << 32 | the stream's trace id) + 1; 0:
                          none */
  _Atomic uint64_t ns; /* when, on the tracer's clock */
} weft__trace_mark;

/* At a record of an event whose mark is m, on stream (its trace id) of
 * device dev, by owner (a backend): notes it if owner's work is traced. */
void weft__trace_mark_set(weft__trace_mark *m, const void *owner, int dev,
                          uint32_t stream);
/* At a wait of stream (trace id) of device dev for an event whose mark
 * is m: records the wait if owner's work is traced and m names a traced
 * record. */
void weft__trace_stream_wait(const weft__trace_mark *m, const void *owner,
                             int dev, uint32_t stream);
/* At a lease that took over stream (trace id) of device dev, whose work
 * queued by task `from` (0: none) the taker's now follows undeclared
 * (docs/decisions/cuda.md, "Streams past those made ahead are taken
 * over"): records it if owner's work is traced. */
void weft__trace_takeover(const void *owner, int dev, uint32_t stream,
                          uint64_t from);

/* 1 while anything is traced: the hooks above are called only then. */
static inline int weft__trace_order_on(void) {
  return atomic_load_explicit(&weft__trace_on, memory_order_relaxed);
}

#endif
