/* `weft trace explain` on planted programs, run traced on each backend and
 * explained from their own traces: each names the planted cause first,
 * with the task that planted it.
 *
 *   host slow:  one task launches a 0.1 ms kernel, then computes on the
 *               host for 10 ms before the next;
 *   one stream: one task queues copy in, kernel, copy out, four times,
 *               on its one stream;
 *   ordered:    a task follows (weft_task_after) another whose kernel is
 *               long, and queues a copy that waits for it;
 *   weft:       with one worker, a task that would launch waits behind
 *               tasks computing on the host;
 *   taken over: with one stream made ahead, a task returns with a 60 ms
 *               kernel queued and the next task, independent of it,
 *               takes its stream over: its copy waits behind, the copy
 *               engine free (a kernel behind a kernel would not show on
 *               a GPU, where a running kernel may fill the device; not
 *               under weft check, which takes no stream over);
 *   mixed:      one stream, then host-slow launches: both found, the
 *               larger first;
 *   control:    two tasks, each with four 5 ms kernels queued on its
 *               stream, side by side: the device runs all it can from
 *               start to end; nothing held back that could run.
 *
 * The kernels are spin_until with a flag never set: each runs for its
 * timeout, on either backend. Emulated devices have as many executor
 * threads as streams here, so the host backend, like a GPU, has room for
 * every stream; the causes that need a full engine run on CUDA only:
 *
 *   GPU full:     two tasks each launch two waves of one-thread blocks on
 *                 every SM, spinning 2 ms;
 *   copy engines: two tasks each copy 8 MiB to the device four times.
 *
 * With the argument "hwqueue" (ctest trace.cuda.explain_hwqueue, run with
 * CUDA_DEVICE_MAX_CONNECTIONS=1: every stream on one hardware queue) only
 *
 *   one hardware queue: a task queues four 5 ms one-block kernels, then
 *                       another queues one on its own stream: it waits
 *                       in the queue behind the first's, the GPU nearly
 *                       empty.
 *
 * (trace.explain plants every cause in hand-built traces too.) */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "expect.h"
#include "explain.h"
#include "kernels.h"
#include "traced_host.h"
#include "weft.h"
#include "weft_internal.h"

static test_kernels tk;
enum { GATES = 16 };
static int *gate; /* pinned: [0] the flag, never set; [1..] spin states */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void busy_ms(double ms) {
  double end = now_ms() + ms;
  while (now_ms() < end)
    ;
}

/* A kernel that runs for ms, on slot's spin state. */
static void spin(double ms, int slot) {
  const int *flag = &gate[0];
  int *state = &gate[1 + slot];
  long long ns = (long long)(ms * 1e6);
  void *args[] = {&flag, &state, &ns};
  EXPECT_OK(weft_launch(&tk.spin_until, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
}

static weft_task *spawn(weft_runtime *rt, weft_task_fn fn, void *arg,
                        const char *name) {
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.name = name;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, fn, arg, &o));
  return t;
}

/* ---- the programs ---- */

enum { BIG = 8 << 20 };
static char *pin, *dbuf; /* BIG bytes each */
static weft_task *first;

static void host_slow(void *arg) {
  (void)arg;
  /* The host's 10 ms dwarfs the kernel even when a loaded 2-core machine
   * starts it a scheduler slice late (CI's weft check step saw 2 ms of
   * host time fall short of the kernel's late runs). */
  for (int i = 0; i < 8; i++) {
    spin(0.1, 1);
    busy_ms(10);
  }
  EXPECT_OK(weft_sync());
}

static void one_stream(void *arg) {
  (void)arg;
  for (int i = 0; i < 4; i++) {
    EXPECT_OK(weft_copy(dbuf, pin, BIG));
    spin(3, 2);
    EXPECT_OK(weft_copy(pin, dbuf, BIG));
  }
  EXPECT_OK(weft_sync());
}

/* 60 ms, as the holder below: the copy's wait for it stays the longest
 * stretch even when a loaded machine's executor starts the copy 12 ms
 * after the kernel ends (seen in CI under ThreadSanitizer), a stretch
 * explain rightly puts on the host. */
