/* Spawn, join and detach: results of many tasks, the handle rules (join or
 * detach exactly once), a task joining itself, task options, nested spawns
 * joined inside tasks (on one worker too, where a join that blocked its
 * thread would deadlock), and plain threads joining tasks concurrently. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "task_common.h"

static weft_runtime *rt;

/* ---- many results ---- */

typedef struct job {
  int i;
  long long out;
  weft_task *handle;
  int self_ok;
  char name[40];
} job;

static void square(void *arg) {
  job *j = arg;
  j->self_ok = weft_task_self() == j->handle;
  snprintf(j->name, sizeof j->name, "%s", weft_task_name(weft_task_self()));
  long long s = 0;
  for (int k = 0; k <= j->i; k++)
    s += (long long)k * k;
  j->out = s;
}

static void many_results(void) {
  enum { N = 1000 };
  static job jobs[N];
  for (int i = 0; i < N; i++) {
    jobs[i] = (job){.i = i, .out = -1};
    weft_task_opts o;
    weft_task_opts_init(&o);
    char name[48];
    snprintf(name, sizeof name, "square-%d", i);
    o.name = i % 2 ? name : NULL;
    EXPECT_OK(weft_task_spawn(rt, &jobs[i].handle, square, &jobs[i], &o));
  }
  for (int i = 0; i < N; i++)
    EXPECT_OK(weft_task_join(jobs[i].handle));
  for (int i = 0; i < N; i++) {
    long long s = 0;
    for (int k = 0; k <= i; k++)
      s += (long long)k * k;
    EXPECT_MSG(jobs[i].out == s, "task %d returned %lld, expected %lld", i,
               jobs[i].out, s);
    EXPECT_MSG(jobs[i].self_ok, "task %d: weft_task_self is not its handle", i);
    if (i % 2) {
      char want[48];
      snprintf(want, sizeof want, "square-%d", i);
      EXPECT_MSG(strcmp(jobs[i].name, want) == 0, "task %d named '%s'", i,
                 jobs[i].name);
    } else {
      EXPECT_MSG(jobs[i].name[0] != '\0', "task %d has no default name", i);
    }
  }
}

/* ---- options ---- */

static void nothing(void *arg) {}

static void long_name(void *arg) {
  const char *n = weft_task_name(weft_task_self());
  EXPECT_EQ_INT(strlen(n), 31);
  EXPECT(strncmp(n, "abcdefghijklmnopqrstuvwxyz0123456789", 31) == 0);
}

static void spawn_options(void) {
  weft_task *const sentinel = (weft_task *)(uintptr_t)0x5eed;
  weft_task *t = sentinel;
  weft_task_opts o;
  weft_task_opts_init(&o);
  EXPECT_EQ_INT(o.struct_size, sizeof o);
  EXPECT_EQ_INT(o.priority, WEFT_PRIORITY_NORMAL);
  EXPECT_EQ_INT(o.device, WEFT_DEVICE_INHERIT);

  EXPECT_ERR(weft_task_spawn(NULL, &t, nothing, NULL, NULL), WEFT_EINVAL);
  EXPECT_ERR(weft_task_spawn(rt, &t, NULL, NULL, NULL), WEFT_EINVAL);
  o.struct_size = 0;
  EXPECT_ERR(weft_task_spawn(rt, &t, nothing, NULL, &o), WEFT_EINVAL);
  weft_task_opts_init(&o);
  o.priority = (weft_priority)7;
  EXPECT_ERR(weft_task_spawn(rt, &t, nothing, NULL, &o), WEFT_EINVAL);
  weft_task_opts_init(&o);
  o.device = 1000;
  EXPECT_ERR(weft_task_spawn(rt, &t, nothing, NULL, &o), WEFT_ENODEV);
  o.device = -3; /* neither an ordinal nor WEFT_DEVICE_INHERIT/ANY */
  EXPECT_ERR(weft_task_spawn(rt, &t, nothing, NULL, &o), WEFT_ENODEV);
  EXPECT(t == sentinel);

  weft_task_opts_init(&o);
  o.name = "abcdefghijklmnopqrstuvwxyz0123456789";
  EXPECT_OK(weft_task_spawn(rt, &t, long_name, NULL, &o));
  EXPECT_OK(weft_task_join(t));
}

