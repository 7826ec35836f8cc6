/* Allocation failures inside weft, injected: the library's objects are
 * linked with -Wl,--wrap=calloc, so every calloc weft makes goes through
 * __wrap_calloc below, which fails on request.
 *
 * - A plain thread whose context cannot be allocated gets WEFT_ENOMEM from
 *   its first call (it was reported as WEFT_ESTATE, "no runtime"), with
 *   the message saying so, and the next call, with memory back, works.
 * - A device free whose queued operation cannot be allocated still frees
 *   (after waiting for the stream): it once failed, and the allocation it
 *   left kept weft_shutdown refusing with WEFT_EBUSY for ever. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"
#include "weft.h"

void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);

/* The thread whose callocs fail while fail_calloc is set. */
static _Thread_local int fail_calloc;

void *__wrap_calloc(size_t n, size_t size) {
  return fail_calloc ? NULL : __real_calloc(n, size);
}

static void *plain_thread(void *arg) {
  (void)arg;
  fail_calloc = 1;
  int rc = weft_sync();
  fail_calloc = 0;
  EXPECT_ERR(rc, WEFT_ENOMEM);
  EXPECT_MSG(strstr(weft_last_error_message(), "out of memory") != NULL,
             "message: '%s'", weft_last_error_message());
  EXPECT_OK(weft_sync()); /* memory is back: the context is made now */
  return NULL;
}

static void free_without_memory(void) {
  void *d;
  EXPECT_OK(weft_device_alloc(4096, &d));
  EXPECT_OK(weft_memset(d, 1, 4096));
  fail_calloc = 1;
  int rc = weft_device_free(d);
  fail_calloc = 0;
  EXPECT_OK(rc);
  EXPECT_OK(weft_sync());
}

int main(void) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_HOST;
  o.workers = 2;
  weft_runtime *rt;
  EXPECT_OK(weft_init(&rt, &o));
  pthread_t th;
  EXPECT(pthread_create(&th, NULL, plain_thread, NULL) == 0);
  EXPECT(pthread_join(th, NULL) == 0);
  free_without_memory();
  EXPECT_OK(weft_shutdown(rt)); /* nothing left allocated */
  puts("ok");
  return 0;
}
