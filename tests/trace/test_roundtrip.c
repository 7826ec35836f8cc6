/* Export, then re-import: a traced run of the runtime on the host backend
 * writes a trace that the trace reader loads, with every GPU operation the
 * program queued present once, attributed to the task that queued it and
 * matched to the call that queued it, and every task's run slices there.
 * Names are written as UTF-8 the reader accepts: a task name longer than
 * weft keeps is cut at a character's edge, and a kernel name that is not
 * UTF-8 is written with U+FFFD for its bad bytes. A second runtime, not
 * traced, works all the while and after the traced one has shut down: none
 * of its tasks or operations may appear in the trace (its threads once
 * wrote into the tracer's freed buffers). The file reads as PyTorch's do
 * for HTA and Perfetto: plain CUDA names for the calls, a rank and the
 * devices in the header, a launch arrow (ac2g flow) per GPU op, and slices
 * that nest on every CPU lane. A graph's replays are cudaGraphLaunch calls
 * whose ops carry the graph's id and share the call's correlation, with
 * one arrow per replay, and the report counts them. With two emulated
 * devices, each device's operations are on its own lanes and a copy
 * between the devices' memory is a PtoP copy. In an MPI job (the
 * launcher's variables) each rank writes its own file, its rank in the
 * header. */
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"
#include "compat.h"
#include "conformance/kernels.h"
#include "expect.h"
#include "trace.h"
#include "trace_buffers.h"
#include "traced_host.h"
#include "weft.h"

enum { TASKS = 4, LAUNCHES = 5, N = 1024, GRAPH_KERNELS = 3, REPLAYS = 4 };

test_kernels tk;

typedef struct job {
  float *host;
  uint64_t id;
} job;

/* 20 two-byte characters: more than the 31 bytes a task name keeps. */
static const char long_name[] = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3"
                                "\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                                "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3"
                                "\xa9\xc3\xa9\xc3\xa9\xc3\xa9";
static weft_kernel bad_name; /* axpb, named in Latin-1 */

static void work(void *arg) {
  job *j = arg;
  float *d;
  int n = N;
  EXPECT_OK(weft_device_alloc(N * sizeof(float), (void **)&d));
  EXPECT_OK(weft_copy(d, j->host, N * sizeof(float)));
  for (int i = 0; i < LAUNCHES; i++) {
    float a = 2, b = 1;
    void *args[] = {&d, &a, &b, &n};
    EXPECT_OK(weft_launch(i == 0 ? &bad_name : &tk.axpb, WEFT_DIM1(N / 256),
                          WEFT_DIM1(256), 0, args));
  }
  EXPECT_OK(weft_copy(j->host, d, N * sizeof(float)));
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_sync());
}

/* A graph of GRAPH_KERNELS launches, replayed REPLAYS times; then a
 * device sync. */
static void graph_work(void *arg) {
  (void)arg;
  float *d;
  int n = N;
  float a = 1, b = 1;
  void *args[] = {&d, &n, &a, &b};
  EXPECT_OK(weft_device_alloc(N * sizeof(float), (void **)&d));
  weft_graph *g;
  EXPECT_OK(weft_graph_begin());
  for (int i = 0; i < GRAPH_KERNELS; i++)
    EXPECT_OK(
        weft_launch(&tk.axpb, WEFT_DIM1(N / 256), WEFT_DIM1(256), 0, args));
  EXPECT_OK(weft_graph_end(&g));
  for (int r = 0; r < REPLAYS; r++)
    EXPECT_OK(weft_graph_launch(g));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_graph_destroy(g));
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_device_sync()); /* a call record, as CUDA's */
}

/* The untraced runtime's work: memsets and launches of its own. */
static void other_work(void *arg) {
  float *d;
  int n = N;
  (void)arg;
  EXPECT_OK(weft_device_alloc(N * sizeof(float), (void **)&d));
  for (int i = 0; i < 3; i++) {
    float a = 1, b = 0;
    void *args[] = {&d, &a, &b, &n};
    EXPECT_OK(weft_memset(d, 0, N * sizeof(float)));
    EXPECT_OK(
        weft_launch(&tk.axpb, WEFT_DIM1(N / 256), WEFT_DIM1(256), 0, args));
  }
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_sync());
}