static void long_kernel(void *arg) {
  (void)arg;
  spin(60, 3);
}

static void follower(void *arg) {
  (void)arg;
  EXPECT_OK(weft_task_after(first));
  EXPECT_OK(weft_copy(pin, dbuf, 4096));
  EXPECT_OK(weft_sync());
}

static void short_kernel(void *arg) { spin(0.5, *(int *)arg); }

static void hog(void *arg) {
  (void)arg;
  busy_ms(8);
}

/* Two waves of one-thread blocks on every SM, each spinning 2 ms: no
 * block of another kernel finds a slot until they end (CUDA only: the
 * host backend runs blocks one after another). */
static int sms;
static void filler(void *arg) {
  int slot = *(int *)arg;
  const int *flag = &gate[0];
  int *state = &gate[1 + slot];
  long long ns = 2000000;
  void *args[] = {&flag, &state, &ns};
  EXPECT_OK(weft_launch(&tk.spin_until, WEFT_DIM1((unsigned)sms * 64),
                        WEFT_DIM1(1), 0, args));
  EXPECT_OK(weft_sync());
}

/* Half of the buffers each, so that the two copiers do not race. */
static void copier(void *arg) {
  size_t at = *(int *)arg * (BIG / 2);
  for (int i = 0; i < 4; i++)
    EXPECT_OK(weft_copy(dbuf + at, pin + at, BIG / 2));
  EXPECT_OK(weft_sync());
}

static void mixed(void *arg) {
  one_stream(arg);
  host_slow(arg);
}

static void kernels(void *arg) {
  for (int i = 0; i < 4; i++)
    spin(5, *(int *)arg);
  EXPECT_OK(weft_sync());
}

static atomic_int front_issued;
static void front(void *arg) {
  for (int i = 0; i < 4; i++)
    spin(5, *(int *)arg);
  atomic_store(&front_issued, 1);
  EXPECT_OK(weft_sync());
}

static void behind(void *arg) {
  spin(5, *(int *)arg);
  EXPECT_OK(weft_sync());
}

/* ---- running one traced ---- */

typedef void (*program)(weft_runtime *rt);

/* 60 ms: the copy's wait behind it stays the longest stretch even when a
 * loaded machine (ThreadSanitizer on CI's 2 cores) starts the taker 20 ms
 * late, a stretch explain rightly puts on the host. */
static void holder(void *arg) {
  (void)arg;
  spin(60, 11);
}

static void taker(void *arg) {
  (void)arg;
  EXPECT_OK(weft_copy(dbuf, pin, BIG));
  EXPECT_OK(weft_sync());
}

/* Whether t has returned (read under its runtime's lock). */
static int returned(weft_task *h) {
  weft_task *t = (weft_task *)weft__handle_obj(h);
  pthread_mutex_lock(&t->x.rt->h.lock);
  int r = t->returned;
  pthread_mutex_unlock(&t->x.rt->h.lock);
  return r;
}

