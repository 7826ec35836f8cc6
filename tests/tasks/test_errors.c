/* Errors through tasks and threads.
 *
 * - A launch of a kernel without an implementation for the backend fails
 *   with WEFT_ENOTSUP and weft_last_error_message() names the kernel; the
 *   error is the caller's: the next weft_sync and the task's join do not
 *   report it again. Failure details are per task and per thread.
 * - Plain threads issue GPU work on streams of their own.
 * - A task that returns with GPU work still queued is joined only once that
 *   work has finished. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "task_common.h"

static weft_runtime *rt;
static weft_kernel missing; /* set_value without this backend's version */

static void make_missing(void) {
  missing = tk.set_value;
  missing.name = "kernel_without_impl";
  if (weft_runtime_backend(rt) == WEFT_BACKEND_CUDA)
    missing.cuda = NULL;
  else
    missing.host = NULL;
}

static int names_kernel(const char *msg) {
  return strstr(msg, "kernel_without_impl") != NULL;
}

/* ---- ENOTSUP in a task ---- */

typedef struct notsup {
  int *out; /* pinned */
  int second_error;
  int fresh_msg_empty;
} notsup;

static void notsup_task(void *arg) {
  notsup *s = arg;
  s->fresh_msg_empty = weft_last_error_message()[0] == '\0';
  int v = 5;
  void *args[] = {&s->out, &v};
  EXPECT_ERR(weft_launch(&missing, WEFT_DIM1(1), WEFT_DIM1(1), 0, args),
             WEFT_ENOTSUP);
  EXPECT_MSG(names_kernel(weft_last_error_message()),
             "message does not name the kernel: '%s'",
             weft_last_error_message());
  /* Later work still runs; the handled error is not reported again. */
  EXPECT_OK(weft_launch(&tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  EXPECT_OK(weft_sync());
  EXPECT_EQ_INT(*s->out, 5);
  if (s->second_error) {
    EXPECT_ERR(weft_copy(NULL, s->out, sizeof(int)), WEFT_EINVAL);
    EXPECT(strstr(weft_last_error_message(), "NULL") != NULL);
    EXPECT_OK(weft_sync());
  }
}

static void notsup_in_tasks(void) {
  /* Enough tasks that task objects are recycled: a fresh task starts with
   * an empty message even when its object once held a failed task. */
  enum { N = 200 };
  static notsup s[N];
  weft_task *t[N];
  for (int i = 0; i < N; i++) {
    s[i] = (notsup){0};
    EXPECT_OK(weft_pinned_alloc(sizeof(int), (void **)&s[i].out));
    *s[i].out = 0;
    weft_task_opts o;
    weft_task_opts_init(&o);
    o.name = "failing-task";
    EXPECT_OK(weft_task_spawn(rt, &t[i], notsup_task, &s[i], &o));
    if (i % 2 == 0) /* join half at once so objects get reused */
      EXPECT_OK(weft_task_join(t[i]));
  }
  for (int i = 1; i < N; i += 2)
    EXPECT_OK(weft_task_join(t[i]));
  for (int i = 0; i < N; i++) {
    EXPECT_MSG(s[i].fresh_msg_empty, "task %d started with an error message",
               i);
    EXPECT_OK(weft_pinned_free(s[i].out));
  }
}

/* Errors a task handled (two, returned at once) do not fail its join. */
static void handled_errors_stay_handled(void) {
  notsup s = {.second_error = 1};
  EXPECT_OK(weft_pinned_alloc(sizeof(int), (void **)&s.out));
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, notsup_task, &s, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_pinned_free(s.out));
}

/* ---- plain threads ---- */

enum { THREADS = 4, TN = 5000 };

typedef struct thread_job {
  int id;
  int ok;
} thread_job;

static void axpb_roundtrip(int id) {
  size_t bytes = TN * sizeof(float);
  float *h, *d;
  EXPECT_OK(weft_pinned_alloc(bytes, (void **)&h));
  EXPECT_OK(weft_device_alloc(bytes, (void **)&d));
  for (int i = 0; i < TN; i++)
    h[i] = (float)(i % 100 - id);
  EXPECT_OK(weft_copy(d, h, bytes));
  for (int k = 0; k < 6; k++) {
    int n = TN;
    float a = k % 2 ? -1.0f : 2.0f, b = (float)(id + k);
    void *args[] = {&d, &n, &a, &b};
    EXPECT_OK(weft_launch(&tk.axpb,
                          WEFT_DIM1((TN + TEST_THREADS - 1) / TEST_THREADS),
                          WEFT_DIM1(TEST_THREADS), 0, args));
  }
  EXPECT_OK(weft_copy(h, d, bytes));
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_sync());
  for (int i = 0; i < TN; i++) {
    float x = (float)(i % 100 - id);
    for (int k = 0; k < 6; k++)
      x = x * (k % 2 ? -1.0f : 2.0f) + (float)(id + k);
    EXPECT_MSG(h[i] == x, "thread/task %d: h[%d] = %g, expected %g", id, i,
               (double)h[i], (double)x);
  }
  EXPECT_OK(weft_pinned_free(h));
}

