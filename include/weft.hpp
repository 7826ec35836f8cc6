/* weft.hpp: a header-only C++17 face over weft's C API.
 *
 * Everything here is inline over the calls of weft.h; libweft holds no C++.
 * Errors: a call that fails throws weft::error (the WEFT_E* code and
 * weft_last_error_message()); each has a non-throwing form, try_<call>
 * returning 0 or the negative code (for event::done() and the library
 * handles of weft/cuda.hpp, the C call itself), and each class that
 * acquires something when made a constructor taking weft::nothrow that
 * leaves the object empty (false) on failure. Built
 * without exceptions (-fno-exceptions), the throwing forms print the error
 * and abort, as the standard library's do: use the non-throwing forms.
 * Context: as the C call each wraps (weft/task.h and the others); what a
 * class adds is said at the class. docs/GUIDE.md ("C++") has the whole
 * reference; docs/decisions/cpp.md the reasons. */
#ifndef WEFT_HPP
#define WEFT_HPP

#include "weft.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace weft {

/* The tag of the non-throwing constructors. */
struct nothrow_t {
  explicit nothrow_t() = default;
};
inline constexpr nothrow_t nothrow{};

/* A failed weft call: code() is the WEFT_E* code, what() its message as
 * weft_last_error_message() had it when the error was made. Holds no heap
 * memory (the message is cut at 255 bytes). */
class error : public std::exception {
public:
  error(int code, const char *message) noexcept : code_(code) {
    std::snprintf(what_, sizeof what_, "%s",
                  message && *message ? message : weft_strerror(code));
  }
  int code() const noexcept { return code_; }
  const char *what() const noexcept override { return what_; }

private:
  int code_;
  char what_[256];
};