static void p_host_slow(weft_runtime *rt) {
  EXPECT_OK(weft_task_join(spawn(rt, host_slow, NULL, "issuer")));
}
static void p_one_stream(weft_runtime *rt) {
  EXPECT_OK(weft_task_join(spawn(rt, one_stream, NULL, "pipeline")));
}
static void p_ordered(weft_runtime *rt) {
  first = spawn(rt, long_kernel, NULL, "producer");
  weft_task *f = spawn(rt, follower, NULL, "consumer");
  EXPECT_OK(weft_task_join(f));
  EXPECT_OK(weft_task_join(first));
}
static void p_weft(weft_runtime *rt) {
  weft_task *t[6];
  /* A spin state each: one word written by both would be a race that
   * weft check (CI runs every test under it) rightly reports. */
  static int slots[2] = {4, 8};
  t[0] = spawn(rt, short_kernel, &slots[0], "early");
  for (int i = 1; i < 5; i++)
    t[i] = spawn(rt, hog, NULL, "hog");
  t[5] = spawn(rt, short_kernel, &slots[1], "late");
  for (int i = 0; i < 6; i++)
    EXPECT_OK(weft_task_join(t[i]));
}
static void p_mixed(weft_runtime *rt) {
  EXPECT_OK(weft_task_join(spawn(rt, mixed, NULL, "both")));
}
static void p_gpu_full(weft_runtime *rt) {
  weft_device_info di;
  EXPECT_OK(weft_device_get_info(rt, 0, &di));
  sms = di.multiprocessors;
  static int slots[2] = {6, 7};
  weft_task *a = spawn(rt, filler, &slots[0], "filler-a");
  weft_task *b = spawn(rt, filler, &slots[1], "filler-b");
  EXPECT_OK(weft_task_join(a));
  EXPECT_OK(weft_task_join(b));
}
static void p_hw_queue(weft_runtime *rt) {
  static int slots[2] = {9, 10};
  atomic_store(&front_issued, 0);
  weft_task *a = spawn(rt, front, &slots[0], "front");
  while (!atomic_load(&front_issued))
    sched_yield();
  weft_task *b = spawn(rt, behind, &slots[1], "behind");
  EXPECT_OK(weft_task_join(a));
  EXPECT_OK(weft_task_join(b));
}
static void p_copy_engine(weft_runtime *rt) {
  static int halves[2] = {0, 1};
  weft_task *a = spawn(rt, copier, &halves[0], "copier-a");
  weft_task *b = spawn(rt, copier, &halves[1], "copier-b");
  EXPECT_OK(weft_task_join(a));
  EXPECT_OK(weft_task_join(b));
}
static void p_takeover(weft_runtime *rt) {
  weft_task *a = spawn(rt, holder, NULL, "holder");
  while (!returned(a))
    sched_yield();
  weft_task *b = spawn(rt, taker, NULL, "taker");
  EXPECT_OK(weft_task_join(b));
  EXPECT_OK(weft_task_join(a));
}
static void p_control(weft_runtime *rt) {
  static int slots[2] = {5, 6};
  weft_task *k = spawn(rt, kernels, &slots[0], "kernels-a");
  weft_task *c = spawn(rt, kernels, &slots[1], "kernels-b");
  EXPECT_OK(weft_task_join(k));
  EXPECT_OK(weft_task_join(c));
}

/* opts.streams of the next run (0: the default). */
static int run_streams;
/* Set by run: whether its runtime ran under weft check. */
static int run_checked;

/* Runs p traced (workers: 0 for the default) and explains the trace into
 * *e and *m; 77 when the backend has no device or CUPTI is taken. */
static int run(program p, int workers, trace_model *m, trace_explanation *e) {
  char path[] = "/tmp/weft-explain-XXXXXX";
  traced_temp(path);
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.workers = workers;
  o.host_threads = 2; /* the most streams a program here uses */
  o.streams = run_streams;
  o.trace_path = path;
  weft_runtime *rt;
  int rc = weft_init(&rt, &o);
  if (rc == WEFT_ENODEV ||
      (rc && strstr(weft_last_error_message(), "MULTIPLE_SUBSCRIBERS"))) {
    unlink(path);
    return 77;
  }
  EXPECT_OK(rc);
  run_checked = rt->h.bk->check != NULL;
  EXPECT_OK(weft_pinned_alloc(GATES * sizeof *gate, (void **)&gate));
  memset(gate, 0, GATES * sizeof *gate);
  EXPECT_OK(weft_pinned_alloc(BIG, (void **)&pin));
  EXPECT_OK(weft_device_alloc(BIG, (void **)&dbuf));
  memset(pin, 1, BIG);
  p(rt);
  EXPECT_OK(weft_device_free(dbuf));
  EXPECT_OK(weft_pinned_free(pin));
  EXPECT_OK(weft_pinned_free(gate));
  EXPECT_OK(weft_shutdown(rt));
  trace_error err;
  EXPECT_MSG(trace_model_load_file(m, path, &err) == 0, "%s", err.message);
  if (getenv("WEFT_TEST_KEEP_TRACE")) /* for a look at a failure */
    printf("trace kept: %s\n", path);
  else
    unlink(path);
  EXPECT(trace_explain(m, e) == 0);
  return 0;
}

