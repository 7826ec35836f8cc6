/* weft/host.h, the host backend's own streams and events (the benchmarks'
 * raw baselines drive them): a stream on each of four emulated devices;
 * work on one device's stream held back by an event recorded behind a
 * gate on another's, and released when the gate opens; timing events;
 * bad input (a device out of range, NULL arguments); a device sync that
 * waits for work held behind another device. On another backend
 * the makers refuse with WEFT_ENOTSUP. */
#include <pthread.h>
#include <string.h>

#include "task_common.h"
#include "weft/host.h"

enum { NDEV = 4, N = 1000 };

static void axpb(weft_host_stream *s, float *x, float a, float b) {
  int n = N;
  void *args[] = {&x, &n, &a, &b};
  EXPECT_OK(weft_host_launch(s, &tk.axpb,
                             WEFT_DIM1((N + TEST_THREADS - 1) / TEST_THREADS),
                             WEFT_DIM1(TEST_THREADS), args));
}

static void not_host(weft_runtime *rt) {
  weft_host_stream *s = NULL;
  weft_host_event *e = NULL;
  EXPECT_ERR(weft_host_stream_create(rt, 0, 0, &s), WEFT_ENOTSUP);
  EXPECT_ERR(weft_host_event_create(rt, 0, 0, &e), WEFT_ENOTSUP);
  EXPECT(s == NULL && e == NULL);
}

static void bad_input(weft_runtime *rt, int ndev) {
  weft_host_stream *s = NULL;
  EXPECT_ERR(weft_host_stream_create(rt, -1, 0, &s), WEFT_ENODEV);
  EXPECT(strstr(weft_last_error_message(), "no device -1") != NULL);
  EXPECT_ERR(weft_host_stream_create(rt, ndev, 0, &s), WEFT_ENODEV);
  EXPECT_ERR(weft_host_stream_create(NULL, 0, 0, &s), WEFT_EINVAL);
  EXPECT_ERR(weft_host_stream_create(rt, 0, 0, NULL), WEFT_EINVAL);
  EXPECT(s == NULL);
  EXPECT_ERR(weft_host_stream_destroy(&s), WEFT_EINVAL);
  weft_host_event *e = NULL;
  EXPECT_ERR(weft_host_event_create(rt, ndev, 0, &e), WEFT_ENODEV);
  EXPECT_ERR(weft_host_event_create(rt, 0, 0, NULL), WEFT_EINVAL);
  EXPECT(e == NULL);
  /* An event records on its own device's streams only, as on CUDA. */
  weft_host_stream *s1 = NULL;
  EXPECT_OK(weft_host_stream_create(rt, 1, 0, &s1));
  EXPECT_OK(weft_host_event_create(rt, 0, 0, &e));
  EXPECT_ERR(weft_host_event_record(e, s1), WEFT_EINVAL);
  EXPECT_OK(weft_host_event_destroy(&e));
  EXPECT_OK(weft_host_stream_destroy(&s1));
  /* Priorities out of the range are clamped to it, as CUDA does: the
   * streams run work (they indexed past the executor's levels before). */
  static const int prio[] = {1000, 1, -6, -1000};
  float *x = NULL;
  EXPECT_OK(weft_host_pinned_alloc(rt, N * sizeof(float), (void **)&x));
  for (size_t p = 0; p < sizeof prio / sizeof prio[0]; p++) {
    for (int i = 0; i < N; i++)
      x[i] = 1.0f;
    EXPECT_OK(weft_host_stream_create(rt, 0, prio[p], &s1));
    axpb(s1, x, 3.0f, 1.0f);
    EXPECT_OK(weft_host_stream_sync(s1));
    EXPECT(x[0] == 4.0f && x[N - 1] == 4.0f);
    EXPECT_OK(weft_host_stream_destroy(&s1));
  }
  EXPECT_OK(weft_host_pinned_free(rt, x));
}

/* weft_device_sync waits for every operation its device had queued when it
 * was called, however many queued later complete first: here work on
 * device 0 held behind an event of device 1's gate, and eight operations
 * queued on device 0 after the sync began, which run at once. */
