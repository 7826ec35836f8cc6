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
  CHECK_OK(weft__launch(s, &tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
}

int main(void) {
  weft__backend *b = conf_open(0);
  if (conf_kind(b) == WEFT_BACKEND_HOST && conf_info(b)->multiprocessors < 2) {
    weft__backend_close(b);
    SKIP("the host backend has a single executor thread");
  }
  weft__stream *sa, *sb, *sc;
  weft__event *ev, *evb, *fresh;
  CHECK_OK(weft__stream_create(b, 0, 0, &sa));
  CHECK_OK(weft__stream_create(b, 0, 0, &sb));
  CHECK_OK(weft__stream_create(b, 0, 0, &sc));
  CHECK_OK(weft__event_create(b, 0, 0, &ev));
  CHECK_OK(weft__event_create(b, 0, 0, &evb));
  CHECK_OK(weft__event_create(b, 0, 0, &fresh));
  int *val, *copy, *h;
  CHECK_OK(weft__device_alloc(sa, sizeof(int), (void **)&val));
  CHECK_OK(weft__device_alloc(sa, sizeof(int), (void **)&copy));
  CHECK_OK(weft__pinned_alloc(b, sizeof(int), (void **)&h));
  CHECK_OK(weft__memset(sa, val, 0, sizeof(int)));
  CHECK_OK(weft__memset(sa, copy, 0xff, sizeof(int)));
  CHECK_OK(weft__stream_sync(sa));
  conf_gate g;
  conf_gate_init(b, &g);

  /* 1. B waits for A's gate and value. */
  conf_gate_launch(&g, sa);
  set_value(sa, val, 42);
  CHECK_OK(weft__event_record(ev, sa));
  CHECK_OK(weft__stream_wait_event(sb, ev));
  void *args[] = {&copy, &val};
  CHECK_OK(weft__launch(sb, &tk.copy_int, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  CHECK_OK(weft__copy(sb, h, copy, sizeof(int), WEFT__COPY_D2H));
  CHECK_OK(weft__event_record(evb, sb));
  conf_gate_wait_started(&g);
  int early = 0;
  for (int i = 0; i < 10 && !early; i++) {
    early = weft__event_query(evb) != WEFT_EAGAIN;
    conf_sleep_ms(10);
  }
  int b_busy = weft__stream_query(sb);
  conf_gate_open(&g);
  CHECK_MSG(!early, "B's event completed while the event it waits on was "
                    "still pending");
  CHECK_ERR(b_busy, WEFT_EAGAIN);
  CHECK_OK(weft__stream_sync(sb));
  CHECK_EQ_INT(*h, 42);
  CHECK_OK(weft__stream_sync(sa));
  CHECK_EQ_INT(conf_gate_state(&g), TEST_SPIN_RELEASED);

  /* 2. A never-recorded event: nothing to wait for, though A is gated. */
  conf_gate_launch(&g, sa);
  conf_gate_wait_started(&g);
  CHECK_OK(weft__stream_wait_event(sb, fresh));
  set_value(sb, copy, 5);
  CHECK_OK(weft__copy(sb, h, copy, sizeof(int), WEFT__COPY_D2H));
  CHECK_OK(weft__event_record(evb, sb));
  int rc2 = conf_poll_event(evb, 5000);

  /* 3. ev completes on idle C; B waits on that record; ev is then
   * re-recorded behind A's (still closed) gate, which must not matter. */
  CHECK_OK(weft__event_record(ev, sc));
  int rc3a = conf_poll_event(ev, 5000);
  CHECK_OK(weft__stream_wait_event(sb, ev));
  CHECK_OK(weft__event_record(ev, sa));
  set_value(sb, copy, 6);
  CHECK_OK(weft__copy(sb, h, copy, sizeof(int), WEFT__COPY_D2H));
  CHECK_OK(weft__event_record(evb, sb));
  int rc3 = conf_poll_event(evb, 5000);
  int state = conf_gate_state(&g);
  conf_gate_open(&g);
  CHECK_MSG(rc2 == 0, "a wait on a never-recorded event blocked B: %s",
            weft_err_name(rc2));
  CHECK_OK(rc3a);
  CHECK_MSG(rc3 == 0, "B waited for a record made after its wait: %s",
            weft_err_name(rc3));
  CHECK_EQ_INT(*h, 6);
  CHECK_EQ_INT(state, TEST_SPIN_STARTED);
  CHECK_OK(weft__stream_sync(sa));
  CHECK_OK(weft__event_sync(ev));

  conf_gate_fini(&g);
  CHECK_OK(weft__device_free(sa, val));
  CHECK_OK(weft__device_free(sa, copy));
  CHECK_OK(weft__stream_sync(sa));
  CHECK_OK(weft__pinned_free(b, h));
  CHECK_OK(weft__event_destroy(&ev));
  CHECK_OK(weft__event_destroy(&evb));
  CHECK_OK(weft__event_destroy(&fresh));
  CHECK_OK(weft__stream_destroy(&sa));
  CHECK_OK(weft__stream_destroy(&sb));
  CHECK_OK(weft__stream_destroy(&sc));
  conf_close(b);
  return 0;
}
