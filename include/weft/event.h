/* Events: time GPU work and order streams. All calls act on the calling
 * task's (or thread's) current stream. */
#ifndef WEFT_EVENT_H
#define WEFT_EVENT_H

#include "common.h"

WEFT_BEGIN_DECLS

typedef struct weft_event weft_event;

/* Creates a timing-capable event on the current task's device.
 * Errors: WEFT_EINVAL, WEFT_ESTATE (no runtime), WEFT_ENOMEM. */
WEFT_API int weft_event_create(weft_event **ev);

/* Destroys *ev and sets it to NULL. Work that waits on it is unaffected. */
WEFT_API int weft_event_destroy(weft_event **ev);

/* Records ev at the current end of the current stream. */
WEFT_API int weft_event_record(weft_event *ev);

/* Makes the current stream wait, on the device, for ev's latest record.
 * The caller does not wait. */
WEFT_API int weft_event_wait(weft_event *ev);

/* Waits until ev's latest record completed: yields in a task, blocks on a
 * plain thread. */
WEFT_API int weft_event_sync(weft_event *ev);

/* 0 if ev's latest record completed, WEFT_EAGAIN if not. */
WEFT_API int weft_event_query(weft_event *ev);

/* Milliseconds between two completed records. Errors: WEFT_EAGAIN (not
 * complete), WEFT_ESTATE (never recorded). */
WEFT_API int weft_event_elapsed_ms(weft_event *start, weft_event *end,
                                   float *ms);

WEFT_END_DECLS

#endif