static void print(const char *what, const trace_model *m,
                  const trace_explanation *e) {
  printf("---- %s\n", what);
  trace_explain_opts o = {.source = what, .json = 0, .top = 2};
  EXPECT(trace_explain_print(stdout, m, e, &o) == 0);
}

/* The planted cause first, with the planting task in its top stretch
 * (task NULL: either of two named prefix*). */
static int planted(const char *what, program p, int workers, trace_cause c,
                   const char *task) {
  trace_model m;
  trace_explanation e;
  if (run(p, workers, &m, &e) == 77)
    return 77;
  print(what, &m, &e);
  EXPECT_MSG(e.top == (int)c, "%s: the first cause is %s, planted %s", what,
             e.top >= 0 ? trace_cause_name((trace_cause)e.top) : "none",
             trace_cause_name(c));
  int named = 0;
  for (size_t i = 0; i < e.nlost && !named; i++) {
    const trace_lost *l = &e.lost_at[i];
    if (l->cause != c || l->op == TRACE_NO_OP)
      continue;
    const trace_op *op = &m.ops[l->op];
    uint32_t tn = op->task_name;
    if (!tn && op->launch != TRACE_NO_OP)
      tn = m.ops[op->launch].task_name;
    const char *name = trace_model_str(&m, tn);
    size_t k = strlen(task);
    named =
        task[k - 1] == '*' ? !strncmp(name, task, k - 1) : !strcmp(name, task);
    break; /* the longest stretch of the cause */
  }
  EXPECT_MSG(named, "%s: the longest stretch of %s is not task '%s''s", what,
             trace_cause_name(c), task);
  /* On CUDA the launch records measure it: the kernel that held the
   * others filled the device. */
  if (c == TRACE_CAUSE_GPU_FULL && !m.host_backend)
    for (size_t i = 0; i < e.nlost; i++)
      if (e.lost_at[i].cause == c) {
        uint32_t by = e.lost_at[i].by;
        EXPECT_MSG(by != TRACE_NO_OP && m.ops[by].fill >= 1,
                   "%s: held by an op that did not fill the device (%.2f)",
                   what, by != TRACE_NO_OP ? m.ops[by].fill : 0.0);
        break;
      }
  trace_explanation_free(&e);
  trace_model_free(&m);
  return 0;
}

/* The taken-over stream planted: its cause first, named with the taker,
 * and the trace records the takeover; under weft check no stream is
 * taken over and the taker's copy waits for nothing. */
static void takeover_planted(void) {
  trace_model m;
  trace_explanation e;
  EXPECT(run(p_takeover, 2, &m, &e) == 0);
  print("taken over", &m, &e);
  if (run_checked) {
    EXPECT_MSG(m.ntakeovers == 0 && e.cause[TRACE_CAUSE_TAKEOVER] == 0,
               "taken over, under weft check: %zu takeovers, %.1f us",
               m.ntakeovers, e.cause[TRACE_CAUSE_TAKEOVER]);
  } else {
    EXPECT_MSG(m.ntakeovers == 1, "taken over: %zu takeovers in the trace",
               m.ntakeovers);
    EXPECT_MSG(e.top == TRACE_CAUSE_TAKEOVER,
               "taken over: the first cause is %s",
               e.top >= 0 ? trace_cause_name((trace_cause)e.top) : "none");
    int named = 0;
    for (size_t i = 0; i < e.nlost && !named; i++) {
      const trace_lost *l = &e.lost_at[i];
      if (l->cause == TRACE_CAUSE_TAKEOVER && l->op != TRACE_NO_OP) {
        const trace_op *op = &m.ops[l->op];
        uint32_t tn = op->task_name;
        if (!tn && op->launch != TRACE_NO_OP)
          tn = m.ops[op->launch].task_name;
        named = !strcmp(trace_model_str(&m, tn), "taker");
        break;
      }
    }
    EXPECT_MSG(named, "taken over: the longest stretch is not the taker's");
  }
  trace_explanation_free(&e);
  trace_model_free(&m);
}

