/* The open runtimes (registry.c): weft_init registers a runtime, and a
 * plain thread that has used none takes the newest still open. */
#ifndef WEFT__REGISTRY_H
#define WEFT__REGISTRY_H

#include <stdint.h>

typedef struct weft_runtime weft_runtime;

/* rt joins the open runtimes and gets its epoch. Fails only with
 * WEFT_ENOMEM. */
int weft__registry_add(weft_runtime *rt);
/* rt leaves them; 1 if it was open. */
int weft__registry_remove(weft_runtime *rt);
int weft__registry_has(weft_runtime *rt);
/* The same, the registry lock held. */
int weft__registry_has_locked(weft_runtime *rt);
/* 0 when rt is an open runtime, else WEFT_EINVAL (NULL) or WEFT_EHANDLE
 * (never opened, or shut down: its memory is gone, so nothing of it is
 * read), with a message naming call. */
int weft__registry_check(weft_runtime *rt, const char *call);
/* The backend of rt, which the caller checked open (weft__registry_check). */
struct weft__backend *weft__registry_backend(weft_runtime *rt);
/* The registry's lock, which also keeps a runtime from shutting down
 * while a plain thread's context is linked to it or unlinked (caller.c). */
void weft__registry_lock(void);
void weft__registry_unlock(void);
/* The newest open runtime, or NULL; registry lock held. */
weft_runtime *weft__registry_newest(void);

#endif
