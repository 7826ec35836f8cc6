/* Events through tasks: timing a task's own work, queries and elapsed time
 * while work is pending, events never recorded, destroyed and bad handles,
 * and a device-side wait across tasks: task B's stream waits for an event
 * task A recorded after a gated kernel, so B's copy_int must see A's write
 * and must not run before A's gate opens. */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "task_common.h"
#include "weft_internal.h"

static weft_runtime *rt;

/* ---- timing a task's work ---- */

static void timing(void *arg) {
  enum { N = 1 << 16, STEPS = 8 };
  weft_event *start = NULL, *end = NULL;
  EXPECT_OK(weft_event_create(&start));
  EXPECT_OK(weft_event_create(&end));
  EXPECT(start && end && start != end);
  float *h, *d;
  EXPECT_OK(weft_pinned_alloc(N * sizeof(float), (void **)&h));
  EXPECT_OK(weft_device_alloc(N * sizeof(float), (void **)&d));
  for (int i = 0; i < N; i++)
    h[i] = (float)(i % 64);
  EXPECT_OK(weft_event_record(start));
  EXPECT_OK(weft_copy(d, h, N * sizeof(float)));
  for (int k = 0; k < STEPS; k++) {
    int n = N;
    float a = k % 2 ? -1.0f : 2.0f, b = (float)k;
    void *args[] = {&d, &n, &a, &b};
    EXPECT_OK(weft_launch(&tk.axpb, WEFT_DIM1(N / TEST_THREADS),
                          WEFT_DIM1(TEST_THREADS), 0, args));
  }
  EXPECT_OK(weft_copy(h, d, N * sizeof(float)));
  EXPECT_OK(weft_event_record(end));
  EXPECT_OK(weft_event_sync(end));
  EXPECT_OK(weft_event_query(end));
  EXPECT_OK(weft_event_query(start));
  for (int i = 0; i < N; i++) {
    float x = (float)(i % 64);
    for (int k = 0; k < STEPS; k++)
      x = x * (k % 2 ? -1.0f : 2.0f) + (float)k;
    EXPECT_MSG(h[i] == x, "h[%d] = %g after the end event, expected %g", i,
               (double)h[i], (double)x);
  }
  float ms = -1.0f;
  EXPECT_OK(weft_event_elapsed_ms(start, end, &ms));
  EXPECT_MSG(ms >= 0.0f && isfinite(ms), "elapsed %g ms", (double)ms);
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_pinned_free(h));
  EXPECT_OK(weft_event_destroy(&start));
  EXPECT_OK(weft_event_destroy(&end));
  EXPECT(start == NULL && end == NULL);
}

/* ---- pending work, never-recorded events ---- */

static void pending(void *arg) {
  tt_gate g;
  tt_gate_init(&g);
  weft_event *before, *after, *never, *never2;
  EXPECT_OK(weft_event_create(&before));
  EXPECT_OK(weft_event_create(&after));
  EXPECT_OK(weft_event_create(&never));
  EXPECT_OK(weft_event_create(&never2));

  /* Never recorded: complete for a query; waits refused, saying why (they
   * used to return at once, so a task "waiting" for another's record did
   * not wait); no elapsed time. */
  float ms = -1.0f;
  EXPECT_OK(weft_event_query(never));
  EXPECT_ERR(weft_event_sync(never), WEFT_ESTATE);
  EXPECT(strstr(weft_last_error_message(), "never recorded") != NULL);
  EXPECT_ERR(weft_event_wait(never), WEFT_ESTATE);
  EXPECT_ERR(weft_event_elapsed_ms(never, never2, &ms), WEFT_ESTATE);

  EXPECT_OK(weft_event_record(before));
  tt_gate_launch(&g);
  EXPECT_OK(weft_event_record(after));
  tt_gate_wait_started(&g);
  EXPECT_ERR(weft_event_query(after), WEFT_EAGAIN);
  EXPECT_ERR(weft_event_elapsed_ms(before, after, &ms), WEFT_EAGAIN);
  EXPECT(strstr(weft_last_error_message(), "weft_event_elapsed_ms") != NULL);
  EXPECT_ERR(weft_event_elapsed_ms(before, never, &ms), WEFT_ESTATE);
  EXPECT(ms == -1.0f);
  tt_gate_open(&g);
  EXPECT_OK(weft_event_sync(after));
  EXPECT_EQ_INT(tt_gate_state(&g), TEST_SPIN_RELEASED);
  EXPECT_OK(weft_event_query(after));
  EXPECT_OK(weft_event_elapsed_ms(before, after, &ms));
  EXPECT(ms >= 0.0f);

  /* Re-recording moves the event to the new end of the stream. */
  tt_gate_launch(&g);
  EXPECT_OK(weft_event_record(after));
  tt_gate_wait_started(&g);
  EXPECT_ERR(weft_event_query(after), WEFT_EAGAIN);
  tt_gate_open(&g);
  EXPECT_OK(weft_event_sync(after));
  EXPECT_OK(weft_sync());

  EXPECT_OK(weft_event_destroy(&before));
  EXPECT_OK(weft_event_destroy(&after));
  EXPECT_OK(weft_event_destroy(&never));
  EXPECT_OK(weft_event_destroy(&never2));
  tt_gate_fini(&g);
}

