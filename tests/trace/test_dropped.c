/* Out of memory while tracing: in a fresh traced runtime each time, the
 * k-th allocation the calling thread makes inside one call fails, for
 * every k the call makes (the library's objects are linked with
 * -Wl,--wrap for each allocator, as in unit.alloc_sweep). The calls:
 * - a plain thread's first weft_launch of the trace (the operation, the
 *   kernel's name, the thread's first trace buffer),
 * - a plain thread's first weft_graph_launch of the trace (the replay's
 *   operations, their names, the thread's first trace buffer),
 * - weft_shutdown, which writes the file (the writer's indexes).
 * Whatever failed, the file passes `weft trace check`'s rules (a launch's
 * API call dropped once left its kernel naming a correlation no call had,
 * which the check rejects), says how many records were dropped, and
 * weft_shutdown returns WEFT_ENOMEM, with the count in its message,
 * exactly when that is not 0 (it returned 0). A launch that failed left
 * no kernel in the file. */
#include <errno.h>
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

/* ---- the wrapped allocators: the armed thread's k-th fails ---- */

static _Thread_local int armed;
static _Thread_local long seen, fail_at;

static int should_fail(void) { return armed && ++seen == fail_at; }

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);

void *__wrap_malloc(size_t n) {
  return should_fail() ? NULL : __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size) {
  return should_fail() ? NULL : __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n) {
  return should_fail() ? NULL : __real_realloc(p, n);
}
int __wrap_posix_memalign(void **p, size_t align, size_t n) {
  return should_fail() ? ENOMEM : __real_posix_memalign(p, align, n);
}

static void arm(long k) {
  seen = 0;
  fail_at = k;
  armed = 1;
}

/* Disarms; returns the allocations made while armed. */
static long disarm(void) {
  armed = 0;
  return seen;
}

/* ---- one run ---- */

enum { N = 1024, GRAPH_KERNELS = 3 };
enum { LAUNCH, GRAPH, SHUTDOWN };
static const char *const what_name[] = {"weft_launch", "weft_graph_launch",
                                        "weft_shutdown"};

static test_kernels tk;
static char path[] = "/tmp/weft-dropped-XXXXXX";

static int launch(float *d) {
  int n = N;
  float a = 1, b = 1;
  void *args[] = {&d, &n, &a, &b};
  return weft_launch(&tk.axpb, WEFT_DIM1(N / TEST_THREADS),
                     WEFT_DIM1(TEST_THREADS), 0, args);
}

/* Runs the program with the k-th allocation inside call what failing (0:
 * none); returns how many the call made. Checks the trace. */
typedef struct tally {
  long dropped; /* runs that dropped records */
  long orphans; /* of which the kernels' API call was dropped */
} tally;

static long run(int what, long k, tally *n) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_HOST;
  o.trace_path = path;
  weft_runtime *rt;
  EXPECT_OK(weft_init(&rt, &o));
  float *d;
  EXPECT_OK(weft_device_alloc(N * sizeof(float), (void **)&d));
  weft_graph *g = NULL;
  if (what == GRAPH) {
    EXPECT_OK(weft_graph_begin());
    for (int i = 0; i < GRAPH_KERNELS; i++)
      EXPECT_OK(launch(d));
    EXPECT_OK(weft_graph_end(&g));
  }
  long made = 0;
  int rc = 0;
  if (what != SHUTDOWN) {
    arm(k);
    rc = what == LAUNCH ? launch(d) : weft_graph_launch(g);
    made = disarm();
  } else {
    EXPECT_OK(launch(d));
  }
  EXPECT_OK(weft_sync());
  if (g)
    EXPECT_OK(weft_graph_destroy(g));
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_sync());
  if (what == SHUTDOWN)
    arm(k);
  int src = weft_shutdown(rt);
  if (what == SHUTDOWN)
    made = disarm();
  EXPECT_MSG(src == 0 || src == WEFT_ENOMEM,
             "%s, allocation %ld failing: weft_shutdown: %s: %s",
             what_name[what], k, weft_err_name(src), weft_last_error_message());

  trace_model m;
  trace_error err;
  EXPECT_MSG(trace_model_load_file(&m, path, &err) == 0,
             "%s, allocation %ld failing: %s", what_name[what], k, err.message);
  long problems = trace_compat_problems(stderr, &m, 20);
  EXPECT_MSG(problems == 0,
             "%s, allocation %ld failing: weft trace check finds %ld "
             "problems (above)",
             what_name[what], k, problems);
  EXPECT_MSG(m.dropped >= 0, "no dropped_records in the file");
  EXPECT_MSG((m.dropped > 0) == (src == WEFT_ENOMEM),
             "%s, allocation %ld failing: %lld records dropped, and "
             "weft_shutdown returned %s",
             what_name[what], k, (long long)m.dropped, weft_err_name(src));
  if (src == WEFT_ENOMEM) {
    char count[64];
    snprintf(count, sizeof count, "%lld records dropped", (long long)m.dropped);
    EXPECT_MSG(strstr(weft_last_error_message(), count) != NULL,
               "the message does not say '%s': %s", count,
               weft_last_error_message());
    n->dropped++;
    int orphan = 0; /* a kernel whose API call was dropped */
    for (size_t i = 0; i < m.nops; i++)
      orphan |=
          m.ops[i].kind == TRACE_OP_KERNEL && m.ops[i].launch == TRACE_NO_OP;
    n->orphans += rc == 0 && orphan;
  }
  long want = what == GRAPH ? GRAPH_KERNELS : 1;
  EXPECT_MSG((long)m.count[TRACE_OP_KERNEL] == (rc == 0 ? want : 0),
             "%s, allocation %ld failing (%s): %zu kernels in the trace",
             what_name[what], k, weft_err_name(rc), m.count[TRACE_OP_KERNEL]);
  trace_model_free(&m);
  return made;
}

int main(void) {
  test_kernels_init(&tk);
  traced_temp(path);
  for (int what = LAUNCH; what <= SHUTDOWN; what++) {
    tally n = {0, 0};
    long total = run(what, 0, &n);
    EXPECT_EQ_INT(n.dropped, 0);
    /* Other threads' names can make the tracer's name table grow inside
     * the call in one run and not in another: go some past the count. */
    for (long k = 1; k <= total + 4; k++)
      run(what, k, &n);
    /* The sweep reached the case of the finding: kernels in the file
     * whose API call was dropped. */
    EXPECT_MSG(n.orphans > 0,
               "%s: none of its %ld allocations dropped the API call",
               what_name[what], total);
    printf("%s: %ld allocations, each failed once; %ld runs dropped "
           "records, %ld of them the API call: ok\n",
           what_name[what], total, n.dropped, n.orphans);
  }
  unlink(path);
  return 0;
}
