/* Helpers shared by the conformance tests (see common.h). */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

test_kernels tk;

weft__backend *conf_open(int host_threads) {
  const char *name = getenv("WEFT_BACKEND");
  weft_backend_kind kind = WEFT_BACKEND_HOST;
  if (name && *name)
    EXPECT_OK(weft_backend_parse(name, &kind));
  EXPECT_MSG(kind != WEFT_BACKEND_AUTO, "set WEFT_BACKEND to host or cuda");

  weft__backend_config cfg = {.host_threads = host_threads};
  const char *threads = getenv("WEFT_HOST_THREADS");
  if (host_threads == 0 && threads && *threads)
    cfg.host_threads = atoi(threads);
  /* The runtime reads WEFT_CUDA_FLAGS; a backend opened directly is told,
   * so that a run with the flags off tests them off here too. */
  const char *flags = getenv("WEFT_CUDA_FLAGS");
  cfg.cuda_no_flags = flags && strcmp(flags, "0") == 0;

  weft__backend *b = NULL;
  int rc = weft__backend_open(kind, 0, &cfg, &b);
  if (rc == WEFT_ENODEV) {
    char why[600];
    snprintf(why, sizeof why, "%s backend: %s", weft_backend_name(kind),
             weft_last_error_message());
    SKIP(why);
  }
  EXPECT_OK(rc);
  EXPECT(b != NULL);
  EXPECT_EQ_INT(b->ops->kind, kind);
  test_kernels_init(&tk);
  /* Load every test kernel now: a lazily loaded kernel's first launch may
   * wait for a spinning kernel on another stream (weft_kernel_preload). */
  const weft_kernel *all[] = {&tk.axpb,        &tk.spin_until, &tk.set_value,
                              &tk.copy_int,    &tk.args_probe, &tk.grid_probe,
                              &tk.append_order};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    EXPECT_OK(weft__kernel_preload(b, 0, all[i]));
  const weft_device_info *di = conf_info(b);
  printf("backend %s, device 0: %s, %d multiprocessors, priorities %d..%d\n",
         b->ops->name, di->name, di->multiprocessors, di->priority_least,
         di->priority_greatest);
  return b;
}

void conf_close(weft__backend *b) {
  weft__backend_counts c;
  weft__backend_get_counts(b, &c);
  EXPECT_MSG(!c.streams && !c.events && !c.device_allocs && !c.pinned_allocs,
             "leaked %zu streams, %zu events, %zu device and %zu pinned "
             "allocations",
             c.streams, c.events, c.device_allocs, c.pinned_allocs);
  EXPECT_OK(weft__backend_close(b));
}

weft_backend_kind conf_kind(const weft__backend *b) { return b->ops->kind; }

const weft_device_info *conf_info(const weft__backend *b) {
  return &b->info[0];
}

void conf_check_works(weft__stream *s) {
  static const char msg[] = "still works";
  char back[sizeof msg] = {0};
  void *d = NULL;
  EXPECT_OK(weft__device_alloc(s, sizeof msg, &d));
  EXPECT_OK(weft__copy(s, d, msg, sizeof msg, WEFT__COPY_H2D));
  EXPECT_OK(weft__copy(s, back, d, sizeof msg, WEFT__COPY_D2H));
  EXPECT_OK(weft__device_free(s, d));
  EXPECT_OK(weft__stream_sync(s));
  EXPECT(memcmp(back, msg, sizeof msg) == 0);
}

uint64_t conf_rand(uint64_t *state) {
  uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ULL;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *state = x;
}

void conf_fill_random(void *p, size_t n, uint64_t *state) {
  unsigned char *c = p;
  for (size_t i = 0; i < n; i++)
    c[i] = (unsigned char)(1 + conf_rand(state) % 255);
}

int64_t conf_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void conf_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

int conf_poll_event(weft__event *e, int timeout_ms) {
  int64_t deadline = conf_now_ns() + (int64_t)timeout_ms * 1000000;
  for (;;) {
    int rc = weft__event_query(e);
    if (rc != WEFT_EAGAIN || conf_now_ns() > deadline)
      return rc;
    nanosleep(&(struct timespec){0, 100000}, NULL);
  }
}

void conf_gate_init(weft__backend *b, conf_gate *g) {
  g->b = b;
  EXPECT_OK(weft__pinned_alloc(b, 2 * sizeof(int), (void **)&g->mem));
  g->mem[0] = 0;
  g->mem[1] = TEST_SPIN_IDLE;
}

void conf_gate_launch(conf_gate *g, weft__stream *s) {
  __atomic_store_n(&g->mem[0], 0, __ATOMIC_RELEASE);
  __atomic_store_n(&g->mem[1], TEST_SPIN_IDLE, __ATOMIC_RELEASE);
  const int *flag = &g->mem[0];
  int *state = &g->mem[1];
  long long timeout = CONF_GATE_TIMEOUT_NS;
  void *args[] = {&flag, &state, &timeout};
  EXPECT_OK(
      weft__launch(s, &tk.spin_until, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
}

void conf_gate_wait_started(conf_gate *g) {
  int64_t deadline = conf_now_ns() + 5000000000LL;
  while (conf_gate_state(g) == TEST_SPIN_IDLE && conf_now_ns() < deadline)
    nanosleep(&(struct timespec){0, 100000}, NULL);
  EXPECT_MSG(conf_gate_state(g) == TEST_SPIN_STARTED,
             "the spin kernel did not start within 5 s (state %d)",
             conf_gate_state(g));
}

void conf_gate_open(conf_gate *g) {
  __atomic_store_n(&g->mem[0], 1, __ATOMIC_RELEASE);
}

int conf_gate_state(const conf_gate *g) {
  return __atomic_load_n(&g->mem[1], __ATOMIC_ACQUIRE);
}

void conf_gate_fini(conf_gate *g) {
  EXPECT_OK(weft__pinned_free(g->b, g->mem));
  g->mem = NULL;
}
