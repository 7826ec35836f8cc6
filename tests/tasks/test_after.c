/* weft_task_after orders the caller's stream after another task's GPU work,
 * in each state the other task can be in when it is called:
 *   - not yet returned (the caller suspends until it returns),
 *   - returned with GPU work still queued (a device-side wait),
 *   - completed (nothing to wait for),
 * from a task and from a plain thread; and its errors.
 *
 * X writes a value into device memory behind a gate (a kernel spinning on
 * a flag); Y, after weft_task_after(X), copies that memory to pinned memory
 * with a kernel. While the gate is closed Y's copy must not have run; once
 * it opens Y must see X's value. Without the ordering Y's copy would run at
 * once and read the old value. */
#include <stdio.h>

#include "task_common.h"
#include "weft_internal.h"

static weft_runtime *rt;

typedef struct scene {
  tt_gate gate;
  int *d;   /* device int X writes */
  int *out; /* pinned int Y's kernel copies d into */
  int value;
  int gated;
  weft_task *x, *y;
  int x_started;
  int x_started_when_y_called;
  int y_queued;
  int y_rc, y_sync_rc, y_seen;
} scene;

static scene sc;

static void task_x(void *arg) {
  tt_store(&sc.x_started, 1);
  if (sc.gated)
    tt_gate_launch(&sc.gate);
  void *args[] = {&sc.d, &sc.value};
  EXPECT_OK(weft_launch(&tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  if (!sc.gated)
    EXPECT_OK(weft_sync());
}

static void copy_out(void) {
  void *args[] = {&sc.out, &sc.d};
  EXPECT_OK(weft_launch(&tk.copy_int, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
}

static void task_y(void *arg) {
  sc.x_started_when_y_called = tt_load(&sc.x_started);
  sc.y_rc = weft_task_after(sc.x);
  copy_out();
  tt_store(&sc.y_queued, 1);
  sc.y_sync_rc = weft_sync();
  sc.y_seen = *sc.out;
}

static void reset(int value, int gated) {
  sc.value = value;
  sc.gated = gated;
  sc.x_started = sc.x_started_when_y_called = sc.y_queued = 0;
  sc.y_rc = sc.y_sync_rc = sc.y_seen = -99;
  *sc.out = -1;
  /* d starts at 0 */
  EXPECT_OK(weft_memset(sc.d, 0, sizeof(int)));
  EXPECT_OK(weft_sync());
}

/* While the gate is closed, Y's copy must be held back. */
static void check_held_then_open(void) {
  tt_wait_flag(&sc.y_queued, 10000, "Y to queue its copy");
  /* X's gate is reached first (on a loaded machine its executor thread
   * may not have run yet), then a wrongly unordered copy has time to run. */
  tt_gate_wait_started(&sc.gate);
  tt_sleep_ms(20);
  int seen = tt_load(sc.out);
  int state = tt_gate_state(&sc.gate);
  tt_gate_open(&sc.gate);
  EXPECT_MSG(seen == -1, "Y's copy ran before X's gated work (out = %d)", seen);
  EXPECT_MSG(state == TEST_SPIN_STARTED, "X's gate is not spinning (state %d)",
             state);
}

static void check_y(void) {
  EXPECT_OK(sc.y_rc);
  EXPECT_OK(sc.y_sync_rc);
  EXPECT_EQ_INT(sc.y_seen, sc.value);
}

/* X not yet returned: X and Y spawned by a parent task on one worker,
 * which runs the newest first: Y, so Y calls weft_task_after before X has
 * even started. */
static void parent(void *arg) {
  EXPECT_OK(weft_task_spawn(rt, &sc.x, task_x, NULL, NULL));
  EXPECT_OK(weft_task_spawn(rt, &sc.y, task_y, NULL, NULL));
  EXPECT_OK(weft_task_join(sc.y));
  EXPECT_OK(weft_task_join(sc.x));
}

static void not_yet_returned(void) {
  reset(41, 1);
  weft_task *p;
  EXPECT_OK(weft_task_spawn(rt, &p, parent, NULL, NULL));
  check_held_then_open();
  EXPECT_OK(weft_task_join(p));
  EXPECT_MSG(!sc.x_started_when_y_called,
             "X had started before Y called weft_task_after: this case did not "
             "test a task still to return");
  check_y();
}

static void wait_state(weft_task *t, int want_done) {
  int64_t deadline = tt_now_ns() + 10000000000LL;
  while (!(want_done ? tt_task_done(t) : tt_task_returned(t))) {
    EXPECT_MSG(tt_now_ns() < deadline, "task did not %s within 10 s",
               want_done ? "complete" : "return");
    tt_sleep_ms(1);
  }
}

/* X returned, its gated work still queued. */
static void returned_pending(void) {
  reset(42, 1);
  EXPECT_OK(weft_task_spawn(rt, &sc.x, task_x, NULL, NULL));
  wait_state(sc.x, 0);
  EXPECT(!tt_task_done(sc.x)); /* the gate holds its work */
  EXPECT_OK(weft_task_spawn(rt, &sc.y, task_y, NULL, NULL));
  check_held_then_open();
  EXPECT_OK(weft_task_join(sc.y));
  EXPECT_OK(weft_task_join(sc.x));
  check_y();
}

/* X completed: weft_task_after has nothing to wait for. */
static void completed(void) {
  reset(43, 0);
  EXPECT_OK(weft_task_spawn(rt, &sc.x, task_x, NULL, NULL));
  wait_state(sc.x, 1);
  EXPECT_OK(weft_task_spawn(rt, &sc.y, task_y, NULL, NULL));
  EXPECT_OK(weft_task_join(sc.y));
  EXPECT_OK(weft_task_join(sc.x));
  check_y();
}

/* A plain thread orders its own stream after X. */
static void from_thread(void) {
  reset(44, 1);
  EXPECT_OK(weft_task_spawn(rt, &sc.x, task_x, NULL, NULL));
  EXPECT_OK(weft_task_after(sc.x)); /* blocks until X returned */
  EXPECT(tt_task_returned(sc.x));
  copy_out();
  weft_event *ev;
  EXPECT_OK(weft_event_create(&ev));
  EXPECT_OK(weft_event_record(ev));
  tt_sleep_ms(20);
  EXPECT_ERR(weft_event_query(ev), WEFT_EAGAIN);
  EXPECT_EQ_INT(tt_load(sc.out), -1);
  tt_gate_open(&sc.gate);
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_event_query(ev));
  EXPECT_EQ_INT(*sc.out, 44);
  EXPECT_OK(weft_event_destroy(&ev));
  EXPECT_OK(weft_task_join(sc.x));
}

/* A chain of tasks, each after the previous, all spawned at once. */
typedef struct link {
  weft_task *prev;
  float a, b;
} link;

static float *chain_d;

static void chain_task(void *arg) {
  link *l = arg;
  if (l->prev)
    EXPECT_OK(weft_task_after(l->prev));
  int n = 1;
  void *args[] = {&chain_d, &n, &l->a, &l->b};
  EXPECT_OK(weft_launch(&tk.axpb, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
}

static void chain(void) {
  enum { N = 64 };
  static link ls[N];
  weft_task *t[N];
  float *h;
  EXPECT_OK(weft_pinned_alloc(sizeof(float), (void **)&h));
  EXPECT_OK(weft_device_alloc(sizeof(float), (void **)&chain_d));
  *h = 3.0f;
  EXPECT_OK(weft_copy(chain_d, h, sizeof(float)));
  EXPECT_OK(weft_sync());
  float want = 3.0f;
  for (int i = 0; i < N; i++) {
    ls[i] = (link){.prev = i ? t[i - 1] : NULL,
                   .a = (i % 3 == 0) ? -1.0f : 1.0f,
                   .b = (float)(i % 7 - 3)};
    want = want * ls[i].a + ls[i].b;
    EXPECT_OK(weft_task_spawn(rt, &t[i], chain_task, &ls[i], NULL));
  }
  /* The last task's completion covers the whole chain. */
  EXPECT_OK(weft_task_after(t[N - 1]));
  EXPECT_OK(weft_copy(h, chain_d, sizeof(float)));
  EXPECT_OK(weft_sync());
  EXPECT_MSG(*h == want, "chain result %g, expected %g", (double)*h,
             (double)want);
  for (int i = 0; i < N; i++)
    EXPECT_OK(weft_task_join(t[i]));
  EXPECT_OK(weft_device_free(chain_d));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_pinned_free(h));
}

/* ---- a chain behind a gate hands its stream on ----
 *
 * Forty tasks, each following the one before, return with their work
 * queued behind a gate; each continues on its predecessor's stream, so
 * the runtime makes no stream beyond the two made ahead. (Under weft
 * check each follows by its own stream, and only the result is checked.) */

static tt_gate held_gate;

static void held_first(void *arg) {
  (void)arg;
  tt_gate_launch(&held_gate);
  int n = 1;
  float a = 1.0f, b = 1.0f;
  void *args[] = {&chain_d, &n, &a, &b};
  EXPECT_OK(weft_launch(&tk.axpb, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
}

static void chain_behind_gate(void) {
  enum { N = 40 };
  weft_runtime *own = tt_open_ahead(2);
  tt_gate_init(&held_gate);
  static link ls[N];
  weft_task *t[N + 1];
  float *h;
  EXPECT_OK(weft_pinned_alloc(sizeof(float), (void **)&h));
  EXPECT_OK(weft_device_alloc(sizeof(float), (void **)&chain_d));
  EXPECT_OK(weft_memset(chain_d, 0, sizeof(float)));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_task_spawn(own, &t[0], held_first, NULL, NULL));
  float want = 1.0f;
  for (int i = 0; i < N; i++) {
    ls[i] = (link){.prev = t[i], .a = 2.0f, .b = (float)(i % 5)};
    want = want * ls[i].a + ls[i].b;
    EXPECT_OK(weft_task_spawn(own, &t[i + 1], chain_task, &ls[i], NULL));
  }
  tt_chain_holds_streams_ahead(own, t, N + 1, 2);
  tt_gate_open(&held_gate);
  for (int i = 0; i <= N; i++)
    EXPECT_OK(weft_task_join(t[i]));
  EXPECT_OK(weft_copy(h, chain_d, sizeof(float)));
  EXPECT_OK(weft_sync());
  EXPECT_MSG(*h == want, "chain result %g, expected %g", (double)*h,
             (double)want);
  EXPECT_OK(weft_device_free(chain_d));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_pinned_free(h));
  tt_gate_fini(&held_gate);
  tt_close(own);
}

/* ---- errors ---- */

static void after_self(void *arg) {
  int *rc = arg;
  *rc = weft_task_after(weft_task_self());
}

static void nothing(void *arg) {}

static void errors(void) {
  EXPECT_ERR(weft_task_after(NULL), WEFT_EINVAL);
  int rc = 0;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, after_self, &rc, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT_ERR(rc, WEFT_ESTATE);
  /* A task joined (or detached) already has completed: following it is a
   * no-op, so a DAG may join its nodes in any order. */
  EXPECT_OK(weft_task_spawn(rt, &t, nothing, NULL, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_task_after(t));
  EXPECT_OK(weft_task_spawn(rt, &t, nothing, NULL, NULL));
  EXPECT_OK(weft_task_detach(t));
  EXPECT_OK(weft_task_after(t));
  /* Those refusals are not GPU errors of this thread. */
  EXPECT_OK(weft_sync());
}

int main(void) {
  for (int workers = 1; workers <= 3; workers += 2) {
    rt = tt_open_workers(workers);
    tt_gate_init(&sc.gate);
    EXPECT_OK(weft_pinned_alloc(sizeof(int), (void **)&sc.out));
    EXPECT_OK(weft_device_alloc(sizeof(int), (void **)&sc.d));
    if (workers == 1) /* needs Y to run before X on the one worker */
      not_yet_returned();
    returned_pending();
    completed();
    from_thread();
    chain();
    errors();
    EXPECT_OK(weft_device_free(sc.d));
    EXPECT_OK(weft_sync());
    EXPECT_OK(weft_pinned_free(sc.out));
    tt_gate_fini(&sc.gate);
    tt_close(rt);
  }
  chain_behind_gate();
  puts("ok");
  return 0;
}
