/* The rest of the C++ face: buffers, copy and memset, a typed launch on
 * the host backend, declared accesses ordering two tasks, registered data,
 * ranges, events and a captured graph. */
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "cpp_common.hpp"

namespace {

constexpr unsigned n = 4096;

/* The host implementation of "add v to each x", once per block. */
void add_host(const weft_kernel_ctx &k, float *x, unsigned len, float v) {
  unsigned lo = k.block_idx.x * k.block_dim.x, hi = lo + k.block_dim.x;
  for (unsigned i = lo; i < hi && i < len; i++)
    x[i] += v;
}
const weft::kernel<float *, unsigned, float>
    add(nullptr, weft::host_fn<add_host>, "add");
/* Arguments that need more than 8-byte alignment: a 16-byte vector and
 * a 32-byte-aligned struct, read by value (the vector was loaded with an
 * aligned load from where the host backend kept it 8-byte aligned). */
typedef float v4 __attribute__((vector_size(16)));
struct alignas(32) wide {
  float f[8];
};
float aligned_seen[12];
void aligned_host(const weft_kernel_ctx &, int pad, v4 v, wide w) {
  (void)pad;
  for (int i = 0; i < 4; i++)
    aligned_seen[i] = v[i];
  for (int i = 0; i < 8; i++)
    aligned_seen[4 + i] = w.f[i];
}
const weft::kernel<int, v4, wide>
    aligned_args(nullptr, weft::host_fn<aligned_host>, "aligned_args");

bool host_backend(weft::runtime &rt) {
  return rt.backend() == WEFT_BACKEND_HOST;
}

void buffers() {
  weft::pinned_buffer<float> h(n);
  weft::device_buffer<float> d(n);
  EXPECT(h.size() == n && d.size() == n && d.bytes() == n * sizeof(float));
  for (unsigned i = 0; i < n; i++)
    h[i] = (float)i;
  weft::copy(d, h, n);
  weft::memset(h, 0, n);
  weft::copy(h.data(), d.data(), n / 2); /* pointers too */
  weft::sync();
  EXPECT(h[n / 2 - 1] == (float)(n / 2 - 1) && h[n / 2] == 0.0f);
  /* Moves hand over the memory; the source is empty. */
  weft::device_buffer<float> m = std::move(d);
  EXPECT(!d && d.size() == 0 && m.size() == n);
  EXPECT_OK(m.reset());
  EXPECT(!m);
}

void typed_launch(weft::runtime &rt) {
  if (!host_backend(rt))
    return; /* no CUDA version of add in this test */
  weft::pinned_buffer<float> h(n);
  weft::device_buffer<float> d(n);
  for (unsigned i = 0; i < n; i++)
    h[i] = 1.0f;
  weft::copy(d, h, n);
  /* The arguments convert to the parameters' types: an int to unsigned,
   * a double to float. */
  weft::launch(add, weft::dim3((n + 255) / 256), 256, 0, d.data(), (int)n, 2.5);
  weft::copy(h, d, n);
  weft::sync();
  EXPECT(h[0] == 3.5f && h[n - 1] == 3.5f);
  /* A wrong shape is weft's error, thrown with its code. */
  int code = 0;
  try {
    weft::launch(add, 0, 256, 0, d.data(), n, 1.0f);
  } catch (const weft::error &e) {
    code = e.code();
  }
  EXPECT_EQ_INT(code, WEFT_EINVAL);
  EXPECT_ERR(weft::try_launch(add, 1, 0, 0, d.data(), n, 1.0f), WEFT_EINVAL);
  v4 v = {1, 2, 3, 4};
  wide w;
  for (int i = 0; i < 8; i++)
    w.f[i] = 5.0f + (float)i;
  weft::launch(aligned_args, 1, 1, 0, 7, v, w);
  weft::sync();
  for (int i = 0; i < 12; i++)
    EXPECT(aligned_seen[i] == (float)(i + 1));
}

/* A writer that is slow to queue its work, and a reader spawned after it:
 * with the declarations, the reader's copy follows the writer's memset. */
void accesses(weft::runtime &rt) {
  for (int round = 0; round < 20; round++) {
    weft::device_buffer<unsigned char> d(n);
    weft::pinned_buffer<unsigned char> h(n);
    weft::memset(d, 0, n);
    weft::sync();
    auto w = weft::spawn(
        rt,
        [&d] {
          for (int i = 0; i < 20; i++)
            weft::yield();
          weft::memset(d, 7, n);
        },
        "writer", weft::writes(d));
    auto r = weft::spawn(
        rt,
        [&d, &h] {
          weft::copy(h, d, n);
          weft::sync();
        },
        weft::task_options("reader"), weft::reads(d), weft::writes(h));
    w.join();
    r.join();
    EXPECT_MSG(h[0] == 7 && h[n - 1] == 7, "round %d: read %d", round,
               (int)h[0]);
  }
}

void ranges_events_graphs(weft::runtime &rt) {
  {
    weft::range outer("outer");
    EXPECT(outer.ok());
    { weft::range inner("inner"); }
  }
  /* Both popped: nothing left to pop. */
  EXPECT_ERR(weft_range_pop(), WEFT_ESTATE);

  weft::event a, b;
  weft::device_buffer<char> d(1 << 20);
  a.record();
  weft::memset(d, 1, d.size());
  b.record();
  b.sync();
  EXPECT(a.done() && b.done());
  EXPECT(weft::elapsed_ms(a, b) >= 0.0f);

  weft::pinned_buffer<char> h(64);
  weft::memset(h, 0, 64);
  weft::sync();
  weft::graph g;
  {
    weft::capture cap;
    weft::memset(h, 5, 64);
    g = cap.end();
  }
  EXPECT(g);
  EXPECT(h[0] == 0); /* recorded, not run */
  g.launch();
  weft::sync();
  EXPECT(h[0] == 5 && h[63] == 5);
  /* A capture left by an exception is ended and dropped. */
  try {
    weft::capture cap;
    throw 1;
  } catch (int) {
  }
  weft_graph *none = nullptr;
  EXPECT_ERR(weft_graph_end(&none), WEFT_ESTATE);

  /* A second capture of the same shape updates g in place. */
  {
    weft::capture cap;
    weft::memset(h, 7, 64);
    cap.update(g);
    EXPECT(!cap); /* over: its destructor ends nothing */
    int code = 0;
    try {
      cap.end();
    } catch (const weft::error &e) {
      code = e.code();
      EXPECT(std::strstr(e.what(), "already ended") != nullptr);
    }
    EXPECT_EQ_INT(code, WEFT_ESTATE);
  }
  EXPECT(h[0] == 5); /* updated, not run */
  g.launch();
  weft::sync();
  EXPECT(h[0] == 7 && h[63] == 7);
  (void)rt;
}

/* The non-throwing forms of events, graphs and captures: try_<call>
 * returning the code, weft::nothrow constructors leaving the object
 * false. */
void nothrow_events_graphs() {
  weft::event e(weft::nothrow);
  EXPECT(e);
  EXPECT_OK(e.try_record());
  EXPECT_OK(e.try_wait());
  EXPECT_OK(e.try_sync());
  float ms = -1;
  EXPECT_OK(weft::try_elapsed_ms(e, e, &ms));
  EXPECT(ms >= 0.0f);
  weft::event moved = std::move(e);
  EXPECT(!e && moved);
  EXPECT(e.try_record() != 0 && e.try_sync() != 0);

  weft::pinned_buffer<char> h(16);
  weft::graph g;
  weft::capture cap(weft::nothrow);
  EXPECT(cap);
  weft::memset(h, 3, 16);
  EXPECT_OK(cap.try_end(&g));
  EXPECT(!cap && g);
  weft::graph other;
  EXPECT_ERR(cap.try_end(&other), WEFT_ESTATE);
  EXPECT(std::strstr(weft_last_error_message(), "already ended") != nullptr);
  EXPECT_ERR(cap.try_update(g), WEFT_ESTATE);
  EXPECT(!other);
  EXPECT_OK(g.try_launch());
  weft::sync();
  EXPECT(h[15] == 3);
  weft::graph empty;
  EXPECT(empty.try_launch() != 0);
  /* A capture that cannot begin (one is open already) is false. */
  weft::capture first;
  weft::capture second(weft::nothrow);
  EXPECT(!second);
  EXPECT_ERR(second.try_end(&other), WEFT_ESTATE);
  EXPECT_OK(first.try_end(&other));
}

/* A capture's end called from inside a data-flow step of it is refused
 * and leaves the capture open (weft/graph.h): the object ends it still.
 * It took itself for ended, and the caller stayed capturing after its
 * scope (every later capture refused, the work recorded, not run). */
void capture_ended_in_its_step() {
  weft::device_buffer<float> d(16);
  {
    weft::capture c;
    weft::graph g;
    int inner = 0;
    weft::spawn([&c, &g, &inner] { inner = c.try_end(&g); }, weft::rw(d))
        .join();
    EXPECT_EQ_INT(inner, WEFT_ESTATE);
    EXPECT(!g);
  }
  weft::capture after(weft::nothrow);
  EXPECT_MSG(after, "still capturing: %s", weft_last_error_message());
}

/* Registered data (weft::registered): two tasks declaring it in turn,
 * each adding to its instance; the host copy brought back by a
 * write-back started ahead (prefetch to the host), before sync. */
void registered_data(weft::runtime &rt) {
  if (!host_backend(rt))
    return; /* no CUDA version of add in this test */
  std::vector<float> x(n, 1.0f);
  {
    weft::registered<float> d(rt, x.data(), x.size());
    auto t1 = weft::spawn(
        rt,
        [&d] { weft::launch(add, (n + 255) / 256, 256, 0, d.get(), n, 2.0f); },
        weft::rw(d));
    auto t2 = weft::spawn(
        rt,
        [&d] { weft::launch(add, (n + 255) / 256, 256, 0, d.get(), n, 1.0f); },
        weft::rw(d));
    d.prefetch(WEFT_DATA_HOST); /* the write-back, after t2, by itself */
    t1.join();
    t2.join();
    for (int i = 0; i < 10000 && d.stats().to_host == 0; i++)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT(x[0] == 4.0f && x[n - 1] == 4.0f);
    d.sync(); /* the host copy is valid: nothing more moves */
    weft_data_stats st = d.stats();
    EXPECT(st.to_device == n * sizeof(float) &&
           st.to_host == n * sizeof(float));
    int code = 0;
    try {
      d.get(); /* not in a task */
    } catch (const weft::error &e) {
      code = e.code();
    }
    EXPECT_EQ_INT(code, WEFT_ESTATE);
    float *q = nullptr;
    EXPECT_ERR(d.try_get(WEFT_READ, &q), WEFT_ESTATE);
    EXPECT(q == nullptr);
    EXPECT_OK(d.try_sync());
    EXPECT_OK(d.try_prefetch(WEFT_DATA_HOST));
    EXPECT_OK(d.try_stats(&st));
  } /* unregistered here: the region is free to register again */
  weft::registered<float> again(rt, x.data(), n);
  again.unregister();
  EXPECT(again.handle() == nullptr && !again);
  /* Without exceptions: a region registered twice is refused, and the
   * handle left empty refuses every call. */
  weft::registered<float> one(weft::nothrow, rt, x.data(), n);
  weft::registered<float> twice(weft::nothrow, rt, x.data(), n);
  EXPECT(one && !twice);
  EXPECT(twice.try_sync() != 0 && twice.try_prefetch(0) != 0);
  EXPECT_OK(twice.try_unregister()); /* nothing to unregister */
  EXPECT_OK(one.try_unregister());
  EXPECT(!one);
}

/* Registered blocks (weft::registered_blocks) over four emulated
 * devices, from a driver task of their runtime (this thread declares for
 * main's): a task per block on its home adds to it, the last block
 * shorter; the host holds the result once they are unregistered. */
weft::runtime *current = nullptr; /* the blocks' runtime */

void blocks_driver(std::vector<float> &x) {
  weft::registered_blocks<float> m(*current, x.data(), x.size(), 256);
  EXPECT_EQ_INT((int)m.size(), (int)((x.size() + 255) / 256));
  EXPECT_EQ_INT((int)m[m.size() - 1].size(), (int)(x.size() % 256));
  m.place();
  std::vector<weft::task<int>> ts;
  for (std::size_t i = 0; i < m.size(); i++) {
    auto b = m[i];
    EXPECT_EQ_INT(b.device(), (int)(i % 4));
    EXPECT(b.data() == x.data() + i * 256);
    weft::task_options to;
    to.device = b.device();
    ts.push_back(weft::spawn(
        [b] {
          weft::launch(add, (unsigned)((b.size() + 255) / 256), 256, 0, b.get(),
                       (unsigned)b.size(), 2.0f);
          return weft_task_device();
        },
        to, weft::rw(b)));
  }
  for (std::size_t i = 0; i < ts.size(); i++)
    EXPECT_EQ_INT(ts[i].join(), (int)(i % 4));
  int code = 0;
  try {
    (void)m[m.size()];
  } catch (const weft::error &e) {
    code = e.code();
  }
  EXPECT_EQ_INT(code, WEFT_EINVAL);
  weft::registered_blocks<float>::block none;
  EXPECT_ERR(m.try_at(m.size(), &none), WEFT_EINVAL);
  EXPECT(none.handle() == nullptr && none.device() == -1);
  EXPECT_OK(m.try_at(0, &none));
  EXPECT(none.data() == x.data() && none.device() == 0);
  /* A block given straight to rw: one more task adds to block 0. */
  weft::task_options to;
  to.device = m[0].device();
  weft::spawn(
      [b = m[0]] {
        weft::launch(add, 1, 256, 0, b.get(), (unsigned)b.size(), 1.0f);
      },
      to, weft::rw(m[0]))
      .join();
  EXPECT_OK(m.try_place());
  EXPECT_OK(m.try_unregister());
  EXPECT(m.size() == 0 && !m);
  weft::registered_blocks<float> bad(weft::nothrow, *current, x.data(),
                                     x.size(), 0);
  EXPECT(!bad);
}

void registered_blocks() {
  weft::runtime_options o;
  o.backend = WEFT_BACKEND_HOST;
  o.host_devices = 4;
  weft::runtime rt(o);
  std::vector<float> x(n + 100, 1.0f);
  current = &rt;
  weft::spawn(rt, [&x] { blocks_driver(x); }).join();
  current = nullptr;
  EXPECT(x[0] == 4.0f && x[255] == 4.0f && x[256] == 3.0f &&
         x[x.size() - 1] == 3.0f);
}

} // namespace

/* A free refused (a live graph uses the memory) keeps the buffer, to
 * free again once the graph is gone. */
void refused_free_kept() {
  weft::device_buffer<int> b(64);
  weft::graph g;
  {
    weft::capture c;
    EXPECT_OK(weft_memset(b.data(), 0, b.bytes()));
    g = c.end();
  }
  EXPECT_ERR(b.reset(), WEFT_EBUSY);
  EXPECT(b && b.size() == 64);
  g = weft::graph();
  EXPECT_OK(b.reset());
  EXPECT(!b);
}

int main() {
  weft::runtime rt = open_runtime();
  refused_free_kept();
  buffers();
  typed_launch(rt);
  accesses(rt);
  registered_data(rt);
  registered_blocks();
  ranges_events_graphs(rt);
  nothrow_events_graphs();
  capture_ended_in_its_step();
  std::printf("ok\n");
  return 0;
}
