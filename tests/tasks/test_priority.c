/* A high-priority task runs before the normal tasks queued ahead of it,
 * and its stream has the device's greatest priority.
 *
 * On one worker, a blocker task keeps the worker busy (spinning, without
 * yielding) while N normal tasks and then one high-priority task are
 * spawned, from the main thread or from the blocker itself; then the
 * blocker yields and ends. Each task takes a ticket from a counter when it
 * starts: the high task's ticket must be smaller than every normal one's.
 *
 * And a high task that yields lets normal ones run: on the one worker, a
 * high task yielding until a normal task sets a flag ends, spawned with it
 * from a task and from the main thread (whose join runs the high task
 * until it yields; it hung the runtime when a yielding high task was
 * always picked again first). */
#include <stdio.h>

#include "task_common.h"
#include "weft_internal.h"

enum { N = 8 };

static weft_runtime *rt;
static weft_device_info info;

typedef struct scene {
  int started, go;
  int counter;
  int ticket[N];
  int high_ticket;
  int stream_prio[N + 1];
  int from_blocker;
  weft_task *t[N + 1];
} scene;

static scene sc;

/* The priority of the calling task's stream (leased here). */
static int stream_priority(void) {
  weft_stream *s = weft_stream_current();
  EXPECT(s != NULL);
  return ((weft__stream *)s)->priority;
}

static void normal(void *arg) {
  int i = (int)(intptr_t)arg;
  sc.ticket[i] = tt_add(&sc.counter, 1);
  sc.stream_prio[i] = stream_priority();
}

static void high(void *arg) {
  sc.high_ticket = tt_add(&sc.counter, 1);
  sc.stream_prio[N] = stream_priority();
}

static void spawn_all(void) {
  for (int i = 0; i < N; i++)
    EXPECT_OK(weft_task_spawn(rt, &sc.t[i], normal, (void *)(intptr_t)i, NULL));
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.priority = WEFT_PRIORITY_HIGH;
  EXPECT_OK(weft_task_spawn(rt, &sc.t[N], high, NULL, &o));
}

static void spawn_high(void) {
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.priority = WEFT_PRIORITY_HIGH;
  EXPECT_OK(weft_task_spawn(rt, &sc.t[N], high, NULL, &o));
}

static void blocker(void *arg) {
  if (sc.from_blocker == 2) {
    /* Mixed: normal tasks on this worker's own queue, the high one
     * injected by the main thread; the blocker then returns without
     * yielding, so only the choice of the next task orders them. */
    for (int i = 0; i < N; i++)
      EXPECT_OK(
          weft_task_spawn(rt, &sc.t[i], normal, (void *)(intptr_t)i, NULL));
    tt_store(&sc.started, 1);
    int64_t deadline = tt_now_ns() + 10000000000LL;
    while (!tt_load(&sc.go))
      EXPECT_MSG(tt_now_ns() < deadline, "the main thread never set go");
    return;
  }
  tt_store(&sc.started, 1);
  if (sc.from_blocker) {
    spawn_all();
  } else {
    /* Busy: the worker cannot take the tasks the main thread spawns. */
    int64_t deadline = tt_now_ns() + 10000000000LL;
    while (!tt_load(&sc.go))
      EXPECT_MSG(tt_now_ns() < deadline, "the main thread never set go");
  }
  weft_yield();
}

static void run(int from_blocker) {
  sc = (scene){.from_blocker = from_blocker, .high_ticket = -1};
  weft_task *b;
  EXPECT_OK(weft_task_spawn(rt, &b, blocker, NULL, NULL));
  tt_wait_flag(&sc.started, 10000, "the blocker to start");
  if (from_blocker == 0) {
    spawn_all();
    tt_store(&sc.go, 1);
  } else if (from_blocker == 2) {
    spawn_high();
    tt_store(&sc.go, 1);
  }
  EXPECT_OK(weft_task_join(b));
  for (int i = 0; i <= N; i++)
    EXPECT_OK(weft_task_join(sc.t[i]));

  for (int i = 0; i < N; i++)
    EXPECT_MSG(sc.high_ticket < sc.ticket[i],
               "spawned %s: the high-priority task ran as number %d, after "
               "normal task %d (number %d)",
               from_blocker == 2 ? "normal by a task, high by the main thread"
               : from_blocker    ? "by a task"
                                 : "by the main thread",
               sc.high_ticket, i, sc.ticket[i]);
  for (int i = 0; i < N; i++)
    EXPECT_EQ_INT(sc.stream_prio[i], info.priority_least);
  EXPECT_EQ_INT(sc.stream_prio[N], info.priority_greatest);
}

/* Priority also holds for GPU work: a high task's launch on its stream
 * completes and reports like any other. */
static void high_gpu(void *arg) {
  int *out = arg;
  int v = 5;
  void *args[] = {&out, &v};
  EXPECT_OK(weft_launch(&tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  EXPECT_OK(weft_sync());
  EXPECT_EQ_INT(*out, 5);
}

static int flag_set, flag_spins, flag_seen;

static void set_flag(void *arg) {
  (void)arg;
  tt_store(&flag_set, 1);
}

/* Yields until the flag is set, giving up after 10 s (a failure, not a
 * hang). */
static void yield_until_flag(void *arg) {
  (void)arg;
  int64_t deadline = tt_now_ns() + 10000000000LL;
  while (!tt_load(&flag_set) && tt_now_ns() < deadline) {
    tt_add(&flag_spins, 1);
    weft_yield();
  }
  tt_store(&flag_seen, tt_load(&flag_set));
}

static void spawn_pair(weft_task **high, weft_task **normal) {
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.priority = WEFT_PRIORITY_HIGH;
  EXPECT_OK(weft_task_spawn(rt, normal, set_flag, NULL, NULL));
  EXPECT_OK(weft_task_spawn(rt, high, yield_until_flag, NULL, &o));
}

static void pair_driver(void *arg) {
  (void)arg;
  weft_task *h, *n;
  spawn_pair(&h, &n);
  EXPECT_OK(weft_task_join(h));
  EXPECT_OK(weft_task_join(n));
}

static void high_yields_to_normal(int from_task) {
  tt_store(&flag_set, 0);
  tt_store(&flag_seen, 0);
  tt_store(&flag_spins, 0);
  if (from_task) {
    weft_task *d;
    EXPECT_OK(weft_task_spawn(rt, &d, pair_driver, NULL, NULL));
    EXPECT_OK(weft_task_join(d));
  } else {
    weft_task *h, *n;
    spawn_pair(&h, &n);
    EXPECT_OK(weft_task_join(h));
    EXPECT_OK(weft_task_join(n));
  }
  EXPECT_MSG(tt_load(&flag_seen),
             "spawned by %s: a high task yielded %d times in 10 s and the "
             "normal task never ran",
             from_task ? "a task" : "the main thread", tt_load(&flag_spins));
}

int main(void) {
  rt = tt_open_workers(1);
  EXPECT_OK(weft_device_get_info(rt, 0, &info));
  run(0);
  run(1);
  run(2);
  run(0);
  high_yields_to_normal(1);
  high_yields_to_normal(0);

  int *out;
  EXPECT_OK(weft_pinned_alloc(sizeof(int), (void **)&out));
  *out = 0;
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.priority = WEFT_PRIORITY_HIGH;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, high_gpu, out, &o));
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_pinned_free(out));
  tt_close(rt);
  puts("ok");
  return 0;
}
