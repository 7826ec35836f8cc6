/* weft_yield lets the other ready tasks run.
 *
 * On one worker, two tasks that only yield must strictly alternate. Tasks
 * that wait for each other by yielding must make progress however they were
 * spawned: from a task (onto the worker's own queue) or from the main
 * thread (the injection queue). Without fairness between a worker's own
 * queue and the tasks injected from threads, a yielding task is picked
 * again at once and the other never runs. The starvation checks run on
 * one worker, where they do not depend on timing: once every task has been
 * spawned, a task that yields a million times in a row without the other
 * making progress is starved, and the test fails rather than hangs. */
#include <stdio.h>
#include <string.h>

#include "task_common.h"

enum { ROUNDS = 50, MAX_YIELDS = 1000000 };

static weft_runtime *rt;
static int all_spawned; /* yields count towards starvation only after */

typedef struct pingpong {
  char log[2 * ROUNDS + 1];
  int pos;
  int turn; /* turn-taking variant: whose turn, 0 or 1 */
  int starved;
} pingpong;

typedef struct player {
  pingpong *pp;
  int me; /* 0 or 1 */
} player;

/* Logs its letter and yields, ROUNDS times. */
static void plain_player(void *arg) {
  player *p = arg;
  for (int k = 0; k < ROUNDS; k++) {
    p->pp->log[p->pp->pos++] = (char)('A' + p->me);
    weft_yield();
  }
}

/* Waits for its turn by yielding, logs, passes the turn on. */
static void turn_player(void *arg) {
  player *p = arg;
  for (int k = 0; k < ROUNDS; k++) {
    long spins = 0;
    while (tt_load(&p->pp->turn) != p->me) {
      if (tt_load(&all_spawned) && ++spins > MAX_YIELDS) {
        tt_store(&p->pp->starved, 1);
        tt_store(&p->pp->turn, !p->me); /* let the other one finish */
        return;
      }
      weft_yield();
    }
    p->pp->log[p->pp->pos++] = (char)('A' + p->me);
    tt_store(&p->pp->turn, !p->me);
  }
}

static void expect_alternating(const pingpong *pp, const char *what) {
  EXPECT_MSG(
      !pp->starved,
      "%s: a task yielded %d times and the other never ran (log so far: %.*s)",
      what, MAX_YIELDS, pp->pos, pp->log);
  EXPECT_EQ_INT(pp->pos, 2 * ROUNDS);
  for (int k = 0; k < 2 * ROUNDS; k++)
    EXPECT_MSG(pp->log[k] == 'A' + k % 2,
               "%s: interleaving %.*s is not ABAB...", what, 2 * ROUNDS,
               pp->log);
}

typedef struct duo {
  pingpong pp;
  player a, b;
  weft_task_fn fn;
} duo;

/* Spawns both players from inside a task: both go to this worker's own
 * queue, which runs the newest first, so b is spawned first and a runs
 * first, as from a plain thread. */
static void parent(void *arg) {
  duo *d = arg;
  weft_task *ta, *tb;
  EXPECT_OK(weft_task_spawn(rt, &tb, d->fn, &d->b, NULL));
  EXPECT_OK(weft_task_spawn(rt, &ta, d->fn, &d->a, NULL));
  tt_store(&all_spawned, 1);
  EXPECT_OK(weft_task_join(ta));
  EXPECT_OK(weft_task_join(tb));
}

/* Waits until t is done without joining it, then joins it: a plain thread
 * that joins a running task's tree runs its tasks too (the runtime's guest
 * slot), and the one worker would not be the only thread running them. */
static void join_when_done(weft_task *t) {
  int64_t give_up = tt_now_ns() + 60000000000LL;
  while (!tt_task_done(t)) {
    EXPECT_MSG(tt_now_ns() < give_up, "a task did not finish in 60 s");
    tt_sleep_ms(1);
  }
  EXPECT_OK(weft_task_join(t));
}

static void run_duo(weft_task_fn fn, int from_task, const char *what) {
  static duo d;
  memset(&d, 0, sizeof d);
  d.a = (player){&d.pp, 0};
  d.b = (player){&d.pp, 1};
  d.fn = fn;
  tt_store(&all_spawned, 0);
  if (from_task) {
    weft_task *t;
    EXPECT_OK(weft_task_spawn(rt, &t, parent, &d, NULL));
    join_when_done(t);
  } else {
    weft_task *ta, *tb;
    EXPECT_OK(weft_task_spawn(rt, &ta, fn, &d.a, NULL));
    EXPECT_OK(weft_task_spawn(rt, &tb, fn, &d.b, NULL));
    tt_store(&all_spawned, 1);
    EXPECT_OK(weft_task_join(ta));
    EXPECT_OK(weft_task_join(tb));
  }
  expect_alternating(&d.pp, what);
}

/* A task yields until a task spawned later, from the main thread, sets a
 * flag. */
typedef struct waiter {
  int flag;
  int running;
  int starved;
} waiter;

static void wait_for_flag(void *arg) {
  waiter *w = arg;
  tt_store(&w->running, 1);
  long spins = 0;
  while (!tt_load(&w->flag)) {
    if (tt_load(&all_spawned) && ++spins > MAX_YIELDS) {
      tt_store(&w->starved, 1);
      return;
    }
    weft_yield();
  }
}

static void set_flag(void *arg) { tt_store(&((waiter *)arg)->flag, 1); }

static void yield_until_later_task(void) {
  waiter w = {0};
  weft_task *a, *b;
  tt_store(&all_spawned, 0);
  EXPECT_OK(weft_task_spawn(rt, &a, wait_for_flag, &w, NULL));
  tt_wait_flag(&w.running, 10000, "the waiting task to start");
  EXPECT_OK(weft_task_spawn(rt, &b, set_flag, &w, NULL));
  tt_store(&all_spawned, 1);
  EXPECT_OK(weft_task_join(a));
  EXPECT_OK(weft_task_join(b));
  EXPECT_MSG(
      !w.starved,
      "a task yielded %d times while a task spawned from the main thread "
      "never ran",
      MAX_YIELDS);
}

/* Many tasks yielding many times all finish. */
static void yielder(void *arg) {
  for (int k = 0; k < 100; k++)
    weft_yield();
  tt_add(arg, 1);
}

static void many_yielders(void) {
  enum { N = 200 };
  weft_task *t[N];
  int done = 0;
  for (int i = 0; i < N; i++)
    EXPECT_OK(weft_task_spawn(rt, &t[i], yielder, &done, NULL));
  for (int i = 0; i < N; i++)
    EXPECT_OK(weft_task_join(t[i]));
  EXPECT_EQ_INT(done, N);
}

int main(void) {
  rt = tt_open_workers(1);
  weft_yield(); /* on a plain thread: returns at once */
  run_duo(plain_player, 1, "yield ping-pong of tasks spawned by a task");
  run_duo(turn_player, 1, "turn-taking of tasks spawned by a task");
  many_yielders();
  run_duo(turn_player, 0, "turn-taking of tasks spawned by the main thread");
  yield_until_later_task();
  tt_close(rt);

  rt = tt_open_workers(2);
  many_yielders();
  tt_close(rt);
  puts("ok");
  return 0;
}