static void other_round(weft_runtime *other) {
  weft_task *t[8];
  for (int i = 0; i < 8; i++)
    EXPECT_OK(weft_task_spawn(other, &t[i], other_work, NULL, NULL));
  for (int i = 0; i < 8; i++)
    EXPECT_OK(weft_task_join(t[i]));
}

/* The file's text, for what the model does not keep. */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  EXPECT(f != NULL);
  EXPECT(fseek(f, 0, SEEK_END) == 0);
  long n = ftell(f);
  EXPECT(n > 0);
  rewind(f);
  char *buf = malloc((size_t)n + 1);
  EXPECT(buf != NULL);
  EXPECT(fread(buf, 1, (size_t)n, f) == (size_t)n);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static size_t count_of(const char *text, const char *what) {
  size_t n = 0;
  for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
    n++;
  return n;
}

/* Slices on one CPU lane nest: each starts and ends within any it starts
 * in (the ops are sorted by start). */
static void check_nesting(const trace_model *m) {
  for (uint32_t lane = 0; lane < m->nthreads; lane++) {
    double end[64];
    int depth = 0;
    for (size_t i = 0; i < m->nops; i++) {
      const trace_op *op = &m->ops[i];
      if (trace_op_is_gpu(op) || op->lane != lane)
        continue;
      while (depth > 0 && end[depth - 1] <= op->ts + 1e-6)
        depth--;
      EXPECT_MSG(depth == 0 || op->ts + op->dur <= end[depth - 1] + 1e-6,
                 "lane %u: a slice at %.3f us ends %.3f us after the slice "
                 "it starts in",
                 lane, op->ts, op->ts + op->dur - end[depth - 1]);
      if (depth < 64)
        end[depth++] = op->ts + op->dur;
    }
  }
}

/* The writer's clamping, on records made by hand: CUPTI's clock can put
 * an API call's end inside the task slice that follows it on its thread
 * (a poller's query, between two tasks), or past the end of the slice that
 * holds it. Both must be written nested. */
static void clamped_calls(void) {
  char path[] = "/tmp/weft-clamp-XXXXXX";
  traced_temp(path);
  static int owner;
  weft_device_info dev = {0};
  EXPECT_OK(weft__trace_open(path, "host", &owner, &dev, 1));
  uint32_t lane = weft__trace_thread_lane();
  uint64_t t = weft__clock_ns();
  weft__trace_rec task = {.start = t + 100000,
                          .end = t + 200000,
                          .task = 7,
                          .lane = lane,
                          .kind = WEFT__TR_TASK};
  weft__trace_rec before = {.start = t + 90000,
                            .end = t + 100900, /* 0.9 us into the slice */
                            .lane = lane,
                            .name = "cudaEventQuery",
                            .kind = WEFT__TR_API};
  weft__trace_rec inside = {.start = t + 150000,
                            .end = t + 200160, /* 0.16 us past its end */
                            .lane = lane,
                            .task = 7,
                            .name = "cudaLaunchKernel",
                            .kind = WEFT__TR_API};
  weft__trace_emit(&before);
  weft__trace_emit(&task);
  weft__trace_emit(&inside);
  EXPECT_OK(weft__trace_close());
  trace_model m;
  trace_error err;
  EXPECT_MSG(trace_model_load_file(&m, path, &err) == 0, "%s", err.message);
  check_nesting(&m);
  trace_model_free(&m);
  unlink(path);
}

/* A finding of weft check is an instant event in the trace (cat
 * weft_check), which the reader counts and the checker's rules accept. */
