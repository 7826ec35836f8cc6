/* How the raw host-backend baselines (raw_host.c, raw_*_host.c) record a
 * failed call: the call, weft's error name and message, into the raw
 * context's err buffer. CK(call) returns -1 from the enclosing function on
 * failure and expects the context in a variable `x` whose base.err is that
 * buffer. */
#ifndef WEFT_BENCH_RAW_CHECK_H
#define WEFT_BENCH_RAW_CHECK_H

#include <stdio.h>

#include "weft.h"

static inline int raw_record(char *err, size_t len, int rc, const char *call) {
  const char *msg = weft_last_error_message();
  snprintf(err, len, "%s: %s: %s", call, weft_err_name(rc),
           *msg ? msg : weft_strerror(rc));
  return -1;
}

#define CK(call)                                                               \
  do {                                                                         \
    int rc_ = (call);                                                          \
    if (rc_ != 0)                                                              \
      return raw_record(x->base.err, sizeof x->base.err, rc_, #call);          \
  } while (0)

#endif