/* ---- handle rules ---- */

typedef struct held {
  int release;
  int ended;
} held;

static void hold(void *arg) {
  held *h = arg;
  while (!tt_load(&h->release))
    weft_yield();
  tt_store(&h->ended, 1);
}

static void join_self(void *arg) {
  int *rc = arg;
  *rc = weft_task_join(weft_task_self());
}

static void handle_rules(void) {
  EXPECT_ERR(weft_task_join(NULL), WEFT_EINVAL);
  EXPECT_ERR(weft_task_detach(NULL), WEFT_EINVAL);

  /* Join twice. */
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, nothing, NULL, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT_ERR(weft_task_join(t), WEFT_EHANDLE);
  EXPECT_ERR(weft_task_detach(t), WEFT_EHANDLE);

  /* Detach a running task, then join or detach it again. */
  held h = {0};
  EXPECT_OK(weft_task_spawn(rt, &t, hold, &h, NULL));
  EXPECT_OK(weft_task_detach(t));
  EXPECT_ERR(weft_task_join(t), WEFT_EHANDLE);
  EXPECT_ERR(weft_task_detach(t), WEFT_EHANDLE);
  tt_store(&h.release, 1);
  tt_wait_flag(&h.ended, 10000, "the detached task to end");

  /* Detach a task that already completed (it frees itself at once). */
  EXPECT_OK(weft_task_spawn(rt, &t, nothing, NULL, NULL));
  int64_t deadline = tt_now_ns() + 10000000000LL;
  while (!tt_task_done(t)) {
    EXPECT_MSG(tt_now_ns() < deadline, "a trivial task did not complete");
    tt_sleep_ms(1);
  }
  EXPECT_OK(weft_task_detach(t));
  EXPECT_ERR(weft_task_join(t), WEFT_EHANDLE);

  /* A task joining itself is refused; the task is unaffected. */
  int rc = 0;
  EXPECT_OK(weft_task_spawn(rt, &t, join_self, &rc, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT_ERR(rc, WEFT_ESTATE);
}

/* ---- nested spawns ---- */

enum { FANOUT = 4, DEPTH = 4 };

typedef struct node {
  int depth;
  long long count; /* nodes in this subtree */
  long long sum;   /* sum of the leaf values */
  int value;
} node;

static void tree(void *arg) {
  node *n = arg;
  n->count = 1;
  n->sum = n->value;
  if (n->depth == 0)
    return;
  node kids[FANOUT];
  weft_task *kt[FANOUT];
  for (int k = 0; k < FANOUT; k++) {
    kids[k] = (node){.depth = n->depth - 1, .value = n->value * FANOUT + k};
    EXPECT_OK(weft_task_spawn(rt, &kt[k], tree, &kids[k], NULL));
  }
  weft_yield();
  for (int k = 0; k < FANOUT; k++) {
    EXPECT_OK(weft_task_join(kt[k]));
    n->count += kids[k].count;
    n->sum += kids[k].sum;
  }
}

static void nested(void) {
  node root = {.depth = DEPTH, .value = 1};
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, tree, &root, NULL));
  EXPECT_OK(weft_task_join(t));
  /* The same tree computed directly. */
  long long count = 0, sum = 0;
  long long first = 1, width = 1;
  for (int d = 0; d <= DEPTH; d++) {
    count += width;
    for (long long v = first; v < first + width; v++)
      sum += v;
    first *= FANOUT;
    width *= FANOUT;
  }
  EXPECT_EQ_INT(root.count, count);
  EXPECT_EQ_INT(root.sum, sum);
}