static float *shared_buf;
static int met, synced;
static void racer(void *arg) {
  (void)arg;
  EXPECT_OK(weft_memset(shared_buf, 0, N * sizeof(float)));
  __atomic_add_fetch(&met, 1, __ATOMIC_ACQ_REL);
  while (__atomic_load_n(&met, __ATOMIC_ACQUIRE) < 2)
    weft_yield(); /* both hold their streams: no stream order between */
  while (!__atomic_load_n(&synced, __ATOMIC_ACQUIRE))
    weft_yield(); /* alive, so that the syncer's wait could stall us */
  EXPECT_OK(weft_sync());
}

static void syncer(void *arg) {
  (void)arg;
  while (__atomic_load_n(&met, __ATOMIC_ACQUIRE) < 2)
    weft_yield();
  EXPECT_OK(weft_device_sync()); /* an implicit sync: reported with its time */
  __atomic_store_n(&synced, 1, __ATOMIC_RELEASE);
}

static void checked_findings(void) {
  char path[] = "/tmp/weft-checked-XXXXXX";
  traced_temp(path);
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_HOST;
  o.trace_path = path;
  o.check = 1;
  o.workers = 2;
  o.host_threads = 1; /* the planted race is real: one executor runs both */
  /* The planted race's line would read as a finding of the suite's own
   * (CI runs the suite under WEFT_CHECK=1 and fails on any). */
  fflush(stderr);
  int saved = dup(2), null = open("/dev/null", O_WRONLY);
  EXPECT(saved >= 0 && null >= 0 && dup2(null, 2) == 2);
  close(null);
  weft_runtime *rt;
  EXPECT_OK(weft_init(&rt, &o));
  EXPECT_OK(weft_device_alloc(N * sizeof(float), (void **)&shared_buf));
  EXPECT_OK(weft_sync());
  weft_task *a, *b, *sy;
  EXPECT_OK(weft_task_spawn(rt, &a, racer, NULL, NULL));
  EXPECT_OK(weft_task_spawn(rt, &b, racer, NULL, NULL));
  EXPECT_OK(weft_task_spawn(rt, &sy, syncer, NULL, NULL));
  EXPECT_OK(weft_task_join(a));
  EXPECT_OK(weft_task_join(b));
  EXPECT_OK(weft_task_join(sy));
  EXPECT_OK(weft_device_free(shared_buf));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_shutdown(rt));
  fflush(stderr);
  EXPECT(dup2(saved, 2) == 2);
  close(saved);
  trace_model m;
  trace_error err;
  EXPECT_MSG(trace_model_load_file(&m, path, &err) == 0, "%s", err.message);
  EXPECT_EQ_INT((int)m.checks, 2);
  EXPECT_EQ_INT((int)m.check_races, 1);
  EXPECT_EQ_INT((int)m.check_syncs, 1);
  EXPECT_MSG(m.check_stall_us > 0, "the implicit sync carried no stall time");
  check_nesting(&m);
  EXPECT_EQ_INT((int)trace_compat_problems(stderr, &m, 20), 0);
  trace_model_free(&m);
  unlink(path);
}

/* ---- two emulated devices: a lane per device, a copy between them ---- */

static float *dev0_buf;

static void dev0_fill(void *arg) {
  (void)arg;
  EXPECT_OK(weft_device_alloc(N * sizeof(float), (void **)&dev0_buf));
  EXPECT_OK(weft_memset(dev0_buf, 0, N * sizeof(float)));
  EXPECT_OK(weft_sync());
}

static void dev1_copy(void *arg) {
  (void)arg;
  float *mine;
  EXPECT_OK(weft_device_alloc(N * sizeof(float), (void **)&mine));
  EXPECT_OK(weft_copy(mine, dev0_buf, N * sizeof(float)));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_device_free(mine));
}

static void dev0_free(void *arg) {
  (void)arg;
  EXPECT_OK(weft_device_free(dev0_buf));
}

static void on(weft_runtime *rt, int dev, weft_task_fn fn) {
  weft_task_opts to;
  weft_task_opts_init(&to);
  to.device = dev;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, fn, NULL, &to));
  EXPECT_OK(weft_task_join(t));
}

