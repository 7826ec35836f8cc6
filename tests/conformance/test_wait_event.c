/* stream_wait_event: a stream holds back its later work, and only that
 * work, until the event's most recent record (as of the wait) completes.
 *
 * 1. A: gate, then set_value(42), then record ev. B: wait ev, copy_int of
 *    A's value, record evb. While A is gated evb must stay incomplete; once
 *    released, B must have copied 42, not the 0 that was there before.
 * 2. Waiting on a never-recorded event holds nothing back.
 * 3. Re-recording after the wait does not move what the wait waits for. */
#include "common.h"

static void set_value(weft__stream *s, int *d, int v) {
  void *args[] = {&d, &v};
  EXPECT_OK(
      weft__launch(s, &tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
}

int main(void) {
  weft__backend *b = conf_open(0);
  if (conf_kind(b) == WEFT_BACKEND_HOST && conf_info(b)->multiprocessors < 2) {
    weft__backend_close(b);
    SKIP("the host backend has a single executor thread");
  }
  weft__stream *sa, *sb, *sc;
  weft__event *ev, *evb, *fresh;
  EXPECT_OK(weft__stream_create(b, 0, 0, &sa));
  EXPECT_OK(weft__stream_create(b, 0, 0, &sb));
  EXPECT_OK(weft__stream_create(b, 0, 0, &sc));
  EXPECT_OK(weft__event_create(b, 0, 0, &ev));
  EXPECT_OK(weft__event_create(b, 0, 0, &evb));
  EXPECT_OK(weft__event_create(b, 0, 0, &fresh));
  int *val, *copy, *h;
  EXPECT_OK(weft__device_alloc(sa, sizeof(int), (void **)&val));
  EXPECT_OK(weft__device_alloc(sa, sizeof(int), (void **)&copy));
  EXPECT_OK(weft__pinned_alloc(b, sizeof(int), (void **)&h));
  EXPECT_OK(weft__memset(sa, val, 0, sizeof(int)));
  EXPECT_OK(weft__memset(sa, copy, 0xff, sizeof(int)));
  EXPECT_OK(weft__stream_sync(sa));
  conf_gate g;
  conf_gate_init(b, &g);

  /* 1. B waits for A's gate and value. */
  conf_gate_launch(&g, sa);
  set_value(sa, val, 42);
  EXPECT_OK(weft__event_record(ev, sa));
  EXPECT_OK(weft__stream_wait_event(sb, ev));
  void *args[] = {&copy, &val};
  EXPECT_OK(
      weft__launch(sb, &tk.copy_int, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  EXPECT_OK(weft__copy(sb, h, copy, sizeof(int), WEFT__COPY_D2H));
  EXPECT_OK(weft__event_record(evb, sb));
  conf_gate_wait_started(&g);
  int early = 0;
  for (int i = 0; i < 10 && !early; i++) {
    early = weft__event_query(evb) != WEFT_EAGAIN;
    conf_sleep_ms(10);
  }
  int b_busy = weft__stream_query(sb);
  conf_gate_open(&g);
  EXPECT_MSG(!early, "B's event completed while the event it waits on was "
                     "still pending");
  EXPECT_ERR(b_busy, WEFT_EAGAIN);
  EXPECT_OK(weft__stream_sync(sb));
  EXPECT_EQ_INT(*h, 42);
  EXPECT_OK(weft__stream_sync(sa));
  EXPECT_EQ_INT(conf_gate_state(&g), TEST_SPIN_RELEASED);

  /* 2. A never-recorded event: nothing to wait for, though A is gated. */
  conf_gate_launch(&g, sa);
  conf_gate_wait_started(&g);
  EXPECT_OK(weft__stream_wait_event(sb, fresh));
  set_value(sb, copy, 5);
  EXPECT_OK(weft__copy(sb, h, copy, sizeof(int), WEFT__COPY_D2H));
  EXPECT_OK(weft__event_record(evb, sb));
  int rc2 = conf_poll_event(evb, 5000);

  /* 3. ev completes on idle C; B waits on that record; ev is then
   * re-recorded behind A's (still closed) gate, which must not matter. */
  EXPECT_OK(weft__event_record(ev, sc));
  int rc3a = conf_poll_event(ev, 5000);
  EXPECT_OK(weft__stream_wait_event(sb, ev));
  EXPECT_OK(weft__event_record(ev, sa));
  set_value(sb, copy, 6);
  EXPECT_OK(weft__copy(sb, h, copy, sizeof(int), WEFT__COPY_D2H));
  EXPECT_OK(weft__event_record(evb, sb));
  int rc3 = conf_poll_event(evb, 5000);
  int state = conf_gate_state(&g);
  conf_gate_open(&g);
  EXPECT_MSG(rc2 == 0, "a wait on a never-recorded event blocked B: %s",
             weft_err_name(rc2));
  EXPECT_OK(rc3a);
  EXPECT_MSG(rc3 == 0, "B waited for a record made after its wait: %s",
             weft_err_name(rc3));
  EXPECT_EQ_INT(*h, 6);
  EXPECT_EQ_INT(state, TEST_SPIN_STARTED);
  EXPECT_OK(weft__stream_sync(sa));
  EXPECT_OK(weft__event_sync(ev));

  conf_gate_fini(&g);
  EXPECT_OK(weft__device_free(sa, val));
  EXPECT_OK(weft__device_free(sa, copy));
  EXPECT_OK(weft__stream_sync(sa));
  EXPECT_OK(weft__pinned_free(b, h));
  EXPECT_OK(weft__event_destroy(&ev));
  EXPECT_OK(weft__event_destroy(&evb));
  EXPECT_OK(weft__event_destroy(&fresh));
  EXPECT_OK(weft__stream_destroy(&sa));
  EXPECT_OK(weft__stream_destroy(&sb));
  EXPECT_OK(weft__stream_destroy(&sc));
  conf_close(b);
  return 0;
}