/* ---- an event destroyed while a task waits on it ---- */

/* The task's sync waits for the work recorded before the destroy, which
 * leaves it unaffected (weft/event.h); it used to return 0 at once. */
typedef struct doomed {
  tt_gate g;
  weft_event *ev;
  int recorded, synced_rc, gate_at_return;
  weft_task *self;
} doomed;

static void sync_on_doomed(void *arg) {
  doomed *d = arg;
  tt_gate_launch(&d->g);
  EXPECT_OK(weft_event_record(d->ev));
  tt_gate_wait_started(&d->g);
  tt_store(&d->recorded, 1);
  d->synced_rc = weft_event_sync(d->ev);
  d->gate_at_return = tt_gate_state(&d->g);
  EXPECT_OK(weft_sync());
}

/* The task waits in the wait set (the only task alive to). */
static int in_wait_set(void) { return atomic_load(&rt->waits.n) > 0; }

static void destroyed_while_waited(void) {
  doomed d = {.synced_rc = -1};
  tt_gate_init(&d.g);
  EXPECT_OK(weft_event_create(&d.ev));
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, sync_on_doomed, &d, NULL));
  tt_wait_flag(&d.recorded, 10000, "the event was recorded");
  while (!in_wait_set())
    sched_yield();
  EXPECT_OK(weft_event_destroy(&d.ev));
  EXPECT(d.ev == NULL);
  tt_gate_open(&d.g);
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(d.synced_rc);
  EXPECT_MSG(d.gate_at_return == TEST_SPIN_RELEASED,
             "weft_event_sync returned before the work it waited for ran "
             "(gate state %d), its event destroyed meanwhile",
             d.gate_at_return);
  tt_gate_fini(&d.g);
}

/* A plain thread's sync entering as another thread destroys the event:
 * the handle's check reads what the destroy writes (ThreadSanitizer
 * watches the pair), and the sync still waits for the recorded work. */
typedef struct entering {
  weft_event *ev;
  int entering, late, rc, gate_at_return;
  tt_gate *g;
} entering;

static void *sync_entering(void *arg) {
  entering *e = arg;
  tt_store(&e->entering, 1);
  if (e->late)
    tt_sleep_ms(20); /* after the destroy, most likely */
  e->rc = weft_event_sync(e->ev);
  e->gate_at_return = tt_gate_state(e->g);
  return NULL;
}

static void destroyed_while_entering(int late) {
  tt_gate g;
  tt_gate_init(&g);
  entering e = {.rc = -1, .late = late, .g = &g};
  EXPECT_OK(weft_event_create(&e.ev));
  tt_gate_launch(&g);
  EXPECT_OK(weft_event_record(e.ev));
  tt_gate_wait_started(&g);
  pthread_t th;
  EXPECT(pthread_create(&th, NULL, sync_entering, &e) == 0);
  tt_wait_flag(&e.entering, 10000, "the thread is about to sync");
  weft_event *mine = e.ev;
  EXPECT_OK(weft_event_destroy(&mine));
  tt_gate_open(&g);
  EXPECT(pthread_join(th, NULL) == 0);
  /* Entered before the destroy it waited for the work; after it, the
   * handle was dead. */
  EXPECT_MSG((e.rc == 0 && e.gate_at_return == TEST_SPIN_RELEASED) ||
                 e.rc == WEFT_EHANDLE,
             "a sync racing the destroy: %s, gate state %d",
             weft_err_name(e.rc), e.gate_at_return);
  EXPECT_OK(weft_sync());
  tt_gate_fini(&g);
}

/* Records from one thread while another destroys the events one after
 * another: each record completes before the destroy finishes the event,
 * or is refused (a record attached to an event already back in the pool
 * leaked what it holds: LeakSanitizer, the ASan build). */