/* Each device's operations on lanes of that device, and the copy from
 * device 0's memory to device 1's written as PtoP (Kineto's name), which
 * the report counts in its own row. */
static void two_devices(void) {
  char path[] = "/tmp/weft-twodev-XXXXXX";
  traced_temp(path);
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_HOST;
  o.host_devices = 2;
  o.trace_path = path;
  weft_runtime *rt;
  EXPECT_OK(weft_init(&rt, &o));
  on(rt, 0, dev0_fill);
  on(rt, 1, dev1_copy);
  on(rt, 0, dev0_free);
  EXPECT_OK(weft_shutdown(rt));
  trace_model m;
  trace_error err;
  EXPECT_MSG(trace_model_load_file(&m, path, &err) == 0, "%s", err.message);
  size_t ptop = 0, memsets_on_0 = 0;
  for (size_t i = 0; i < m.nops; i++) {
    const trace_op *op = &m.ops[i];
    if (op->kind == TRACE_OP_MEMCPY && op->copy == TRACE_COPY_PTOP) {
      ptop++;
      EXPECT_MSG(m.gpu_lanes[op->lane].device == 1,
                 "the copy into device 1's memory is on device %lld's lane",
                 (long long)m.gpu_lanes[op->lane].device);
    }
    if (op->kind == TRACE_OP_MEMSET)
      memsets_on_0 += m.gpu_lanes[op->lane].device == 0;
  }
  EXPECT_MSG(ptop == 1, "%zu PtoP copies in the trace, want 1", ptop);
  EXPECT_EQ_INT((int)memsets_on_0, 1);
  trace_model_free(&m);
  unlink(path);
}

/* ---- ranks: a trace file per rank, its rank in the header ---- */

static void traced_once(const char *path) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_HOST;
  o.trace_path = path;
  weft_runtime *rt;
  EXPECT_OK(weft_init(&rt, &o));
  EXPECT_OK(weft_shutdown(rt));
}

/* As Open MPI's launcher sets them for rank 2 of 4: %r is replaced, a
 * path without it gets -rank2 before .json, and the file says rank 2 of
 * 4 in distributedInfo (HTA's way to tell ranks apart). Alone, the path
 * is kept and the rank is 0 of 1. */
static void ranks(void) {
  char out[256];
  EXPECT_OK(weft__trace_rank_path("t.json", out, sizeof out));
  EXPECT(strcmp(out, "t.json") == 0);
  EXPECT_OK(weft__trace_rank_path("t%r.json", out, sizeof out));
  EXPECT(strcmp(out, "t0.json") == 0);
  setenv("OMPI_COMM_WORLD_RANK", "2", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  EXPECT_OK(weft__trace_rank_path("t.json", out, sizeof out));
  EXPECT_MSG(strcmp(out, "t-rank2.json") == 0, "%s", out);
  EXPECT_OK(weft__trace_rank_path("trace", out, sizeof out));
  EXPECT(strcmp(out, "trace-rank2") == 0);
  EXPECT_OK(weft__trace_rank_path("r%r/t.json", out, sizeof out));
  EXPECT(strcmp(out, "r2/t.json") == 0);
  EXPECT_ERR(weft__trace_rank_path("t.json", out, 8), WEFT_ERANGE);
  char dir[] = "/tmp/weft-ranks-XXXXXX";
  EXPECT(mkdtemp(dir) != NULL);
  char path[300], file[300];
  snprintf(path, sizeof path, "%s/t.json", dir);
  traced_once(path);
  snprintf(file, sizeof file, "%s/t-rank2.json", dir);
  char *text = slurp(file);
  EXPECT_MSG(text && strstr(text, "\"distributedInfo\": {\"rank\": 2, "
                                  "\"world_size\": 4}"),
             "%s: no rank 2 of 4 in its header", file);
  free(text);
  unlink(file);
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  rmdir(dir);
}

/* A host-backend runtime tracing into path with opts' thread counts. */
static weft_runtime *traced_threads(const char *path, int host_threads) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_HOST;
  o.trace_path = path;
  o.host_threads = host_threads;
  o.host_devices = 1;
  weft_runtime *rt;
  EXPECT_OK(weft_init(&rt, &o));
  return rt;
}

