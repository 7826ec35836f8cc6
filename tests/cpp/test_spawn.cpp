/* weft::spawn: captures, results, handles that join or detach, and the
 * lifetime of what a task captures: built once, destroyed exactly once,
 * after the task ran. */
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cpp_common.hpp"

namespace {

/* Counts its live copies; `ran` says whether the task called it yet. */
std::atomic<int> built{0}, destroyed{0}, destroyed_after_run{0};
std::atomic<bool> ran{false};
struct counted {
  counted() { built++; }
  counted(const counted &) { built++; }
  counted(counted &&) noexcept { built++; }
  ~counted() {
    destroyed++;
    if (ran)
      destroyed_after_run++;
  }
};

void results(weft::runtime &rt) {
  int x = 3;
  auto t = weft::spawn(rt, [x] { return x * 14; });
  EXPECT_EQ_INT(t.join(), 42);
  EXPECT(!t.joinable());
  std::string s = "woven";
  auto ts = weft::spawn(
      rt, [s] { return s + " twice"; }, "strings");
  EXPECT(ts.join() == "woven twice");
  int out = 0;
  auto tv = weft::spawn(rt, [&out] { out = 7; });
  tv.join();
  EXPECT_EQ_INT(out, 7);
  int r = 0;
  auto tt = weft::spawn(rt, [] { return 5; });
  EXPECT_OK(tt.try_join(&r));
  EXPECT_EQ_INT(r, 5);
}

void lifetimes(weft::runtime &rt) {
  for (int copied = 0; copied < 2; copied++) {
    built = destroyed = destroyed_after_run = 0;
    ran = false;
    std::atomic<bool> go{false};
    {
      counted outside;
      auto body = [&go] {
        while (!go)
          weft::yield();
        ran = true;
      };
      /* Copied from a named object, or built in the capture and moved. */
      auto t = copied ? weft::spawn(rt, [outside, body] { body(); })
                      : weft::spawn(rt, [c = counted(), body] { body(); });
      /* The task's own copy is alive, and only it beside `outside`. */
      EXPECT_EQ_INT(built - destroyed, 2);
      EXPECT_EQ_INT(destroyed_after_run.load(), 0);
      go = true;
      t.join();
      /* Destroyed by the task, after it ran, before join returned. */
      EXPECT_EQ_INT(built - destroyed, 1);
      EXPECT_EQ_INT(destroyed_after_run.load(), 1);
    }
    EXPECT_EQ_INT(built.load(), destroyed.load());
  }
}

void handles(weft::runtime &rt) {
  std::atomic<int> n{0};
  {
    std::vector<weft::task<void>> ts;
    for (int i = 0; i < 50; i++)
      ts.push_back(weft::spawn(rt, [&n] {
        weft::yield();
        n++;
      }));
    weft::task<void> moved = std::move(ts[0]);
    EXPECT(!ts[0].joinable() && moved.joinable());
  } /* the destructors join */
  EXPECT_EQ_INT(n.load(), 50);

  /* Detached: the task frees its state itself. */
  built = destroyed = 0;
  weft::spawn(rt, [c = counted()] {}).detach();
  for (int i = 0; i < 20000 && destroyed != built; i++)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  EXPECT_EQ_INT(built.load(), destroyed.load());

  /* Big captures (past the cached block) work the same. */
  char big[512] = {1};
  auto tb = weft::spawn(rt, [big] { return (int)big[0] + (int)sizeof big; });
  EXPECT_EQ_INT(tb.join(), 513);

  /* Joining an empty handle is refused without a crash. */
  weft::task<int> empty;
  EXPECT_ERR(empty.try_join(), WEFT_EHANDLE);
}

/* Tasks spawning tasks, on the runtime they run on (weft::spawn(f)). */
void nested(weft::runtime &rt) {
  auto outer = weft::spawn(rt, [] {
    auto a = weft::spawn([] { return 20; });
    auto b = weft::spawn([] { return 22; });
    return a.join() + b.join();
  });
  EXPECT_EQ_INT(outer.join(), 42);
}

/* Without exceptions' throwing forms: try_spawn and try_join. */
void nothrow_forms(weft::runtime &rt) {
  weft::task<int> t;
  EXPECT_OK(weft::try_spawn(t, rt, [] { return 9; }));
  int v = 0;
  EXPECT_OK(t.try_join(&v));
  EXPECT_EQ_INT(v, 9);
}

/* A close refused while memory lives closes nothing: the object keeps
 * the runtime, to close once the memory is freed (it was emptied, and
 * the runtime could not be closed through it again). */
void refused_close() {
  weft::runtime rt = open_runtime();
  void *d = nullptr;
  EXPECT_OK(weft_device_alloc(64, &d));
  int code = 0;
  try {
    rt.close();
  } catch (const weft::error &e) {
    code = e.code();
  }
  EXPECT_EQ_INT(code, WEFT_EBUSY);
  EXPECT(bool(rt) && rt.get() != nullptr);
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_sync());
  EXPECT_OK(rt.try_close());
  EXPECT(!rt);
}

/* A handle declared before its runtime outlives it: the shutdown waited
 * for the task and freed it, and the handle's destructor empties itself
 * instead of joining freed memory (ASan's use-after-free before). */
void handle_outlives_runtime() {
  weft::task<int> t;
  {
    weft::runtime rt = open_runtime();
    t = weft::spawn(rt, [] { return 7; });
  }
}

} // namespace

int main() {
  weft::runtime rt = open_runtime();
  results(rt);
  lifetimes(rt);
  handles(rt);
  nested(rt);
  nothrow_forms(rt);
  rt.close();
  EXPECT(!rt);
  refused_close();
  handle_outlives_runtime();
  std::printf("ok\n");
  return 0;
}