typedef struct dev_syncer {
  int rc, returned, x0_at_return;
  float *x;
} dev_syncer;

static void *device_syncer(void *arg) {
  dev_syncer *d = arg;
  d->rc = weft_device_sync(); /* a plain thread: device 0 */
  tt_store(&d->x0_at_return, (int)d->x[0]);
  tt_store(&d->returned, 1);
  return NULL;
}

static void device_sync_waits_for_held_work(weft_runtime *rt) {
  weft_host_stream *g, *held, *later;
  weft_host_event *ev;
  float *x, *y;
  int *gate;
  EXPECT_OK(weft_host_stream_create(rt, 1, 0, &g));
  EXPECT_OK(weft_host_stream_create(rt, 0, 0, &held));
  EXPECT_OK(weft_host_stream_create(rt, 0, 0, &later));
  EXPECT_OK(weft_host_event_create(rt, 1, 0, &ev));
  EXPECT_OK(weft_host_pinned_alloc(rt, N * sizeof(float), (void **)&x));
  EXPECT_OK(weft_host_pinned_alloc(rt, N * sizeof(float), (void **)&y));
  EXPECT_OK(weft_host_pinned_alloc(rt, 2 * sizeof(int), (void **)&gate));
  for (int i = 0; i < N; i++)
    x[i] = y[i] = 1.0f;
  gate[0] = gate[1] = 0;
  long long timeout = TT_GATE_TIMEOUT_NS;
  int *flag = &gate[0], *state = &gate[1];
  void *spin[] = {&flag, &state, &timeout};
  EXPECT_OK(
      weft_host_launch(g, &tk.spin_until, WEFT_DIM1(1), WEFT_DIM1(1), spin));
  EXPECT_OK(weft_host_event_record(ev, g));
  EXPECT_OK(weft_host_stream_wait_event(held, ev));
  axpb(held, x, 2.0f, 1.0f); /* x = 3 once the gate opens */
  tt_wait_flag(&gate[1], 10000, "the gate's spin to start");

  dev_syncer d = {-1, 0, 0, x};
  pthread_t t;
  EXPECT(pthread_create(&t, NULL, device_syncer, &d) == 0);
  tt_sleep_ms(50); /* the sync has begun */
  for (int i = 0; i < 8; i++)
    axpb(later, y, 1.0f, 1.0f);
  EXPECT_OK(weft_host_stream_sync(later));
  tt_sleep_ms(50);
  EXPECT_MSG(!tt_load(&d.returned),
             "weft_device_sync returned with device 0's held work queued");
  tt_store(&gate[0], 1);
  EXPECT(pthread_join(t, NULL) == 0);
  EXPECT_OK(d.rc);
  EXPECT_EQ_INT(d.x0_at_return, 3);
  EXPECT(y[0] == 9.0f);

  EXPECT_OK(weft_host_event_destroy(&ev));
  EXPECT_OK(weft_host_stream_destroy(&g));
  EXPECT_OK(weft_host_stream_destroy(&held));
  EXPECT_OK(weft_host_stream_destroy(&later));
  EXPECT_OK(weft_host_pinned_free(rt, x));
  EXPECT_OK(weft_host_pinned_free(rt, y));
  EXPECT_OK(weft_host_pinned_free(rt, gate));
}

