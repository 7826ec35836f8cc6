/* User ranges (weft/range.h): push and pop, per task and per thread.
 *
 * - Errors: a NULL name is WEFT_EINVAL; a pop with nothing open, and any
 *   call with no runtime open, WEFT_ESTATE.
 * - Each task has a stack of its own, which travels with it: two tasks
 *   taking turns on one worker never see each other's ranges, and a task
 *   that yields until it resumes on another worker pops what it pushed.
 * - A plain thread's stack is its own, apart from its tasks' and other
 *   threads'.
 * - A task that returns with ranges open has them closed, said on stderr,
 *   and its join still succeeds; a plain thread's are closed when it
 *   exits, or by weft_shutdown, said on stderr too. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "task_common.h"

/* ---- stderr, captured into a file for the checks on what is said ---- */

static int saved_err = -1;
static FILE *captured;

static void capture_begin(void) {
  fflush(stderr);
  captured = tmpfile();
  EXPECT(captured != NULL);
  saved_err = dup(2);
  EXPECT(saved_err >= 0 && dup2(fileno(captured), 2) >= 0);
}

/* Ends the capture and returns what was written (static buffer). */
static const char *capture_end(void) {
  static char text[4096];
  fflush(stderr);
  EXPECT(dup2(saved_err, 2) >= 0);
  close(saved_err);
  rewind(captured);
  size_t n = fread(text, 1, sizeof text - 1, captured);
  text[n] = '\0';
  fclose(captured);
  return text;
}

/* ---- two tasks taking turns on one worker ---- */

typedef struct turns {
  int turn; /* 0: a's, 1: b's */
} turns;

static void wait_turn(turns *s, int me) {
  while (tt_load(&s->turn) != me)
    weft_yield();
}

static void task_a(void *arg) {
  turns *s = arg;
  EXPECT_OK(weft_range_push("a outer"));
  EXPECT_OK(weft_range_push("a inner"));
  tt_store(&s->turn, 1);
  wait_turn(s, 0); /* b ran meanwhile, on this worker */
  EXPECT_OK(weft_range_pop());
  EXPECT_OK(weft_range_pop());
  EXPECT_ERR(weft_range_pop(), WEFT_ESTATE); /* b's is not a's */
  tt_store(&s->turn, 1);
}

static void task_b(void *arg) {
  turns *s = arg;
  wait_turn(s, 1);
  /* a has two open on this very worker thread: none is b's. */
  EXPECT_ERR(weft_range_pop(), WEFT_ESTATE);
  EXPECT_OK(weft_range_push("b"));
  tt_store(&s->turn, 0);
  wait_turn(s, 1);
  EXPECT_OK(weft_range_pop());
  EXPECT_ERR(weft_range_pop(), WEFT_ESTATE);
}

static void test_turns(void) {
  weft_runtime *rt = tt_open_workers(1);
  turns s = {0};
  weft_task *a, *b;
  EXPECT_OK(weft_task_spawn(rt, &a, task_a, &s, NULL));
  EXPECT_OK(weft_task_spawn(rt, &b, task_b, &s, NULL));
  EXPECT_OK(weft_task_join(a));
  EXPECT_OK(weft_task_join(b));
  tt_close(rt);
}

/* ---- a task moving between workers ---- */

/* pthread_self is declared const, so a compiler may reuse its first value
 * in a function; a fiber that resumed on another thread must ask again. */
static pthread_t (*volatile thread_self)(void) = pthread_self;

typedef struct hold {
  tt_gate gate;
  int moved;
} hold;

/* Holds its worker thread without yielding, opening the gate the mover
 * waits on after 5 ms, so that another worker polls the mover's wait and
 * resumes it; lets go once the mover has moved (or after 100 ms). */
static void hog(void *arg) {
  hold *h = arg;
  int64_t t0 = tt_now_ns();
  while (tt_now_ns() < t0 + 5 * 1000000LL)
    ;
  tt_gate_open(&h->gate);
  while (!tt_load(&h->moved) && tt_now_ns() < t0 + 100 * 1000000LL)
    ;
}

/* Waits for the GPU with a hog queued on its own worker, until it resumes
 * on another worker thread (or gives up); 1 if it moved. */
static int move_worker(void) {
  pthread_t here = thread_self();
  hold h = {0};
  tt_gate_init(&h.gate);
  for (int i = 0; i < 20 && pthread_equal(here, thread_self()); i++) {
    weft_task *t;
    tt_gate_launch(&h.gate);
    EXPECT_OK(weft_task_spawn(weft_runtime_current(), &t, hog, &h, NULL));
    EXPECT_OK(weft_sync());
    tt_store(&h.moved, !pthread_equal(here, thread_self()));
    EXPECT_OK(weft_task_join(t));
  }
  tt_gate_fini(&h.gate);
  return !pthread_equal(here, thread_self());
}

static void mover_task(void *arg) {
  int *moved = arg;
  EXPECT_OK(weft_range_push("moving outer"));
  *moved = move_worker();
  EXPECT_OK(weft_range_push("moving inner"));
  *moved += move_worker();
  EXPECT_OK(weft_range_pop());
  EXPECT_OK(weft_range_pop());
  EXPECT_ERR(weft_range_pop(), WEFT_ESTATE);
}

static void test_moving(void) {
  weft_runtime *rt = tt_open_workers(2);
  int moved = 0;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, mover_task, &moved, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT_MSG(moved == 2,
             "the task moved %d times of 2: the test proves "
             "nothing",
             moved);
  tt_close(rt);
}

/* ---- plain threads ---- */

typedef struct thread_arg {
  int rc_first_pop, rc_push, rc_pop, rc_pop_again;
} thread_arg;

