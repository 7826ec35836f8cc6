/* weft::spawn: captures, results, handles that join or detach, and the
 * lifetime of what a task captures: built once, destroyed exactly once,
 * after the task ran. */
#include <atomic>
#include <chrono>
#include <cstring>
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
  weft::task<int> t, u, v;
  {
    weft::runtime rt = open_runtime();
    t = weft::spawn(rt, [] { return 7; });
    u = weft::spawn(rt, [] { return 8; });
    v = weft::spawn(rt, [] { return 9; });
  }
  /* The task went with its runtime: join and detach say so, and read
   * nothing freed (ASan saw try_join read the task). */
  int r = 0;
  EXPECT_ERR(t.try_join(&r), WEFT_EHANDLE);
  EXPECT(std::strstr(weft_last_error_message(), "shut down") != nullptr);
  EXPECT(!t.joinable());
  EXPECT_ERR(u.try_detach(), WEFT_EHANDLE);
  bool threw = false;
  try {
    v.join();
  } catch (const weft::error &e) {
    threw = e.code() == WEFT_EHANDLE;
  }
  EXPECT(threw);
}

/* A task that destroys its own handle: the handle cannot join it, and
 * detaches it (it was neither joined nor detached, so never released:
 * weft_task_detach of its native handle succeeded afterwards). */
void own_handle_dropped(weft::runtime &rt) {
  static weft::task<void> h;
  std::atomic<bool> go{false}, done{false};
  h = weft::spawn(rt, [&go, &done] {
    while (!go)
      weft::yield();
    {
      weft::task<void> mine = std::move(h);
    } /* destroyed here, in the task it names */
    done = true;
  });
  weft_task *native = h.native();
  go = true;
  while (!done)
    std::this_thread::yield();
  EXPECT_ERR(weft_task_detach(native), WEFT_EHANDLE);
}

/* From a task, another runtime's task cannot be joined: refused, the
 * handle kept (a plain thread joins it after). */
void other_runtimes_task() {
  weft::runtime a = open_runtime();
  weft::runtime_options o;
  o.workers = 1;
  weft::runtime b(o);
  std::atomic<bool> go{false};
  auto theirs = weft::spawn(b, [&go] {
    while (!go)
      weft::yield();
    return 5;
  });
  auto mine = weft::spawn(a, [&theirs] {
    EXPECT_ERR(theirs.try_join(), WEFT_EINVAL);
    EXPECT(theirs.joinable());
  });
  mine.join();
  go = true;
  EXPECT_EQ_INT(theirs.join(), 5);
}

/* A count of elements whose bytes overflow is refused, not wrapped
 * around to a few bytes. */
void overflowing_sizes(weft::runtime &rt) {
  (void)rt;
  weft::pinned_buffer<double> p(weft::nothrow, SIZE_MAX / 8 + 3);
  EXPECT(!p);
  weft::device_buffer<double> d(weft::nothrow, SIZE_MAX / 4);
  EXPECT(!d);
  weft::access a = weft::reads((const double *)&rt, SIZE_MAX / 8 + 3);
  EXPECT(a.bytes == SIZE_MAX);
  /* copy and memset too: n * 8 wrapped to 8 bytes, copied, and 0. */
  weft::pinned_buffer<double> src(2), dst(2);
  src[0] = 1;
  dst[0] = 0;
  EXPECT(weft::try_copy(dst, src, SIZE_MAX / 8 + 2) != 0);
  EXPECT(weft::try_memset(src, 0, SIZE_MAX / 8 + 2) != 0);
  EXPECT_OK(weft_sync());
  EXPECT(dst[0] == 0 && src[0] == 1);
}

} // namespace

int main() {
  weft::runtime rt = open_runtime();
  results(rt);
  lifetimes(rt);
  handles(rt);
  nested(rt);
  nothrow_forms(rt);
  own_handle_dropped(rt);
  overflowing_sizes(rt);
  rt.close();
  EXPECT(!rt);
  refused_close();
  handle_outlives_runtime();
  other_runtimes_task();
  std::printf("ok\n");
  return 0;
}
