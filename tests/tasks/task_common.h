/* What every task-runtime test shares: opening the runtime on the backend
 * under test, the test kernels, random numbers, clocks, a "gate" (a
 * spin_until kernel that holds a task's stream busy until the test opens
 * it), and read-only peeks at a task's progress for tests that must set up
 * an exact situation.
 *
 * The backend comes from the environment variable WEFT_BACKEND, which
 * weft_init reads; a backend that is not built or has no device skips the
 * test (exit 77). */
#ifndef WEFT_TEST_TASK_COMMON_H
#define WEFT_TEST_TASK_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "expect.h"
#include "kernels.h"
#include "weft.h"

/* The test kernels, filled by tt_open. */
extern test_kernels tk;

/* Sanitizer builds run smaller problems. TSan also keeps a thread state
 * of its own (megabytes of address space) for every live fiber. */
#if defined(__SANITIZE_THREAD__)
#define TT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TT_TSAN 1
#endif
#endif
#ifndef TT_TSAN
#define TT_TSAN 0
#endif
#if defined(__SANITIZE_ADDRESS__) || TT_TSAN
#define TT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TT_SANITIZED 1
#endif
#endif
#ifndef TT_SANITIZED
#define TT_SANITIZED 0
#endif

/* Opens a runtime with opts (NULL for the defaults) on the backend named by
 * WEFT_BACKEND; exits 77 when that backend is absent. */
weft_runtime *tt_open(const weft_runtime_opts *opts);
/* tt_open with workers worker threads (0: default) and, on the host
 * backend, enough executor threads for a spinning gate beside other work. */
weft_runtime *tt_open_workers(int workers);
/* tt_open_workers(2) making only `streams` streams a device ahead: past
 * them, leases take streams over (the takeover tests). */
weft_runtime *tt_open_ahead(int streams);
/* Shuts rt down, which must succeed. */
void tt_close(weft_runtime *rt);

/* 1 when problem sizes should shrink: a sanitizer build, or the
 * environment variable WEFT_TEST_QUICK set to anything but "" or "0". */
int tt_quick(void);

/* Seeded xorshift64, and a value in [lo, hi]. */
uint64_t tt_rand(uint64_t *state);
int tt_rand_range(uint64_t *state, int lo, int hi);

int64_t tt_now_ns(void);
void tt_sleep_ms(int ms);

/* Waits, from a plain thread, until *flag is non-zero; fails the test after
 * timeout_ms (a broken runtime must not hang the test). */
void tt_wait_flag(const int *flag, int timeout_ms, const char *what);

/* A spin_until kernel and its flag/state words in pinned memory. */
typedef struct tt_gate {
  int *mem; /* mem[0]: the flag the test sets; mem[1]: the kernel's state */
} tt_gate;

#define TT_GATE_TIMEOUT_NS (15LL * 1000000000LL)

/* Allocates the words (weft_pinned_alloc) from the calling task or
 * thread. */
void tt_gate_init(tt_gate *g);
/* Closes the gate and launches the spin on the current stream. */
void tt_gate_launch(tt_gate *g);
/* Waits up to 10 s until the spin kernel runs: yielding in a task,
 * sleeping on a thread. */
void tt_gate_wait_started(tt_gate *g);
void tt_gate_open(tt_gate *g);
int tt_gate_state(const tt_gate *g); /* TEST_SPIN_* */
void tt_gate_fini(tt_gate *g);

/* Whether the task's function has returned, and whether it completed (its
 * GPU work too), read under the runtime's lock. Only for handles not yet
 * joined. */
int tt_task_returned(weft_task *t);
int tt_task_done(weft_task *t);
/* A chain of n tasks t[0..n), each following the one before, the first
 * behind a closed gate: waits until all have returned, then checks that
 * the last is not done and that rt holds only the `ahead` streams per
 * device made at weft_init (each task took its predecessor's stream
 * over; not checked under weft check, whose order goes stream by
 * stream). */
void tt_chain_holds_streams_ahead(weft_runtime *rt, weft_task **t, int n,
                                  int ahead);
/* Checks that rt holds only the `ahead` streams per device made at
 * weft_init, naming what holds them (`what`) otherwise; nothing under
 * weft check, which takes no stream over (its clocks follow each lease). */
void tt_expect_streams_ahead(weft_runtime *rt, int ahead, const char *what);

/* Atomic int helpers for flags shared between tasks and threads. */
static inline int tt_load(const int *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static inline void tt_store(int *p, int v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
static inline int tt_add(int *p, int v) {
  return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
}

#endif