int main(void) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.host_devices = NDEV;
  o.host_threads = 2; /* the gate holds one executor thread of device 0 */
  weft_runtime *rt = tt_open(&o);
  if (weft_runtime_backend(rt) != WEFT_BACKEND_HOST) {
    not_host(rt);
    tt_close(rt);
    printf("ok (not the host backend: WEFT_ENOTSUP)\n");
    return 0;
  }
  int ndev = 0;
  EXPECT_OK(weft_device_count(rt, &ndev));
  EXPECT_EQ_INT(ndev, NDEV);
  bad_input(rt, ndev);

  weft_host_stream *s[NDEV];
  for (int d = 0; d < NDEV; d++)
    EXPECT_OK(weft_host_stream_create(rt, d, 0, &s[d]));
  float *x = NULL;
  int *gate = NULL; /* [0] the flag, [1] the spin's state */
  EXPECT_OK(weft_host_pinned_alloc(rt, N * sizeof(float), (void **)&x));
  EXPECT_OK(weft_host_pinned_alloc(rt, 2 * sizeof(int), (void **)&gate));
  for (int i = 0; i < N; i++)
    x[i] = 1.0f;
  gate[0] = gate[1] = 0;
  weft_host_event *ev = NULL, *t0 = NULL, *t1 = NULL;
  EXPECT_OK(weft_host_event_create(rt, 0, 0, &ev));
  EXPECT_OK(weft_host_event_create(rt, 0, 1, &t0));
  EXPECT_OK(weft_host_event_create(rt, 0, 1, &t1));

  /* Device 0: the gate, then x = 2x + 1; device d waits for it, then
   * x = 10x + d. Unordered, a later device's step would run first. */
  long long timeout = TT_GATE_TIMEOUT_NS;
  int *flag = &gate[0], *state = &gate[1];
  void *spin[] = {&flag, &state, &timeout};
  EXPECT_OK(weft_host_event_record(t0, s[0]));
  EXPECT_OK(
      weft_host_launch(s[0], &tk.spin_until, WEFT_DIM1(1), WEFT_DIM1(1), spin));
  axpb(s[0], x, 2.0f, 1.0f);
  EXPECT_OK(weft_host_event_record(ev, s[0]));
  EXPECT_OK(weft_host_event_record(t1, s[0]));
  weft_host_event *step[NDEV] = {NULL};
  for (int d = 1; d < NDEV; d++) {
    EXPECT_OK(weft_host_event_create(rt, d, 0, &step[d]));
    EXPECT_OK(weft_host_stream_wait_event(s[d], d == 1 ? ev : step[d - 1]));
    axpb(s[d], x, 10.0f, (float)d);
    EXPECT_OK(weft_host_event_record(step[d], s[d]));
  }
  tt_wait_flag(&gate[1], 10000, "the gate's spin to start");
  tt_sleep_ms(20);
  EXPECT_ERR(weft_host_event_query(step[NDEV - 1]), WEFT_EAGAIN);
  EXPECT(x[0] == 1.0f); /* nothing after the gate ran */
  tt_store(&gate[0], 1);
  EXPECT_OK(weft_host_stream_sync(s[NDEV - 1]));
  EXPECT_OK(weft_host_event_query(step[NDEV - 1]));
  /* ((3 * 10 + 1) * 10 + 2) * 10 + 3 */
  for (int i = 0; i < N; i++)
    EXPECT_MSG(x[i] == 3123.0f, "x[%d] = %g", i, (double)x[i]);
  EXPECT_EQ_INT(tt_load(&gate[1]), TEST_SPIN_RELEASED);
  float ms = -1;
  EXPECT_OK(weft_host_event_sync(t1));
  EXPECT_OK(weft_host_event_elapsed_ms(t0, t1, &ms));
  EXPECT_MSG(ms >= 15.0f, "the gate held device 0 for %g ms", (double)ms);

  for (int d = 1; d < NDEV; d++)
    EXPECT_OK(weft_host_event_destroy(&step[d]));
  EXPECT_OK(weft_host_event_destroy(&ev));
  EXPECT_OK(weft_host_event_destroy(&t0));
  EXPECT_OK(weft_host_event_destroy(&t1));
  for (int d = 0; d < NDEV; d++) {
    EXPECT_OK(weft_host_stream_destroy(&s[d]));
    EXPECT(s[d] == NULL);
  }
  EXPECT_OK(weft_host_pinned_free(rt, x));
  EXPECT_OK(weft_host_pinned_free(rt, gate));
  device_sync_waits_for_held_work(rt);
  tt_close(rt);
  printf("ok\n");
  return 0;
}
