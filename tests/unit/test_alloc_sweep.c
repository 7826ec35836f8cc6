/* The allocation-failure sweep: a program using most of weft (init with a
 * trace, pinned and device memory, copies from pinned and pageable memory,
 * launches, events, tasks (normal ones held by priority-aware admission
 * beside a high one), the pipelined map, tasks with declared data (a
 * record made and freed, readers folded into a join, ranges out of order)
 * and a library handle, a graph captured from steps with declared data,
 * replayed and updated, registered data in blocks under a memory limit,
 * ranges, weft_task_after, an event waited for, weft_wait_until, a keyed
 * library handle, a detached task, sync, join, trim, shutdown) is run
 * once counting the allocations it makes (malloc, calloc, realloc,
 * posix_memalign, mmap, pthread_create: the library's objects are linked
 * with -Wl,--wrap for each), then once per k with the k-th of them failing.
 * Every run must end cleanly: each weft call returns 0 or an error, what
 * was made is given back, weft_shutdown succeeds (a refusal with
 * WEFT_EBUSY is a leak), and the trace it writes passes `weft trace
 * check`'s rules and counts the records it lost (weft_shutdown then says
 * WEFT_ENOMEM). A crash, a hang (10 s), a failed shutdown or a bad trace
 * fails the sweep, naming k; under ASan, LeakSanitizer checks each run's
 * exit. Each run is a child process, so that one run's state cannot reach
 * another. The sweep runs on one emulated device, then on two (one under
 * ThreadSanitizer). SWEEP_ONLY=k runs allocation k's run alone and prints
 * the stack of the allocation it fails (addr2line -e unit_alloc_sweep
 * names the offsets): a failing k, reproduced. */
#define _GNU_SOURCE
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat.h"
#include "expect.h"
#include "model.h"
#include "weft.h"

/* ---- the wrapped allocators ---- */

static atomic_long seen;    /* allocations so far in this process */
static atomic_long fail_at; /* 0: none fails */

static int should_fail(void) {
  long n = atomic_fetch_add(&seen, 1) + 1;
  long k = atomic_load(&fail_at);
  if (k > 0 && n == k && getenv("SWEEP_ONLY")) { /* where it fails */
    void *at[24];
    backtrace_symbols_fd(at, backtrace(at, 24), 2);
  }
  return k > 0 && n == k;
}

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__real_mmap(void *a, size_t n, int prot, int flags, int fd, off_t off);
int __real_pthread_create(pthread_t *t, const pthread_attr_t *a,
                          void *(*fn)(void *), void *arg);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);
void *__wrap_mmap(void *a, size_t n, int prot, int flags, int fd, off_t off);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a,
                          void *(*fn)(void *), void *arg);

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
void *__wrap_mmap(void *a, size_t n, int prot, int flags, int fd, off_t off) {
  if (should_fail()) {
    errno = ENOMEM;
    return MAP_FAILED;
  }
  return __real_mmap(a, n, prot, flags, fd, off);
}
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a,
                          void *(*fn)(void *), void *arg) {
  return should_fail() ? EAGAIN : __real_pthread_create(t, a, fn, arg);
}

/* ---- the program ---- */

/* BIG: four chunks of 64 KiB (main()'s staging blocks) and one byte, a
 * fifth chunk past the 4 blocks main() gives a copy's staging, so blocks
 * are reused in both directions. Blocks of the default 4 MiB made each run
 * copy and fault in 64 times as much: most of the sweep's time. */
enum { N = 4096, BIG = (256 << 10) + 1 };

static void add_one_host(const weft_kernel_ctx *k, void **args) {
  float *x = *(float **)args[0];
  unsigned n = *(unsigned *)args[1];
  unsigned lo = k->block_idx.x * k->block_dim.x;
  for (unsigned i = lo; i < lo + k->block_dim.x && i < n; i++)
    x[i] += 1.0f;
}
static const weft_kernel add_one = {.host = add_one_host,
                                    .name = "add_one",
                                    WEFT_KERNEL_ARGS(float *, unsigned)};