typedef struct racing {
  weft_event *_Atomic cur;
  int stop, records;
} racing;

static void *record_racing(void *arg) {
  racing *r = arg;
  while (!tt_load(&r->stop)) {
    int rc = weft_event_record(atomic_load(&r->cur));
    EXPECT_MSG(rc == 0 || rc == WEFT_EHANDLE, "a record racing a destroy: %s",
               weft_err_name(rc));
    if (rc == 0)
      tt_add(&r->records, 1);
  }
  EXPECT_OK(weft_sync());
  return NULL;
}

static void record_while_destroyed(void) {
  racing r = {.stop = 0};
  weft_event *e;
  EXPECT_OK(weft_event_create(&e));
  atomic_store(&r.cur, e);
  pthread_t th;
  EXPECT(pthread_create(&th, NULL, record_racing, &r) == 0);
  int64_t deadline = tt_now_ns() + 10000000000LL; /* records under way */
  while (tt_load(&r.records) == 0 && tt_now_ns() < deadline)
    sched_yield();
  EXPECT(tt_load(&r.records) > 0);
  /* Fewer than the pool's quarantine (64): no destroyed event's memory
   * is reused meanwhile, which a stale handle's check may race. */
  for (int i = 0; i < 48; i++) {
    weft_event *next;
    EXPECT_OK(weft_event_create(&next));
    weft_event *old = atomic_exchange(&r.cur, next);
    EXPECT_OK(weft_event_destroy(&old));
    sched_yield();
  }
  tt_store(&r.stop, 1);
  EXPECT(pthread_join(th, NULL) == 0);
  weft_event *last = atomic_load(&r.cur);
  EXPECT_OK(weft_event_destroy(&last));
}

/* ---- bad handles (on the main thread) ---- */

static void bad_handles(void) {
  weft_event *ev = NULL, *good = NULL;
  float ms = -1.0f;
  EXPECT_ERR(weft_event_create(NULL), WEFT_EINVAL);
  EXPECT_ERR(weft_event_destroy(NULL), WEFT_EINVAL);
  EXPECT_ERR(weft_event_destroy(&ev), WEFT_EINVAL);
  EXPECT_ERR(weft_event_query(NULL), WEFT_EINVAL);
  EXPECT_ERR(weft_event_sync(NULL), WEFT_EINVAL);
  EXPECT_ERR(weft_event_elapsed_ms(NULL, NULL, &ms), WEFT_EINVAL);

  EXPECT_OK(weft_event_create(&good));
  EXPECT_OK(weft_event_record(good));
  EXPECT_OK(weft_event_sync(good));
  EXPECT_ERR(weft_event_elapsed_ms(good, good, NULL), WEFT_EINVAL);
  EXPECT_OK(weft_event_elapsed_ms(good, good, &ms));
  EXPECT(ms >= 0.0f);

  EXPECT_OK(weft_event_create(&ev));
  weft_event *stale = ev;
  EXPECT_OK(weft_event_destroy(&ev));
  EXPECT(ev == NULL);
  EXPECT_ERR(weft_event_query(stale), WEFT_EHANDLE);
  EXPECT_ERR(weft_event_sync(stale), WEFT_EHANDLE);
  EXPECT_ERR(weft_event_elapsed_ms(stale, good, &ms), WEFT_EHANDLE);
  EXPECT_ERR(weft_event_elapsed_ms(good, stale, &ms), WEFT_EHANDLE);
  EXPECT_ERR(weft_event_destroy(&stale), WEFT_EHANDLE);
  EXPECT(stale != NULL); /* a failed call changes nothing */

  /* A handle kept past its destroy stays dead once the memory is reused
   * (past the pool's quarantine of 64): it never names the newer event. */
  weft_event *fresh[80];
  for (int i = 0; i < 80; i++)
    EXPECT_OK(weft_event_create(&fresh[i]));
  for (int i = 0; i < 80; i++)
    EXPECT_OK(weft_event_destroy(&fresh[i]));
  for (int i = 0; i < 80; i++)
    EXPECT_OK(weft_event_create(&fresh[i]));
  EXPECT_ERR(weft_event_query(stale), WEFT_EHANDLE);
  EXPECT_ERR(weft_event_destroy(&stale), WEFT_EHANDLE);
  for (int i = 0; i < 80; i++) /* their owners' handles are intact */
    EXPECT_OK(weft_event_destroy(&fresh[i]));

  /* Bad handles given to stream operations are returned at once, and the
   * next weft_sync does not report them again. */
  EXPECT_ERR(weft_event_record(stale), WEFT_EHANDLE);
  EXPECT_ERR(weft_event_wait(stale), WEFT_EHANDLE);
  EXPECT_ERR(weft_event_record(NULL), WEFT_EINVAL);
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_event_destroy(&good));
}

