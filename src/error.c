/* Error names, texts and the per-thread (per-task) failure detail. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error_internal.h"

const char *weft_strerror(int err) {
  switch (err) {
  case 0:
    return "success";
#define WEFT__ERR_TEXT(name, value, text)                                      \
  case WEFT_##name:                                                            \
    return text;
    WEFT_ERRNO_MAP(WEFT__ERR_TEXT)
#undef WEFT__ERR_TEXT
  }
  return "unknown error";
}

const char *weft_err_name(int err) {
  switch (err) {
  case 0:
    return "OK";
#define WEFT__ERR_NAME(name, value, text)                                      \
  case WEFT_##name:                                                            \
    return #name;
    WEFT_ERRNO_MAP(WEFT__ERR_NAME)
#undef WEFT__ERR_NAME
  }
  return "UNKNOWN";
}

static _Thread_local weft__errinfo thread_err;
_Thread_local weft__errinfo *weft__err_cur;

weft__errinfo *weft__err_slot(void) {
  return weft__err_cur ? weft__err_cur : &thread_err;
}

/* Formats into a buffer of its own first: the arguments may include the
 * message being replaced (weft_last_error_message(), wrapped by a caller
 * with more context), which vsnprintf must not read while writing. */
static int record(int code, int raw, const char *fmt, va_list ap) {
  weft__errinfo *e = weft__err_slot();
  char msg[sizeof e->msg];
  vsnprintf(msg, sizeof msg, fmt, ap);
  memcpy(e->msg, msg, sizeof msg);
  e->code = code;
  e->seq++;
  e->raw = raw;
  return code;
}

int weft__err(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  record(code, 0, fmt, ap);
  va_end(ap);
  return code;
}

int weft__err_raw(int code, int raw, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  record(code, raw, fmt, ap);
  va_end(ap);
  return code;
}

const char *weft_last_error_message(void) { return weft__err_slot()->msg; }

int weft_last_error(void) { return weft__err_slot()->code; }

int weft_last_error_raw(void) { return weft__err_slot()->raw; }

int weft_error_set(int code, int raw, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  record(code, raw, fmt ? fmt : "(no message)", ap);
  va_end(ap);
  return code;
}
