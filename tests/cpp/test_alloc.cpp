/* No heap allocation per spawn for a callable of up to 64 bytes, counted
 * by replacing the global operator new: after the first spawns of a thread
 * have filled its cache of task states, spawn + join allocates nothing; a
 * callable too big for the cache allocates once per spawn, which shows
 * the count sees the face's allocations. A typed launch allocates nothing
 * either. */
#include <atomic>
#include <cstdlib>
#include <new>

#include "cpp_common.hpp"

static std::atomic<long> news{0};

void *operator new(std::size_t n) {
  news++;
  if (void *p = std::malloc(n ? n : 1))
    return p;
  throw std::bad_alloc();
}
void *operator new(std::size_t n, const std::nothrow_t &) noexcept {
  news++;
  return std::malloc(n ? n : 1);
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }

namespace {

struct bytes64 {
  long v[8];
};
static_assert(sizeof(bytes64) == 64);

long spawns_allocating(weft::runtime &rt, int n, long *sum) {
  bytes64 b = {{1, 2, 3, 4, 5, 6, 7, 8}};
  long before = news;
  for (int i = 0; i < n; i++) {
    auto t = weft::spawn(rt, [b] { return b.v[7]; });
    *sum += t.join();
  }
  return news - before;
}

long big_spawns_allocating(weft::runtime &rt, int n) {
  char big[300] = {0};
  long before = news;
  for (int i = 0; i < n; i++)
    weft::spawn(rt, [big] { (void)big; }).join();
  return news - before;
}

void host_kernel(const weft_kernel_ctx &, int *out, int v) { *out = v; }

} // namespace

int main() {
  weft::runtime rt = open_runtime(1);
  long sum = 0;
  spawns_allocating(rt, 8, &sum); /* fills this thread's cache */
  long small = spawns_allocating(rt, 1000, &sum);
  EXPECT_EQ_INT(sum, 8 * 1008);
  EXPECT_EQ_INT(small, 0);
  long big = big_spawns_allocating(rt, 100);
  EXPECT_EQ_INT(big, 100);

  if (rt.backend() == WEFT_BACKEND_HOST) {
    static const weft::kernel<int *, int> k(nullptr, weft::host_fn<host_kernel>,
                                            "host_kernel");
    weft::pinned_buffer<int> out(1);
    long before = news;
    weft::launch(k, 1, 1, 0, out.data(), 5);
    weft::sync();
    EXPECT_EQ_INT(news - before, 0);
    EXPECT_EQ_INT(out[0], 5);
  }
  std::printf("ok: %ld allocations for 1000 small spawns, %ld for 100 big\n",
              small, big);
  return 0;
}
