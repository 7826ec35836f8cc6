/* A plain thread that joins a task runs that task itself while it waits
 * (the runtime's guest slot, sched.c), with what that task spawns.
 *
 * - With the one worker held by a task that computes until the joined task
 *   has run, the joined task can only run on the joining thread: without
 *   the guest it would wait for the holder to give up (2 s), on the worker.
 * - What the joined task spawns runs (on the joiner or a worker that steals
 *   it), and what it waits for on the GPU the joiner polls for; the
 *   results are exact.
 * - A task that yields on the joining thread goes to the workers, and the
 *   join still returns.
 * - Several plain threads join at once (one holds the guest slot, the
 *   others watch and sleep): every join returns its own task's result. */
#include <pthread.h>
#include <string.h>

#include "task_common.h"

static weft_runtime *rt;

/* Long enough for the slowest machine (sanitizers on 2 loaded cores); a
 * passing run releases the holder at once. */
enum { HOLD_MS = 30000 };

typedef struct hold {
  int started;
  int released; /* set by the joined task */
  int gave_up;
} hold;

/* Takes the worker without yielding until released (or HOLD_MS). */
static void holder(void *arg) {
  hold *h = arg;
  tt_store(&h->started, 1);
  int64_t end = tt_now_ns() + HOLD_MS * 1000000LL;
  while (!tt_load(&h->released))
    if (tt_now_ns() > end) {
      tt_store(&h->gave_up, 1);
      return;
    }
}

typedef struct joined {
  hold *h;
  pthread_t ran_on;
  pthread_t child_ran_on;
  int child_set;
  int *dev; /* GPU words to fill, or NULL */
  int sum;
} joined;

static void child(void *arg) {
  joined *j = arg;
  j->child_ran_on = pthread_self();
  j->child_set = 1;
}

static void joined_task(void *arg) {
  joined *j = arg;
  j->ran_on = pthread_self();
  if (j->h)
    tt_store(&j->h->released, 1);
  weft_task *c;
  EXPECT_OK(weft_task_spawn(rt, &c, child, j, NULL));
  EXPECT_OK(weft_task_join(c));
  if (j->dev) {
    /* GPU waits on the joining thread: each sync suspends the task. */
    int host[4];
    for (int round = 0; round < 8; round++) {
      EXPECT_OK(weft_memset(j->dev, round, 4 * sizeof(int)));
      EXPECT_OK(weft_copy(host, j->dev, sizeof host));
      EXPECT_OK(weft_sync());
      int want;
      memset(&want, round, sizeof want);
      for (int i = 0; i < 4; i++)
        EXPECT_EQ_INT(host[i], want);
    }
  }
  j->sum = 42;
}

static void runs_on_joiner(void) {
  static hold h;
  memset(&h, 0, sizeof h);
  weft_task *ht, *jt;
  EXPECT_OK(weft_task_spawn(rt, &ht, holder, &h, NULL));
  /* The holder has the worker before the joined task is spawned. */
  tt_wait_flag(&h.started, 5000, "the holder to start");
  static joined j;
  memset(&j, 0, sizeof j);
  j.h = &h;
  EXPECT_OK(weft_task_spawn(rt, &jt, joined_task, &j, NULL));
  EXPECT_OK(weft_task_join(jt));
  EXPECT_OK(weft_task_join(ht));
  EXPECT_MSG(!tt_load(&h.gave_up),
             "the joined task did not run while the worker was held: the "
             "joining thread did not run it");
  EXPECT_MSG(pthread_equal(j.ran_on, pthread_self()),
             "the joined task ran on another thread than its joiner");
  EXPECT_MSG(j.child_set, "the joined task's child did not run");
  EXPECT_EQ_INT(j.sum, 42);
}

static void gpu_waits(void) {
  int *dev;
  EXPECT_OK(weft_device_alloc(4 * sizeof *dev, (void **)&dev));
  EXPECT_OK(weft_sync());
  for (int k = 0; k < 20; k++) {
    joined j = {.dev = dev};
    weft_task *t;
    EXPECT_OK(weft_task_spawn(rt, &t, joined_task, &j, NULL));
    EXPECT_OK(weft_task_join(t));
    EXPECT_EQ_INT(j.sum, 42);
  }
  EXPECT_OK(weft_device_free(dev));
  EXPECT_OK(weft_sync());
}

static void yielder(void *arg) {
  int *n = arg;
  for (int i = 0; i < 100; i++) {
    tt_add(n, 1);
    weft_yield();
  }
}

static void yields(void) {
  int n = 0;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, yielder, &n, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT_EQ_INT(tt_load(&n), 100);
}

enum { THREADS = 4 };

typedef struct joiner_arg {
  int id, rounds, bad;
} joiner_arg;

static void square(void *arg) {
  int *v = arg;
  if (*v % 3 == 0)
    weft_yield();
  *v = *v * *v;
}

static void *joiner_thread(void *arg) {
  joiner_arg *a = arg;
  for (int i = 0; i < a->rounds; i++) {
    int v = a->id * 1000 + i;
    weft_task *t;
    if (weft_task_spawn(rt, &t, square, &v, NULL) || weft_task_join(t) ||
        v != (a->id * 1000 + i) * (a->id * 1000 + i))
      a->bad++;
  }
  return NULL;
}

static void many_joiners(void) {
  pthread_t th[THREADS];
  joiner_arg a[THREADS];
  int rounds = tt_quick() ? 200 : 2000;
  for (int i = 0; i < THREADS; i++) {
    a[i] = (joiner_arg){i + 1, rounds, 0};
    EXPECT(pthread_create(&th[i], NULL, joiner_thread, &a[i]) == 0);
  }
  for (int i = 0; i < THREADS; i++) {
    EXPECT(pthread_join(th[i], NULL) == 0);
    EXPECT_MSG(a[i].bad == 0, "thread %d: %d of %d joins wrong", i, a[i].bad,
               rounds);
  }
}

int main(void) {
  rt = tt_open_workers(1);
  runs_on_joiner();
  gpu_waits();
  yields();
  many_joiners();
  tt_close(rt);
  rt = tt_open_workers(0);
  gpu_waits();
  many_joiners();
  tt_close(rt);
  return 0;
}