static int chunk_fn(void *din, void *dout, size_t index, void *user) {
  (void)dout;
  (void)index;
  (void)user;
  unsigned n = N / 4; /* a chunk: a quarter of the buffer */
  void *args[] = {&din, &n};
  return weft_launch(&add_one, WEFT_DIM1(n / 256), WEFT_DIM1(256), 0, args);
}

/* A task: its own device buffer, a copy in, a launch, a copy out. */
static void task_fn(void *arg) {
  float *h = arg, *d = NULL;
  unsigned n = N;
  if (weft_device_alloc(N * sizeof(float), (void **)&d) != 0)
    return;
  void *args[] = {&d, &n};
  if (weft_copy(d, h, N * sizeof(float)) == 0 &&
      weft_launch(&add_one, WEFT_DIM1(N / 256), WEFT_DIM1(256), 0, args) == 0)
    weft_copy(h, d, N * sizeof(float));
  weft_device_free(d);
  weft_sync();
}

/* Declared data: a chain of tasks writing one range, and a library handle
 * (weft/library.h) of a library whose create allocates. */
static int lib_create(void *user, int dev, const void *key, size_t key_bytes,
                      void **h) {
  (void)user, (void)dev, (void)key, (void)key_bytes;
  *h = malloc(16);
  return *h ? 0 : 1;
}

static int lib_bind(void *user, void *h, void *stream) {
  (void)user, (void)h, (void)stream;
  return 0;
}

static void lib_destroy(void *user, void *h) {
  (void)user;
  free(h);
}

static const weft_library sweep_lib = {.struct_size = sizeof sweep_lib,
                                       .name = "sweep",
                                       .create = lib_create,
                                       .set_stream = lib_bind,
                                       .destroy = lib_destroy};

static void flow_fn(void *arg) {
  void *h;
  weft_library_handle(&sweep_lib, &h);
  weft_memset(arg, 1, 4096);
}

/* Graphs, data flow and tracing together: a task captures a graph whose
 * steps are spawns with declared data (a launch on a, a copy from a to b,
 * a memset of b: the steps have edges), replays it twice, puts a second
 * capture of the same shape in with an update, replays it again, and
 * destroys it; all of it traced. (Buffers are whole allocations: with
 * WEFT_HOST_PAGEABLE=1 an interior pointer counts as pageable, whose
 * staged copy a capture refuses.) */
enum { STEP_BYTES = 4096 };

typedef struct steps {
  weft_runtime *rt;
  float *a, *b;
} steps;

static void step_launch(void *arg) {
  const steps *st = arg;
  unsigned n = STEP_BYTES / sizeof(float);
  void *args[] = {(void *)&st->a, &n};
  weft_launch(&add_one, WEFT_DIM1(n / 256), WEFT_DIM1(256), 0, args);
}

static void step_copy(void *arg) {
  const steps *st = arg;
  weft_copy(st->b, st->a, STEP_BYTES);
}

static void step_memset(void *arg) {
  const steps *st = arg;
  weft_memset(st->b, 3, STEP_BYTES);
}

/* Spawns the steps in the open capture; a failed one fails its end. */
static void capture_steps(steps *st) {
  static void (*const fns[])(void *) = {step_launch, step_copy, step_memset};
  weft_access acc[3][2] = {
      {{st->a, STEP_BYTES, WEFT_RW}},
      {{st->a, STEP_BYTES, WEFT_READ}, {st->b, STEP_BYTES, WEFT_WRITE}},
      {{st->b, STEP_BYTES, WEFT_RW}}};
  const size_t nacc[] = {1, 2, 1};
  for (int i = 0; i < 3; i++) {
    weft_task_opts to;
    weft_task_opts_init(&to);
    to.accesses = acc[i];
    to.naccesses = nacc[i];
    weft_task *t = NULL;
    if (weft_task_spawn(st->rt, &t, fns[i], st, &to) != 0)
      return;
  }
}

static void graph_fn(void *arg) {
  steps st = {weft_runtime_current(), arg, NULL};
  if (weft_device_alloc(STEP_BYTES, (void **)&st.b) != 0)
    return;
  weft_graph *g = NULL;
  for (int pass = 0; pass < 2; pass++) {
    if (weft_graph_begin() != 0)
      break;
    capture_steps(&st);
    int rc = pass == 0 ? weft_graph_end(&g) : weft_graph_update(g);
    if (rc != 0 && !g)
      break;
    for (int r = 0; r < 2 - pass; r++)
      weft_graph_launch(g);
  }
  weft_sync();
  if (g)
    weft_graph_destroy(g);
  weft_device_free(st.b);
}

