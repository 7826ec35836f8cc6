/* weft check's CUDA side: raw CUDA runtime calls inside a task, seen through
 * CUPTI. A task's cudaMalloc and cudaDeviceSynchronize are implicit
 * synchronisations while another task is alive, and so is a cudaMemcpyAsync
 * from or to pageable memory on the task's own stream; a launch on the legacy
 * default stream is reported as such, each naming the task; the twins (the
 * synchronisations from the only task alive, the same calls from the plain
 * thread, a launch and copies from pinned memory on weft_cuda_stream(), the
 * same calls in another runtime that has weft check off) are silent, and so are
 * weft's own calls (weft_pinned_alloc hits, weft_cublas's workspace). Skipped
 * (77) without a CUDA device. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "expect.h"
#include "weft.h"
#include "weft/cuda.h"
#include "weft_internal.h"

void weft_test_nop_on(cudaStream_t s);

static _Atomic int raw_done;

static void raw_calls_task(void *arg) {
  (void)arg;
  void *p = NULL;
  EXPECT(cudaMalloc(&p, 4096) == cudaSuccess);
  EXPECT(cudaFree(p) == cudaSuccess);
  weft_test_nop_on(0); /* the legacy default stream */
  EXPECT(cudaDeviceSynchronize() == cudaSuccess);
  raw_done = 1;
}

/* cudaMemcpyAsync on the task's own stream, from pageable memory: it
 * holds the thread. */
static void pageable_copy_task(void *arg) {
  (void)arg;
  static char host[1 << 16];
  void *d = NULL;
  EXPECT_OK(weft_device_alloc(sizeof host, &d));
  EXPECT(cudaMemcpyAsync(d, host, sizeof host, cudaMemcpyHostToDevice,
                         weft_cuda_stream()) == cudaSuccess);
  EXPECT(cudaMemcpyAsync(host, d, sizeof host, cudaMemcpyDeviceToHost,
                         weft_cuda_stream()) == cudaSuccess);
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_device_free(d));
  raw_done = 1;
}

/* Alive while the task under test runs: a task its implicit
 * synchronisations could stall (with none, they are not reported). */
static void bystander_task(void *arg) {
  (void)arg;
  while (!raw_done)
    weft_yield();
}

/* The twins: a launch and copies from pinned memory on the task's stream
 * (the pinned block allocated before the task). */
static void *pinned_block;

static void good_task(void *arg) {
  (void)arg;
  weft_test_nop_on(weft_cuda_stream());
  void *d = NULL;
  EXPECT_OK(weft_device_alloc(4096, &d));
  EXPECT(cudaMemcpyAsync(d, pinned_block, 4096, cudaMemcpyHostToDevice,
                         weft_cuda_stream()) == cudaSuccess);
  EXPECT(cudaMemcpyAsync(pinned_block, d, 4096, cudaMemcpyDeviceToHost,
                         weft_cuda_stream()) == cudaSuccess);
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_device_free(d));
  raw_done = 1;
}

/* IN_OTHER_RUNTIME: the task and its bystander in a second runtime, one
 * with weft check off, open beside the checked one (CUPTI sees the whole
 * process; what it sees there is not the checked runtime's). */
enum { IN_TASK, IN_LONE_TASK, ON_THREAD, IN_OTHER_RUNTIME };

static size_t run(weft_task_fn fn, const char *name, char *out, size_t len,
                  int where) {
  FILE *f = tmpfile();
  EXPECT(f != NULL);
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_CUDA;
  o.check = 1;
  weft_runtime *rt;
  EXPECT_OK(weft_init(&rt, &o));
  weft__checker *k = weft__runtime_backend(rt)->check;
  weft__check_set_output(k, f);
  EXPECT_OK(weft_pinned_alloc(4096, &pinned_block));
  weft_runtime *run_in = rt, *other = NULL;
  if (where == IN_OTHER_RUNTIME) {
    weft_runtime_opts oo = o;
    oo.check = 0;
    EXPECT_OK(weft_init(&other, &oo));
    run_in = other;
  }
  if (where == ON_THREAD) {
    fn(NULL);
  } else {
    weft_task_opts to;
    weft_task_opts_init(&to);
    to.name = name;
    weft_task *t, *b = NULL;
    raw_done = 0;
    if (where != IN_LONE_TASK)
      EXPECT_OK(weft_task_spawn(run_in, &b, bystander_task, NULL, NULL));
    EXPECT_OK(weft_task_spawn(run_in, &t, fn, NULL, &to));
    EXPECT_OK(weft_task_join(t));
    raw_done = 1;
    if (b)
      EXPECT_OK(weft_task_join(b));
  }
  if (other)
    EXPECT_OK(weft_shutdown(other));
  size_t n = weft__check_findings(k);
  EXPECT_OK(weft_pinned_free(pinned_block));
  EXPECT_OK(weft_shutdown(rt));
  rewind(f);
  size_t got = fread(out, 1, len - 1, f);
  out[got] = '\0';
  fclose(f);
  return n;
}

int main(void) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_CUDA;
  weft_runtime *rt;
  int rc = weft_init(&rt, &o);
  if (rc == WEFT_ENODEV)
    SKIP("no CUDA device");
  EXPECT_OK(rc);
  EXPECT_OK(weft_shutdown(rt));

  char out[16384];
  size_t n = run(raw_calls_task, "raw-caller", out, sizeof out, IN_TASK);
  if (strstr(out, "CUPTI is not available")) {
    puts("CUPTI taken by another tool: the raw-call checks are skipped");
    return 77;
  }
  EXPECT_MSG(n >= 4 && strstr(out, "implicit sync: cudaMalloc") &&
                 strstr(out, "implicit sync: cudaDeviceSynchronize") &&
                 strstr(out, "default stream: cudaLaunchKernel") &&
                 strstr(out, "'raw-caller'"),
             "%zu findings, not cudaMalloc, cudaFree, a default-stream "
             "launch and cudaDeviceSynchronize from 'raw-caller': %s",
             n, out);
  /* Alone, its synchronisations stall nothing; the default-stream launch
   * is still wrong (weft_sync does not wait for it). */
  n = run(raw_calls_task, "raw-caller", out, sizeof out, IN_LONE_TASK);
  EXPECT_MSG(n == 1 && strstr(out, "default stream: cudaLaunchKernel"),
             "the only task alive: %zu findings, not the default-stream "
             "launch alone: %s",
             n, out);
  n = run(pageable_copy_task, "pageable", out, sizeof out, IN_TASK);
  EXPECT_MSG(n == 2 && strstr(out, "implicit sync: cudaMemcpyAsync") &&
                 strstr(out, "'pageable'"),
             "pageable cudaMemcpyAsync on the task's stream: %zu findings, "
             "not the two copies: %s",
             n, out);
  EXPECT_MSG(
      run(raw_calls_task, "raw-caller", out, sizeof out, IN_OTHER_RUNTIME) == 0,
      "raw calls in a runtime without weft check reported by the "
      "checked one: %s",
      out);
  EXPECT_MSG(run(raw_calls_task, NULL, out, sizeof out, ON_THREAD) == 0,
             "raw calls from the plain thread reported: %s", out);
  EXPECT_MSG(run(good_task, "good", out, sizeof out, IN_TASK) == 0,
             "a launch on the task's stream reported: %s", out);
  puts("ok");
  return 0;
}
