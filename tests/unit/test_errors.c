/* Error codes: names and texts for every code from the one X-macro list,
 * fallbacks for unknown codes, and the per-thread failure detail. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "expect.h"
#include "weft_internal.h"

static void check_code(int code, const char *name, const char *text) {
  EXPECT_MSG(code < 0, "%s is %d, not negative", name, code);
  EXPECT_MSG(strcmp(weft_err_name(code), name) == 0, "weft_err_name(%d) = %s",
             code, weft_err_name(code));
  EXPECT_MSG(strcmp(weft_strerror(code), text) == 0, "weft_strerror(%d) = %s",
             code, weft_strerror(code));
}

/* A thread that has not failed yet has an empty message of its own. */
static void *fresh_thread(void *arg) {
  const char **msg = arg;
  *msg = weft_last_error_message()[0] ? "not empty" : "";
  return NULL;
}

int main(void) {
  int n = 0, lowest = 0;
#define EXPECT_ONE(name, value, text)                                          \
  check_code(WEFT_##name, #name, text);                                        \
  n++;                                                                         \
  lowest = value < lowest ? value : lowest;
  WEFT_ERRNO_MAP(EXPECT_ONE)
#undef EXPECT_ONE
  /* Codes are -1 .. -n with no gaps, so a new code cannot reuse a value. */
  EXPECT_EQ_INT(lowest, -n);

  EXPECT(strcmp(weft_err_name(0), "OK") == 0);
  EXPECT(strcmp(weft_strerror(0), "success") == 0);
  static const int unknown[] = {1, 77, -1000, -2147483647 - 1, 2147483647};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    EXPECT(strcmp(weft_err_name(unknown[i]), "UNKNOWN") == 0);
    EXPECT(strcmp(weft_strerror(unknown[i]), "unknown error") == 0);
  }
  EXPECT(strcmp(weft_err_name(lowest - 1), "UNKNOWN") == 0);

  /* Nothing failed yet on this thread. */
  EXPECT(strcmp(weft_last_error_message(), "") == 0);
  EXPECT_EQ_INT(weft_last_error(), 0);
  EXPECT_EQ_INT(weft_last_error_raw(), 0);

  /* A failure leaves a message naming the call; core errors have no raw
   * backend code. */
  EXPECT_ERR(weft__stream_sync(NULL), WEFT_EINVAL);
  EXPECT_MSG(strstr(weft_last_error_message(), "stream_sync") != NULL,
             "message: %s", weft_last_error_message());
  EXPECT_EQ_INT(weft_last_error(), WEFT_EINVAL);
  EXPECT_EQ_INT(weft_last_error_raw(), 0);
  EXPECT_ERR(weft_backend_parse("gpu", &(weft_backend_kind){0}), WEFT_EINVAL);
  EXPECT_MSG(strstr(weft_last_error_message(), "gpu") != NULL, "message: %s",
             weft_last_error_message());

  /* A new message may quote the one it replaces, as a library wrapping
   * weft's failure does. */
  char want[600];
  snprintf(want, sizeof want, "mylib: %s", weft_last_error_message());
  EXPECT_EQ_INT(
      weft_error_set(WEFT_EIO, 0, "mylib: %s", weft_last_error_message()),
      WEFT_EIO);
  EXPECT_MSG(strcmp(weft_last_error_message(), want) == 0,
             "message: '%s', want '%s'", weft_last_error_message(), want);
  EXPECT_ERR(weft_backend_parse("gpu", &(weft_backend_kind){0}), WEFT_EINVAL);

  /* The detail is per thread. */
  const char *other = NULL;
  pthread_t t;
  EXPECT_EQ_INT(pthread_create(&t, NULL, fresh_thread, &other), 0);
  EXPECT_EQ_INT(pthread_join(t, NULL), 0);
  EXPECT(other && strcmp(other, "") == 0);
  EXPECT(strstr(weft_last_error_message(), "gpu") != NULL);
  return 0;
}