static int shutdown_rc;   /* the run's weft_shutdown */
static int sweep_devices; /* emulated devices of the runs */

/* Declared data in a spawner of its own (a task), so that its record is
 * new: its first declared spawn makes the record (and may fail at any
 * allocation there), and the memory is freed at once, which ends its data
 * in that record (UBSan once saw memmove(NULL) here, issue 37). Then
 * FOLDED readers of one range held by a flag, enough that the record
 * folds them into a join, a writer after them, ranges declared in falling
 * address order and a reader over them and their gaps, and the memory
 * freed again. */
#if defined(__SANITIZE_THREAD__)
#define SWEEP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SWEEP_TSAN 1
#endif
#endif
#ifndef SWEEP_TSAN
#define SWEEP_TSAN 0
#endif
/* Under TSan each task's fiber is a thread of TSan's own, made in
 * milliseconds, and the sweep runs the program hundreds of times: the
 * held readers are left out there (the other builds sweep the fold). */
enum { FOLDED = SWEEP_TSAN ? 0 : 70 };
static int readers_go;

static void held_reader(void *arg) {
  (void)arg;
  while (!__atomic_load_n(&readers_go, __ATOMIC_ACQUIRE))
    weft_yield();
}

static void nothing(void *arg) { (void)arg; }

static weft_task *declared(void *p, size_t n, unsigned mode, weft_task_fn fn) {
  weft_access acc = {p, n, mode};
  weft_task_opts to;
  weft_task_opts_init(&to);
  to.accesses = &acc;
  to.naccesses = 1;
  weft_task *t = NULL;
  weft_task_spawn(weft_runtime_current(), &t, fn, NULL, &to);
  return t;
}

static void flow_owner(void *arg) {
  (void)arg;
  char *d = NULL;
  if (weft_device_alloc(4096, (void **)&d) != 0)
    return;
  weft_task *first = declared(d, 64, WEFT_RW, nothing);
  if (first)
    weft_task_join(first);
  weft_device_free(d);
  if (weft_device_alloc(4096, (void **)&d) != 0)
    return;
  weft_task *t[FOLDED + 6] = {0};
  __atomic_store_n(&readers_go, 0, __ATOMIC_RELEASE);
  for (int i = 0; i < FOLDED; i++)
    t[i] = declared(d, 64, WEFT_READ, held_reader);
  t[FOLDED] = declared(d, 64, WEFT_WRITE, nothing);
  __atomic_store_n(&readers_go, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < 4; i++)
    t[FOLDED + 1 + i] = declared(d + 1024 * (3 - i), 64, WEFT_WRITE, nothing);
  t[FOLDED + 5] = declared(d, 4096, WEFT_READ, nothing);
  for (int i = 0; i < FOLDED + 6; i++)
    if (t[i])
      weft_task_join(t[i]);
  weft_device_free(d);
}

/* Registered data (weft/data.h): a task reading one block and writing the
 * next through the instances weft_data_get finds on its device. */
static void block_task(void *arg) {
  weft_data **pair = arg;
  float *r = NULL, *w = NULL;
  unsigned n = N;
  void *args[] = {&w, &n};
  if (weft_data_get(pair[0], WEFT_READ, (void **)&r) == 0 &&
      weft_data_get(pair[1], WEFT_RW, (void **)&w) == 0)
    weft_launch(&add_one, WEFT_DIM1(N / 256), WEFT_DIM1(256), 0, args);
}

/* Four blocks of host memory under a limit of two a device (main's
 * runtime options), copies started at spawn: each task of the ring reads
 * one block and writes the next, so instances are made, filled, written
 * back and evicted (with two devices the tasks alternate between them,
 * and blocks move from device to device). Then the host copy made valid again
 * and the blocks unregistered, a failed unregister tried again, as a program
 * would (it keeps what it could not give back). */
