/* Events: time GPU work and order streams. All calls act on the calling
 * task's (or thread's) current stream. */
#ifndef WEFT_EVENT_H
#define WEFT_EVENT_H

#include "common.h"

WEFT_BEGIN_DECLS

typedef struct weft_event weft_event;

/* Creates a timing-capable event on the current task's device (device 0
 * on a plain thread).
 * Errors: WEFT_EINVAL (ev NULL), WEFT_ESTATE (no runtime), WEFT_ENOMEM,
 * device errors. Context: any thread; never blocks. */
WEFT_API int weft_event_create(weft_event **ev);

/* Destroys *ev and sets it to NULL. Work that waits on it is unaffected.
 * Needs no runtime.
 * Errors: WEFT_EINVAL (ev or *ev NULL), WEFT_EHANDLE (destroyed, or not an
 * event), device errors (the event is destroyed all the same).
 * Context: any thread; never blocks. */
WEFT_API int weft_event_destroy(weft_event **ev);

/* Records ev at the current end of the current stream.
 * Errors: WEFT_ESTATE (no runtime), WEFT_EINVAL (ev NULL, or an event of
 * another device), WEFT_EHANDLE, WEFT_ENOMEM, device errors.
 * Context: any thread; never blocks. */
WEFT_API int weft_event_record(weft_event *ev);

/* Makes the current stream wait, on the device, for ev's latest record.
 * The caller does not wait. An event never recorded is refused: there is
 * no record to wait for, and waiting for one that another task will make
 * needs that task joined or followed (weft_task_after) first.
 * Errors: WEFT_ESTATE (no runtime, or ev never recorded), WEFT_EINVAL (ev
 * NULL, or an event of another runtime), WEFT_EHANDLE, WEFT_ENOMEM, device
 * errors.
 * Context: any thread; never blocks. */
WEFT_API int weft_event_wait(weft_event *ev);

/* Waits until ev's latest record completed: yields in a task, blocks on a
 * plain thread. An event never recorded is refused, as by weft_event_wait.
 * Recording ev again while this waits: a plain thread waits for the
 * record made before its call, a task for the latest one when it looks
 * (it polls); a program that re-records while another waits should wait
 * on an event of its own per record.
 * Errors: WEFT_ESTATE (no runtime, or ev never recorded), WEFT_EINVAL (ev
 * NULL), WEFT_EHANDLE, device errors. Context: any thread; may switch. */
WEFT_API int weft_event_sync(weft_event *ev);

/* 0 if ev's latest record completed (or ev was never recorded),
 * WEFT_EAGAIN if not. Needs no runtime.
 * Errors: WEFT_EINVAL (ev NULL), WEFT_EHANDLE, device errors.
 * Context: any thread; never blocks. */
WEFT_API int weft_event_query(weft_event *ev);

/* Milliseconds between two completed records, into *ms. Needs no runtime.
 * Errors: WEFT_EINVAL (NULL argument, or events of different devices),
 * WEFT_EHANDLE, WEFT_ESTATE (either never recorded), WEFT_EAGAIN (either
 * not complete), device errors. Context: any thread; never blocks. */
WEFT_API int weft_event_elapsed_ms(weft_event *start, weft_event *end,
                                   float *ms);

WEFT_END_DECLS

#endif
