/* Shared by the C++ face's tests: expect.h's checks, and a runtime on the
 * backend WEFT_BACKEND names, or exit 77 (skipped) when it has no device. */
#ifndef WEFT_TEST_CPP_COMMON_HPP
#define WEFT_TEST_CPP_COMMON_HPP

#include <weft.hpp>

#include "expect.h"

/* The test's runtime with this many workers; skips without a device. */
inline weft::runtime open_runtime(int workers = 2) {
  weft::runtime_options o;
  o.workers = workers;
  try {
    return weft::runtime(o);
  } catch (const weft::error &e) {
    if (e.code() == WEFT_ENODEV) {
      std::printf("SKIP: %s\n", e.what());
      std::exit(77);
    }
    EXPECT_FAIL_("weft_init: %s", e.what());
  }
}

#endif