static int registered_blocks(weft_runtime *rt) {
  enum { NB = 4 };
  float *mem = __real_malloc(NB * N * sizeof(float));
  weft_data_blocks *b = NULL;
  int bad = 0;
  if (!mem)
    return 0;
  memset(mem, 0, NB * N * sizeof(float));
  if (weft_data_register_blocks(rt, mem, NB * N * sizeof(float),
                                N * sizeof(float), WEFT_DATA_CYCLIC, &b) == 0) {
    weft_data_blocks_place(b); /* each block to its home, at once */
    weft_data *pair[NB][2];
    weft_task *t[NB] = {0};
    for (int i = 0; i < NB; i++) {
      pair[i][0] = weft_data_blocks_at(b, (size_t)i);
      pair[i][1] = weft_data_blocks_at(b, (size_t)(i + 1) % NB);
      weft_access acc[2] = {weft_data_access(pair[i][0], WEFT_READ),
                            weft_data_access(pair[i][1], WEFT_RW)};
      weft_task_opts to;
      weft_task_opts_init(&to);
      to.accesses = acc;
      to.naccesses = 2;
      to.device = i % sweep_devices; /* on two: each block on both */
      weft_task_spawn(rt, &t[i], block_task, pair[i], &to);
    }
    for (int i = 0; i < NB; i++)
      if (t[i])
        weft_task_join(t[i]);
    weft_data_sync(weft_data_blocks_at(b, 0));
    weft_data_stats st;
    weft_data_stats_get(weft_data_blocks_at(b, 0), &st);
    int rc = weft_data_unregister_blocks(b);
    if (rc)
      rc = weft_data_unregister_blocks(b);
    /* With nothing failing, every block was written once, and is back. */
    for (int i = 0; i < NB * N && !atomic_load(&fail_at) && !bad; i++)
      if (rc || mem[i] != 1.0f) {
        fprintf(stderr, "registered blocks: %s, x[%d] = %g, want 1\n",
                weft_err_name(rc), i, (double)mem[i]);
        bad = 1;
      }
  }
  free(mem);
  return bad;
}

/* The other calls that allocate or follow tasks: a range pushed and
 * popped (traced: its name interned), a task's GPU work followed
 * (weft_task_after) and an event it recorded waited for, a
 * weft_wait_until test, a keyed library handle and a detached task. */
typedef struct followed {
  float *dev;
  weft_event *ev;
} followed;

static void record_after_launch(void *arg) {
  followed *f = arg;
  unsigned n = N;
  void *args[] = {&f->dev, &n};
  if (weft_launch(&add_one, WEFT_DIM1(N / 256), WEFT_DIM1(256), 0, args) == 0)
    weft_event_record(f->ev);
}

static int third_poll(void *arg) {
  int *polls = arg;
  return ++*polls >= 3 ? 0 : WEFT_EAGAIN;
}

static void more_calls(void *arg) {
  weft_runtime *rt = weft_runtime_current();
  if (weft_range_push("sweep range") == 0)
    weft_range_pop();
  followed f = {arg, NULL};
  weft_task *first = NULL;
  if (weft_event_create(&f.ev) == 0) {
    if (weft_task_spawn(rt, &first, record_after_launch, &f, NULL) == 0) {
      if (weft_task_after(first) == 0)
        weft_event_wait(f.ev);
      weft_task_join(first);
    }
    weft_event_destroy(&f.ev);
  }
  int polls = 0;
  weft_wait_until(third_poll, &polls);
  void *h;
  int key = 7;
  weft_library_handle_keyed(&sweep_lib, &key, sizeof key, &h);
  weft_task *loose = NULL;
  if (weft_task_spawn(rt, &loose, nothing, NULL, NULL) == 0)
    weft_task_detach(loose);
  weft_sync();
}

