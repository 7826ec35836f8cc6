/* The CUDA streams weft creates are non-blocking (they never synchronise
 * with the legacy default stream) and carry the priority asked for, checked
 * through the CUDA runtime itself rather than through weft's own fields;
 * making one or an event, and weft_init, which makes every device's
 * streams ahead, leave the calling thread on the device it was on
 * (weft/cuda.h). With one GPU that check can only find device 0 as it
 * was. Last, the backend opens with completion flags
 * (src/cuda/cuda_completion.c) unless its configuration or WEFT_CUDA_FLAGS=0
 * says otherwise. */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "expect.h"
#define WEFT_INTERNAL_CUDA
#include "weft_internal.h"

static cudaStream_t raw(weft__stream *s) {
  return ((weft__cuda_stream *)s)->cs;
}

int main(void) {
  weft__backend *b = NULL;
  int rc = weft__backend_open(WEFT_BACKEND_CUDA, 0, NULL, &b);
  if (rc == WEFT_ENODEV)
    SKIP(weft_last_error_message());
  EXPECT_OK(rc);

  int least = 0, greatest = 0;
  EXPECT(cudaDeviceGetStreamPriorityRange(&least, &greatest) == cudaSuccess);
  EXPECT_EQ_INT(b->info[0].priority_least, least);
  EXPECT_EQ_INT(b->info[0].priority_greatest, greatest);

  int prios[] = {least, greatest, (least + greatest) / 2, greatest - 7};
  for (size_t i = 0; i < sizeof prios / sizeof prios[0]; i++) {
    weft__stream *s;
    EXPECT_OK(weft__stream_create(b, 0, prios[i], &s));
    unsigned flags = 0;
    int prio = 1;
    EXPECT(cudaStreamGetFlags(raw(s), &flags) == cudaSuccess);
    EXPECT_MSG(flags & cudaStreamNonBlocking, "stream flags 0x%x", flags);
    EXPECT(cudaStreamGetPriority(raw(s), &prio) == cudaSuccess);
    int want = prios[i] < greatest ? greatest : prios[i];
    EXPECT_EQ_INT(prio, want);
    EXPECT_EQ_INT(s->priority, want);
    EXPECT_OK(weft__stream_destroy(&s));
  }
  int ndev = b->ndev;
  for (int cur = 0; cur < ndev; cur++)
    for (int d = 0; d < ndev; d++) {
      EXPECT(cudaSetDevice(cur) == cudaSuccess);
      weft__stream *s;
      EXPECT_OK(weft__stream_create(b, d, least, &s));
      int now = -1;
      EXPECT(cudaGetDevice(&now) == cudaSuccess);
      EXPECT_MSG(now == cur,
                 "making a stream on device %d moved the thread "
                 "from device %d to %d",
                 d, cur, now);
      weft__event *e;
      EXPECT_OK(weft__event_create(b, d, WEFT__EVENT_POLLED, &e));
      EXPECT(cudaGetDevice(&now) == cudaSuccess);
      EXPECT_MSG(now == cur,
                 "making an event on device %d moved the thread "
                 "from device %d to %d",
                 d, cur, now);
      EXPECT_OK(weft__event_destroy(&e));
      EXPECT_OK(weft__stream_destroy(&s));
    }
  EXPECT_OK(weft__backend_close(b));

  EXPECT(cudaSetDevice(ndev - 1) == cudaSuccess);
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_CUDA;
  weft_runtime *rt;
  EXPECT_OK(weft_init(&rt, &o));
  int now = -1;
  EXPECT(cudaGetDevice(&now) == cudaSuccess);
  EXPECT_MSG(now == ndev - 1, "weft_init moved the thread from device %d to %d",
             ndev - 1, now);
  EXPECT_OK(weft_shutdown(rt));

  /* Completion flags: on by default, off on request, and the variable
   * read by weft_init. The machine may lack cuStreamWriteValue32 or
   * mapped memory, which leaves them off: only "off" is checked there. */
  EXPECT_OK(weft__backend_open(WEFT_BACKEND_CUDA, 0, NULL, &b));
  int have = ((weft__cuda_backend *)b)->flags != NULL;
  EXPECT_OK(weft__backend_close(b));
  weft__backend_config off = {.host_devices = 1, .cuda_no_flags = 1};
  EXPECT_OK(weft__backend_open(WEFT_BACKEND_CUDA, 0, &off, &b));
  EXPECT_MSG(((weft__cuda_backend *)b)->flags == NULL,
             "cuda_no_flags left completion flags on");
  EXPECT_OK(weft__backend_close(b));
  const char *had = getenv("WEFT_CUDA_FLAGS");
  char saved[8] = "";
  if (had)
    snprintf(saved, sizeof saved, "%s", had);
  const char *env[] = {"0", "1"};
  for (int i = 0; i < 2; i++) {
    EXPECT(setenv("WEFT_CUDA_FLAGS", env[i], 1) == 0);
    EXPECT_OK(weft_init(&rt, &o));
    int on = ((weft__cuda_backend *)weft__runtime_backend(rt))->flags != NULL;
    EXPECT_MSG(on == (i == 1 && have), "WEFT_CUDA_FLAGS=%s: flags %s", env[i],
               on ? "on" : "off");
    EXPECT_OK(weft_shutdown(rt));
  }
  EXPECT((had ? setenv("WEFT_CUDA_FLAGS", saved, 1)
              : unsetenv("WEFT_CUDA_FLAGS")) == 0);
  if (!have)
    puts("completion flags unavailable here: only 'off' was checked");
  return 0;
}
