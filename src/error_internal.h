/* Recording the detail of a failure for weft_last_error_message(). */
#ifndef WEFT__ERROR_INTERNAL_H
#define WEFT__ERROR_INTERNAL_H

#include "weft/error.h"

typedef struct weft__errinfo {
  int code;
  int raw;
  unsigned seq; /* failures recorded in this slot so far */
  char msg[512];
} weft__errinfo;

/* The slot failures are written to: the running task's, else the thread's.
 * The scheduler points weft__err_cur at a task's slot while it runs. */
extern _Thread_local weft__errinfo *weft__err_cur;
weft__errinfo *weft__err_slot(void);

/* Records a failure and returns code, so callers write
 *   return weft__err(WEFT_EINVAL, "weft_copy: dst is NULL"); */
int weft__err(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The same, keeping the backend's raw error code. */
int weft__err_raw(int code, int raw, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