/* ---- plain threads joining ---- */

enum { JOINERS = 8 };

typedef struct joinee {
  weft_task *t;
  int idx;
  int release;
  int ready; /* the joiner is about to join */
  int value;
  int rc, seen;
} joinee;

static void produce(void *arg) {
  joinee *j = arg;
  while (!tt_load(&j->release))
    weft_yield();
  for (int k = 0; k < 10; k++)
    weft_yield();
  j->value = 7000 + j->idx;
}

static void produce_now(void *arg) {
  joinee *j = arg;
  j->value = 42;
}

static void *joiner(void *arg) {
  joinee *j = arg;
  tt_store(&j->ready, 1);
  j->rc = weft_task_join(j->t);
  j->seen = j->value;
  return NULL;
}

static void thread_joins(void) {
  static joinee js[JOINERS + 1];
  pthread_t th[JOINERS + 1];
  memset(js, 0, sizeof js);
  for (int i = 0; i <= JOINERS; i++)
    js[i].idx = i;
  for (int i = 0; i < JOINERS; i++)
    EXPECT_OK(weft_task_spawn(rt, &js[i].t, produce, &js[i], NULL));
  /* One more whose task completed before its joiner starts. */
  EXPECT_OK(
      weft_task_spawn(rt, &js[JOINERS].t, produce_now, &js[JOINERS], NULL));
  for (int i = 0; i <= JOINERS; i++)
    EXPECT(pthread_create(&th[i], NULL, joiner, &js[i]) == 0);
  for (int i = 0; i <= JOINERS; i++)
    tt_wait_flag(&js[i].ready, 10000, "a joiner thread to start");
  for (int i = 0; i < JOINERS; i++)
    tt_store(&js[i].release, 1);
  for (int i = 0; i <= JOINERS; i++) {
    EXPECT(pthread_join(th[i], NULL) == 0);
    EXPECT_OK(js[i].rc);
  }
  for (int i = 0; i < JOINERS; i++)
    EXPECT_EQ_INT(js[i].seen, 7000 + i);
  EXPECT_EQ_INT(js[JOINERS].seen, 42);
}

/* A handle kept past its task's join stays dead after the task's memory is
 * reused for a new task: joining it again is WEFT_EHANDLE, never a join of
 * the newcomer (whose owner would then get EHANDLE). */
static void stale_handles(void) {
  /* A runtime of its own, so that its pool of task objects starts empty. */
  weft_runtime *r = tt_open_workers(1);
  weft_task *old, *t;
  EXPECT_OK(weft_task_spawn(r, &old, nothing, NULL, NULL));
  EXPECT_OK(weft_task_join(old));
  /* 64 more freed tasks fill the pool's quarantine: the next spawn reuses
   * the memory old named (a fresh object each time until then). */
  for (int i = 0; i < 64; i++) {
    EXPECT_OK(weft_task_spawn(r, &t, nothing, NULL, NULL));
    EXPECT_OK(weft_task_join(t));
  }
  weft_task *fresh;
  EXPECT_OK(weft_task_spawn(r, &fresh, nothing, NULL, NULL));
  EXPECT_ERR(weft_task_join(old), WEFT_EHANDLE);
  EXPECT_ERR(weft_task_detach(old), WEFT_EHANDLE);
  EXPECT(strcmp(weft_task_name(old), "") == 0);
  EXPECT_OK(weft_task_join(fresh)); /* its owner's join is intact */
  tt_close(r);
}

int main(void) {
  /* One worker first: every join inside a task must suspend it. */
  for (int workers = 1; workers <= 4; workers *= 4) {
    rt = tt_open_workers(workers);
    many_results();
    spawn_options();
    handle_rules();
    nested();
    thread_joins();
    tt_close(rt);
  }
  stale_handles();
  puts("ok");
  return 0;
}
