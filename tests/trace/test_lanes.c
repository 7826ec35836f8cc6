/* Where a host-backend trace puts things, as Perfetto and HTA need them:
 * tasks that wait at the same time each get a wait lane of their own,
 * whose tid fits a signed 32-bit integer (Perfetto's JSON importer keeps
 * 32 bits), is no worker thread's and is named "waits: TASK"; the whole
 * file passes `weft trace check`. A copy into or out of the middle of a
 * device allocation is HtoD or DtoH, not HtoH: device memory is known by
 * any address inside it, not only by an allocation's start. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compat.h"
#include "conformance/kernels.h"
#include "expect.h"
#include "model.h"
#include "traced_host.h"
#include "weft.h"

enum { WAITERS = 4, N = 1024 };

static test_kernels tk;
static int *flag; /* pinned: the spinning kernels read it */
static atomic_int entered;

/* Queues a kernel that spins until the flag is set, then waits for it:
 * every waiter is inside weft_sync when the main thread sets the flag, so
 * their waits overlap. */
static void waiter(void *arg) {
  int *state = arg;
  long long timeout = 10LL * 1000 * 1000 * 1000;
  void *args[] = {&flag, &state, &timeout};
  EXPECT_OK(weft_launch(&tk.spin_until, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  atomic_fetch_add(&entered, 1);
  EXPECT_OK(weft_sync());
}

/* Copies into and out of the middle of one device allocation. */
static void slices(void *arg) {
  float *host = arg, *d;
  EXPECT_OK(weft_device_alloc(4 * N * sizeof(float), (void **)&d));
  EXPECT_OK(weft_copy(d + N, host, N * sizeof(float)));
  EXPECT_OK(weft_copy(host, d + 2 * N + 3, N * sizeof(float)));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_device_free(d));
}

static void run(const char *path) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_HOST;
  o.trace_path = path;
  o.workers = 2;
  o.host_threads = WAITERS;
  weft_runtime *rt;
  EXPECT_OK(weft_init(&rt, &o));
  EXPECT_OK(weft_pinned_alloc(sizeof *flag, (void **)&flag));
  *flag = 0;
  int *states;
  EXPECT_OK(weft_pinned_alloc(WAITERS * sizeof *states, (void **)&states));
  weft_task *t[WAITERS];
  static const char *const names[WAITERS] = {"w0", "w1", "w2", "w3"};
  for (int i = 0; i < WAITERS; i++) {
    states[i] = TEST_SPIN_IDLE;
    weft_task_opts to;
    weft_task_opts_init(&to);
    to.name = names[i];
    EXPECT_OK(weft_task_spawn(rt, &t[i], waiter, &states[i], &to));
  }
  while (atomic_load(&entered) < WAITERS)
    nanosleep(&(struct timespec){0, 100000}, NULL);
  nanosleep(&(struct timespec){0, 5000000}, NULL); /* all in weft_sync */
  __atomic_store_n(flag, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < WAITERS; i++)
    EXPECT_OK(weft_task_join(t[i]));
  for (int i = 0; i < WAITERS; i++)
    EXPECT_EQ_INT(states[i], TEST_SPIN_RELEASED);
  float *host;
  EXPECT_OK(weft_pinned_alloc(N * sizeof(float), (void **)&host));
  memset(host, 0, N * sizeof(float));
  weft_task *s;
  EXPECT_OK(weft_task_spawn(rt, &s, slices, host, NULL));
  EXPECT_OK(weft_task_join(s));
  EXPECT_OK(weft_pinned_free(host));
  EXPECT_OK(weft_pinned_free(states));
  EXPECT_OK(weft_pinned_free(flag));
  EXPECT_OK(weft_shutdown(rt));
}

static void check_waits(const trace_model *m) {
  uint32_t lane_of[WAITERS];
  double start[WAITERS], end[WAITERS];
  for (int i = 0; i < WAITERS; i++)
    lane_of[i] = TRACE_NO_OP;
  for (size_t i = 0; i < m->nops; i++) {
    const trace_op *op = &m->ops[i];
    if (op->kind != TRACE_OP_WAIT)
      continue;
    const char *tn = trace_model_str(m, op->task_name);
    const trace_thread *th = &m->threads[op->lane];
    EXPECT_MSG(!th->tid.is_str && th->tid.num >= 0 && th->tid.num <= INT32_MAX,
               "task %s waits on tid %lld: not a signed 32-bit number", tn,
               (long long)th->tid.num);
    if (tn[0] != 'w' || tn[1] < '0' || tn[1] >= '0' + WAITERS || tn[2])
      continue; /* the copying task's */
    int w = tn[1] - '0';
    EXPECT_MSG(lane_of[w] == TRACE_NO_OP || lane_of[w] == op->lane,
               "task %s's waits are on two lanes", tn);
    lane_of[w] = op->lane;
    start[w] = op->ts;
    end[w] = op->ts + op->dur;
    char want[64];
    snprintf(want, sizeof want, "waits: %s", tn);
    EXPECT_MSG(strcmp(trace_model_str(m, th->name), want) == 0,
               "task %s's wait lane is named '%s'", tn,
               trace_model_str(m, th->name));
  }
  for (int i = 0; i < WAITERS; i++) {
    EXPECT_MSG(lane_of[i] != TRACE_NO_OP, "task w%d has no wait", i);
    for (int k = 0; k < i; k++)
      EXPECT_MSG(lane_of[i] != lane_of[k], "tasks w%d and w%d share a lane", k,
                 i);
  }
  /* The planted overlap: every wait spans the moment the flag was set. */
  for (int i = 1; i < WAITERS; i++)
    EXPECT_MSG(start[i] < end[0] && start[0] < end[i],
               "the waits of w0 and w%d do not overlap", i);
  /* No task slice or API call shares a wait lane: no worker's tid. */
  for (size_t i = 0; i < m->nops; i++) {
    const trace_op *op = &m->ops[i];
    if (op->kind != TRACE_OP_TASK && op->kind != TRACE_OP_RUNTIME)
      continue;
    for (int w = 0; w < WAITERS; w++)
      EXPECT_MSG(op->lane != lane_of[w],
                 "a %s slice at %.3f us is on w%d's wait lane",
                 trace_op_kind_name((trace_op_kind)op->kind), op->ts, w);
  }
}

static void check_copies(const trace_model *m) {
  int htod = 0, dtoh = 0;
  for (size_t i = 0; i < m->nops; i++) {
    const trace_op *op = &m->ops[i];
    if (op->kind != TRACE_OP_MEMCPY)
      continue;
    EXPECT_MSG(op->copy == TRACE_COPY_HTOD || op->copy == TRACE_COPY_DTOH,
               "a copy into or out of a device allocation's middle is "
               "labelled '%s'",
               trace_model_str(m, op->name));
    htod += op->copy == TRACE_COPY_HTOD;
    dtoh += op->copy == TRACE_COPY_DTOH;
  }
  EXPECT_EQ_INT(htod, 1);
  EXPECT_EQ_INT(dtoh, 1);
}

int main(void) {
  test_kernels_init(&tk);
  char path[] = "/tmp/weft-lanes-XXXXXX";
  traced_temp(path);
  run(path);
  trace_model m;
  trace_error err;
  EXPECT_MSG(trace_model_load_file(&m, path, &err) == 0, "%s", err.message);
  check_waits(&m);
  check_copies(&m);
  EXPECT_EQ_INT((int)trace_compat_problems(stderr, &m, 20), 0);
  trace_model_free(&m);
  unlink(path);
  puts("lanes: ok");
  return 0;
}