int main(int argc, char **argv) {
  test_kernels_init(&tk);
  if (argc > 1 && !strcmp(argv[1], "hwqueue")) {
    if (planted("one hardware queue", p_hw_queue, 2, TRACE_CAUSE_HW_QUEUE,
                "behind") == 77)
      return 77;
    puts("ok");
    return 0;
  }
  if (planted("host slow", p_host_slow, 2, TRACE_CAUSE_HOST_SLOW, "issuer") ==
      77) {
    printf("explain_run: no device, or CUPTI taken by another tool: "
           "skipped\n");
    return 77;
  }
  planted("one stream", p_one_stream, 2, TRACE_CAUSE_ONE_STREAM, "pipeline");
  planted("ordered", p_ordered, 2, TRACE_CAUSE_ORDERED, "consumer");
  planted("weft", p_weft, 1, TRACE_CAUSE_WEFT, "late");
  run_streams = 1;
  takeover_planted();
  run_streams = 0;
  const char *backend = getenv("WEFT_BACKEND");
  if (backend && !strcmp(backend, "cuda")) { /* a GPU's engines */
    planted("GPU full", p_gpu_full, 2, TRACE_CAUSE_GPU_FULL, "filler-*");
    planted("copy engines", p_copy_engine, 2, TRACE_CAUSE_COPY_ENGINE,
            "copier-*");
  }
  trace_model m;
  trace_explanation e;
  EXPECT(run(p_mixed, 2, &m, &e) == 0);
  print("mixed", &m, &e);
  EXPECT_MSG(e.cause[TRACE_CAUSE_ONE_STREAM] > 0 &&
                 e.cause[TRACE_CAUSE_HOST_SLOW] > 0,
             "mixed: one stream %.1f us, host slow %.1f us",
             e.cause[TRACE_CAUSE_ONE_STREAM], e.cause[TRACE_CAUSE_HOST_SLOW]);
  EXPECT(e.top == TRACE_CAUSE_ONE_STREAM || e.top == TRACE_CAUSE_HOST_SLOW);
  trace_explanation_free(&e);
  trace_model_free(&m);
  EXPECT(run(p_control, 2, &m, &e) == 0);
  print("control", &m, &e);
  /* Nothing in the program holds the device back: no order, no implicit
   * sync, no stream shared, the host ahead. Whether the device then runs
   * the two streams side by side is its own affair: on the H200 the two
   * streams of one-block kernels ran one after the other for a third of
   * the span in 2 of 6 runs (explain says "the GPU was full"); on a loaded
   * 2-core host the executors start ops late. So the share is printed,
   * and only the program's causes are bounded. */
  printf("control: %.1f %% of the span lost\n", 100 * e.lost / e.span);
  EXPECT_MSG(e.cause[TRACE_CAUSE_IMPLICIT_SYNC] == 0 &&
                 e.cause[TRACE_CAUSE_ORDERED] == 0,
             "control: %.1f us of implicit sync, %.1f ordered",
             e.cause[TRACE_CAUSE_IMPLICIT_SYNC], e.cause[TRACE_CAUSE_ORDERED]);
  /* On a GPU a stream's next kernel starts a moment after the last ends
   * ("one stream" for that moment) and the host is far ahead; on a
   * loaded host (TSan: 9 % of the span) neither holds. */
  if (backend && !strcmp(backend, "cuda"))
    EXPECT_MSG(e.cause[TRACE_CAUSE_ONE_STREAM] < 0.05 * e.span &&
                   e.cause[TRACE_CAUSE_HOST_SLOW] < 0.05 * e.span,
               "control: %.1f us one stream, %.1f host slow, of %.1f us",
               e.cause[TRACE_CAUSE_ONE_STREAM], e.cause[TRACE_CAUSE_HOST_SLOW],
               e.span);
  trace_explanation_free(&e);
  trace_model_free(&m);
  puts("ok");
  return 0;
}
