/* Stream priorities: a sane range, clamping of out-of-range requests, and
 * (host backend) higher-priority streams served first.
 *
 * The ordering experiment needs a device that cannot run everything at
 * once. The host backend is opened with one executor thread, which a gate
 * kernel then occupies; work is queued on a low-priority stream first and on
 * a high-priority stream second; when the gate opens the executor must pick
 * the high-priority work first. A GPU runs all of these concurrently, so on
 * CUDA only the range and clamping are checked (tests/cuda checks that the
 * priority reaches the CUDA stream). */
#include "common.h"

static void append(weft__stream *s, int *counter, int *out, int slot) {
  void *args[] = {&counter, &out, &slot};
  EXPECT_OK(
      weft__launch(s, &tk.append_order, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
}

static void check_clamping(weft__backend *b) {
  const weft_device_info *di = conf_info(b);
  weft__stream *s;
  EXPECT_OK(weft__stream_create(b, 0, di->priority_greatest - 100, &s));
  EXPECT_EQ_INT(s->priority, di->priority_greatest);
  EXPECT_OK(weft__stream_destroy(&s));
  EXPECT_OK(weft__stream_create(b, 0, di->priority_least + 100, &s));
  EXPECT_EQ_INT(s->priority, di->priority_least);
  conf_check_works(s);
  EXPECT_OK(weft__stream_destroy(&s));
}

static void check_order(weft__backend *b) {
  const weft_device_info *di = conf_info(b);
  EXPECT_EQ_INT(di->multiprocessors, 1); /* the one executor thread asked for */
  weft__stream *gate_s, *low, *high;
  EXPECT_OK(weft__stream_create(b, 0, di->priority_least, &gate_s));
  EXPECT_OK(weft__stream_create(b, 0, di->priority_least, &low));
  EXPECT_OK(weft__stream_create(b, 0, di->priority_greatest, &high));
  int *mem; /* mem[0]: the counter; mem[1..4]: tickets by slot */
  EXPECT_OK(weft__pinned_alloc(b, 5 * sizeof(int), (void **)&mem));
  for (int i = 0; i < 5; i++)
    mem[i] = i ? -1 : 0;

  conf_gate g;
  conf_gate_init(b, &g);
  conf_gate_launch(&g, gate_s);
  conf_gate_wait_started(&g);
  append(low, mem, mem + 1, 0);
  append(low, mem, mem + 1, 1);
  append(low, mem, mem + 1, 2);
  append(high, mem, mem + 1, 3);
  conf_gate_open(&g);
  EXPECT_OK(weft__stream_sync(low));
  EXPECT_OK(weft__stream_sync(high));
  EXPECT_OK(weft__stream_sync(gate_s));
  int *ticket = mem + 1;
  printf("tickets: low %d %d %d, high %d\n", ticket[0], ticket[1], ticket[2],
         ticket[3]);
  EXPECT_MSG(ticket[3] == 0,
             "the high-priority launch ran %d-th, after "
             "low-priority work queued before it",
             ticket[3] + 1);
  EXPECT_EQ_INT(ticket[0], 1);
  EXPECT_EQ_INT(ticket[1], 2);
  EXPECT_EQ_INT(ticket[2], 3);

  conf_gate_fini(&g);
  EXPECT_OK(weft__pinned_free(b, mem));
  EXPECT_OK(weft__stream_destroy(&gate_s));
  EXPECT_OK(weft__stream_destroy(&low));
  EXPECT_OK(weft__stream_destroy(&high));
}

int main(void) {
  weft__backend *b = conf_open(1);
  const weft_device_info *di = conf_info(b);
  EXPECT_MSG(di->priority_greatest < di->priority_least,
             "priority range %d (least) .. %d (greatest) is empty or inverted",
             di->priority_least, di->priority_greatest);
  check_clamping(b);
  if (conf_kind(b) == WEFT_BACKEND_HOST)
    check_order(b);
  conf_close(b);
  return 0;
}
