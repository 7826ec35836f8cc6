/* Kernel names in a trace are the tracer's own copies, on the host
 * backend (CUDA traces name kernels from CUPTI):
 * - a kernel description whose name the program frees once its work is
 *   synced still appears under that name in the file weft_shutdown
 *   writes (the name is overwritten before the free, so that a kept
 *   pointer shows as a wrong name without ASan too; under ASan it is a
 *   use after free);
 * - one buffer given other content for a second launch names that launch
 *   with the new content (the copies are found by pointer and content);
 * - a graph captured with a heap name, freed before the graph is
 *   replayed, names the replays' kernels (the graph keeps a copy).
 * The file passes `weft trace check`'s rules. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"
#include "compat.h"
#include "conformance/kernels.h"
#include "expect.h"
#include "traced_host.h"
#include "weft.h"

enum { N = 1024, REPLAYS = 3 };

static test_kernels tk;

/* Overwrites s, then frees it: what a program does with a name it no
 * longer needs, made visible. */
static void scrub_free(char *s) {
  memset(s, 'X', strlen(s));
  free(s);
}

static void launch_named(const char *name, float *d) {
  weft_kernel k = tk.axpb;
  k.name = name;
  int n = N;
  float a = 1, b = 1;
  void *args[] = {&d, &n, &a, &b};
  EXPECT_OK(weft_launch(&k, WEFT_DIM1(N / TEST_THREADS),
                        WEFT_DIM1(TEST_THREADS), 0, args));
}

/* Kernel records in m named name. */
static size_t kernels_named(const trace_model *m, const char *name) {
  size_t n = 0;
  for (size_t i = 0; i < m->nops; i++)
    n += m->ops[i].kind == TRACE_OP_KERNEL &&
         strcmp(trace_model_str(m, m->ops[i].name), name) == 0;
  return n;
}

int main(void) {
  test_kernels_init(&tk);
  char path[] = "/tmp/weft-names-XXXXXX";
  traced_temp(path);
  weft_runtime *rt = traced_host_open(path, 0);
  float *d;
  EXPECT_OK(weft_device_alloc(N * sizeof(float), (void **)&d));

  char *name = strdup("heap_kernel_first");
  EXPECT(name != NULL);
  launch_named(name, d);
  EXPECT_OK(weft_sync());
  strcpy(name, "heap_kernel_again"); /* same buffer, same length */
  launch_named(name, d);
  EXPECT_OK(weft_sync());
  scrub_free(name);

  char *gname = strdup("graph_kernel");
  EXPECT(gname != NULL);
  weft_graph *g;
  EXPECT_OK(weft_graph_begin());
  launch_named(gname, d);
  EXPECT_OK(weft_graph_end(&g));
  scrub_free(gname);
  for (int r = 0; r < REPLAYS; r++)
    EXPECT_OK(weft_graph_launch(g));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_graph_destroy(g));

  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_shutdown(rt));

  trace_model m;
  trace_error err;
  EXPECT_MSG(trace_model_load_file(&m, path, &err) == 0, "%s", err.message);
  EXPECT_EQ_INT((long long)m.count[TRACE_OP_KERNEL], 2 + REPLAYS);
  EXPECT_EQ_INT((long long)kernels_named(&m, "heap_kernel_first"), 1);
  EXPECT_EQ_INT((long long)kernels_named(&m, "heap_kernel_again"), 1);
  EXPECT_EQ_INT((long long)kernels_named(&m, "graph_kernel"), REPLAYS);
  EXPECT_EQ_INT(m.dropped, 0);
  EXPECT_EQ_INT(trace_compat_problems(stderr, &m, 20), 0);
  trace_model_free(&m);
  unlink(path);
  puts("kernel names: the tracer's copies: ok");
  return 0;
}
