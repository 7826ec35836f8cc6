/* Cross-stream independence: work on one stream does not wait for another.
 *
 * Stream A runs a kernel that spins until the test sets a flag. While it
 * spins, a small kernel, a copy and an event on stream B must complete; only
 * then is A released, and A's kernel must not have timed out. A backend
 * that runs streams one after another fails the 5 s poll of B's event. */
#include "common.h"

int main(void) {
  weft__backend *b = conf_open(0);
  const weft_device_info *di = conf_info(b);
  /* A spinning kernel occupies a host executor thread for good; with one
   * thread there is nothing left to run stream B (by design, as on a GPU
   * whose every slot is busy). */
  if (conf_kind(b) == WEFT_BACKEND_HOST && di->multiprocessors < 2) {
    weft__backend_close(b);
    SKIP("the host backend has a single executor thread");
  }

  weft__stream *sa, *sb;
  weft__event *ev;
  EXPECT_OK(weft__stream_create(b, 0, di->priority_least, &sa));
  EXPECT_OK(weft__stream_create(b, 0, di->priority_least, &sb));
  EXPECT_OK(weft__event_create(b, 0, 0, &ev));
  int *d, *h;
  EXPECT_OK(weft__device_alloc(sb, sizeof(int), (void **)&d));
  EXPECT_OK(weft__pinned_alloc(b, sizeof(int), (void **)&h));
  *h = -1;

  conf_gate g;
  conf_gate_init(b, &g);
  conf_gate_launch(&g, sa);
  conf_gate_wait_started(&g);

  int v = 7;
  void *args[] = {&d, &v};
  EXPECT_OK(
      weft__launch(sb, &tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  EXPECT_OK(weft__copy(sb, h, d, sizeof(int), WEFT__COPY_D2H));
  EXPECT_OK(weft__event_record(ev, sb));
  int rc = conf_poll_event(ev, 5000);
  int a_busy = weft__stream_query(sa);
  int state = conf_gate_state(&g);
  conf_gate_open(&g); /* release A before any check can end the test */
  EXPECT_MSG(rc == 0,
             "stream B's event did not complete while stream A spun: %s",
             weft_err_name(rc));
  EXPECT_EQ_INT(*h, 7);
  EXPECT_MSG(state == TEST_SPIN_STARTED,
             "A's kernel should still be spinning when B finished (state %d)",
             state);
  EXPECT_ERR(a_busy, WEFT_EAGAIN);

  EXPECT_OK(weft__stream_sync(sa));
  EXPECT_EQ_INT(conf_gate_state(&g), TEST_SPIN_RELEASED);
  EXPECT_OK(weft__stream_query(sa));
  EXPECT_OK(weft__stream_query(sb));

  conf_gate_fini(&g);
  EXPECT_OK(weft__device_free(sb, d));
  EXPECT_OK(weft__pinned_free(b, h));
  EXPECT_OK(weft__stream_sync(sb));
  EXPECT_OK(weft__event_destroy(&ev));
  EXPECT_OK(weft__stream_destroy(&sa));
  EXPECT_OK(weft__stream_destroy(&sb));
  conf_close(b);
  return 0;
}
