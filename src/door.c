/* The one door of every public call that acts for its caller (door.h). */
#include "door.h"
#include "admission.h"

int weft__door(const char *call, unsigned flags, const char *why,
               weft__caller *c) {
  c->x = NULL;
  c->s = NULL;
  weft__exec *x = weft__caller_get(call);
  if (!x)
    return weft__caller_get_failed();
  int rc;
  if ((flags & WEFT__DOOR_NO_CAPTURE) &&
      (rc = weft__caller_refuse_in_capture(x, call, why)) != 0)
    return rc;
  c->x = x;
  c->bk = x->bk;
  c->dev = x->dev;
  weft__runtime_head *rt = weft__head(x->rt);
  c->epoch = rt->epoch;
  if (!(flags & WEFT__DOOR_ISSUE))
    return 0;
  weft__stream *s;
  if ((rc = weft__caller_stream(x, &s)) != 0)
    return rc;
  if (atomic_load_explicit(&rt->adm.depth, memory_order_relaxed) &&
      x->is_task && !x->high &&
      atomic_load_explicit(&rt->adm.nhigh_live, memory_order_relaxed) > 0 &&
      (rc = weft__admit(&rt->adm, x, s)) != 0)
    return rc;
  if (x->bk->check)
    weft__caller_issues(x, s);
  c->s = s;
  return 0;
}
