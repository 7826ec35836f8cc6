/* The open runtimes, oldest first. A plain thread keeps the runtime it
 * first used until that runtime shuts down; one that has used none takes
 * the newest still open (caller.c). docs/decisions/reliability.md, "A
 * thread uses the runtime it opens", says why a thread does not follow
 * whichever runtime opened last. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "error_internal.h"
#include "registry.h"
#include "runtime_head.h"

static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_runtime **open_rts; /* open, oldest first */
static size_t nopen, cap_open;
static atomic_uint_fast64_t epochs;

weft__backend *weft__registry_backend(weft_runtime *rt) {
  return weft__head(rt)->bk;
}

void weft__registry_lock(void) { pthread_mutex_lock(&global_lock); }

void weft__registry_unlock(void) { pthread_mutex_unlock(&global_lock); }

weft_runtime *weft__registry_newest(void) {
  return nopen ? open_rts[nopen - 1] : NULL;
}

int weft__registry_add(weft_runtime *rt) {
  pthread_mutex_lock(&global_lock);
  if (nopen == cap_open) {
    size_t cap = cap_open ? cap_open * 2 : 4;
    weft_runtime **v = realloc(open_rts, cap * sizeof *v);
    if (!v) {
      pthread_mutex_unlock(&global_lock);
      return weft__err(WEFT_ENOMEM, "weft_init: out of memory");
    }
    open_rts = v;
    cap_open = cap;
  }
  weft__head(rt)->epoch = atomic_fetch_add(&epochs, 1) + 1;
  open_rts[nopen++] = rt;
  pthread_mutex_unlock(&global_lock);
  return 0;
}

int weft__registry_has_locked(weft_runtime *rt) {
  size_t i = 0;
  while (i < nopen && open_rts[i] != rt)
    i++;
  return i < nopen;
}

int weft__registry_has(weft_runtime *rt) {
  pthread_mutex_lock(&global_lock);
  int open = weft__registry_has_locked(rt); /* another shutdown changes nopen */
  pthread_mutex_unlock(&global_lock);
  return open;
}

int weft__registry_check(weft_runtime *rt, const char *call) {
  if (!rt)
    return weft__err(WEFT_EINVAL, "%s: rt is NULL", call);
  if (!weft__registry_has(rt))
    return weft__err(WEFT_EHANDLE,
                     "%s: not an open runtime (already shut down?)", call);
  return 0;
}

int weft__registry_remove(weft_runtime *rt) {
  int found = 0;
  pthread_mutex_lock(&global_lock);
  for (size_t i = 0; i < nopen; i++)
    if (open_rts[i] == rt) {
      memmove(&open_rts[i], &open_rts[i + 1],
              (nopen - i - 1) * sizeof *open_rts);
      nopen--;
      found = 1;
      break;
    }
  if (nopen == 0) {
    free(open_rts);
    open_rts = NULL;
    cap_open = 0;
  }
  pthread_mutex_unlock(&global_lock);
  return found;
}
