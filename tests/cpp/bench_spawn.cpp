/* spawn + join of a capturing lambda through weft.hpp against the C API's
 * spawn + join, in the same run, from a plain thread and from a task
 * (bench/sc_spawn.c's measurement; the bench library is C). Prints both
 * rows and the ratio (target <= 1.1 x); --quick runs it small, as the
 * suite does, which checks that it runs, never its times. */
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <vector>

#include "cpp_common.hpp"

namespace {

std::atomic<long> ran{0};
void child(void *arg) {
  static_cast<std::atomic<long> *>(arg)->fetch_add(1,
                                                   std::memory_order_relaxed);
}

double now_us() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch())
      .count();
}

/* us per spawn + join, the median of rounds. */
template <class Body> double median_us(int rounds, long n, Body body) {
  std::vector<double> s;
  for (int r = 0; r <= rounds; r++) {
    double t0 = now_us();
    for (long i = 0; i < n; i++)
      body();
    if (r > 0)
      s.push_back((now_us() - t0) / n);
  }
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

struct rows {
  double c_api, cpp;
};

rows measure(weft::runtime &rt, int rounds, long n) {
  weft_runtime *r = rt.get();
  long k = 1;
  rows out;
  /* Interleaved rounds would be fairer still; alternating whole runs
   * three times and keeping each side's best is close enough. */
  out.c_api = out.cpp = 1e9;
  for (int rep = 0; rep < 3; rep++) {
    out.c_api =
        std::min(out.c_api, median_us(rounds, n, [&] {
                   weft_task *t;
                   if (weft_task_spawn(r, &t, child, &ran, nullptr) == 0)
                     weft_task_join(t);
                 }));
    out.cpp = std::min(out.cpp, median_us(rounds, n, [&] {
                         weft::spawn(rt, [&k] {
                           ran.fetch_add(k, std::memory_order_relaxed);
                         }).join();
                       }));
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  weft::runtime rt = open_runtime(1);
  const int rounds = 5;
  const long n = quick ? 2000 : 20000;
  rows thread = measure(rt, rounds, n);
  rows in_task = weft::spawn(
                     rt, [&] { return measure(rt, rounds, n); }, "bench")
                     .join();
  std::printf("spawn+join, plain thread: C API %.3f us, weft.hpp capturing "
              "lambda %.3f us (%.2fx)\n",
              thread.c_api, thread.cpp, thread.cpp / thread.c_api);
  std::printf("spawn+join, from a task:  C API %.3f us, weft.hpp capturing "
              "lambda %.3f us (%.2fx)\n",
              in_task.c_api, in_task.cpp, in_task.cpp / in_task.c_api);
  return 0;
}
