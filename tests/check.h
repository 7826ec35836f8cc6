/* A tiny check header for weft's tests: plain C, no framework.
 *
 * Each check prints file:line and the failed expression, then exits 1, so a
 * test stops at its first failure and CTest shows exactly which check broke.
 * SKIP exits 77, which CTest reports as skipped (SKIP_RETURN_CODE). */
#ifndef WEFT_TEST_CHECK_H
#define WEFT_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "weft/error.h"

#define CHECK_FAIL_(...)                                                       \
  do {                                                                         \
    fflush(stdout);                                                            \
    fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                            \
    fprintf(stderr, __VA_ARGS__);                                              \
    fputc('\n', stderr);                                                       \
    exit(1);                                                                   \
  } while (0)

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond))                                                               \
      CHECK_FAIL_("CHECK(%s) failed", #cond);                                  \
  } while (0)

/* CHECK with a printf-style explanation, for checks inside loops. */
#define CHECK_MSG(cond, ...)                                                   \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fflush(stdout);                                                          \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                     \
  do {                                                                         \
    long long check_a_ = (long long)(a), check_b_ = (long long)(b);            \
    if (check_a_ != check_b_)                                                  \
      CHECK_FAIL_("CHECK_EQ_INT(%s, %s) failed: %lld != %lld", #a, #b,         \
                  check_a_, check_b_);                                         \
  } while (0)

/* expr must return 0; otherwise the code and weft's detail are printed. */
#define CHECK_OK(expr)                                                         \
  do {                                                                         \
    int check_rc_ = (expr);                                                    \
    if (check_rc_ != 0)                                                        \
      CHECK_FAIL_("CHECK_OK(%s) failed: %d %s (%s): %s", #expr, check_rc_,     \
                  weft_err_name(check_rc_), weft_strerror(check_rc_),          \
                  weft_last_error_message());                                  \
  } while (0)

/* expr must fail with exactly the given WEFT_E* code. */
#define CHECK_ERR(expr, code)                                                  \
  do {                                                                         \
    int check_rc_ = (expr);                                                    \
    if (check_rc_ != (code))                                                   \
      CHECK_FAIL_("CHECK_ERR(%s, %s) failed: got %d %s: %s", #expr, #code,     \
                  check_rc_, weft_err_name(check_rc_),                         \
                  check_rc_ ? weft_last_error_message() : "(no error)");       \
  } while (0)

#define SKIP(reason)                                                           \
  do {                                                                         \
    printf("SKIP: %s\n", (reason));                                            \
    exit(77);                                                                  \
  } while (0)

#endif