static void *thread_main(void *arg) {
  thread_job *j = arg;
  EXPECT(weft_task_self() == NULL);
  EXPECT(weft_stream_current() != NULL);
  axpb_roundtrip(j->id);
  /* Errors on this thread are reported here, not elsewhere, and once. */
  int *out;
  EXPECT_OK(weft_pinned_alloc(sizeof(int), (void **)&out));
  void *args[] = {&out, &j->id};
  EXPECT_ERR(weft_launch(&missing, WEFT_DIM1(1), WEFT_DIM1(1), 0, args),
             WEFT_ENOTSUP);
  EXPECT(names_kernel(weft_last_error_message()));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_pinned_free(out));
  j->ok = 1;
  return NULL;
}

static void task_roundtrip(void *arg) { axpb_roundtrip(*(int *)arg); }

static void plain_threads(void) {
  pthread_t th[THREADS];
  thread_job jobs[THREADS];
  weft_task *t[THREADS];
  int ids[THREADS];
  char before[600];
  snprintf(before, sizeof before, "%s", weft_last_error_message());
  /* Fill the pinned cache first: a miss in one of the concurrent tasks
   * waits for the whole device (weft check says so), not this test's
   * subject. */
  float *warm[2 * THREADS + 1];
  for (int i = 0; i < 2 * THREADS + 1; i++)
    EXPECT_OK(weft_pinned_alloc(TN * sizeof(float), (void **)&warm[i]));
  for (int i = 0; i < 2 * THREADS + 1; i++)
    EXPECT_OK(weft_pinned_free(warm[i]));
  for (int i = 0; i < THREADS; i++) {
    jobs[i] = (thread_job){.id = i};
    ids[i] = 100 + i;
    EXPECT(pthread_create(&th[i], NULL, thread_main, &jobs[i]) == 0);
    EXPECT_OK(weft_task_spawn(rt, &t[i], task_roundtrip, &ids[i], NULL));
  }
  axpb_roundtrip(-1); /* the main thread too */
  for (int i = 0; i < THREADS; i++) {
    EXPECT(pthread_join(th[i], NULL) == 0);
    EXPECT(jobs[i].ok);
    EXPECT_OK(weft_task_join(t[i]));
  }
  EXPECT(strcmp(before, weft_last_error_message()) == 0);
  EXPECT_OK(weft_sync());
}

/* ---- a task returning with GPU work still queued ---- */

typedef struct leftover {
  tt_gate gate;
  int *d, *out;
  weft_task *t;
  int returned;
  int join_rc, seen_at_join, joined;
} leftover;

static leftover lo;

static void leave_work(void *arg) {
  tt_gate_launch(&lo.gate);
  int v = 42;
  void *set_args[] = {&lo.d, &v};
  EXPECT_OK(
      weft_launch(&tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, set_args));
  void *copy_args[] = {&lo.out, &lo.d};
  EXPECT_OK(
      weft_launch(&tk.copy_int, WEFT_DIM1(1), WEFT_DIM1(1), 0, copy_args));
  tt_store(&lo.returned, 1);
}

static void join_and_look(void) {
  lo.join_rc = weft_task_join(lo.t);
  lo.seen_at_join = tt_load(lo.out);
  tt_store(&lo.joined, 1);
}

static void *thread_joiner(void *arg) {
  join_and_look();
  return NULL;
}

static void task_joiner(void *arg) { join_and_look(); }

