/* Stream-ordered device memory: memory freed on a stream is reused only
 * after the work queued before the free. Many rounds of alloc, fill,
 * download, free are queued without any sync; if a later round got memory
 * still in use by an earlier one, a download would see the later fill.
 * Across streams: a free queued behind a closed gate must not let another
 * stream's allocation take (and overwrite) memory that the gated work is
 * still to read. */
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum { ROUNDS = 64, MAXN = 1000 + ROUNDS * 37, CROSS_N = 64 * 1024 };

static size_t round_size(int r) { return 1000 + (size_t)r * 37; }

static void cross_stream_reuse(weft__backend *b, weft__stream *sa) {
  weft__stream *sb;
  weft__event *ev;
  EXPECT_OK(weft__stream_create(b, 0, 0, &sb));
  EXPECT_OK(weft__event_create(b, 0, 0, &ev));
  unsigned char *d, *d2, *ha, *hb;
  EXPECT_OK(weft__pinned_alloc(b, CROSS_N, (void **)&ha));
  EXPECT_OK(weft__pinned_alloc(b, CROSS_N, (void **)&hb));
  memset(ha, 0, CROSS_N);
  EXPECT_OK(weft__device_alloc(sa, CROSS_N, (void **)&d));
  EXPECT_OK(weft__memset(sa, d, 1, CROSS_N));
  EXPECT_OK(weft__stream_sync(sa));

  conf_gate g;
  conf_gate_init(b, &g);
  conf_gate_launch(&g, sa);
  EXPECT_OK(weft__copy(sa, ha, d, CROSS_N, WEFT__COPY_D2H));
  EXPECT_OK(weft__device_free(sa, d)); /* queued behind the gate */
  EXPECT_OK(weft__device_alloc(sb, CROSS_N, (void **)&d2));
  EXPECT_OK(weft__memset(sb, d2, 2, CROSS_N));
  EXPECT_OK(weft__copy(sb, hb, d2, CROSS_N, WEFT__COPY_D2H));
  EXPECT_OK(weft__event_record(ev, sb));
  /* B may finish now, or (CUDA's pool may make the allocation wait for the
   * free it reuses) only after A: give it a moment either way, then open
   * the gate. Memory reused too early would by then hold B's 2s. */
  int rc = conf_poll_event(ev, 200);
  conf_gate_open(&g);
  EXPECT(rc == 0 || rc == WEFT_EAGAIN);
  EXPECT_OK(weft__stream_sync(sb));
  EXPECT_OK(weft__stream_sync(sa));
  EXPECT_EQ_INT(conf_gate_state(&g), TEST_SPIN_RELEASED);
  printf("cross-stream: freed %p behind the gate, other stream got %p\n",
         (void *)d, (void *)d2);
  for (size_t i = 0; i < CROSS_N; i++) {
    EXPECT_MSG(ha[i] == 1,
               "byte %zu read by the gated stream is %d: its "
               "memory was reused before its free completed",
               i, ha[i]);
    EXPECT_EQ_INT(hb[i], 2);
  }
  conf_gate_fini(&g);
  EXPECT_OK(weft__device_free(sb, d2));
  EXPECT_OK(weft__stream_sync(sb));
  EXPECT_OK(weft__pinned_free(b, ha));
  EXPECT_OK(weft__pinned_free(b, hb));
  EXPECT_OK(weft__event_destroy(&ev));
  EXPECT_OK(weft__stream_destroy(&sb));
}

int main(void) {
  weft__backend *b = conf_open(0);
  weft__stream *s;
  EXPECT_OK(weft__stream_create(b, 0, 0, &s));
  unsigned char *h;
  EXPECT_OK(weft__pinned_alloc(b, (size_t)ROUNDS * MAXN, (void **)&h));
  memset(h, 0, (size_t)ROUNDS * MAXN);

  for (int r = 0; r < ROUNDS; r++) {
    void *d;
    EXPECT_OK(weft__device_alloc(s, round_size(r), &d));
    EXPECT_OK(weft__memset(s, d, r + 1, round_size(r)));
    EXPECT_OK(
        weft__copy(s, h + (size_t)r * MAXN, d, round_size(r), WEFT__COPY_D2H));
    EXPECT_OK(weft__device_free(s, d));
  }
  EXPECT_OK(weft__stream_sync(s));
  for (int r = 0; r < ROUNDS; r++)
    for (size_t i = 0; i < round_size(r); i++)
      EXPECT_MSG(h[(size_t)r * MAXN + i] == r + 1,
                 "round %d, byte %zu is %d: memory reused too early", r, i,
                 h[(size_t)r * MAXN + i]);

  /* Alloc, use, free, alloc again (likely the same memory), use. */
  int *d1, *d2, out[2] = {0, 0}, v1 = 11, v2 = 22;
  EXPECT_OK(weft__device_alloc(s, sizeof(int), (void **)&d1));
  void *a1[] = {&d1, &v1};
  EXPECT_OK(weft__launch(s, &tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, a1));
  EXPECT_OK(weft__copy(s, &out[0], d1, sizeof(int), WEFT__COPY_D2H));
  EXPECT_OK(weft__device_free(s, d1));
  EXPECT_OK(weft__device_alloc(s, sizeof(int), (void **)&d2));
  void *a2[] = {&d2, &v2};
  EXPECT_OK(weft__launch(s, &tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, a2));
  EXPECT_OK(weft__copy(s, &out[1], d2, sizeof(int), WEFT__COPY_D2H));
  EXPECT_OK(weft__stream_sync(s));
  EXPECT_EQ_INT(out[0], 11);
  EXPECT_EQ_INT(out[1], 22);
  EXPECT_OK(weft__device_free(s, d2));

  /* A large block: allocated, touched at both ends, freed. */
  size_t big = (size_t)64 << 20;
  unsigned char *dbig, ends[2] = {0, 0};
  EXPECT_OK(weft__device_alloc(s, big, (void **)&dbig));
  EXPECT_OK(weft__memset(s, dbig, 0x3c, big));
  EXPECT_OK(weft__copy(s, &ends[0], dbig, 1, WEFT__COPY_D2H));
  EXPECT_OK(weft__copy(s, &ends[1], dbig + big - 1, 1, WEFT__COPY_D2H));
  EXPECT_OK(weft__device_free(s, dbig));
  EXPECT_OK(weft__stream_sync(s));
  EXPECT(ends[0] == 0x3c && ends[1] == 0x3c);

  /* A gate occupies a host executor thread; another one must be left. */
  if (conf_kind(b) != WEFT_BACKEND_HOST || conf_info(b)->multiprocessors > 1)
    cross_stream_reuse(b, s);

  /* The registry counts exactly what is live: here, only h. */
  weft__backend_counts c;
  weft__backend_get_counts(b, &c);
  EXPECT_EQ_INT(c.pinned_allocs, 1);
  EXPECT_EQ_INT(c.device_allocs, 0);
  EXPECT_OK(weft__pinned_free(b, h));
  EXPECT_OK(weft__stream_destroy(&s));
  conf_close(b);
  return 0;
}