/* Returns 0 when the run ended cleanly, whatever failed on the way. */
static int program(const char *trace) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_HOST;
  o.workers = 2;
  o.host_threads = 2;
  o.host_devices = sweep_devices;
  o.trace_path = trace;
  o.admission = 1; /* the first of the three tasks below is high priority */
  o.data_limit = 2 * N * sizeof(float); /* registered_blocks evicts */
  o.data_prefetch = 1;
  weft_runtime *rt;
  if (weft_init(&rt, &o) != 0)
    return 0; /* refused: nothing to give back */
  float *pin = NULL, *dev = NULL, *task_mem[3] = {0};
  char *page_a = __real_malloc(BIG), *page_b = __real_malloc(BIG);
  weft_event *ev = NULL;
  weft_task *tasks[3] = {0};
  unsigned n = N;
  if (weft_pinned_alloc(N * sizeof(float), (void **)&pin) == 0 &&
      weft_device_alloc(BIG, (void **)&dev) == 0) {
    memset(pin, 0, N * sizeof(float));
    void *args[] = {&dev, &n};
    if (weft_copy(dev, pin, N * sizeof(float)) == 0 &&
        weft_launch(&add_one, WEFT_DIM1(N / 256), WEFT_DIM1(256), 0, args) ==
            0 &&
        weft_event_create(&ev) == 0 && weft_event_record(ev) == 0)
      weft_event_sync(ev);
    if (page_a && page_b) { /* staged: helper tasks, pinned blocks */
      memset(page_a, 1, BIG);
      if (weft_copy(dev, page_a, BIG) == 0)
        weft_copy(page_b, dev, BIG);
    }
    weft_sync();
    weft_map_chunks(pin, N * sizeof(float) / 4, pin, 0, 4, chunk_fn, NULL,
                    NULL);
  }
  for (int i = 0; i < 3; i++)
    if (weft_pinned_alloc(N * sizeof(float), (void **)&task_mem[i]) == 0) {
      memset(task_mem[i], 0, N * sizeof(float));
      weft_task_opts to;
      weft_task_opts_init(&to);
      to.priority = i == 0 ? WEFT_PRIORITY_HIGH : WEFT_PRIORITY_NORMAL;
      weft_task_spawn(rt, &tasks[i], task_fn, task_mem[i], &to);
    }
  for (int i = 0; i < 3; i++)
    if (tasks[i])
      weft_task_join(tasks[i]);
  if (dev) {
    weft_task *flow[4] = {0};
    weft_access acc[] = {{dev, 4096, WEFT_RW},
                         {(char *)dev + 8192, 64, WEFT_READ}};
    weft_task_opts to;
    weft_task_opts_init(&to);
    to.accesses = acc;
    to.naccesses = 2;
    for (int i = 0; i < 4; i++)
      weft_task_spawn(rt, &flow[i], flow_fn, dev, &to);
    for (int i = 0; i < 4; i++)
      if (flow[i])
        weft_task_join(flow[i]);
    weft_task *graph = NULL;
    if (weft_task_spawn(rt, &graph, graph_fn, dev, NULL) == 0)
      weft_task_join(graph);
    weft_task *more = NULL;
    if (weft_task_spawn(rt, &more, more_calls, dev, NULL) == 0)
      weft_task_join(more);
  }
  weft_task *owner = NULL;
  if (weft_task_spawn(rt, &owner, flow_owner, NULL, NULL) == 0)
    weft_task_join(owner);
  int bad = registered_blocks(rt);
  /* Give everything back, failures or not. */
  for (int i = 0; i < 3; i++)
    if (task_mem[i])
      weft_pinned_free(task_mem[i]);
  if (ev)
    weft_event_destroy(&ev);
  if (dev)
    weft_device_free(dev);
  weft_sync();
  if (pin)
    weft_pinned_free(pin);
  free(page_a);
  free(page_b);
  weft_mem_trim(rt);
  int rc = shutdown_rc = weft_shutdown(rt);
  /* The trace could not be written (EIO), or lost records (ENOMEM): the
   * runtime closed all the same. */
  if (rc == WEFT_EIO || rc == WEFT_ENOMEM)
    rc = 0;
  if (rc)
    fprintf(stderr, "weft_shutdown: %s: %s\n", weft_err_name(rc),
            weft_last_error_message());
  return rc || bad ? 1 : 0;
}

/* The trace a run wrote, if it wrote one (a weft_init that failed leaves
 * none): valid for Perfetto and HTA whatever failed (weft trace check's
 * rules), its dropped_records not 0 exactly when weft_shutdown returned
 * WEFT_ENOMEM. Returns 0 when so. */
