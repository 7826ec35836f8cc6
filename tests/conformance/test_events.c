/* Events: query, sync, re-record and elapsed time, including their errors.
 *
 * Contract: a never-recorded event counts as complete; an event completes
 * when its stream passes the record point; re-recording moves that point;
 * elapsed needs two recorded, completed, timing-enabled events (WEFT_EINVAL
 * without timing, WEFT_ESTATE if never recorded, WEFT_EAGAIN if pending). */
#include "common.h"

int main(void) {
  weft__backend *b = conf_open(0);
  weft__stream *s;
  weft__event *plain, *t0, *t1, *blocking;
  EXPECT_OK(weft__stream_create(b, 0, 0, &s));
  EXPECT_OK(weft__event_create(b, 0, 0, &plain));
  EXPECT_OK(weft__event_create(b, 0, WEFT__EVENT_TIMING, &t0));
  EXPECT_OK(weft__event_create(b, 0, WEFT__EVENT_TIMING, &t1));
  EXPECT_OK(weft__event_create(b, 0, WEFT__EVENT_BLOCKING | WEFT__EVENT_TIMING,
                               &blocking));
  float ms = -1.0f;

  /* Never recorded: complete, but there is no time to read. */
  EXPECT_OK(weft__event_query(plain));
  EXPECT_OK(weft__event_sync(plain));
  EXPECT_OK(weft__event_sync(blocking));
  EXPECT_ERR(weft__event_elapsed(t0, t1, &ms), WEFT_ESTATE);
  EXPECT_ERR(weft__event_elapsed(plain, t1, &ms), WEFT_EINVAL);
  EXPECT(ms == -1.0f);

  /* Recorded on an idle stream: completes promptly. */
  EXPECT_OK(weft__event_record(plain, s));
  EXPECT_OK(conf_poll_event(plain, 5000));
  EXPECT_OK(weft__event_sync(plain));

  /* Back to back: a short but valid interval. */
  EXPECT_OK(weft__event_record(t0, s));
  EXPECT_OK(weft__event_record(t1, s));
  EXPECT_OK(weft__event_sync(t1));
  float short_ms = -1.0f;
  EXPECT_OK(weft__event_elapsed(t0, t1, &short_ms));
  EXPECT_MSG(short_ms >= 0.0f, "elapsed %g ms", (double)short_ms);
  /* Timing needs both events to have it. */
  EXPECT_ERR(weft__event_elapsed(t0, plain, &ms), WEFT_EINVAL);
  EXPECT_ERR(weft__event_elapsed(t0, t1, NULL), WEFT_EINVAL);

  /* Around a gate held for at least 50 ms: pending until released. */
  conf_gate g;
  conf_gate_init(b, &g);
  EXPECT_OK(weft__event_record(t0, s));
  conf_gate_launch(&g, s);
  EXPECT_OK(weft__event_record(t1, s));
  EXPECT_OK(weft__event_record(plain, s)); /* re-record: moves the point */
  EXPECT_OK(weft__event_record(blocking, s));
  conf_gate_wait_started(&g);
  int64_t t_start = conf_now_ns();
  int q_plain = weft__event_query(plain), q_t1 = weft__event_query(t1);
  int q_stream = weft__stream_query(s);
  int el = weft__event_elapsed(t0, t1, &ms);
  conf_sleep_ms(50);
  int64_t held_ns = conf_now_ns() - t_start;
  conf_gate_open(&g);
  EXPECT_ERR(q_plain, WEFT_EAGAIN);
  EXPECT_ERR(q_t1, WEFT_EAGAIN);
  EXPECT_ERR(q_stream, WEFT_EAGAIN);
  EXPECT_ERR(el, WEFT_EAGAIN);

  EXPECT_OK(weft__event_sync(blocking));
  EXPECT_OK(weft__event_query(blocking));
  EXPECT_OK(weft__event_query(t1));
  EXPECT_OK(weft__event_query(plain));
  EXPECT_EQ_INT(conf_gate_state(&g), TEST_SPIN_RELEASED);
  float long_ms = -1.0f;
  EXPECT_OK(weft__event_elapsed(t0, t1, &long_ms));
  printf("elapsed: back to back %.4f ms, around the gate %.3f ms (held "
         "%.3f ms)\n",
         (double)short_ms, (double)long_ms, (double)held_ns / 1e6);
  /* The gate was held at least 50 ms after it started; allow timer
   * granularity but not a missing interval. */
  EXPECT_MSG(long_ms >= 45.0f, "elapsed %g ms around a 50 ms gate",
             (double)long_ms);
  EXPECT(long_ms > short_ms);
  EXPECT_MSG(long_ms < 60000.0f, "elapsed %g ms is implausible",
             (double)long_ms);

  conf_gate_fini(&g);
  EXPECT_OK(weft__event_destroy(&plain));
  EXPECT_OK(weft__event_destroy(&t0));
  EXPECT_OK(weft__event_destroy(&t1));
  EXPECT_OK(weft__event_destroy(&blocking));
  EXPECT(plain == NULL && t0 == NULL);
  EXPECT_OK(weft__stream_destroy(&s));
  conf_close(b);
  return 0;
}
