/* A get of registered data whose instance's fill is still queued (behind
 * a spinning kernel on the filler's stream, host backend) makes its
 * task's stream wait for that fill, a wait weft's trace records, and
 * reads the filled data; a get after a fill that completed reads it too.
 * Every such get waits (docs/decisions/data.md, "A get's wait for its
 * fill"). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conformance/kernels.h"
#include "expect.h"
#include "model.h"
#include "traced_host.h"
#include "weft.h"

enum { N = 4096 };

static test_kernels tk;
/* Pinned: the spinning kernel reads gate[0] and writes its state to
 * gate[1]. */
static int *gate;
static atomic_int got; /* the held filler's get has returned */

typedef struct job {
  weft_data *d;
  float *back; /* pinned: the instance copied back */
  float sum;   /* of what the get's instance held */
} job;

/* Gets d's instance for reading and copies it back to sum it. */
static void reader(void *arg) {
  job *j = arg;
  float *p;
  EXPECT_OK(weft_data_get(j->d, WEFT_READ, (void **)&p));
  EXPECT_OK(weft_copy(j->back, p, N * sizeof(float)));
  EXPECT_OK(weft_sync());
  j->sum = 0;
  for (int i = 0; i < N; i++)
    j->sum += j->back[i];
}

/* Fills d's instance behind a kernel spinning until the gate opens, and
 * returns with the fill still queued. */
static void held_filler(void *arg) {
  job *j = arg;
  long long timeout = 10LL * 1000 * 1000 * 1000;
  int *state = gate + 1;
  void *args[] = {&gate, &state, &timeout};
  EXPECT_OK(weft_launch(&tk.spin_until, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  void *p;
  EXPECT_OK(weft_data_get(j->d, WEFT_READ, &p));
  atomic_store(&got, 1);
}

/* fn(j) as a task declaring what it touches (weft check runs this test
 * too): j's handle read, and its copy back written or the gate. */
static weft_task *spawn_reading(weft_runtime *rt, weft_task_fn fn, job *j) {
  weft_access a[2] = {weft_data_access(j->d, WEFT_READ),
                      {j->back, N * sizeof(float), WEFT_WRITE}};
  if (fn == held_filler)
    a[1] = (weft_access){gate, 2 * sizeof(int), WEFT_RW};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.accesses = a;
  o.naccesses = 2;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, fn, j, &o));
  return t;
}

int main(void) {
  char path[] = "/tmp/weft-data-waits-XXXXXX";
  traced_temp(path);
  weft_runtime *rt = traced_host_open(path, 2);
  test_kernels_init(&tk);
  EXPECT_OK(weft_pinned_alloc(2 * sizeof *gate, (void **)&gate));
  gate[0] = 0;
  gate[1] = TEST_SPIN_IDLE;
  float *back[3];
  for (int i = 0; i < 3; i++)
    EXPECT_OK(weft_pinned_alloc(N * sizeof(float), (void **)&back[i]));
  float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
  EXPECT(x && y);
  for (int i = 0; i < N; i++)
    x[i] = 1.0f, y[i] = 2.0f;
  weft_data *dx, *dy;
  EXPECT_OK(weft_data_register(rt, x, N * sizeof(float), &dx));
  EXPECT_OK(weft_data_register(rt, y, N * sizeof(float), &dy));

  /* x: filled and synced by the first reader, then read by a second. */
  job first = {dx, back[0], 0}, second = {dx, back[1], 0};
  weft_task *t = spawn_reading(rt, reader, &first);
  EXPECT_OK(weft_task_join(t));
  t = spawn_reading(rt, reader, &second);
  EXPECT_OK(weft_task_join(t));
  EXPECT_MSG(first.sum == N && second.sum == N, "x read as %g and %g",
             (double)first.sum, (double)second.sum);

  /* y: its fill held on the filler's stream while another reader gets it. */
  job held = {dy, NULL, 0}, late = {dy, back[2], 0};
  weft_task *h = spawn_reading(rt, held_filler, &held);
  while (!atomic_load(&got))
    nanosleep(&(struct timespec){0, 100000}, NULL);
  t = spawn_reading(rt, reader, &late);
  nanosleep(&(struct timespec){0, 20000000}, NULL); /* a copy run early */
  __atomic_store_n(gate, 1, __ATOMIC_RELEASE);
  EXPECT_OK(weft_task_join(h));
  EXPECT_OK(weft_task_join(t));
  EXPECT_MSG(late.sum == 2.0f * N, "y read as %g before its fill",
             (double)late.sum);
  EXPECT_EQ_INT(gate[1], TEST_SPIN_RELEASED);

  EXPECT_OK(weft_data_unregister(dx));
  EXPECT_OK(weft_data_unregister(dy));
  for (int i = 0; i < 3; i++)
    EXPECT_OK(weft_pinned_free(back[i]));
  EXPECT_OK(weft_pinned_free(gate));
  EXPECT_OK(weft_shutdown(rt));

  trace_model m;
  trace_error err;
  EXPECT_MSG(trace_model_load_file(&m, path, &err) == 0, "load: %s",
             err.message);
  /* The second reader of x and the late reader of y. */
  EXPECT_MSG(m.nswaits == 2,
             "%zu stream waits in the trace: want 2, a reader's for each "
             "fill it did not make",
             m.nswaits);
  trace_model_free(&m);
  unlink(path);
  free(x);
  free(y);
  printf("data waits: a reader waits for a fill it did not make, queued or "
         "not\n");
  return 0;
}