namespace detail {
/* n elements of T in bytes; SIZE_MAX where that overflows, which every
 * call refuses (no memory, or past the end of memory) rather than
 * allocating or declaring the wrapped-around few. */
template <class T> constexpr std::size_t bytes_of(std::size_t n) noexcept {
  return n > SIZE_MAX / sizeof(T) ? SIZE_MAX : n * sizeof(T);
}

/* A destructor's give-back refused (rc): said on stderr, since nothing
 * can be thrown there; what the object held stays live, and keeps its
 * runtime from closing (weft_shutdown's WEFT_EBUSY names it). */
inline void say_kept(const char *what, int rc) noexcept {
  if (rc)
    std::fprintf(stderr, "weft: %s refused (%s): %s; it stays live\n", what,
                 weft_err_name(rc), weft_last_error_message());
}

/* Throws weft::error for rc, or without exceptions prints it and aborts. */
[[noreturn]] inline void fail(int rc) {
#if defined(__cpp_exceptions)
  throw error(rc, weft_last_error_message());
#else
  std::fprintf(stderr, "weft: %s (%s)\n", weft_last_error_message(),
               weft_err_name(rc));
  std::abort();
#endif
}

inline void check(int rc) {
  if (rc < 0)
    fail(rc);
}

/* A task's exception rethrown by join, or without exceptions (a callable
 * built with them threw) printed and aborted on. */
[[noreturn]] inline void rethrow(std::exception_ptr e) {
#if defined(__cpp_exceptions)
  std::rethrow_exception(e);
#else
  (void)e;
  std::fprintf(stderr, "weft: a task's callable threw, and join cannot "
                       "rethrow it without exceptions\n");
  std::abort();
#endif
}

/* try_join's message for a task's exception, rc WEFT_ESTATE. */
inline int say_thrown(const std::exception_ptr &e) noexcept {
#if defined(__cpp_exceptions)
  try {
    std::rethrow_exception(e);
  } catch (const std::exception &x) {
    return weft_error_set(WEFT_ESTATE, 0, "task threw: %s", x.what());
  } catch (...) {
  }
#else
  (void)e;
#endif
  return weft_error_set(WEFT_ESTATE, 0, "task threw");
}

/* weft_data_get typed: registered's and a block's get. */
template <class T> int data_get(weft_data *d, unsigned mode, T **out) noexcept {
  void *q = nullptr;
  int rc = weft_data_get(d, mode, &q);
  *out = static_cast<T *>(q);
  return rc;
}

/* Task states of up to this size come from a per-thread cache of blocks:
 * a callable of 64 bytes with a result of up to 128 fits. */
inline constexpr std::size_t state_block = 256;
inline constexpr std::size_t state_cached = 64; /* blocks kept per thread */

/* A thread's cache of free state blocks, handed back to the heap when the
 * thread ends. */
struct block_cache {
  void *head = nullptr;
  std::size_t count = 0;
  bool dead = false; /* the thread is ending: free straight to the heap */
  ~block_cache() {
    dead = true;
    while (head) {
      void *next = *static_cast<void **>(head);
      ::operator delete(head);
      head = next;
    }
  }
};
inline thread_local block_cache tls_blocks;

/* Out of line so that the cache's address is looked up afresh each call:
 * a task may resume on another thread after a switch, and an inlined
 * caller could keep the first thread's address across it. */
#if defined(__GNUC__)
#define WEFT__NOINLINE __attribute__((noinline))
#else
#define WEFT__NOINLINE
#endif
WEFT__NOINLINE inline void *block_get() noexcept {
  block_cache &c = tls_blocks;
  if (void *p = c.head) {
    c.head = *static_cast<void **>(p);
    c.count--;
    return p;
  }
  return ::operator new(state_block, std::nothrow);
}
WEFT__NOINLINE inline void block_put(void *p) noexcept {
  block_cache &c = tls_blocks;
  if (c.dead || c.count >= state_cached) {
    ::operator delete(p);
    return;
  }
  *static_cast<void **>(p) = c.head;
  c.head = p;
  c.count++;
}

/* What a spawned callable shares with its handle: two references, the
 * task's and the handle's; the last one out frees it. */
struct state_base {
  void (*destroy)(state_base *) noexcept;
  std::atomic<int> refs{2};
  /* Set by the task as it starts: a task that never starts (no stack
   * could be had for it, weft_task_spawn's WEFT_ENOMEM at join) neither
   * calls nor destroys the callable, nor releases its reference; the
   * handle does both once the task is known to be gone. Read only after
   * the join or the runtime's shutdown. */
  bool started = false;
  /* What the callable threw, for join. Present without exceptions too:
   * the layout must not depend on -fno-exceptions, for a handle made in a
   * translation unit built without them may be joined in one built with
   * them (and one copy of each inline function is kept for both). */
  std::exception_ptr thrown;
  void release() noexcept {
    /* The last one out skips the atomic write: after a join, the task's
     * release came first. */
    if (refs.load(std::memory_order_acquire) == 1 ||
        refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
      destroy(this);
  }
};

template <class R> struct result_slot { std::optional<R> value; };
template <> struct result_slot<void> {};

/* The part of a state that the handle, which knows R but not F, reads. */
template <class R> struct state_r : state_base { result_slot<R> result; };

template <class F, class R> struct state final : state_r<R> {
  union {
    F fn; /* destroyed by the task, right after the call */
  };

  template <class G> explicit state(G &&g) : fn(std::forward<G>(g)) {
    this->destroy = &free_state;
  }
  ~state() {}

  static constexpr bool cached =
      sizeof(state) <= state_block &&
      alignof(state) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__;

  static void *allocate() noexcept {
    if constexpr (cached)
      return block_get();
    else if constexpr (alignof(state) > __STDCPP_DEFAULT_NEW_ALIGNMENT__)
      return ::operator new(sizeof(state), std::align_val_t(alignof(state)),
                            std::nothrow);
    else
      return ::operator new(sizeof(state), std::nothrow);
  }
  static void free_state(state_base *b) noexcept {
    state *s = static_cast<state *>(b);
    if (!s->started) /* never called: the callable is still there */
      s->fn.~F();
    s->~state();
    deallocate(s);
  }
  static void deallocate(void *s) noexcept {
    if constexpr (cached)
      block_put(s);
    else if constexpr (alignof(state) > __STDCPP_DEFAULT_NEW_ALIGNMENT__)
      ::operator delete(s, std::align_val_t(alignof(state)));
    else
      ::operator delete(s);
  }

  /* Runs the callable once, destroys it, and keeps its result. */
  void call() {
    struct done { /* destroys fn on both the return and the throw path */
      F &f;
      ~done() { f.~F(); }
    } guard{fn};
    if constexpr (std::is_void_v<R>)
      std::move(fn)();
    else
      this->result.value.emplace(std::move(fn)());
  }

  /* The C task function: nothing thrown leaves it, so no exception
   * unwinds through the C runtime or across a fiber switch. */
  static void entry(void *arg) noexcept {
    state *s = static_cast<state *>(arg);
    s->started = true;
#if defined(__cpp_exceptions)
    try {
      s->call();
    } catch (...) {
      s->thrown = std::current_exception();
    }
#else
    s->call();
#endif
    s->release();
  }
};

struct adopt_t {};

template <class T> T *ptr_of(T *p) noexcept { return p; }
template <class B> auto ptr_of(B &b) noexcept -> decltype(b.data()) {
  return b.data();
}

} // namespace detail

/* Runtime options: weft_runtime_opts with its defaults filled in; set the
 * fields by name (o.backend = WEFT_BACKEND_HOST; o.workers = 2). */
struct runtime_options : weft_runtime_opts {
  runtime_options() noexcept { weft_runtime_opts_init(this); }
};

/* A runtime: weft_init in the constructor, weft_shutdown in the destructor
 * (which waits for every task; its error is lost there, close() reports
 * it). A shutdown refused (WEFT_EBUSY: a buffer, event, graph or
 * registered data still live; WEFT_ESTATE: from a task) leaves it open
 * and the object holding it, to close again once the cause is gone; the
 * destructor then says so on stderr and leaves the runtime open. A task
 * handle (weft::task) that outlives it is emptied by its destructor, not
 * joined. Move-only.
 * Errors: weft_init's (constructor), weft_shutdown's (close).
 * Context: a plain thread, as weft_init and weft_shutdown. */
class runtime {
public:
  explicit runtime(const runtime_options &o = runtime_options()) {
    detail::check(weft_init(&rt_, &o));
  }
  /* Leaves the runtime empty (get() NULL) if weft_init fails. */
  runtime(nothrow_t, const runtime_options &o = runtime_options()) noexcept {
    if (weft_init(&rt_, &o) != 0)
      rt_ = nullptr;
  }
  runtime(runtime &&o) noexcept : rt_(std::exchange(o.rt_, nullptr)) {}
  runtime &operator=(runtime &&o) noexcept {
    if (this != &o) {
      close_or_say("replaced");
      rt_ = std::exchange(o.rt_, nullptr);
    }
    return *this;
  }
  runtime(const runtime &) = delete;
  runtime &operator=(const runtime &) = delete;
  ~runtime() { close_or_say("destroyed"); }

  /* Shuts the runtime down now; the object is empty afterwards, unless
   * the shutdown was refused and closed nothing (WEFT_EBUSY, WEFT_ESTATE:
   * the object still holds it, to close again). */
  void close() { detail::check(try_close()); }
  int try_close() noexcept {
    int rc = rt_ ? weft_shutdown(rt_) : 0;
    if (rc != WEFT_EBUSY && rc != WEFT_ESTATE)
      rt_ = nullptr;
    return rc;
  }

  weft_runtime *get() const noexcept { return rt_; }
  explicit operator bool() const noexcept { return rt_ != nullptr; }
  weft_backend_kind backend() const noexcept {
    return weft_runtime_backend(rt_);
  }

private:
  /* Where no error can be thrown: a refused shutdown is said on stderr,
   * and the runtime stays open. */
  void close_or_say(const char *how) noexcept {
    int rc = try_close();
    if (rc && rt_)
      std::fprintf(stderr,
                   "weft::runtime %s, its shutdown refused (%s): %s; the "
                   "runtime stays open\n",
                   how, weft_err_name(rc), weft_last_error_message());
  }

