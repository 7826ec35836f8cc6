/* A task that never starts: no fiber stack can be had for it, so its
 * function never runs and its join fails with WEFT_ENOMEM (weft/task.h).
 * Its callable, which never ran, is destroyed all the same, by join, by
 * the handle's destructor, or once its runtime has shut down (it was
 * leaked: the task's reference to the state was never released). Stack
 * slabs are made to fail by interposing mmap over libc's for the
 * statically linked libweft. */
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <memory>

#include "cpp_common.hpp"

namespace {
std::atomic<bool> fail_stacks{false};
}

#if defined(__SANITIZE_THREAD__)
#define WEFT_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WEFT_TEST_TSAN 1
#endif
#endif

/* ThreadSanitizer maps its own memory through mmap before main: not
 * replaced under it (the test skips there). */
#ifndef WEFT_TEST_TSAN
extern "C" void *mmap(void *addr, size_t len, int prot, int flags, int fd,
                      off_t off) {
  if (fail_stacks && (flags & MAP_STACK)) {
    errno = ENOMEM;
    return MAP_FAILED;
  }
  return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}
#endif

int main() {
#ifdef WEFT_TEST_TSAN
  std::puts("SKIP: mmap is not interposed under ThreadSanitizer");
  return 77;
#endif
  weft::task<int> outlives;
  std::weak_ptr<int> joined, destroyed, gone;
  {
    weft::runtime rt = open_runtime(1);
    fail_stacks = true;
    auto a = std::make_shared<int>(1);
    joined = a;
    auto t = weft::spawn(rt, [a = std::move(a)] { return *a; });
    int code = 0;
    try {
      t.join();
    } catch (const weft::error &e) {
      code = e.code();
    }
    EXPECT_EQ_INT(code, WEFT_ENOMEM);
    EXPECT_MSG(joined.expired(), "join left the callable of a task that "
                                 "never started alive");

    auto b = std::make_shared<int>(2);
    destroyed = b;
    {
      auto u = weft::spawn(rt, [b = std::move(b)] { return *b; });
    }
    EXPECT_MSG(destroyed.expired(), "~task left the callable of a task that "
                                    "never started alive");

    auto c = std::make_shared<int>(3);
    gone = c;
    outlives = weft::spawn(rt, [c = std::move(c)] { return *c; });
  }
  fail_stacks = false;
  EXPECT_ERR(outlives.try_join(), WEFT_EHANDLE);
  outlives = weft::task<int>();
  EXPECT_MSG(gone.expired(), "a handle outliving its runtime left the "
                             "callable of a task that never started alive");
  std::printf("ok\n");
  return 0;
}