static void returns_with_work(int joiner_is_task) {
  lo.returned = lo.joined = 0;
  lo.join_rc = lo.seen_at_join = -99;
  *lo.out = -1;
  EXPECT_OK(weft_task_spawn(rt, &lo.t, leave_work, NULL, NULL));
  pthread_t th;
  weft_task *jt = NULL;
  if (joiner_is_task)
    EXPECT_OK(weft_task_spawn(rt, &jt, task_joiner, NULL, NULL));
  else
    EXPECT(pthread_create(&th, NULL, thread_joiner, NULL) == 0);
  tt_wait_flag(&lo.returned, 10000, "the task to return");
  tt_gate_wait_started(&lo.gate);
  tt_sleep_ms(20); /* gives a join that does not wait time to return */
  int joined = tt_load(&lo.joined);
  int seen = tt_load(lo.out);
  tt_gate_open(&lo.gate);
  EXPECT_MSG(!joined, "join returned while the task's GPU work was queued");
  EXPECT_EQ_INT(seen, -1);
  if (joiner_is_task)
    EXPECT_OK(weft_task_join(jt));
  else {
    EXPECT(pthread_join(th, NULL) == 0);
    /* weft does not see pthread_join: without this, the next round's
     * task (spawned from here) writing the same memory would be a race to
     * weft check, whatever stream it gets. */
    EXPECT_OK(weft_device_sync());
  }
  EXPECT_OK(lo.join_rc);
  EXPECT_MSG(lo.seen_at_join == 42,
             "right after join the task's output was %d, not 42",
             lo.seen_at_join);
}

/* Without a gate: a long chain, no sync, checked right after join. */
static float *chain_out;
enum { CN = 1 << 17, CSTEPS = 40 };

static void long_chain(void *arg) {
  float *d;
  EXPECT_OK(weft_device_alloc(CN * sizeof(float), (void **)&d));
  EXPECT_OK(weft_memset(d, 0, CN * sizeof(float)));
  for (int k = 0; k < CSTEPS; k++) {
    int n = CN;
    float a = -1.0f, b = (float)k;
    void *args[] = {&d, &n, &a, &b};
    EXPECT_OK(weft_launch(&tk.axpb, WEFT_DIM1(CN / TEST_THREADS),
                          WEFT_DIM1(TEST_THREADS), 0, args));
  }
  EXPECT_OK(weft_copy(chain_out, d, CN * sizeof(float)));
  EXPECT_OK(weft_device_free(d));
}

static void chain_then_join(void) {
  EXPECT_OK(weft_pinned_alloc(CN * sizeof(float), (void **)&chain_out));
  for (int i = 0; i < CN; i++)
    chain_out[i] = 1e30f;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, long_chain, NULL, NULL));
  EXPECT_OK(weft_task_join(t));
  float x = 0.0f;
  for (int k = 0; k < CSTEPS; k++)
    x = -x + (float)k;
  for (int i = 0; i < CN; i++)
    EXPECT_MSG(chain_out[i] == x, "out[%d] = %g right after join, expected %g",
               i, (double)chain_out[i], (double)x);
  EXPECT_OK(weft_pinned_free(chain_out));
}

/* A copy from device memory freed (and synced) before, to pinned and to
 * pageable memory, is refused, saying so: on CUDA the pageable copy once
 * reached the staging memcpy and died there (issue 37). */
static void copy_from_freed(void *arg) {
  (void)arg;
  char *d, *pin, page[64];
  EXPECT_OK(weft_device_alloc(4096, (void **)&d));
  EXPECT_OK(weft_pinned_alloc(64, (void **)&pin));
  EXPECT_OK(weft_memset(d, 7, 4096));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_sync());
  EXPECT_ERR(weft_copy(pin, d + 100, 64), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "freed before") != NULL);
  EXPECT_ERR(weft_copy(page, d, 64), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "freed before") != NULL);
  EXPECT_ERR(weft_copy(d + 8, page, 64), WEFT_EINVAL);
  EXPECT_OK(weft_sync()); /* the refusals failed nothing */
  EXPECT_OK(weft_pinned_free(pin));
}

int main(void) {
  rt = tt_open_workers(2);
  weft_task *t0;
  EXPECT_OK(weft_task_spawn(rt, &t0, copy_from_freed, NULL, NULL));
  EXPECT_OK(weft_task_join(t0));
  make_missing();
  notsup_in_tasks();
  plain_threads();

  tt_gate_init(&lo.gate);
  EXPECT_OK(weft_pinned_alloc(sizeof(int), (void **)&lo.out));
  EXPECT_OK(weft_device_alloc(sizeof(int), (void **)&lo.d));
  EXPECT_OK(weft_sync());
  returns_with_work(0);
  returns_with_work(1);
  EXPECT_OK(weft_device_free(lo.d));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_pinned_free(lo.out));
  tt_gate_fini(&lo.gate);
  chain_then_join();

  handled_errors_stay_handled();
  tt_close(rt);
  puts("ok");
  return 0;
}
