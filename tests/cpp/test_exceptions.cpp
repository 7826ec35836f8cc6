/* Exceptions crossing a task: a throw inside the callable is caught at the
 * task's edge (never unwinding through the C runtime or a fiber switch)
 * and rethrown by join, on the joining thread, as the same object. Also
 * weft's own errors as weft::error. */
#include <stdexcept>
#include <string>
#include <vector>

#include "cpp_common.hpp"

namespace {

struct custom {
  int value;
};

void rethrown(weft::runtime &rt) {
  auto t = weft::spawn(rt, []() -> int { throw std::runtime_error("inside"); });
  bool caught = false;
  try {
    t.join();
  } catch (const std::runtime_error &e) {
    caught = std::string(e.what()) == "inside";
  }
  EXPECT(caught);
  EXPECT(!t.joinable());

  /* Any type, thrown after the task switched (it resumes on whichever
   * worker, maybe another thread). */
  auto u = weft::spawn(rt, [] {
    for (int i = 0; i < 10; i++)
      weft::yield();
    EXPECT_OK(weft_sync());
    throw custom{17};
  });
  int got = 0;
  try {
    u.join();
  } catch (const custom &c) {
    got = c.value;
  }
  EXPECT_EQ_INT(got, 17);
}

/* try_join reports a throw as WEFT_ESTATE with its what(). */
void non_throwing(weft::runtime &rt) {
  auto t = weft::spawn(rt, [] { throw std::logic_error("no good"); });
  EXPECT_ERR(t.try_join(), WEFT_ESTATE);
  EXPECT(std::string(weft_last_error_message()).find("no good") !=
         std::string::npos);
  /* A handle destroyed unjoined drops the exception: no terminate. */
  {
    auto d = weft::spawn(rt, [] { throw 1; });
  }
}

/* A task that catches its own exception and goes on is unaffected, and
 * many throwing tasks at once each get their own back. */
void many(weft::runtime &rt) {
  std::vector<weft::task<int>> ts;
  for (int i = 0; i < 64; i++)
    ts.push_back(weft::spawn(rt, [i]() -> int {
      try {
        throw i;
      } catch (int j) {
        if (j % 2)
          throw std::to_string(j);
        return j;
      }
    }));
  for (int i = 0; i < 64; i++) {
    try {
      EXPECT_EQ_INT(ts[i].join(), i);
      EXPECT(i % 2 == 0);
    } catch (const std::string &s) {
      EXPECT(s == std::to_string(i));
    }
  }
}

/* weft's errors: the code and weft_last_error_message(). */
void weft_errors(weft::runtime &rt) {
  int code = 0;
  try {
    weft::device_buffer<char> huge(size_t(1) << 62);
  } catch (const weft::error &e) {
    code = e.code();
    EXPECT(*e.what() != '\0');
  }
  EXPECT(code == WEFT_ENOMEM || code == WEFT_EINVAL);
  weft::device_buffer<char> none(weft::nothrow, size_t(1) << 62);
  EXPECT(!none && none.size() == 0);
  /* A failing call inside a task, thrown there and rethrown by join. */
  auto t = weft::spawn(rt, [] {
    static const weft::kernel<int> k(nullptr, nullptr, "nothing");
    weft::launch(k, 1, 1, 0, 3);
  });
  code = 0;
  try {
    t.join();
  } catch (const weft::error &e) {
    code = e.code();
  }
  EXPECT_EQ_INT(code, WEFT_ENOTSUP);
}

} // namespace

int main() {
  weft::runtime rt = open_runtime();
  rethrown(rt);
  non_throwing(rt);
  many(rt);
  weft_errors(rt);
  std::printf("ok\n");
  return 0;
}
