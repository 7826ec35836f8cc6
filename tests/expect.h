/* A tiny expectation header for weft's tests: plain C, no framework.
 *
 * Each expectation prints file:line and the failed expression, then exits 1, so
 * a test stops at its first failure and CTest shows exactly which one broke.
 * SKIP exits 77, which CTest reports as skipped (SKIP_RETURN_CODE). */
#ifndef WEFT_TEST_EXPECT_H
#define WEFT_TEST_EXPECT_H

#include <stdio.h>
#include <stdlib.h>

#include "weft/error.h"

#define EXPECT_FAIL_(...)                                                      \
  do {                                                                         \
    fflush(stdout);                                                            \
    fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                            \
    fprintf(stderr, __VA_ARGS__);                                              \
    fputc('\n', stderr);                                                       \
    exit(1);                                                                   \
  } while (0)

#define EXPECT(cond)                                                           \
  do {                                                                         \
    if (!(cond))                                                               \
      EXPECT_FAIL_("EXPECT(%s) failed", #cond);                                \
  } while (0)

/* EXPECT with a printf-style explanation, for checks inside loops. */
#define EXPECT_MSG(cond, ...)                                                  \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fflush(stdout);                                                          \
      fprintf(stderr, "%s:%d: EXPECT(%s) failed: ", __FILE__, __LINE__,        \
              #cond);                                                          \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#define EXPECT_EQ_INT(a, b)                                                    \
  do {                                                                         \
    long long check_a_ = (long long)(a), check_b_ = (long long)(b);            \
    if (check_a_ != check_b_)                                                  \
      EXPECT_FAIL_("EXPECT_EQ_INT(%s, %s) failed: %lld != %lld", #a, #b,       \
                   check_a_, check_b_);                                        \
  } while (0)

/* expr must return 0; otherwise the code and weft's detail are printed. */
#define EXPECT_OK(expr)                                                        \
  do {                                                                         \
    int check_rc_ = (expr);                                                    \
    if (check_rc_ != 0)                                                        \
      EXPECT_FAIL_("EXPECT_OK(%s) failed: %d %s (%s): %s", #expr, check_rc_,   \
                   weft_err_name(check_rc_), weft_strerror(check_rc_),         \
                   weft_last_error_message());                                 \
  } while (0)

/* expr must fail with exactly the given WEFT_E* code. */
#define EXPECT_ERR(expr, code)                                                 \
  do {                                                                         \
    int check_rc_ = (expr);                                                    \
    if (check_rc_ != (code))                                                   \
      EXPECT_FAIL_("EXPECT_ERR(%s, %s) failed: got %d %s: %s", #expr, #code,   \
                   check_rc_, weft_err_name(check_rc_),                        \
                   check_rc_ ? weft_last_error_message() : "(no error)");      \
  } while (0)

#define SKIP(reason)                                                           \
  do {                                                                         \
    printf("SKIP: %s\n", (reason));                                            \
    exit(77);                                                                  \
  } while (0)

#endif
