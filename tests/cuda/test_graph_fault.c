/* A GPU error inside a graph replay reaches the task's next weft_sync, as
 * any GPU error does: a graph of one kernel that writes through an invalid
 * pointer is captured (capturing runs nothing, so it succeeds), replayed,
 * and weft_sync must fail with the device's error. The fault is sticky and
 * ends the CUDA context, so this is the last thing the program does.
 * Skipped (77) without a CUDA device. */
#include <stdio.h>
#include <string.h>

#include "expect.h"
#include "weft.h"

WEFT_CUDA_KERNEL_DECL(weft_test_fault);

static const weft_kernel fault = {.cuda = WEFT_CUDA_KERNEL(weft_test_fault),
                                  .name = "weft_test_fault",
                                  WEFT_KERNEL_ARGS(int *)};

static int sync_rc, end_rc;

static void task(void *arg) {
  (void)arg;
  int *bad = (int *)(uintptr_t)0x10; /* not device memory */
  void *args[] = {&bad};
  weft_graph *g = NULL;
  EXPECT_OK(weft_graph_begin());
  EXPECT_OK(weft_launch(&fault, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  end_rc = weft_graph_end(&g);
  if (end_rc)
    return;
  EXPECT_OK(weft_graph_launch(g));
  sync_rc = weft_sync();
  fprintf(stderr, "weft_sync after the faulting replay: %s: %s\n",
          weft_err_name(sync_rc), weft_last_error_message());
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
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, task, NULL, NULL));
  int join_rc = weft_task_join(t);
  EXPECT_MSG(end_rc == 0, "capturing the faulting kernel failed: %s",
             weft_err_name(end_rc));
  EXPECT_MSG(sync_rc != 0, "weft_sync returned 0 after a faulting replay");
  EXPECT_MSG(join_rc != 0, "the join did not report the task's GPU error");
  /* The context is gone: shutdown is not attempted. */
  puts("ok");
  return 0;
}
