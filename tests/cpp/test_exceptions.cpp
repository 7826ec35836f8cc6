/* Exceptions crossing a task: a throw inside the callable is caught at the
 * task's edge (never unwinding through the C runtime or a fiber switch)
 * and rethrown by join, on the joining thread, as the same object; an
 * exception in flight across a switch stays its task's. Also weft's own
 * errors as weft::error. */
#include <atomic>
#include <exception>
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

/* A task throws while it holds a child's handle, whose destructor joins
 * (a switch) during the unwinding: the exception in flight stays that
 * task's. It leaked into the other tasks of the thread (uncaught count
 * nonzero where nothing was thrown) and stayed wrong afterwards. */
void thrown_across_a_switch(weft::runtime &rt) {
  std::atomic<int> wrong{0};
  int caught = 0;
  for (int round = 0; round < 10; round++) {
    std::vector<weft::task<void>> ts;
    for (int i = 0; i < 4; i++) {
      ts.push_back(weft::spawn(rt, [] {
        auto child = weft::spawn([] {
          for (int k = 0; k < 3; k++)
            weft::yield();
        });
        throw std::runtime_error("while a child runs");
      }));
      ts.push_back(weft::spawn(rt, [&wrong] {
        for (int k = 0; k < 5; k++) {
          if (std::uncaught_exceptions() != 0)
            wrong++;
          weft::yield();
        }
      }));
    }
    for (auto &t : ts) {
      try {
        t.join();
      } catch (const std::runtime_error &) {
        caught++;
      }
    }
  }
  EXPECT_EQ_INT(caught, 40);
  EXPECT_MSG(wrong == 0,
             "tasks that threw nothing saw an exception in flight %d times",
             wrong.load());
  std::vector<weft::task<int>> after;
  for (int i = 0; i < 16; i++)
    after.push_back(weft::spawn(rt, [] { return std::uncaught_exceptions(); }));
  for (auto &t : after)
    EXPECT_EQ_INT(t.join(), 0);
}

} // namespace

int main() {
  weft::runtime rt = open_runtime();
  rethrown(rt);
  non_throwing(rt);
  many(rt);
  weft_errors(rt);
  thrown_across_a_switch(rt);
  std::printf("ok\n");
  return 0;
}