static void *plain_thread(void *p) {
  thread_arg *a = p;
  a->rc_first_pop = weft_range_pop(); /* main's is not this thread's */
  a->rc_push = weft_range_push("thread");
  a->rc_pop = weft_range_pop();
  a->rc_pop_again = weft_range_pop();
  return NULL;
}

static void pop_in_task(void *arg) {
  *(int *)arg = weft_range_pop(); /* the spawning thread's is not its */
}

static void test_threads(void) {
  weft_runtime *rt = tt_open(NULL);
  EXPECT_OK(weft_range_push("main"));
  thread_arg a;
  pthread_t th;
  EXPECT_EQ_INT(pthread_create(&th, NULL, plain_thread, &a), 0);
  EXPECT_EQ_INT(pthread_join(th, NULL), 0);
  EXPECT_EQ_INT(a.rc_first_pop, WEFT_ESTATE);
  EXPECT_EQ_INT(a.rc_push, 0);
  EXPECT_EQ_INT(a.rc_pop, 0);
  EXPECT_EQ_INT(a.rc_pop_again, WEFT_ESTATE);
  int task_rc = 1;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, pop_in_task, &task_rc, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT_EQ_INT(task_rc, WEFT_ESTATE);
  EXPECT_OK(weft_range_pop()); /* main's, still open */
  EXPECT_ERR(weft_range_pop(), WEFT_ESTATE);
  tt_close(rt);
}

/* ---- errors, names ---- */

static void long_names(void *arg) {
  (void)arg;
  char name[300];
  memset(name, 'x', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  EXPECT_OK(weft_range_push(name)); /* kept cut to WEFT_RANGE_NAME_MAX */
  EXPECT_OK(weft_range_push(""));
  EXPECT_OK(weft_range_pop());
  EXPECT_OK(weft_range_pop());
}

static void deep_task(void *arg) {
  (void)arg;
  for (int i = 0; i < 1000; i++) { /* the stack grows */
    char name[32];
    snprintf(name, sizeof name, "level %d", i);
    EXPECT_OK(weft_range_push(name));
    if (i % 100 == 0)
      weft_yield();
  }
  for (int i = 0; i < 1000; i++)
    EXPECT_OK(weft_range_pop());
  EXPECT_ERR(weft_range_pop(), WEFT_ESTATE);
}

static void test_errors(void) {
  /* No runtime open: nothing to hold the stack. */
  EXPECT_ERR(weft_range_push("none"), WEFT_ESTATE);
  EXPECT_ERR(weft_range_pop(), WEFT_ESTATE);
  weft_runtime *rt = tt_open(NULL);
  EXPECT_ERR(weft_range_push(NULL), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "NULL") != NULL);
  EXPECT_ERR(weft_range_pop(), WEFT_ESTATE); /* the NULL push left none */
  EXPECT(strstr(weft_last_error_message(), "no range") != NULL);
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, long_names, NULL, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_task_spawn(rt, &t, deep_task, NULL, NULL));
  EXPECT_OK(weft_task_join(t));
  tt_close(rt);
}

/* ---- ranges left open ---- */

static void leaky(void *arg) {
  (void)arg;
  EXPECT_OK(weft_range_push("kept"));
  EXPECT_OK(weft_range_push("left open"));
  weft_yield();
}

static void clean(void *arg) {
  *(int *)arg = weft_range_pop(); /* a fresh task object: nothing open */
}

static void *leaves_open(void *arg) {
  (void)arg;
  EXPECT_OK(weft_range_push("thread left open"));
  return NULL;
}

static void test_left_open(void) {
  weft_runtime *rt = tt_open_workers(1);
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.name = "leaky";
  weft_task *t;
  capture_begin();
  EXPECT_OK(weft_task_spawn(rt, &t, leaky, NULL, &o));
  int join_rc = weft_task_join(t);
  const char *said = capture_end();
  EXPECT_OK(join_rc);
  EXPECT_MSG(strstr(said, "task 'leaky' returned with 2 ranges open") &&
                 strstr(said, "'left open'"),
             "stderr said: '%s'", said);
  /* Task objects are recycled: the next ones start with nothing open. */
  for (int i = 0; i < 50; i++) {
    int rc = 1;
    EXPECT_OK(weft_task_spawn(rt, &t, clean, &rc, NULL));
    EXPECT_OK(weft_task_join(t));
    EXPECT_EQ_INT(rc, WEFT_ESTATE);
  }
  /* A plain thread that exits with one open: closed at its exit. */
  pthread_t th;
  capture_begin();
  EXPECT_EQ_INT(pthread_create(&th, NULL, leaves_open, NULL), 0);
  EXPECT_EQ_INT(pthread_join(th, NULL), 0);
  said = capture_end();
  EXPECT_MSG(strstr(said, "a thread exited with 1 range open") &&
                 strstr(said, "'thread left open'"),
             "stderr said: '%s'", said);
  /* A plain thread's still open at the shutdown: closed by it. */
  EXPECT_OK(weft_range_push("main left open"));
  capture_begin();
  tt_close(rt);
  said = capture_end();
  EXPECT_MSG(strstr(said, "weft_shutdown with 1 range open") &&
                 strstr(said, "'main left open'"),
             "stderr said: '%s'", said);
  /* The context died with the runtime: nothing is open in the next. */
  rt = tt_open(NULL);
  EXPECT_ERR(weft_range_pop(), WEFT_ESTATE);
  tt_close(rt);
}

int main(void) {
  test_errors();
  test_turns();
  test_moving();
  test_threads();
  test_left_open();
  printf("ok\n");
  return 0;
}