/* A graph replay's one arrow goes to its first op, even when the replay's
 * ops lie in two of the executor's chunks (written the newest first): one
 * executor, a chunk filled up to two records short, then a replay of
 * four kernels. */
static void replay_arrow_first(void) {
  char path[] = "/tmp/weft-replay-arrow-XXXXXX";
  traced_temp(path);
  weft_runtime *rt = traced_threads(path, 1);
  float *d;
  int n = N;
  float a = 1, b = 0;
  void *args[] = {&d, &n, &a, &b};
  EXPECT_OK(weft_device_alloc(N * sizeof(float), (void **)&d));
  EXPECT_OK(weft_sync());
  for (int i = 0; i < CHUNK_RECS - 2; i++)
    EXPECT_OK(weft_launch(&tk.axpb, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  EXPECT_OK(weft_sync());
  weft_graph *g;
  EXPECT_OK(weft_graph_begin());
  for (int i = 0; i < 4; i++)
    EXPECT_OK(weft_launch(&tk.axpb, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  EXPECT_OK(weft_graph_end(&g));
  EXPECT_OK(weft_graph_launch(g));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_graph_destroy(g));
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_shutdown(rt));

  trace_model m;
  trace_error err;
  EXPECT_MSG(trace_model_load_file(&m, path, &err) == 0, "%s", err.message);
  double first = -1;
  int64_t corr = TRACE_NONE;
  int ops = 0;
  for (size_t i = 0; i < m.nops; i++) {
    const trace_op *op = &m.ops[i];
    if (!trace_op_is_gpu(op) || op->graph == TRACE_NONE)
      continue;
    ops++;
    corr = op->correlation;
    if (first < 0 || op->ts < first)
      first = op->ts;
  }
  EXPECT_EQ_INT(ops, 4);
  trace_model_free(&m);
  char *text = slurp(path);
  char want[64];
  snprintf(want, sizeof want, "{\"ph\":\"f\",\"id\":%lld,", (long long)corr);
  const char *f = strstr(text, want);
  EXPECT_MSG(f != NULL, "the replay has no arrow");
  EXPECT_MSG(strstr(f + 1, want) == NULL, "the replay has two arrows");
  const char *ts = strstr(f, "\"ts\":");
  EXPECT(ts != NULL);
  double at = strtod(ts + 5, NULL);
  EXPECT_MSG(at == first,
             "the replay's arrow ends at %.3f us, its first op starts at %.3f",
             at, first);
  free(text);
  unlink(path);
}

/* A program that set its user's locale (LC_NUMERIC with a decimal comma,
 * as de_DE's) still gets a file of JSON numbers. Skipped where no such
 * locale is installed. */
static void numeric_locale(void) {
  static const char *const names[] = {
      "de_DE.UTF-8", "de_DE.utf8",  "de_DE", "fr_FR.UTF-8",
      "fr_FR.utf8",  "ru_RU.UTF-8", NULL};
  int found = 0;
  for (int i = 0; names[i] && !found; i++)
    found = setlocale(LC_NUMERIC, names[i]) &&
            strcmp(localeconv()->decimal_point, ".") != 0;
  if (!found) {
    setlocale(LC_NUMERIC, "C");
    puts("numeric locale: no locale with a decimal comma here, skipped");
    return;
  }
  char path[] = "/tmp/weft-locale-XXXXXX";
  traced_temp(path);
  weft_runtime *rt = traced_host_open(path, 0);
  float *d;
  int n = N;
  float a = 1, b = 0;
  void *args[] = {&d, &n, &a, &b};
  EXPECT_OK(weft_device_alloc(N * sizeof(float), (void **)&d));
  EXPECT_OK(weft_launch(&tk.axpb, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_shutdown(rt));
  setlocale(LC_NUMERIC, "C");
  trace_model m;
  trace_error err;
  EXPECT_MSG(trace_model_load_file(&m, path, &err) == 0,
             "a decimal-comma locale's trace is not JSON: %s", err.message);
  EXPECT_EQ_INT((int)m.count[TRACE_OP_KERNEL], 1);
  trace_model_free(&m);
  unlink(path);
}

/* Another runtime opened while one traces: none of its threads is named
 * in the trace (its executors were). */
static void other_executors(void) {
  char path[] = "/tmp/weft-executors-XXXXXX";
  traced_temp(path);
  weft_runtime *rt = traced_threads(path, 1);
  weft_runtime_opts oo;
  weft_runtime_opts_init(&oo);
  oo.backend = WEFT_BACKEND_HOST;
  oo.trace_path = "";
  oo.host_threads = 3;
  oo.workers = 1;
  weft_runtime *other;
  EXPECT_OK(weft_init(&other, &oo));
  EXPECT_OK(weft_shutdown(other));
  EXPECT_OK(weft_shutdown(rt));
  char *text = slurp(path);
  /* The traced runtime's one executor may be named, the other's three
   * never. */
  size_t named = count_of(text, "\"host executor\"");
  EXPECT_MSG(named <= 1, "%zu executors named in the trace, of 1", named);
  free(text);
  unlink(path);
}

int main(void) {
  clamped_calls();
  ranks();
  two_devices();
  checked_findings();
  test_kernels_init(&tk);
  replay_arrow_first();
  numeric_locale();
  other_executors();
  char path[] = "/tmp/weft-roundtrip-XXXXXX";
  traced_temp(path);
  bad_name = tk.axpb;
  bad_name.name = "axpb-caf\xe9";
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_HOST;
  o.trace_path = path;
  weft_runtime_opts oo;
  weft_runtime_opts_init(&oo);
  oo.backend = WEFT_BACKEND_HOST;
  oo.trace_path = ""; /* not traced, whatever WEFT_TRACE says */
  weft_runtime *other;
  EXPECT_OK(weft_init(&other, &oo));
  weft_runtime *rt;
  EXPECT_OK(weft_init(&rt, &o));
  other_round(other);
  job jobs[TASKS];
  weft_task *t[TASKS];
  for (int i = 0; i < TASKS; i++) {
    EXPECT_OK(weft_pinned_alloc(N * sizeof(float), (void **)&jobs[i].host));
    for (int k = 0; k < N; k++)
      jobs[i].host[k] = (float)k;
    weft_task_opts to;
    weft_task_opts_init(&to);
    to.name = i == 0 ? long_name : NULL;
    EXPECT_OK(weft_task_spawn(rt, &t[i], work, &jobs[i], &to));
  }
  for (int i = 0; i < TASKS; i++)
    EXPECT_OK(weft_task_join(t[i]));
  for (int i = 0; i < TASKS; i++)
    EXPECT_OK(weft_pinned_free(jobs[i].host));
  weft_task *gt;
  EXPECT_OK(weft_task_spawn(rt, &gt, graph_work, NULL, NULL));
  EXPECT_OK(weft_task_join(gt));
  other_round(other);
  EXPECT_OK(weft_shutdown(rt)); /* writes the trace */
  other_round(other);           /* after the tracer freed its buffers */
  EXPECT_OK(weft_shutdown(other));

  trace_model m;
  trace_error err;
  int rc = trace_model_load_file(&m, path, &err);
  EXPECT_MSG(rc == 0, "the exported trace does not load: %s", err.message);
  EXPECT_EQ_INT((int)m.count[TRACE_OP_KERNEL],
                TASKS * LAUNCHES + GRAPH_KERNELS * REPLAYS);
  EXPECT_EQ_INT((int)m.count[TRACE_OP_MEMCPY], TASKS * 2);
  EXPECT_EQ_INT((int)m.count[TRACE_OP_MEMSET], 0); /* the other runtime's */
  EXPECT((int)m.count[TRACE_OP_TASK] >= TASKS);
  int attributed = 0;
  for (size_t i = 0; i < m.nops; i++)
    if ((m.ops[i].kind == TRACE_OP_KERNEL ||
         m.ops[i].kind == TRACE_OP_MEMCPY) &&
        m.ops[i].task != TRACE_NONE)
      attributed++;
  EXPECT_EQ_INT(attributed, TASKS * (LAUNCHES + 2) + GRAPH_KERNELS * REPLAYS);
  check_nesting(&m);
  EXPECT_EQ_INT((int)trace_compat_problems(stderr, &m, 20),
                0); /* weft trace check */
  char *text = slurp(path);
  EXPECT(strstr(text, "\"distributedInfo\": {\"rank\": 0") != NULL);
  EXPECT(strstr(text, "\"deviceProperties\": [{\"id\": 0") != NULL);
  EXPECT_EQ_INT((int)count_of(text, "\"name\":\"cudaLaunchKernel\""),
                TASKS * LAUNCHES);
  EXPECT_EQ_INT((int)count_of(text, "\"name\":\"cudaMemcpyAsync\""), TASKS * 2);
  EXPECT_EQ_INT((int)count_of(text, "\"name\":\"cudaGraphLaunch\""), REPLAYS);
  /* graph_work's weft_device_sync, and the one weft_shutdown makes before it
   * stops the tracer: call records, as CUPTI makes CUDA's. */
  EXPECT_EQ_INT((int)count_of(text, "\"name\":\"cudaDeviceSynchronize\""), 2);
  /* One arrow per replay, not per op of it. */
  EXPECT_EQ_INT((int)count_of(text, "\"ph\":\"s\""),
                TASKS * (LAUNCHES + 2) + REPLAYS);
  EXPECT_EQ_INT((int)count_of(text, "\"ph\":\"f\""),
                TASKS * (LAUNCHES + 2) + REPLAYS);
  EXPECT_EQ_INT((int)count_of(text, "\"graph id\":"), GRAPH_KERNELS * REPLAYS);
  EXPECT(strstr(text, "host") == NULL || strstr(text, "hostLaunch") == NULL);
  free(text);
  trace_analysis a;
  EXPECT(trace_analyze(&m, &a) == 0);
  EXPECT_EQ_INT((int)a.launch.matched,
                TASKS * (LAUNCHES + 2) + GRAPH_KERNELS * REPLAYS);
  EXPECT_EQ_INT((int)a.ntasks, TASKS + 1);
  EXPECT_EQ_INT((int)a.graph.launches, REPLAYS);
  EXPECT_EQ_INT((int)a.graph.graphs, 1);
  EXPECT_EQ_INT((int)a.graph.ops, GRAPH_KERNELS * REPLAYS);
  EXPECT_EQ_INT((int)a.graph.kernels, GRAPH_KERNELS * REPLAYS);
  int cut = 0;
  for (size_t i = 0; i < a.ntasks; i++) {
    if (a.tasks[i].gpu_ops == GRAPH_KERNELS * REPLAYS)
      continue; /* graph_work */
    EXPECT_EQ_INT((int)a.tasks[i].gpu_ops, LAUNCHES + 2);
    const char *name = trace_model_str(&m, a.tasks[i].name);
    if (strncmp(name, long_name, 4) == 0) {
      size_t len = strlen(name);
      EXPECT_MSG(len <= 31 && len % 2 == 0 &&
                     strncmp(name, long_name, len) == 0,
                 "task name cut at %zu bytes: not at a character's edge", len);
      cut = 1;
    }
  }
  EXPECT_MSG(cut, "the long-named task is missing");
  trace_analysis_free(&a);
  trace_model_free(&m);
  unlink(path);
  puts("ok");
  return 0;
}
