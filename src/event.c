/* Public events, on the calling task's (or thread's) stream. */
#include "weft/event.h"
#include "check.h"
#include "scheduler.h"

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
  weft__exec *x = weft__exec_get("weft_event_create");
  if (!x)
    return weft__exec_get_failed();
  weft__event *e;
  int rc = weft__event_create(x->rt->bk, x->dev, WEFT__EVENT_TIMING, &e);
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
  int rc = weft__caller_get("weft_event_record", &c);
  if (rc == 0)
    rc = weft__refuse_in_capture(c.x, "weft_event_record",
                                 "events order and time streams outside "
                                 "graphs");
  if (rc)
    return rc;
  rc = weft__event_record(EV(ev), c.s);
  return rc;
}

int weft_event_wait(weft_event *ev) {
  weft__caller c;
  int rc = weft__event_recorded(EV(ev), "weft_event_wait");
  if (rc == 0)
    rc = weft__caller_get("weft_event_wait", &c);
  if (rc == 0)
    rc = weft__refuse_in_capture(c.x, "weft_event_wait",
                                 "a graph cannot wait for work outside it");
  if (rc)
    return rc;
  rc = weft__stream_wait_event(c.s, EV(ev));
  return rc;
}

int weft_event_sync(weft_event *ev) {
  weft__exec *x = weft__exec_get("weft_event_sync");
  if (!x)
    return weft__exec_get_failed();
  int rc = weft__refuse_in_capture(x, "weft_event_sync",
                                   "a capture cannot wait for the GPU");
  if (rc == 0)
    rc = weft__event_recorded(EV(ev), "weft_event_sync");
  if (rc == 0)
    rc = weft__exec_wait_event(x, EV(ev));
  if (rc == 0 && x->rt->bk->check)
    weft__check_event_synced(x->rt->bk->check, x, EV(ev));
  return rc;
}

int weft_event_query(weft_event *ev) {
  int rc = weft__event_query(EV(ev));
  /* Seen complete: the asker knows its work is done. */
  weft__checker *k = rc == 0 ? EV(ev)->hdr.bk->check : NULL;
  if (k && weft__exec_self())
    weft__check_event_synced(k, weft__exec_self(), EV(ev));
  return rc;
}

int weft_event_elapsed_ms(weft_event *start, weft_event *end, float *ms) {
  return weft__event_elapsed(EV(start), EV(end), ms);
}
