/* For the trace tests that run weft: a temporary file for the trace, and
 * a host-backend runtime writing its trace there. */
#ifndef WEFT_TEST_TRACED_HOST_H
#define WEFT_TEST_TRACED_HOST_H

#include <stdlib.h>
#include <unistd.h>

#include "expect.h"
#include "weft.h"

/* Makes the empty file tmpl names (mkstemp's XXXXXX filled in). */
static inline void traced_temp(char *tmpl) {
  int fd = mkstemp(tmpl);
  EXPECT(fd >= 0);
  close(fd);
}

/* A host-backend runtime tracing into path, of workers workers (0: as
 * configured). */
static inline weft_runtime *traced_host_open(const char *path, int workers) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_HOST;
  o.trace_path = path;
  o.workers = workers;
  weft_runtime *rt;
  EXPECT_OK(weft_init(&rt, &o));
  return rt;
}

#endif
