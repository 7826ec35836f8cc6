/* weft check's CUPTI subscriber with two checked runtimes open at once: the
 * second cannot subscribe (CUPTI takes one subscriber per process), and its
 * shutdown must not take the first one's subscription with it. Runtime A
 * (checked, subscribed) stays open while checked runtime B opens and shuts
 * down; a raw cudaMalloc in a task of A, with a bystander alive, must still
 * be reported by A, and once both are shut down a third checked runtime
 * must be able to subscribe. Skipped (77) without a CUDA device, or when
 * another tool holds CUPTI (A alone then sees nothing either). */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "expect.h"
#include "weft.h"
#include "weft_internal.h"

static _Atomic int raw_done;

static void raw_malloc_task(void *arg) {
  (void)arg;
  void *p = NULL;
  EXPECT(cudaMalloc(&p, 4096) == cudaSuccess);
  EXPECT(cudaFree(p) == cudaSuccess);
  raw_done = 1;
}

static void bystander_task(void *arg) {
  (void)arg;
  while (!raw_done)
    weft_yield();
}

/* Findings of a raw cudaMalloc in a task of rt, with a bystander. */
static size_t raw_findings(weft_runtime *rt) {
  weft__checker *k = weft__runtime_backend(rt)->check;
  size_t before = weft__check_findings(k);
  weft_task *t, *b;
  raw_done = 0;
  EXPECT_OK(weft_task_spawn(rt, &b, bystander_task, NULL, NULL));
  EXPECT_OK(weft_task_spawn(rt, &t, raw_malloc_task, NULL, NULL));
  EXPECT_OK(weft_task_join(t));
  raw_done = 1;
  EXPECT_OK(weft_task_join(b));
  return weft__check_findings(k) - before;
}

static weft_runtime *open_checked(FILE *out) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_CUDA;
  o.check = 1;
  weft_runtime *rt;
  EXPECT_OK(weft_init(&rt, &o));
  weft__check_set_output(weft__runtime_backend(rt)->check, out);
  return rt;
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

  FILE *fa = tmpfile(), *fb = tmpfile();
  EXPECT(fa && fb);
  weft_runtime *a = open_checked(fa);
  size_t alone = raw_findings(a);
  if (alone == 0) {
    EXPECT_OK(weft_shutdown(a));
    puts("CUPTI taken by another tool: the raw-call checks are skipped");
    return 77;
  }

  weft_runtime *b = open_checked(fb); /* cannot subscribe: A holds CUPTI */
  EXPECT_OK(weft_shutdown(b));
  size_t after = raw_findings(a);
  EXPECT_MSG(after >= 1,
             "a raw cudaMalloc in checked runtime A was reported %zu times "
             "alone, %zu times after checked runtime B opened and shut "
             "down: B's shutdown unsubscribed A's CUPTI watcher",
             alone, after);
  EXPECT_OK(weft_shutdown(a));
  /* Both shut down: the subscription must be gone with them, so that a
   * checked runtime opened now can subscribe (a subscription left behind
   * would also call back into A's freed checker). */
  FILE *fc = tmpfile();
  EXPECT(fc);
  weft_runtime *c = open_checked(fc);
  size_t fresh = raw_findings(c);
  EXPECT_MSG(fresh >= 1,
             "a checked runtime opened after A and B shut down reported a "
             "raw cudaMalloc %zu times: the CUPTI subscription was left "
             "behind",
             fresh);
  EXPECT_OK(weft_shutdown(c));
  fclose(fa);
  fclose(fb);
  fclose(fc);
  puts("ok");
  return 0;
}