  weft_runtime *rt_ = nullptr;
};

/* Task options: weft_task_opts with its defaults; a name converts. Its
 * accesses are set by spawn from the weft::reads/writes/rw given there. */
struct task_options : weft_task_opts {
  task_options() noexcept { weft_task_opts_init(this); }
  task_options(const char *task_name) noexcept {
    weft_task_opts_init(this);
    name = task_name;
  }
};

/* A declared access (weft/dataflow.h) of n elements from p, for spawn. */
struct access : weft_access {};
template <class T> access reads(const T *p, std::size_t n = 1) noexcept {
  return {{p, detail::bytes_of<T>(n), WEFT_READ}};
}
template <class T> access writes(T *p, std::size_t n = 1) noexcept {
  return {{p, detail::bytes_of<T>(n), WEFT_WRITE}};
}
template <class T> access rw(T *p, std::size_t n = 1) noexcept {
  return {{p, detail::bytes_of<T>(n), WEFT_RW}};
}
/* The whole of a buffer (weft::device_buffer, pinned_buffer, or anything
 * with data() and size(), a registered_blocks block given by value too). */
template <class B>
auto reads(const B &b) noexcept -> decltype(reads(b.data(), b.size())) {
  return reads(b.data(), b.size());
}
template <class B>
auto writes(B &&b) noexcept -> decltype(writes(b.data(), b.size())) {
  return writes(b.data(), b.size());
}
template <class B> auto rw(B &&b) noexcept -> decltype(rw(b.data(), b.size())) {
  return rw(b.data(), b.size());
}

/* A spawned task's handle, R being what its callable returns. Move-only.
 * The destructor joins a task not joined or detached (as std::jthread
 * does), dropping its result, error and exception: join() to see them.
 * A handle that outlives its runtime (declared before the weft::runtime)
 * is emptied, not joined, by its destructor, and join or detach then
 * fails with WEFT_EHANDLE: weft_shutdown waited for the task and freed
 * it; join() it before the runtime closes to see what it returned. (The
 * runtime is known by its address: a new runtime opened at the same
 * address meanwhile is taken for it, so do not keep handles past their
 * runtime.) From a task, a handle of another runtime's task cannot be
 * joined (WEFT_EINVAL, the handle kept; a plain thread may join it) and
 * its destructor detaches it.
 * Errors: weft_task_join's (a refused join, WEFT_EDEADLK, a task joining
 * itself or a task of another runtime, leaves the handle joinable);
 * join() rethrows what the callable threw. Context: any thread; join may switch
 * (a task) or block (a thread); the destructor too, when it joins. */
template <class R> class task {
  static_assert(!std::is_reference_v<R>,
                "a task's callable returns a value: return a copy, or a "
                "pointer or std::reference_wrapper to what outlives it");

public:
  task() noexcept = default;
  task(task &&o) noexcept
      : t_(std::exchange(o.t_, nullptr)), s_(std::exchange(o.s_, nullptr)),
        rt_(o.rt_) {}
  task &operator=(task &&o) noexcept {
    if (this != &o) {
      drop();
      t_ = std::exchange(o.t_, nullptr);
      s_ = std::exchange(o.s_, nullptr);
      rt_ = o.rt_;
    }
    return *this;
  }
  task(const task &) = delete;
  task &operator=(const task &) = delete;
  ~task() { drop(); }

  /* Waits for the task and its GPU work; returns the callable's result,
   * rethrows its exception, or throws the task's error. */
  R join() {
    int rc = join_only();
    if (rc == WEFT_EDEADLK || rc == WEFT_EHANDLE || t_)
      detail::fail(rc); /* not joined: the handle stays */
    if (s_->thrown) {
      std::exception_ptr e = std::move(s_->thrown);
      end();
      detail::rethrow(e);
    }
    if (rc != 0) {
      end();
      detail::fail(rc);
    }
    if constexpr (std::is_void_v<R>) {
      end();
    } else {
      R r = std::move(*s_->result.value);
      end();
      return r;
    }
  }

  /* join without throwing: 0, the task's error, or WEFT_ESTATE if the
   * callable threw (the exception is dropped, its what() in the message).
   * out, if not NULL, receives the result of a callable that returned. */
  int try_join(std::conditional_t<std::is_void_v<R>, void *, R *> out =
                   nullptr) noexcept {
    int rc = join_only();
    if (rc == WEFT_EDEADLK || rc == WEFT_EHANDLE || t_)
      return rc; /* not joined: the handle stays */
    if (rc == 0 && s_->thrown)
      rc = detail::say_thrown(s_->thrown);
    if constexpr (!std::is_void_v<R>) {
      if (rc == 0 && out)
        *out = std::move(*s_->result.value);
    } else {
      (void)out;
    }
    end();
    return rc;
  }

  /* Lets the task run on and free itself; the handle is empty after. A
   * detached task that never starts (no stack could be had for it) never
   * destroys its callable, as a C task's arg is never freed then. */
  void detach() { detail::check(try_detach()); }
  int try_detach() noexcept {
    if (!t_)
      return weft_error_set(WEFT_EHANDLE, 0, "detach of an empty handle");
    if (runtime_gone())
      return weft_error_set(WEFT_EHANDLE, 0,
                            "detach: the task's runtime has shut down (it "
                            "waited for the task, which is gone)");
    int rc = weft_task_detach(t_);
    if (rc == 0) {
      t_ = nullptr;
      end();
    }
    return rc;
  }

  bool joinable() const noexcept { return t_ != nullptr; }
  weft_task *native() const noexcept { return t_; }

  /* For spawn: a handle over a task and its state. */
  task(detail::adopt_t, weft_task *t, detail::state_r<R> *s,
       weft_runtime *rt) noexcept
      : t_(t), s_(s), rt_(rt) {}

private:
  /* weft_task_join, except that the refusals the handle can tell apart
   * (a cycle, the task itself) keep it: any other error is the task's,
   * and the task is joined all the same. */
  int join_only() noexcept {
    if (!t_) /* a graph's step, which ran at spawn, or nothing */
      return s_ ? 0
                : weft_error_set(WEFT_EHANDLE, 0, "join of an empty handle");
    /* Freed with its runtime, which waited for it. */
    if (runtime_gone()) {
      t_ = nullptr;
      release_unstarted();
      return weft_error_set(WEFT_EHANDLE, 0,
                            "join: the task's runtime has shut down (it "
                            "waited for the task, which is gone)");
    }
    /* Refused by weft_task_join with a code the task's own error could
     * have too: told apart here, the handle kept. */
    if (joined_from_other_runtime())
      return weft_error_set(WEFT_EINVAL, 0,
                            "join: the task is another runtime's than the "
                            "calling task's (a plain thread may join it)");
    int rc = weft_task_join(t_);
    if (rc == WEFT_EDEADLK || (rc == WEFT_ESTATE && t_ == weft_task_self()))
      return WEFT_EDEADLK; /* refused, the handle still holds the task */
    t_ = nullptr;
    if (rc == WEFT_ENOMEM)
      release_unstarted();
    return rc;
  }
  /* The task is gone (joined, or waited for by its runtime's shutdown)
   * without ever starting: its reference is released here, and the
   * callable destroyed with the state. After a join only for WEFT_ENOMEM,
   * the code of a task that could not start: a join refused as already
   * done (WEFT_EHANDLE, native() joined or detached elsewhere) says
   * nothing of whether the task still runs. */
  void release_unstarted() noexcept {
    if (s_ && !s_->started)
      s_->release();
  }
  void end() noexcept {
    if (s_)
      std::exchange(s_, nullptr)->release();
  }
  /* A handle outliving its runtime (declared before it): the shutdown
   * waited for the task and freed it, and using it would read freed
   * memory. Asked of the runtime's address: a later runtime opened at the
   * same address is not told apart (weft.hpp's task comment). */
  bool runtime_gone() const noexcept {
    return weft_runtime_backend(rt_) == WEFT_BACKEND_AUTO;
  }
  /* Called from a task of another runtime, which may not join it. */
  bool joined_from_other_runtime() const noexcept {
    return weft_task_self() && weft_runtime_current() != rt_;
  }
  void drop() noexcept {
    if (t_ && runtime_gone()) {
      t_ = nullptr;
      release_unstarted();
    }
    /* From a task of another runtime no join is allowed: detached. */
    if (t_ && (joined_from_other_runtime() || t_ == weft_task_self())) {
      weft_task_detach(t_); /* nor may a task join itself: detached too */
    } else if (t_) {
      int rc = weft_task_join(t_);
      if (rc == WEFT_EDEADLK)
        weft_task_detach(t_); /* never leaked, even when it cannot be joined */
      else if (rc == WEFT_ENOMEM)
        release_unstarted();
    }
    t_ = nullptr;
    end();
  }

  weft_task *t_ = nullptr;
  detail::state_r<R> *s_ = nullptr;
  weft_runtime *rt_ = nullptr; /* the task's, for the destructor */
};

template <class F> using result_of_t = std::invoke_result_t<std::decay_t<F> &&>;

/* Spawns f into out with opts and n accesses; 0 or the error, out
 * untouched on failure. The callable is moved (or copied) into the task's
 * state: from a per-thread cache when it fits (a callable of up to 64
 * bytes), so a spawn allocates no memory once the cache is warm. */
template <class R, class F>
int try_spawn_into(
    task<R> &out, weft_runtime *rt, F &&f, const task_options *opts,
    const weft_access *acc,
    std::size_t
        n) noexcept(std::is_nothrow_constructible_v<std::decay_t<F>, F &&>) {
  using Fn = std::decay_t<F>;
  using S = detail::state<Fn, R>;
  static_assert(std::is_nothrow_destructible_v<Fn>,
                "a task's callable must not throw from its destructor");
  void *mem = S::allocate();
  if (!mem)
    return weft_error_set(WEFT_ENOMEM, 0, "out of memory for a task");
  S *s;
#if defined(__cpp_exceptions)
  if constexpr (!std::is_nothrow_constructible_v<Fn, F &&>) {
    try {
      s = new (mem) S(std::forward<F>(f));
    } catch (...) {
      S::deallocate(mem);
      throw; /* the callable's copy threw: the caller's to handle */
    }
  } else {
    s = new (mem) S(std::forward<F>(f));
  }
#else
  s = new (mem) S(std::forward<F>(f));
#endif
  weft_task_opts o;
  if (n) {
    o = *opts;
    o.accesses = acc;
    o.naccesses = n;
    opts = static_cast<const task_options *>(&o);
  }
  weft_task *t = nullptr;
  int rc = weft_task_spawn(rt, &t, &S::entry, s, opts);
  if (rc != 0) {
    s->fn.~Fn();
    s->~S();
    S::deallocate(s);
    return rc;
  }
  /* t is NULL for a step of a graph being captured, which ran already:
   * the handle keeps the state, for join to read the result. */
  out = task<R>(detail::adopt_t{}, t, s, rt);
  return 0;
}

namespace detail {
/* What follows the callable in spawn: options, a name, accesses. With
 * none, the C call gets NULL options (its defaults, nothing copied). */
template <class... A> struct spawn_args {
  task_options opts;
  weft_access acc[sizeof...(A) ? sizeof...(A) : 1];
  std::size_t n = 0;
  void add(const task_options &o) noexcept { opts = o; }
  void add(const char *name) noexcept { opts.name = name; }
  void add(const access &a) noexcept { acc[n++] = a; }
  explicit spawn_args(const A &...a) noexcept { (add(a), ...); }
  const task_options *options() const noexcept { return &opts; }
};
template <> struct spawn_args<> {
  static constexpr weft_access *acc = nullptr;
  static constexpr std::size_t n = 0;
  const task_options *options() const noexcept { return nullptr; }
};
} // namespace detail

/* Starts f() as a task of rt and returns its handle. After f come any of:
 * task_options (or a name), and weft::reads/writes/rw accesses, which
 * order the task after the earlier tasks of this spawner that conflict.
 * Errors: weft_task_spawn's; whatever copying or moving f throws.
 * Context: weft_task_spawn's (any thread; never blocks). */
template <class F, class... A,
          class = std::enable_if_t<std::is_invocable_v<std::decay_t<F> &&>>>
task<result_of_t<F>> spawn(runtime &rt, F &&f, const A &...extra) {
  detail::spawn_args<A...> a(extra...);
  task<result_of_t<F>> t;
  detail::check(
      try_spawn_into(t, rt.get(), std::forward<F>(f), a.options(), a.acc, a.n));
  return t;
}
/* The same on the calling task's runtime (or a plain thread's:
 * weft_runtime_current). */
template <class F, class... A,
          class = std::enable_if_t<std::is_invocable_v<std::decay_t<F> &&>>>
task<result_of_t<F>> spawn(F &&f, const A &...extra) {
  detail::spawn_args<A...> a(extra...);
  task<result_of_t<F>> t;
  detail::check(try_spawn_into(t, weft_runtime_current(), std::forward<F>(f),
                               a.options(), a.acc, a.n));
  return t;
}
/* spawn without throwing: 0 or the error, *out set on success only. */
template <class R, class F, class... A>
int try_spawn(task<R> &out, runtime &rt, F &&f, const A &...extra) noexcept(
    std::is_nothrow_constructible_v<std::decay_t<F>, F &&>) {
  static_assert(std::is_same_v<R, result_of_t<F>>,
                "the handle's type is task<what f returns>");
  detail::spawn_args<A...> a(extra...);
  return try_spawn_into(out, rt.get(), std::forward<F>(f), a.options(), a.acc,
                        a.n);
}

/* Lets other ready tasks run (weft_yield). */
inline void yield() noexcept { weft_yield(); }

/* Waits for the caller's GPU work (weft_sync): yields in a task.
 * Errors: weft_sync's. Context: any thread; may switch. */
inline void sync() { detail::check(weft_sync()); }
inline int try_sync() noexcept { return weft_sync(); }

/* Orders the caller's later GPU work after other's (weft_task_after).
 * Errors and context: weft_task_after's. */
template <class R> void task_after(const task<R> &other) {
  detail::check(weft_task_after(other.native()));
}
template <class R> int try_task_after(const task<R> &other) noexcept {
  return weft_task_after(other.native());
}

/* ---- memory ---- */

namespace detail {
/* The one buffer both kinds are: n elements from Alloc, given back to Free
 * in the destructor. Move-only; elements not constructed. */
template <class T, int (*Alloc)(std::size_t, void **), int (*Free)(void *)>
class buffer {
  static_assert(std::is_trivially_copyable_v<T>,
                "weft's memory holds trivially copyable elements");

public:
  buffer() noexcept = default;
  explicit buffer(std::size_t n) {
    check(Alloc(bytes_of<T>(n), (void **)&p_));
    n_ = n;
  }
  /* Empty (data() NULL) if the allocation fails. */
  buffer(nothrow_t, std::size_t n) noexcept {
    if (Alloc(bytes_of<T>(n), (void **)&p_) == 0)
      n_ = n;
    else
      p_ = nullptr;
  }
  buffer(buffer &&o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  buffer &operator=(buffer &&o) noexcept {
    if (this != &o) {
      say_kept("a buffer's free as another moved in", reset());
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  buffer(const buffer &) = delete;
  buffer &operator=(const buffer &) = delete;
  ~buffer() { say_kept("a buffer's free in its destructor", reset()); }

  T *data() const noexcept { return p_; }
  std::size_t size() const noexcept { return n_; }
  std::size_t bytes() const noexcept { return n_ * sizeof(T); }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  /* Frees now; returns Free's result. A refused free (WEFT_EBUSY: a live
   * graph uses the memory) keeps the buffer, to free again once the
   * cause is gone; the destructor says so on stderr instead. */
  int reset() noexcept {
    int rc = p_ ? Free(p_) : 0;
    if (rc == 0) {
      p_ = nullptr;
      n_ = 0;
    }
    return rc;
  }

protected:
  T *p_ = nullptr;
  std::size_t n_ = 0;
};
} // namespace detail

/* n elements of device memory (weft_device_alloc), freed in the destructor
 * ordered on the caller's stream (weft_device_free). Move-only; the
 * elements are not constructed: T must be trivially copyable.
 * Errors: weft_device_alloc's (constructor). Context: any thread with a
 * runtime; the destructor's free is ordered on the destroying thread's or
 * task's stream. */
template <class T>
class device_buffer
    : public detail::buffer<T, weft_device_alloc, weft_device_free> {
public:
  using detail::buffer<T, weft_device_alloc, weft_device_free>::buffer;
};

/* n elements of page-locked host memory (weft_pinned_alloc), freed in the
 * destructor (weft_pinned_free), readable on the host as an array.
 * Move-only; elements not constructed.
 * Errors: weft_pinned_alloc's (constructor). Context: any thread with a
 * runtime. */
template <class T>
class pinned_buffer
    : public detail::buffer<T, weft_pinned_alloc, weft_pinned_free> {
  using base = detail::buffer<T, weft_pinned_alloc, weft_pinned_free>;

public:
  using base::base;
  T &operator[](std::size_t i) const noexcept { return this->p_[i]; }
  T *begin() const noexcept { return this->p_; }
  T *end() const noexcept { return this->p_ + this->n_; }
};

/* n elements of host memory at p registered as data that moves itself
 * (weft/data.h): the constructor registers it, the destructor unregisters
 * it (the host copy brought back, the device instances freed; its errors
 * dropped: unregister() to see them). weft::reads(d), writes(d) and
 * rw(d) declare all of it for a spawn; get(mode), in a task, gives the
 * instance on the task's device. Move-only; constructed with
 * weft::nothrow, empty (false) if registering failed.
 * Errors: weft_data_register's (constructor), weft_data_get's,
 * weft_data_sync's, weft_data_unregister's, thrown.
 * Context: theirs (the destructor may switch or block). */
template <class T> class registered {
public:
  registered(runtime &rt, T *p, std::size_t n) : p_(p), n_(n) {
    detail::check(weft_data_register(rt.get(), p, detail::bytes_of<T>(n), &d_));
  }
  registered(nothrow_t, runtime &rt, T *p, std::size_t n) noexcept
      : p_(p), n_(n) {
    if (weft_data_register(rt.get(), p, detail::bytes_of<T>(n), &d_) != 0)
      d_ = nullptr;
  }
  registered(registered &&o) noexcept
      : d_(std::exchange(o.d_, nullptr)), p_(o.p_), n_(o.n_) {}
  registered &operator=(registered &&o) noexcept {
    if (this != &o) {
      drop();
      d_ = std::exchange(o.d_, nullptr);
      p_ = o.p_;
      n_ = o.n_;
    }
    return *this;
  }
  registered(const registered &) = delete;
  registered &operator=(const registered &) = delete;
  ~registered() { drop(); }

  /* The host memory and its length: what reads/writes/rw declare. */
  T *data() const noexcept { return p_; }
  std::size_t size() const noexcept { return n_; }
  weft_data *handle() const noexcept { return d_; }
  explicit operator bool() const noexcept { return d_ != nullptr; }
  /* The instance on the calling task's device, ready for mode. */
  T *get(unsigned mode = WEFT_RW) const {
    T *q = nullptr;
    detail::check(try_get(mode, &q));
    return q;
  }
  int try_get(unsigned mode, T **out) const noexcept {
    return detail::data_get(d_, mode, out);
  }
  void sync() const { detail::check(try_sync()); }
  int try_sync() const noexcept { return weft_data_sync(d_); }
  /* weft_data_prefetch: starts the copy to device, or the write-back to
   * the host for WEFT_DATA_HOST. */
  void prefetch(int device) const { detail::check(try_prefetch(device)); }
  int try_prefetch(int device) const noexcept {
    return weft_data_prefetch(d_, device);
  }
  weft_data_stats stats() const {
    weft_data_stats st;
    detail::check(try_stats(&st));
    return st;
  }
  int try_stats(weft_data_stats *out) const noexcept {
    return weft_data_stats_get(d_, out);
  }
  /* Unregisters now; on failure it throws and stays registered (the
   * destructor tries again, and says on stderr if that fails too: the
   * handle then stays registered, and its runtime cannot close). */
  void unregister() { detail::check(try_unregister()); }
  int try_unregister() noexcept {
    int rc = d_ ? weft_data_unregister(d_) : 0;
    if (rc == 0)
      d_ = nullptr;
    return rc;
  }

private:
  void drop() noexcept {
    if (d_)
      detail::say_kept("weft::registered's unregister in its destructor",
                       weft_data_unregister(std::exchange(d_, nullptr)));
  }
  weft_data *d_ = nullptr;
  T *p_ = nullptr;
  std::size_t n_ = 0;
};

/* n elements of host memory at p registered as blocks of block elements
 * over the runtime's devices (weft_data_register_blocks): m[i] is block
 * i, which weft::reads/writes/rw declare and whose get(mode), in a task,
 * gives its instance; m[i].device() is its home, for
 * task_options.device. place() starts every block's copy to its home;
 * the destructor unregisters them all (the host memory holds the result;
 * errors dropped: unregister() to see them). Move-only; constructed with
 * weft::nothrow, empty (false) if registering failed.
 * Errors: weft_data_register_blocks' (constructor), weft_data_blocks_*',
 * weft_data_get's, weft_data_unregister_blocks', thrown; m[i] past the
 * last block, WEFT_EINVAL.
 * Context: theirs (the destructor may switch or block). */
template <class T> class registered_blocks {
public:
  /* Block i: its host memory, its handle and its home (none, made
   * empty, until try_at fills it). */
  class block {
  public:
    block() noexcept = default;
    T *data() const noexcept { return p_; }
    std::size_t size() const noexcept { return n_; }
    weft_data *handle() const noexcept { return d_; }
    int device() const noexcept { return dev_; }
    /* weft_data_prefetch, as registered's. */
    void prefetch(int device) const { detail::check(try_prefetch(device)); }
    int try_prefetch(int device) const noexcept {
      return weft_data_prefetch(d_, device);
    }
    /* Its instance on the calling task's device, ready for mode. */
    T *get(unsigned mode = WEFT_RW) const {
      T *q = nullptr;
      detail::check(try_get(mode, &q));
      return q;
    }
    int try_get(unsigned mode, T **out) const noexcept {
      return detail::data_get(d_, mode, out);
    }

  private:
    friend class registered_blocks;
    block(weft_data *d, T *p, std::size_t n, int dev) noexcept
        : d_(d), p_(p), n_(n), dev_(dev) {}
    weft_data *d_ = nullptr;
    T *p_ = nullptr;
    std::size_t n_ = 0;
    int dev_ = -1;
  };

  registered_blocks(runtime &rt, T *p, std::size_t n, std::size_t per_block,
                    weft_data_layout layout = WEFT_DATA_CYCLIC)
      : p_(p), n_(n), block_(per_block) {
    detail::check(weft_data_register_blocks(rt.get(), p, detail::bytes_of<T>(n),
                                            detail::bytes_of<T>(per_block),
                                            layout, &m_));
  }
  registered_blocks(nothrow_t, runtime &rt, T *p, std::size_t n,
                    std::size_t per_block,
                    weft_data_layout layout = WEFT_DATA_CYCLIC) noexcept
      : p_(p), n_(n), block_(per_block) {
    if (weft_data_register_blocks(rt.get(), p, detail::bytes_of<T>(n),
                                  detail::bytes_of<T>(per_block), layout,
                                  &m_) != 0)
      m_ = nullptr;
  }
  registered_blocks(registered_blocks &&o) noexcept
      : m_(std::exchange(o.m_, nullptr)), p_(o.p_), n_(o.n_), block_(o.block_) {
  }
  registered_blocks &operator=(registered_blocks &&o) noexcept {
    if (this != &o) {
      drop();
      m_ = std::exchange(o.m_, nullptr);
      p_ = o.p_;
      n_ = o.n_;
      block_ = o.block_;
    }
    return *this;
  }
  registered_blocks(const registered_blocks &) = delete;
  registered_blocks &operator=(const registered_blocks &) = delete;
  ~registered_blocks() { drop(); }

  /* The number of blocks (0 once unregistered). */
  std::size_t size() const noexcept { return weft_data_blocks_count(m_); }
  block operator[](std::size_t i) const {
    block b;
    detail::check(try_at(i, &b));
    return b;
  }
  int try_at(std::size_t i, block *out) const noexcept {
    int dev = weft_data_blocks_device(m_, i); /* the index checked */
    if (dev < 0)
      return dev;
    std::size_t at = i * block_;
    *out = block(weft_data_blocks_at(m_, i), p_ + at,
                 n_ - at < block_ ? n_ - at : block_, dev);
    return 0;
  }
  weft_data_blocks *handle() const noexcept { return m_; }
  explicit operator bool() const noexcept { return m_ != nullptr; }
  void place() { detail::check(try_place()); }
  int try_place() noexcept { return weft_data_blocks_place(m_); }
  /* Unregisters every block now; on failure it throws and the blocks
   * left stay registered (the destructor tries again, and says on stderr
   * if that fails too). */
  void unregister() { detail::check(try_unregister()); }
  int try_unregister() noexcept {
    int rc = m_ ? weft_data_unregister_blocks(m_) : 0;
    if (rc == 0)
      m_ = nullptr;
    return rc;
  }

private:
  void drop() noexcept {
    if (m_)
      detail::say_kept("weft::registered_blocks' unregister in its destructor",
                       weft_data_unregister_blocks(std::exchange(m_, nullptr)));
  }
  weft_data_blocks *m_ = nullptr;
  T *p_ = nullptr;
  std::size_t n_ = 0, block_ = 0;
};

/* Copies n elements from src to dst on the caller's stream (weft_copy):
 * pointers or buffers, the direction from where they lie.
 * Errors and context: weft_copy's. */
template <class D, class S> int try_copy(D &&dst, S &&src, std::size_t n) {
  auto *d = detail::ptr_of(dst);
  const auto *s = detail::ptr_of(src);
  static_assert(sizeof(*d) == sizeof(*s), "copy between different types");
  return weft_copy(d, s,
                   detail::bytes_of<std::remove_reference_t<decltype(*d)>>(n));
}
template <class D, class S> void copy(D &&dst, S &&src, std::size_t n) {
  detail::check(try_copy(dst, src, n));
}
/* Sets n elements' bytes to value (weft_memset).
 * Errors and context: weft_memset's. */
template <class D> int try_memset(D &&dst, int value, std::size_t n) {
  auto *d = detail::ptr_of(dst);
  return weft_memset(
      d, value, detail::bytes_of<std::remove_reference_t<decltype(*d)>>(n));
}
template <class D> void memset(D &&dst, int value, std::size_t n) {
  detail::check(try_memset(dst, value, n));
}

/* ---- kernels ---- */

/* A grid or block shape; missing dimensions are 1. */
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned dx = 1, unsigned dy = 1, unsigned dz = 1) noexcept
      : x(dx), y(dy), z(dz) {}
  constexpr dim3(weft_dim3 d) noexcept : x(d.x), y(d.y), z(d.z) {}
  constexpr operator weft_dim3() const noexcept { return {x, y, z}; }
};

namespace detail {
template <auto F> struct host_thunk;
/* An argument's bytes copied to storage aligned for its type: the
 * backend keeps them 16-byte aligned, less than an over-aligned type
 * needs. */
template <class T> struct arg_slot {
  alignas(T) unsigned char raw[sizeof(T)];
  T &load(const void *p) noexcept {
    std::memcpy(raw, p, sizeof(T));
    return *std::launder(reinterpret_cast<T *>(raw));
  }
};
template <class... A, void (*F)(const weft_kernel_ctx &, A...)>
struct host_thunk<F> {
  template <std::size_t... I>
  static void call(const weft_kernel_ctx *k, void **args,
                   std::index_sequence<I...>) {
    std::tuple<arg_slot<std::remove_cv_t<std::remove_reference_t<A>>>...> s;
    F(*k, std::get<I>(s).load(args[I])...);
  }
  static void fn(const weft_kernel_ctx *k, void **args) {
    call(k, args, std::index_sequence_for<A...>{});
  }
};
} // namespace detail

/* The weft_host_fn for a typed host implementation
 * void f(const weft_kernel_ctx &k, A... args), called once per block. */
template <auto F>
inline constexpr weft_host_fn host_fn = &detail::host_thunk<F>::fn;

/* A kernel with parameters Args...: a __global__ function's address for
 * the CUDA backend (NULL in a build without CUDA) and a host
 * implementation (weft::host_fn<f>, or a weft_host_fn) for the host
 * backend. It must outlive the launches it makes (a static or global one
 * does, as in C).
 * Errors: none. Context: any. */
template <class... Args> class kernel {
  static_assert(sizeof...(Args) <= WEFT_KERNEL_MAX_ARGS,
                "more parameters than WEFT_KERNEL_MAX_ARGS");
  /* weft_launch copies each argument's bytes and the kernel runs later:
   * a std::string's copy would point at what try_launch's destroyed. */
  static_assert((std::is_trivially_copyable_v<Args> && ...),
                "a kernel's parameters are trivially copyable values (no "
                "references): weft_launch copies their bytes, as CUDA does");

public:
  using cuda_fn = void (*)(Args...);
  kernel(cuda_fn cuda, weft_host_fn host, const char *name = nullptr,
         unsigned reads = 0) noexcept
      : k_() {
    k_.cuda = reinterpret_cast<const void *>(cuda);
    k_.host = host;
    k_.name = name;
    k_.nargs = sizeof...(Args);
    unsigned short sizes[] = {sizeof(Args)..., 0};
    for (unsigned i = 0; i < sizeof...(Args); i++)
      k_.arg_size[i] = sizes[i];
    k_.reads = reads;
  }
  const weft_kernel *get() const noexcept { return &k_; }

private:
  weft_kernel k_;
};
template <class... A>
kernel(void (*)(A...), weft_host_fn, const char * = nullptr, unsigned = 0)
    -> kernel<A...>;

namespace detail {
template <class Tuple, std::size_t... I>
int launch_tuple(const weft_kernel *k, weft_dim3 grid, weft_dim3 block,
                 std::size_t shmem, Tuple &values, std::index_sequence<I...>) {
  void *args[] = {static_cast<void *>(&std::get<I>(values))..., nullptr};
  return weft_launch(k, grid, block, shmem, sizeof...(I) ? args : nullptr);
}
} // namespace detail

/* Launches k over grid x block on the caller's stream, each argument
 * converted to its parameter's type and its address put in the array
 * weft_launch takes (on the stack: no allocation).
 * Errors and context: weft_launch's. */
template <class... Args, class... V>
int try_launch(const kernel<Args...> &k, dim3 grid, dim3 block,
               std::size_t shmem, V &&...values) noexcept {
  static_assert(sizeof...(Args) == sizeof...(V),
                "as many arguments as the kernel has parameters");
  std::tuple<Args...> converted(std::forward<V>(values)...);
  return detail::launch_tuple(k.get(), grid, block, shmem, converted,
                              std::index_sequence_for<Args...>{});
}
template <class... Args, class... V>
void launch(const kernel<Args...> &k, dim3 grid, dim3 block, std::size_t shmem,
            V &&...values) {
  detail::check(try_launch(k, grid, block, shmem, std::forward<V>(values)...));
}

/* ---- scoped objects ---- */

/* A user range (weft_range_push) popped at the end of the scope; for a
 * range that could not be pushed (ok() false) nothing is popped.
 * Errors: none thrown: a range is for the trace, never the program's
 * failure. Context: a task or a plain thread of a runtime; the range must
 * end in the task that began it, which scope guarantees. */
class range {
public:
  explicit range(const char *name) noexcept : rc_(weft_range_push(name)) {}
  range(const range &) = delete;
  range &operator=(const range &) = delete;
  ~range() {
    if (rc_ == 0)
      weft_range_pop();
  }
  bool ok() const noexcept { return rc_ == 0; }

private:
  int rc_;
};

/* An event (weft/event.h). Move-only; destroyed with the object;
 * constructed with weft::nothrow, empty (false) if it could not be made.
 * Errors: the C calls'. Context: theirs (sync may switch). */
class event {
public:
  event() { detail::check(weft_event_create(&e_)); }
  event(nothrow_t) noexcept {
    if (weft_event_create(&e_) != 0)
      e_ = nullptr;
  }
  event(event &&o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  event &operator=(event &&o) noexcept {
    if (this != &o) {
      if (e_)
        weft_event_destroy(&e_);
      e_ = std::exchange(o.e_, nullptr);
    }
    return *this;
  }
  event(const event &) = delete;
  event &operator=(const event &) = delete;
  ~event() {
    if (e_)
      weft_event_destroy(&e_);
  }

  void record() { detail::check(try_record()); }
  void wait() { detail::check(try_wait()); }
  void sync() { detail::check(try_sync()); }
  int try_record() noexcept { return weft_event_record(e_); }
  int try_wait() noexcept { return weft_event_wait(e_); }
  int try_sync() noexcept { return weft_event_sync(e_); }
  /* True once the latest record completed. */
  bool done() const {
    int rc = weft_event_query(e_);
    if (rc == WEFT_EAGAIN)
      return false;
    detail::check(rc);
    return true;
  }
  weft_event *get() const noexcept { return e_; }
  explicit operator bool() const noexcept { return e_ != nullptr; }

private:
  weft_event *e_ = nullptr;
};

/* Milliseconds between two recorded events' completions.
 * Errors and context: weft_event_elapsed_ms's (WEFT_EAGAIN if either is
 * not complete). */
inline float elapsed_ms(const event &start, const event &end) {
  float ms = 0;
  detail::check(weft_event_elapsed_ms(start.get(), end.get(), &ms));
  return ms;
}
inline int try_elapsed_ms(const event &start, const event &end,
                          float *ms) noexcept {
  return weft_event_elapsed_ms(start.get(), end.get(), ms);
}

/* A captured graph (weft/graph.h), destroyed with the object. Move-only.
 * Errors and context: the C calls'. */
class graph {
public:
  graph() noexcept = default;
  explicit graph(weft_graph *g) noexcept : g_(g) {}
  graph(graph &&o) noexcept : g_(std::exchange(o.g_, nullptr)) {}
  graph &operator=(graph &&o) noexcept {
    if (this != &o) {
      if (g_)
        detail::say_kept("a graph's destroy as another moved in",
                         weft_graph_destroy(g_));
      g_ = std::exchange(o.g_, nullptr);
    }
    return *this;
  }
  graph(const graph &) = delete;
  graph &operator=(const graph &) = delete;
  ~graph() {
    if (g_)
      detail::say_kept("a graph's destroy in its destructor",
                       weft_graph_destroy(g_));
  }
  void launch() { detail::check(try_launch()); }
  int try_launch() noexcept { return weft_graph_launch(g_); }
  weft_graph *get() const noexcept { return g_; }
  explicit operator bool() const noexcept { return g_ != nullptr; }

private:
  weft_graph *g_ = nullptr;
};

/* Records the caller's GPU work from construction (weft_graph_begin) to
 * end(), which makes it a graph, or update(g), which puts it into g in
 * place of what g held (weft_graph_update); a capture left without either
 * (an exception, say) is ended and its graph dropped. Constructed with
 * weft::nothrow, it is false if the capture could not begin.
 * Errors: weft_graph_begin's (constructor), weft_graph_end's (end),
 * weft_graph_update's (update); WEFT_ESTATE from either once it ended.
 * Context: a task or plain thread of a runtime; begin and end in the same
 * one, which scope guarantees. */
class capture {
public:
  capture() { detail::check(weft_graph_begin()); }
  capture(nothrow_t) noexcept : open_(weft_graph_begin() == 0) {}
  capture(const capture &) = delete;
  capture &operator=(const capture &) = delete;
  ~capture() {
    if (open_) {
      weft_graph *g = nullptr;
      if (weft_graph_end(&g) == 0 && g)
        weft_graph_destroy(g);
    }
  }
  explicit operator bool() const noexcept { return open_; }
  graph end() {
    graph g;
    detail::check(try_end(&g));
    return g;
  }
  int try_end(graph *out) noexcept {
    if (!open_)
      return weft_error_set(WEFT_ESTATE, 0, "%s", ended);
    weft_graph *g = nullptr;
    int rc = weft_graph_end(&g);
    open_ = rc == WEFT_ESTATE; /* below */
    *out = graph(g);
    return rc;
  }
  void update(graph &g) { detail::check(try_update(g)); }
  int try_update(graph &g) noexcept {
    if (!open_)
      return weft_error_set(WEFT_ESTATE, 0, "%s", ended);
    int rc = weft_graph_update(g.get());
    open_ = rc == WEFT_ESTATE; /* below */
    return rc;
  }

private:
  /* The C calls end the capture whatever their result, but for
   * WEFT_ESTATE from inside a data-flow step of it, which leaves it open
   * (weft/graph.h): after WEFT_ESTATE the destructor ends it again (a
   * capture that was in fact over refuses that, harmlessly). */
  static constexpr const char *ended =
      "weft::capture: already ended (end() or update(), or it never began)";
  bool open_ = true;
};

} // namespace weft

/* Under nvcc, the CUDA side (weft::stream() for <<<>>>, library
 * handles) comes with it, where installed (a CUDA build of weft). */
#if defined(__CUDACC__) && defined(__has_include)
#if __has_include("weft/cuda.hpp")
#include "weft/cuda.hpp"
#endif
#endif

#endif