static int check_trace(const char *trace) {
  struct stat st;
  if (stat(trace, &st) != 0 || shutdown_rc == WEFT_EIO)
    return 0;
  trace_model m;
  trace_error err;
  int bad = 0;
  if (trace_model_load_file(&m, trace, &err) != 0) {
    fprintf(stderr, "the trace does not load: %s\n", err.message);
    bad = 1;
  } else if (trace_compat_problems(stderr, &m, 5) != 0) {
    fprintf(stderr, "weft trace check rejects the trace (above)\n");
    bad = 1;
  } else if ((m.dropped > 0) != (shutdown_rc == WEFT_ENOMEM)) {
    fprintf(stderr, "%lld records dropped, and weft_shutdown returned %s\n",
            (long long)m.dropped, weft_err_name(shutdown_rc));
    bad = 1;
  }
  trace_model_free(&m);
  return bad;
}

/* Runs the program in a child with allocation k failing (0: none); returns
 * its exit status, and the allocations the run made through *count. */
static int run(long k, const char *trace, long *count) {
  int fds[2];
  EXPECT(pipe(fds) == 0);
  fflush(NULL);
  pid_t pid = fork();
  EXPECT(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    alarm(10);     /* a hang ends the child, and the sweep says which k */
    unlink(trace); /* each run's own, if it writes one */
    atomic_store(&seen, 0);
    atomic_store(&fail_at, k);
    int rc = program(trace);
    long c = atomic_load(&seen);
    atomic_store(&fail_at, 0); /* the check below allocates freely */
    if (rc == 0)
      rc = check_trace(trace);
    ssize_t w = write(fds[1], &c, sizeof c);
    (void)w;
    exit(rc); /* exit, not _exit: LeakSanitizer checks here */
  }
  close(fds[1]);
  *count = 0;
  ssize_t r = read(fds[0], count, sizeof *count);
  (void)r;
  close(fds[0]);
  int status;
  EXPECT(waitpid(pid, &status, 0) == pid);
  return status;
}

/* Sweeps the program on devices emulated devices; returns the runs that
 * did not end cleanly. */
static long sweep(int devices, const char *trace) {
  sweep_devices = devices;
  long total;
  int status = run(0, trace, &total);
  EXPECT_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
             "%d devices: the program fails with no allocation failing "
             "(status %d)",
             devices, status);
  EXPECT(total > 0);
  /* Threads make the count vary a little between runs: go some past it. */
  long last = total + total / 10 + 10, bad = 0;
  const char *only = getenv("SWEEP_ONLY");
  long first = only ? atol(only) : 1, end = only ? first : last;
  for (long k = first; k <= end; k++) {
    long c;
    status = run(k, trace, &c);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      fprintf(stderr, "%d devices: allocation %ld of ~%ld failing: %s %d\n",
              devices, k, total, WIFSIGNALED(status) ? "signal" : "exit status",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
      if (++bad >= 20)
        break;
    }
  }
  if (bad == 0)
    printf("alloc sweep, %d device%s: %ld allocations, each failed once: ok\n",
           devices, devices > 1 ? "s" : "", total);
  return bad;
}

int main(void) {
  /* The host backend stages pageable copies as CUDA's does (memory.c's
   * ring of pinned blocks, helper tasks), so their failures are swept. */
  setenv("WEFT_HOST_PAGEABLE", "1", 1);
  setenv("WEFT_STAGE_CHUNKS", "4", 1); /* BIG wraps both rings */
  setenv("WEFT_STAGE_CHUNK_KIB", "64", 1);
  char trace[] = "/tmp/weft-sweep-XXXXXX";
  int fd = mkstemp(trace);
  EXPECT(fd >= 0);
  close(fd);
  /* Two devices: registered blocks move between them. Not under TSan,
   * where one sweep takes minutes (the data tests run their programs on
   * two and four devices there). */
  long bad = sweep(1, trace);
  if (bad == 0 && !SWEEP_TSAN)
    bad = sweep(2, trace);
  unlink(trace);
  EXPECT_MSG(bad == 0, "%ld runs did not end cleanly (above)", bad);
  return 0;
}
