/* Helpers shared by the task-runtime tests (see task_common.h). */
#include "task_common.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft_internal.h"

test_kernels tk;

weft_runtime *tt_open(const weft_runtime_opts *opts) {
  weft_runtime *rt = NULL;
  int rc = weft_init(&rt, opts);
  if (rc == WEFT_ENODEV) {
    char why[600];
    const char *env = getenv("WEFT_BACKEND");
    snprintf(why, sizeof why, "backend %s: %s", env ? env : "(auto)",
             weft_last_error_message());
    SKIP(why);
  }
  EXPECT_OK(rc);
  EXPECT(rt != NULL);
  test_kernels_init(&tk);
  /* Load every test kernel before any spins: under CUDA's lazy loading a
   * first launch can wait for a running kernel (weft_kernel_preload). */
  const weft_kernel *all[] = {&tk.axpb,        &tk.spin_until, &tk.set_value,
                              &tk.copy_int,    &tk.args_probe, &tk.grid_probe,
                              &tk.append_order};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    EXPECT_OK(weft_kernel_preload(all[i]));
  return rt;
}

/* workers and streams as the options take them (0: default). */
static weft_runtime *open_gated(int workers, int streams) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.workers = workers;
  o.streams = streams;
  /* A gate occupies a host executor thread for as long as it spins. */
  o.host_threads = 4;
  return tt_open(&o);
}

weft_runtime *tt_open_workers(int workers) { return open_gated(workers, 0); }

weft_runtime *tt_open_ahead(int streams) { return open_gated(2, streams); }

void tt_close(weft_runtime *rt) { EXPECT_OK(weft_shutdown(rt)); }

int tt_quick(void) {
  const char *q = getenv("WEFT_TEST_QUICK");
  return TT_SANITIZED || (q && *q && strcmp(q, "0") != 0);
}

uint64_t tt_rand(uint64_t *state) {
  uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ULL;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *state = x;
}

int tt_rand_range(uint64_t *state, int lo, int hi) {
  return lo + (int)(tt_rand(state) % (uint64_t)(hi - lo + 1));
}

int64_t tt_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void tt_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

void tt_wait_flag(const int *flag, int timeout_ms, const char *what) {
  int64_t deadline = tt_now_ns() + (int64_t)timeout_ms * 1000000;
  while (!tt_load(flag)) {
    EXPECT_MSG(tt_now_ns() < deadline, "timed out after %d ms waiting for %s",
               timeout_ms, what);
    nanosleep(&(struct timespec){0, 100000}, NULL);
  }
}

void tt_gate_init(tt_gate *g) {
  EXPECT_OK(weft_pinned_alloc(2 * sizeof(int), (void **)&g->mem));
  tt_store(&g->mem[0], 0);
  tt_store(&g->mem[1], TEST_SPIN_IDLE);
}

void tt_gate_launch(tt_gate *g) {
  tt_store(&g->mem[0], 0);
  tt_store(&g->mem[1], TEST_SPIN_IDLE);
  const int *flag = &g->mem[0];
  int *state = &g->mem[1];
  long long timeout = TT_GATE_TIMEOUT_NS;
  void *args[] = {&flag, &state, &timeout};
  EXPECT_OK(weft_launch(&tk.spin_until, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
}

void tt_gate_wait_started(tt_gate *g) {
  int64_t deadline = tt_now_ns() + 10000000000LL;
  while (tt_gate_state(g) == TEST_SPIN_IDLE && tt_now_ns() < deadline) {
    if (weft_task_self())
      weft_yield();
    else
      nanosleep(&(struct timespec){0, 100000}, NULL);
  }
  int state = tt_gate_state(g);
  EXPECT_MSG(state == TEST_SPIN_STARTED, "the spin kernel is not spinning: %s",
             state == TEST_SPIN_IDLE        ? "it did not start within 10 s"
             : state == TEST_SPIN_TIMED_OUT ? "it ran and timed out"
                                            : "it was released already");
}

void tt_gate_open(tt_gate *g) { tt_store(&g->mem[0], 1); }

int tt_gate_state(const tt_gate *g) { return tt_load(&g->mem[1]); }

void tt_gate_fini(tt_gate *g) {
  EXPECT_OK(weft_pinned_free(g->mem));
  g->mem = NULL;
}

int tt_task_returned(weft_task *h) {
  weft_task *t = (weft_task *)weft__handle_obj(h);
  pthread_mutex_lock(&t->x.rt->h.lock);
  int r = t->returned;
  pthread_mutex_unlock(&t->x.rt->h.lock);
  return r;
}

void tt_chain_holds_streams_ahead(weft_runtime *rt, weft_task **t, int n,
                                  int ahead) {
  for (int i = 0; i < n; i++)
    while (!tt_task_returned(t[i]))
      sched_yield();
  tt_expect_streams_ahead(rt, ahead, "chained tasks returned behind a gate");
  EXPECT_MSG(!tt_task_done(t[n - 1]), "the chain ended with the gate closed");
}

void tt_expect_streams_ahead(weft_runtime *rt, int ahead, const char *what) {
  weft_task_stats ts = {.struct_size = sizeof ts};
  EXPECT_OK(weft_task_stats_get(rt, &ts));
  if (!rt->h.bk->check)
    EXPECT_MSG(ts.streams == (uint64_t)(ahead * rt->h.bk->ndev),
               "%s, and the runtime holds %llu streams, not the %d made "
               "ahead",
               what, (unsigned long long)ts.streams, ahead * rt->h.bk->ndev);
}

int tt_task_done(weft_task *h) {
  weft_task *t = (weft_task *)weft__handle_obj(h);
  pthread_mutex_lock(&t->x.rt->h.lock);
  int r = t->done;
  pthread_mutex_unlock(&t->x.rt->h.lock);
  return r;
}
