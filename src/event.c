/* Public events, on the calling task's (or thread's) stream. */
#include "weft/event.h"
#include "door.h"
#include "wait.h"

/* Public event handles carry their object's generation (pool.h), so a
 * handle kept past its event's destroy never names the event that reuses
 * the memory. A stale handle reads as a destroyed event to the core's
 * checks (which look at the header alone). */
static weft__obj stale = {.magic = WEFT__MAGIC_DEAD};

static weft__event *EV(const weft_event *h) {
  if (!h)
    return NULL;
  weft__event *e = (weft__event *)weft__handle_obj(h);
  return weft__handle_live(h, &e->hdr) ? e : (weft__event *)&stale;
}

int weft_event_create(weft_event **ev) {
  if (!ev)
    return weft__err(WEFT_EINVAL, "weft_event_create: ev is NULL");
  weft__caller c;
  int rc = weft__door("weft_event_create", 0, NULL, &c);
  if (rc)
    return rc;
  weft__event *e;
  rc = weft__event_create(c.bk, c.dev, WEFT__EVENT_TIMING, &e);
  if (rc == 0)
    *ev = (weft_event *)weft__handle_of(&e->hdr);
  return rc;
}

int weft_event_destroy(weft_event **ev) {
  if (!ev)
    return weft__event_destroy(NULL);
  weft__event *e = EV(*ev);
  int rc = weft__event_destroy(&e);
  if (e == NULL) /* destroyed (also after a backend failure) */
    *ev = NULL;
  return rc;
}

int weft_event_record(weft_event *ev) {
  weft__caller c;
  int rc =
      weft__door("weft_event_record", WEFT__DOOR_ISSUE | WEFT__DOOR_NO_CAPTURE,
                 "events order and time streams outside graphs", &c);
  if (rc)
    return rc;
  /* Held while recorded: a destroy on another thread meanwhile then
   * finishes the event after the record, as one after it would (a record
   * attached to an event already back in the pool was lost, with what it
   * holds). */
  weft__event *e = EV(ev);
  if ((rc = weft__event_hold(e, "weft_event_record")) != 0)
    return rc;
  rc = weft__event_record(e, c.s);
  int urc = weft__event_unhold(e);
  return rc ? rc : urc;
}

int weft_event_wait(weft_event *ev) {
  weft__caller c;
  int rc = weft__event_recorded(EV(ev), "weft_event_wait");
  if (rc == 0)
    rc = weft__door("weft_event_wait", WEFT__DOOR_ISSUE | WEFT__DOOR_NO_CAPTURE,
                    "a graph cannot wait for work outside it", &c);
  if (rc)
    return rc;
  rc = weft__stream_wait_event(c.s, EV(ev));
  return rc;
}

int weft_event_sync(weft_event *ev) {
  weft__caller c;
  int rc = weft__door("weft_event_sync", WEFT__DOOR_NO_CAPTURE,
                      "a capture cannot wait for the GPU", &c);
  if (rc)
    return rc;
  weft__exec *x = c.x;
  weft__event *e = EV(ev);
  rc = weft__event_recorded(e, "weft_event_sync");
  /* Held while waited on: another thread may destroy it meanwhile, which
   * leaves what waits on it unaffected (weft/event.h). */
  if (rc == 0 && (rc = weft__event_hold(e, "weft_event_sync")) == 0) {
    rc = weft__wait_for_event(x, e, "weft_event_sync");
    if (rc == 0)
      weft__caller_event_synced(x, e);
    int urc = weft__event_unhold(e);
    if (rc == 0)
      rc = urc;
  }
  return rc;
}

int weft_event_query(weft_event *ev) {
  int rc = weft__event_query(EV(ev));
  /* Seen complete: the asker knows its work is done. */
  weft__exec *x = rc == 0 ? weft__caller_self() : NULL;
  if (x)
    weft__caller_event_synced(x, EV(ev));
  return rc;
}

int weft_event_elapsed_ms(weft_event *start, weft_event *end, float *ms) {
  return weft__event_elapsed(EV(start), EV(end), ms);
}