/* ---- a device-side wait across tasks ---- */

typedef struct cross {
  tt_gate gate;
  weft_event *ev_a, *ev_b;
  int *d;   /* device int A writes */
  int *out; /* pinned int B's kernel copies d into */
  int a_recorded, b_queued;
  int b_rc;
} cross;

static cross cs;

static void task_a(void *arg) {
  tt_gate_launch(&cs.gate);
  int v = 99;
  void *args[] = {&cs.d, &v};
  EXPECT_OK(weft_launch(&tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  EXPECT_OK(weft_event_record(cs.ev_a));
  tt_store(&cs.a_recorded, 1);
  EXPECT_OK(weft_sync());
}

static void task_b(void *arg) {
  EXPECT_OK(weft_event_wait(cs.ev_a)); /* the task does not wait */
  void *args[] = {&cs.out, &cs.d};
  EXPECT_OK(weft_launch(&tk.copy_int, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  EXPECT_OK(weft_event_record(cs.ev_b));
  tt_store(&cs.b_queued, 1);
  cs.b_rc = weft_sync();
}

static void cross_task_wait(void) {
  cs = (cross){0};
  tt_gate_init(&cs.gate);
  EXPECT_OK(weft_event_create(&cs.ev_a));
  EXPECT_OK(weft_event_create(&cs.ev_b));
  EXPECT_OK(weft_pinned_alloc(sizeof(int), (void **)&cs.out));
  EXPECT_OK(weft_device_alloc(sizeof(int), (void **)&cs.d));
  EXPECT_OK(weft_memset(cs.d, 0, sizeof(int)));
  EXPECT_OK(weft_sync());
  *cs.out = -1;

  weft_task *a, *b;
  EXPECT_OK(weft_task_spawn(rt, &a, task_a, NULL, NULL));
  tt_wait_flag(&cs.a_recorded, 10000, "A to record its event");
  EXPECT_OK(weft_task_spawn(rt, &b, task_b, NULL, NULL));
  tt_wait_flag(&cs.b_queued, 10000, "B to queue its copy");
  tt_gate_wait_started(&cs.gate);
  tt_sleep_ms(20); /* gives a wrongly unordered copy time to run */
  int seen = tt_load(cs.out);
  int q = weft_event_query(cs.ev_b);
  int state = tt_gate_state(&cs.gate);
  tt_gate_open(&cs.gate);
  EXPECT_MSG(seen == -1, "B's copy ran before A's event (out = %d)", seen);
  EXPECT_ERR(q, WEFT_EAGAIN);
  EXPECT_EQ_INT(state, TEST_SPIN_STARTED);

  /* A plain thread waits for A's event too (blocking). */
  EXPECT_OK(weft_event_sync(cs.ev_a));
  EXPECT_OK(weft_task_join(b));
  EXPECT_OK(weft_task_join(a));
  EXPECT_OK(cs.b_rc);
  EXPECT_EQ_INT(*cs.out, 99);
  EXPECT_OK(weft_event_query(cs.ev_a));
  EXPECT_OK(weft_event_query(cs.ev_b));
  float ms = -1.0f;
  EXPECT_OK(weft_event_elapsed_ms(cs.ev_a, cs.ev_b, &ms));
  EXPECT(ms >= 0.0f);

  EXPECT_OK(weft_event_destroy(&cs.ev_a));
  EXPECT_OK(weft_event_destroy(&cs.ev_b));
  EXPECT_OK(weft_device_free(cs.d));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_pinned_free(cs.out));
  tt_gate_fini(&cs.gate);
}

int main(void) {
  /* One worker: A and B both suspend in their syncs, each in turn. */
  rt = tt_open_workers(1);
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, timing, NULL, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_task_spawn(rt, &t, pending, NULL, NULL));
  EXPECT_OK(weft_task_join(t));
  bad_handles();
  destroyed_while_waited();
  destroyed_while_entering(0);
  destroyed_while_entering(1);
  record_while_destroyed();
  cross_task_wait();
  cross_task_wait();
  tt_close(rt);
  puts("ok");
  return 0;
}
