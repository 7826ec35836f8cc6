/* The runtime's life: calls with no runtime open, init with options, bad
 * options, shutdown waiting for every live task (detached, never joined,
 * never started), shutdown refused while user objects live (the runtime
 * working on afterwards), and init/shutdown refused inside a task. */
#define _GNU_SOURCE /* sched_getaffinity */
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "task_common.h"
#include "weft_internal.h"

static void no_runtime_calls(void) {
  int x = 0;
  void *p = &x;
  weft_event *ev = (weft_event *)&x;
  EXPECT_ERR(weft_sync(), WEFT_ESTATE);
  EXPECT(strstr(weft_last_error_message(), "weft_sync") != NULL);
  EXPECT_ERR(weft_copy(&x, &x, sizeof x), WEFT_ESTATE);
  EXPECT_ERR(weft_memset(&x, 0, sizeof x), WEFT_ESTATE);
  EXPECT_ERR(weft_device_alloc(16, &p), WEFT_ESTATE);
  EXPECT_ERR(weft_pinned_alloc(16, &p), WEFT_ESTATE);
  EXPECT(p == &x); /* a failed call leaves its outputs alone */
  EXPECT_ERR(weft_event_create(&ev), WEFT_ESTATE);
  EXPECT(ev == (weft_event *)&x);
  EXPECT_ERR(weft_device_sync(), WEFT_ESTATE);
  EXPECT(weft_stream_current() == NULL);
  EXPECT(weft_task_self() == NULL);
  EXPECT(strcmp(weft_task_name(NULL), "") == 0);
  weft_yield(); /* returns at once on a plain thread */
}

/* Tasks that each wait (busy, without yielding) until all of them run at
 * once: only possible with at least `want` workers. */
typedef struct together {
  int want;
  int arrived;
  int ok;
} together;

static void meet(void *arg) {
  together *t = arg;
  tt_add(&t->arrived, 1);
  int64_t deadline = tt_now_ns() + 10000000000LL;
  while (tt_load(&t->arrived) < t->want && tt_now_ns() < deadline)
    sched_yield();
  if (tt_load(&t->arrived) >= t->want)
    tt_add(&t->ok, 1);
}

static void add_one(void *arg) { tt_add(arg, 1); }

/* Leases a stream and holds it (a task's is its until it is done) until
 * *release is set. */
static int holders_in;
static void stream_holder(void *arg) {
  const int *release = arg;
  EXPECT(weft_stream_current() != NULL);
  __atomic_add_fetch(&holders_in, 1, __ATOMIC_SEQ_CST);
  while (!tt_load(release))
    weft_yield();
}

static void gpu_roundtrip(void *arg) {
  int *out = arg; /* pinned */
  int *d = NULL;
  int v = 1234;
  EXPECT_OK(weft_device_alloc(sizeof(int), (void **)&d));
  void *args[] = {&d, &v};
  EXPECT_OK(weft_launch(&tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  EXPECT_OK(weft_copy(out, d, sizeof(int)));
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_sync());
  EXPECT_EQ_INT(*out, 1234);
}

static void check_works(weft_runtime *rt) {
  int *out;
  EXPECT_OK(weft_pinned_alloc(sizeof(int), (void **)&out));
  *out = -1;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, gpu_roundtrip, out, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT_EQ_INT(*out, 1234);
  EXPECT_OK(weft_pinned_free(out));
}

static void init_with(int workers, size_t stack) {
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  EXPECT_EQ_INT(o.struct_size, sizeof o);
  o.workers = workers;
  o.stack_size = stack;
  weft_runtime *rt = tt_open(&o);
  EXPECT_EQ_INT(rt->sched.nworkers, workers);
  EXPECT(rt->stacks.stack_size >= stack);

  together tg = {.want = workers};
  weft_task *t[64];
  for (int i = 0; i < workers; i++)
    EXPECT_OK(weft_task_spawn(rt, &t[i], meet, &tg, NULL));
  for (int i = 0; i < workers; i++)
    EXPECT_OK(weft_task_join(t[i]));
  EXPECT_MSG(tg.ok == workers,
             "with %d workers only %d tasks ran at the same time", workers,
             tg.ok);

  int n = 0;
  for (int i = 0; i < 64; i++)
    EXPECT_OK(weft_task_spawn(rt, &t[i], add_one, &n, NULL));
  for (int i = 0; i < 64; i++)
    EXPECT_OK(weft_task_join(t[i]));
  EXPECT_EQ_INT(n, 64);
  check_works(rt);
  tt_close(rt);
  /* The thread's context died with the runtime. */
  EXPECT_ERR(weft_sync(), WEFT_ESTATE);
}

/* Workers by default: one per CPU the process may run on, not per CPU of
 * the machine (an MPI launcher binds each of two ranks to one core).
 * Bound to one CPU, the runtime has one worker, its spins yield the CPU,
 * and a plain thread's joins still end: of a GPU round trip, and of a
 * task that waits for one the worker runs. */
static int flag_set;
static void set_flag(void *arg) {
  (void)arg;
  tt_store(&flag_set, 1);
}
static void wait_flag(void *arg) {
  weft_runtime *rt = arg;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, set_flag, NULL, NULL));
  while (!tt_load(&flag_set))
    weft_yield();
  EXPECT_OK(weft_task_join(t));
}

static void default_workers_follow_affinity(void) {
#ifdef __linux__
  cpu_set_t all, one;
  EXPECT(sched_getaffinity(0, sizeof all, &all) == 0);
  /* The mask, less where a cgroup CPU quota is tighter (a container's
   * limit; unit.cpus checks that part). */
  int avail = weft__cpus_available();
  EXPECT(avail >= 1 && avail <= CPU_COUNT(&all));
  weft_runtime *rt = tt_open(NULL);
  EXPECT_EQ_INT(rt->sched.nworkers, avail);
  EXPECT_EQ_INT(rt->sched.one_cpu, avail == 1);
  tt_close(rt);
  int first = 0;
  while (!CPU_ISSET(first, &all))
    first++;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  EXPECT(sched_setaffinity(0, sizeof one, &one) == 0);
  rt = tt_open(NULL);
  EXPECT_EQ_INT(rt->sched.nworkers, 1);
  EXPECT_EQ_INT(rt->sched.one_cpu, 1);
  check_works(rt);
  for (int i = 0; i < 20; i++) {
    tt_store(&flag_set, 0);
    weft_task *t;
    EXPECT_OK(weft_task_spawn(rt, &t, wait_flag, rt, NULL));
    EXPECT_OK(weft_task_join(t));
  }
  tt_close(rt);
  EXPECT(sched_setaffinity(0, sizeof all, &all) == 0);
#endif
}

static void bad_options(void) {
  weft_runtime *const sentinel = (weft_runtime *)(uintptr_t)0x5eed;
  weft_runtime *rt = sentinel;
  weft_runtime_opts o;

  weft_runtime_opts_init(&o);
  o.struct_size = 0;
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "struct_size") != NULL);
  weft_runtime_opts_init(&o);
  o.struct_size = sizeof o + 8;
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);

  weft_runtime_opts_init(&o);
  o.stack_size = 4096;
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "stack_size") != NULL);
  o.stack_size = 16 * 1024 - 1;
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);
  o.stack_size = ((size_t)1 << 30) + 1;
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);

  weft_runtime_opts_init(&o);
  o.workers = -1;
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);
  weft_runtime_opts_init(&o);
  o.host_threads = -2;
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);
  weft_runtime_opts_init(&o);
  o.backend = (weft_backend_kind)42;
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);

  EXPECT_ERR(weft_init(NULL, NULL), WEFT_EINVAL);
  EXPECT_ERR(weft_shutdown(NULL), WEFT_EINVAL);
  EXPECT(rt == sentinel);
  /* Failed inits opened nothing. */
  EXPECT_ERR(weft_sync(), WEFT_ESTATE);

  /* The smallest stack accepted, and one not a multiple of the page size. */
  weft_runtime_opts_init(&o);
  o.stack_size = 16 * 1024;
  rt = tt_open(&o);
  check_works(rt);
  tt_close(rt);
  o.stack_size = 20000;
  rt = tt_open(&o);
  EXPECT(rt->stacks.stack_size >= 20000);
  check_works(rt);
  tt_close(rt);
}

/* ---- shutdown waits for live tasks ---- */

enum { HOLDERS = 16, KEPT = 4 };

typedef struct shut_state {
  weft_runtime *rt;
  int release;
  int done[HOLDERS + KEPT];
  int extra_spawned, extra_ran;
  int refused; /* a spawn saw WEFT_ESTATE */
} shut_state;

static shut_state ss;

static void holder(void *arg) {
  int i = (int)(intptr_t)arg;
  for (int k = 0; k < 100; k++)
    weft_yield();
  while (!tt_load(&ss.release))
    weft_yield();
  for (int k = 0; k < 100; k++)
    weft_yield();
  tt_store(&ss.done[i], 1);
}

static void extra(void *arg) { tt_add(&ss.extra_ran, 1); }

/* Spawns small tasks until the runtime refuses (it is shutting down), then
 * lets the holders finish. */
static void *releaser(void *arg) {
  int64_t deadline = tt_now_ns() + 20000000000LL;
  for (;;) {
    int rc = weft_task_spawn(ss.rt, NULL, extra, NULL, NULL);
    if (rc == WEFT_ESTATE) {
      tt_store(&ss.refused, 1);
      break;
    }
    EXPECT_OK(rc);
    ss.extra_spawned++;
    EXPECT_MSG(tt_now_ns() < deadline, "weft_shutdown never began");
    tt_sleep_ms(1);
  }
  /* Shutdown is now waiting; none of the holders may have ended. */
  for (int i = 0; i < HOLDERS + KEPT; i++)
    EXPECT_MSG(!tt_load(&ss.done[i]), "holder %d ended before release", i);
  tt_store(&ss.release, 1);
  return NULL;
}

static void shutdown_waits(void) {
  ss.rt = tt_open(NULL);
  /* Detached at spawn, and joinable handles never joined. */
  for (int i = 0; i < HOLDERS; i++)
    EXPECT_OK(weft_task_spawn(ss.rt, NULL, holder, (void *)(intptr_t)i, NULL));
  weft_task *kept[KEPT];
  for (int i = 0; i < KEPT; i++)
    EXPECT_OK(weft_task_spawn(ss.rt, &kept[i], holder,
                              (void *)(intptr_t)(HOLDERS + i), NULL));
  pthread_t th;
  EXPECT(pthread_create(&th, NULL, releaser, NULL) == 0);
  EXPECT_OK(weft_shutdown(ss.rt));
  EXPECT(pthread_join(th, NULL) == 0);
  EXPECT(ss.refused);
  for (int i = 0; i < HOLDERS + KEPT; i++)
    EXPECT_MSG(ss.done[i],
               "task %d had not finished when weft_shutdown returned", i);
  EXPECT_EQ_INT(ss.extra_ran, ss.extra_spawned);
}

/* A task never joined that owned a record of its children's declared
 * data: weft_shutdown frees what it owned with it (ASan's leak check
 * failed here before). */
static char declared[256];
static weft_runtime *declaring_rt;
static int declared_all;

static void declared_child(void *arg) { (void)arg; }

static void declaring_parent(void *arg) {
  (void)arg;
  for (int i = 0; i < 4; i++) {
    weft_access a = {declared + 64 * i, 64, WEFT_WRITE};
    weft_task_opts o;
    weft_task_opts_init(&o);
    o.accesses = &a;
    o.naccesses = 1;
    EXPECT_OK(weft_task_spawn(declaring_rt, NULL, declared_child, NULL, &o));
  }
  atomic_store((_Atomic int *)&declared_all, 1);
}

static void unjoined_owners_freed(void) {
  declaring_rt = tt_open(NULL);
  weft_task *never_joined;
  EXPECT_OK(weft_task_spawn(declaring_rt, &never_joined, declaring_parent, NULL,
                            NULL));
  tt_wait_flag(&declared_all, 10000, "the children were spawned");
  tt_close(declaring_rt);
}

/* ---- shutdown refused while user objects live ---- */

static void busy_objects(void) {
  weft_runtime *rt = tt_open(NULL);
  weft_event *ev = NULL;
  EXPECT_OK(weft_event_create(&ev));
  EXPECT_ERR(weft_shutdown(rt), WEFT_EBUSY);
  EXPECT(strstr(weft_last_error_message(), "1 events") != NULL);
  /* Nothing was closed: tasks, GPU work and the event still work. */
  check_works(rt);
  EXPECT_OK(weft_event_record(ev));
  EXPECT_OK(weft_event_sync(ev));
  EXPECT_OK(weft_event_destroy(&ev));
  EXPECT(ev == NULL);

  void *p = NULL, *d = NULL;
  EXPECT_OK(weft_pinned_alloc(100, &p));
  EXPECT_ERR(weft_shutdown(rt), WEFT_EBUSY);
  EXPECT_OK(weft_pinned_free(p));
  EXPECT_OK(weft_device_alloc(100, &d));
  EXPECT_OK(weft_sync());
  EXPECT_ERR(weft_shutdown(rt), WEFT_EBUSY);
  EXPECT_OK(weft_device_free(d));
  EXPECT_OK(weft_sync());
  /* The host backend's own streams count too, and the message says so. */
  weft_host_stream *hs = NULL;
  if (weft_host_stream_create(rt, 0, 0, &hs) == 0) {
    EXPECT_ERR(weft_shutdown(rt), WEFT_EBUSY);
    EXPECT(strstr(weft_last_error_message(), "1 streams") != NULL);
    EXPECT_OK(weft_host_stream_destroy(&hs));
  }
  check_works(rt);
  tt_close(rt);
}

/* ---- init and shutdown are refused inside a task ---- */

static void lifecycle_in_task(void *arg) {
  weft_runtime *rt = arg;
  weft_runtime *other = (weft_runtime *)(uintptr_t)0x5eed;
  EXPECT_ERR(weft_init(&other, NULL), WEFT_ESTATE);
  EXPECT(other == (weft_runtime *)(uintptr_t)0x5eed);
  EXPECT_ERR(weft_shutdown(rt), WEFT_ESTATE);
}

static void in_task(void) {
  weft_runtime *rt = tt_open(NULL);
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, lifecycle_in_task, rt, NULL));
  EXPECT_OK(weft_task_join(t));
  check_works(rt);
  tt_close(rt);
}

/* Environment variables and options out of range: refused at weft_init,
 * naming what was wrong; backend names in any case. */
/* Each of the n values of var makes weft_init fail with WEFT_EINVAL and a
 * message naming var and, if not NULL, the range allowed; var is left
 * set to the last. */
static void env_refused(const char *var, const char *const *bad, size_t n,
                        const char *range) {
  weft_runtime *rt = NULL;
  for (size_t i = 0; i < n; i++) {
    EXPECT(setenv(var, bad[i], 1) == 0);
    EXPECT_ERR(weft_init(&rt, NULL), WEFT_EINVAL);
    EXPECT(strstr(weft_last_error_message(), var) != NULL);
    EXPECT(!range || strstr(weft_last_error_message(), range) != NULL);
  }
}

static void env_checks(void) {
  static const char *const bad[] = {"-1", "0", "abc", "4x", "100000", " 2"};
  weft_runtime *rt = NULL;
  const char *vars[] = {"WEFT_WORKERS", "WEFT_HOST_THREADS"};
  for (size_t v = 0; v < 2; v++)
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      EXPECT(setenv(vars[v], bad[i], 1) == 0);
      EXPECT_ERR(weft_init(&rt, NULL), WEFT_EINVAL);
      EXPECT(strstr(weft_last_error_message(), vars[v]) != NULL);
      EXPECT(unsetenv(vars[v]) == 0);
    }
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.workers = 20000;
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "workers") != NULL);
  weft_runtime_opts_init(&o);
  o.host_threads = 1025;
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);
  /* The staging blocks of a pageable copy: 2 to 256. */
  static const char *const bad_chunks[] = {"1", "257", "abc", "-3"};
  env_refused("WEFT_STAGE_CHUNKS", bad_chunks, 4, "2 to 256");
  EXPECT(unsetenv("WEFT_STAGE_CHUNKS") == 0);
  /* A staging block: 64 KiB to 64 MiB. */
  static const char *const bad_kib[] = {"63", "65537", "4M", "-64"};
  env_refused("WEFT_STAGE_CHUNK_KIB", bad_kib, 4, "64 to 65536");
  EXPECT(setenv("WEFT_STAGE_CHUNK_KIB", "64", 1) == 0);
  tt_close(tt_open(NULL));
  EXPECT(unsetenv("WEFT_STAGE_CHUNK_KIB") == 0);
  /* 0 or 1 only, whatever the backend. */
  static const char *const bad_pageable[] = {"2", "yes", "on", " 1"};
  env_refused("WEFT_HOST_PAGEABLE", bad_pageable, 4, "expected 0");
  EXPECT(setenv("WEFT_HOST_PAGEABLE", "0", 1) == 0);
  tt_close(tt_open(NULL));
  EXPECT(unsetenv("WEFT_HOST_PAGEABLE") == 0);
  weft_runtime_opts_init(&o);
  o.stage_chunks = 257;
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "stage_chunks") != NULL);
  o.stage_chunks = 1;
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "2 to 256") != NULL);
  o.stage_chunks = 2;
  rt = tt_open(&o);
  tt_close(rt);
  weft_runtime_opts_init(&o);
  o.stage_chunk_kib = 65537;
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "stage_chunk_kib") != NULL);
  o.stage_chunk_kib = 64;
  tt_close(tt_open(&o));
  /* Streams made at weft_init: 1 to 65536 per device, 32 by default. */
  static const char *const bad_streams[] = {"0", "65537", "abc", "-1"};
  env_refused("WEFT_STREAMS", bad_streams, 4, "1 to 65536");
  EXPECT(setenv("WEFT_STREAMS", "5", 1) == 0);
  rt = tt_open(NULL);
  EXPECT_EQ_INT((int)weft__stream_pool_count(rt), 5 * rt->h.bk->ndev);
  tt_close(rt);
  EXPECT(unsetenv("WEFT_STREAMS") == 0);
  /* CUDA's completion flags: 0 or 1, any other value refused whatever the
   * backend, so that an automatic choice falling back to the host cannot
   * hide a typo. */
  const char *flags_env = getenv("WEFT_CUDA_FLAGS");
  char flags_saved[8] = "";
  if (flags_env)
    snprintf(flags_saved, sizeof flags_saved, "%s", flags_env);
  static const char *const bad_flags[] = {"2", "on", "01", " 1"};
  env_refused("WEFT_CUDA_FLAGS", bad_flags, 4, NULL);
  for (int on = 0; on < 2; on++) {
    EXPECT(setenv("WEFT_CUDA_FLAGS", on ? "1" : "0", 1) == 0);
    rt = tt_open(NULL);
    tt_close(rt);
  }
  /* Put back as the run had it (a run with the flags off stays off). */
  EXPECT((flags_env ? setenv("WEFT_CUDA_FLAGS", flags_saved, 1)
                    : unsetenv("WEFT_CUDA_FLAGS")) == 0);
  weft_runtime_opts_init(&o);
  o.streams = 65537;
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "streams") != NULL);
  o.streams = -2;
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);
  rt = tt_open(NULL);
  EXPECT_EQ_INT((int)weft__stream_pool_count(rt), 32 * rt->h.bk->ndev);
  tt_close(rt);
  o.streams = 300;
  rt = tt_open(&o);
  EXPECT_EQ_INT((int)weft__stream_pool_count(rt), 300 * rt->h.bk->ndev);
  /* Tasks and this thread lease the streams made ahead: none is made, and
   * the first lease gets the lowest id, 1, however many runtimes this
   * process opened before (ids are the runtime's own). */
  weft__stream *first =
      rt->h.streams.streams[0].v[rt->h.streams.streams[0].n - 1];
  EXPECT_EQ_INT((int)first->id, 1);
  for (size_t i = 0; i + 1 < rt->h.streams.streams[0].n; i++)
    EXPECT(((weft__stream *)rt->h.streams.streams[0].v[i])->id > first->id);
  int *out;
  EXPECT_OK(weft_pinned_alloc(sizeof(int), (void **)&out));
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, gpu_roundtrip, out, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_pinned_free(out));
  EXPECT_EQ_INT((int)weft__stream_pool_count(rt), 300 * rt->h.bk->ndev);
  tt_close(rt);
  /* weft_task_stats counts the streams: those made ahead, and those made
   * since because more tasks held one at once. */
  o.streams = 2;
  rt = tt_open(&o);
  weft_task_stats ts = {.struct_size = sizeof ts};
  EXPECT_OK(weft_task_stats_get(rt, &ts));
  EXPECT_EQ_INT((int)ts.streams, 2 * rt->h.bk->ndev);
  enum { STREAM_HOLDERS = 6 };
  weft_task *holders[STREAM_HOLDERS];
  int release = 0;
  holders_in = 0;
  for (int i = 0; i < STREAM_HOLDERS; i++)
    EXPECT_OK(weft_task_spawn(rt, &holders[i], stream_holder, &release, NULL));
  while (__atomic_load_n(&holders_in, __ATOMIC_SEQ_CST) < STREAM_HOLDERS)
    sched_yield();
  EXPECT_OK(weft_task_stats_get(rt, &ts));
  EXPECT_MSG(ts.streams >= STREAM_HOLDERS &&
                 ts.streams == weft__stream_pool_count(rt),
             "%d tasks hold a stream each, weft_task_stats says %llu streams "
             "(the runtime %zu)",
             STREAM_HOLDERS, (unsigned long long)ts.streams,
             weft__stream_pool_count(rt));
  tt_store(&release, 1);
  for (int i = 0; i < STREAM_HOLDERS; i++)
    EXPECT_OK(weft_task_join(holders[i]));
  tt_close(rt);
  /* A valid value is used; the option wins over the variable. */
  EXPECT(setenv("WEFT_WORKERS", "3", 1) == 0);
  rt = tt_open(NULL);
  tt_close(rt);
  weft_runtime_opts_init(&o);
  o.workers = 2;
  rt = tt_open(&o);
  tt_close(rt);
  EXPECT(unsetenv("WEFT_WORKERS") == 0);
  /* This run's backend, spelled in upper case. */
  const char *be = getenv("WEFT_BACKEND");
  if (be && *be) {
    char saved[32], upper[32];
    snprintf(saved, sizeof saved, "%s", be);
    size_t i = 0;
    for (; saved[i] && i + 1 < sizeof upper; i++)
      upper[i] =
          (char)(saved[i] >= 'a' && saved[i] <= 'z' ? saved[i] - 32 : saved[i]);
    upper[i] = '\0';
    EXPECT(setenv("WEFT_BACKEND", upper, 1) == 0);
    rt = tt_open(NULL);
    tt_close(rt);
    EXPECT(setenv("WEFT_BACKEND", saved, 1) == 0);
  }
}

static void noop(void *arg) { (void)arg; }

/* Alive until *arg is set: a task that a device-wide wait would stall. */
static void bystander(void *arg) {
  while (!tt_load(arg))
    weft_yield();
}

/* Waits for the whole device while another task is alive: a finding. */
static void device_syncer(void *arg) {
  (void)arg;
  EXPECT_OK(weft_device_sync());
}

/* A trace file that cannot be written fails weft_init, not the shutdown
 * after the run; a second shutdown of a handle is refused. */
static void init_and_shutdown_checks(void) {
  weft_runtime *rt = NULL;
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.trace_path = "/nonexistent-weft-dir/trace.json";
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EIO);
  EXPECT(strstr(weft_last_error_message(), "nonexistent-weft-dir") != NULL);
  EXPECT(rt == NULL);
  /* A path too long for a file name is a bad argument, as documented. */
  char *longpath = malloc(5001);
  EXPECT(longpath != NULL);
  memset(longpath, 'a', 5000);
  longpath[0] = '/';
  longpath[5000] = '\0';
  o.trace_path = longpath;
  EXPECT_ERR(weft_init(&rt, &o), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "too long") != NULL);
  EXPECT(rt == NULL);
  free(longpath);
  /* One runtime traces at a time; the refused one leaves no file. */
  char pa[64], pb[64];
  snprintf(pa, sizeof pa, "/tmp/weft-lifecycle-%d-a.json", (int)getpid());
  snprintf(pb, sizeof pb, "/tmp/weft-lifecycle-%d-b.json", (int)getpid());
  unlink(pb);
  /* An earlier run's trace there: emptied at init, so that a run that
   * never shuts down cannot leave it to pass for its own. */
  FILE *stale = fopen(pa, "w");
  EXPECT(stale != NULL);
  if (stale) {
    EXPECT(fputs("{\"traceEvents\": []}", stale) >= 0);
    EXPECT(fclose(stale) == 0);
  }
  o.trace_path = pa;
  weft_runtime *traced = NULL;
  int rc = weft_init(&traced, &o);
  /* CUPTI serves one subscriber: under compute-sanitizer, which holds it,
   * no runtime can trace, and only the checks without a tracer run. */
  if (rc && strstr(weft_last_error_message(), "MULTIPLE_SUBSCRIBERS")) {
    puts("lifecycle: CUPTI is taken by another tool: the one-tracer checks "
         "are skipped");
    unlink(pa);
    traced = NULL;
  } else {
    EXPECT_OK(rc);
    struct stat st;
    EXPECT(stat(pa, &st) == 0 && st.st_size == 0);
    o.trace_path = pb;
    EXPECT_ERR(weft_init(&rt, &o), WEFT_EBUSY);
    EXPECT(rt == NULL);
    EXPECT_MSG(access(pb, F_OK) != 0, "the refused weft_init left %s", pb);
  }
  /* Another runtime's weft check findings stay out of the file. */
  weft_runtime_opts co;
  weft_runtime_opts_init(&co);
  co.check = 1;
  weft_runtime *checked = tt_open(&co);
  FILE *quiet = fopen("/dev/null", "w");
  EXPECT(quiet != NULL);
  weft__check_set_output(weft__runtime_backend(checked)->check, quiet);
  int stop = 0;
  weft_task *by, *syncer;
  EXPECT_OK(weft_task_spawn(checked, &by, bystander, &stop, NULL));
  EXPECT_OK(weft_task_spawn(checked, &syncer, device_syncer, NULL, NULL));
  EXPECT_OK(weft_task_join(syncer));
  tt_store(&stop, 1);
  EXPECT_OK(weft_task_join(by));
  EXPECT(weft__check_findings(weft__runtime_backend(checked)->check) >= 1);
  tt_close(checked);
  fclose(quiet);
  if (traced) {
    tt_close(traced);
    EXPECT(access(pa, F_OK) == 0);
    FILE *tf = fopen(pa, "r");
    EXPECT(tf != NULL);
    static char text[1 << 20];
    size_t got = fread(text, 1, sizeof text - 1, tf);
    text[got] = '\0';
    fclose(tf);
    EXPECT_MSG(strstr(text, "weft_check") == NULL,
               "another runtime's weft check finding is in %s", pa);
    unlink(pa);
  }
  EXPECT_ERR(weft_sync(), WEFT_ESTATE); /* nothing was opened */
  rt = tt_open(NULL);
  tt_close(rt);
  EXPECT_ERR(weft_shutdown(rt), WEFT_EHANDLE);
  EXPECT(strstr(weft_last_error_message(), "not an open runtime") != NULL);
  /* Every call taking the runtime refuses it once shut down, before
   * reading any of its (freed) memory; the sanitizer builds would see a
   * read. No runtime is opened in between, so none can have its address. */
  int n = 0, direct = 0;
  weft_device_info info;
  weft_task *t = NULL;
  weft_mem_stats ms = {.struct_size = sizeof ms};
  weft_task_stats ts = {.struct_size = sizeof ts};
  EXPECT_ERR(weft_task_spawn(rt, &t, noop, NULL, NULL), WEFT_EHANDLE);
  EXPECT(t == NULL);
  EXPECT(strstr(weft_last_error_message(), "weft_task_spawn") != NULL);
  EXPECT_ERR(weft_device_count(rt, &n), WEFT_EHANDLE);
  EXPECT_ERR(weft_device_get_info(rt, 0, &info), WEFT_EHANDLE);
  EXPECT_ERR(weft_device_peer(rt, 0, 0, &direct), WEFT_EHANDLE);
  EXPECT_ERR(weft_mem_stats_get(rt, &ms), WEFT_EHANDLE);
  EXPECT_ERR(weft_mem_trim(rt), WEFT_EHANDLE);
  EXPECT_ERR(weft_task_stats_get(rt, &ts), WEFT_EHANDLE);
  EXPECT_ERR(weft_runtime_set_admission(rt, 1), WEFT_EHANDLE);
  EXPECT(weft_runtime_backend(rt) == WEFT_BACKEND_AUTO);
  weft_host_stream *hs = NULL;
  EXPECT_ERR(weft_host_stream_create(rt, 0, 0, &hs), WEFT_EHANDLE);
  int not_a_runtime = 0;
  EXPECT_ERR(weft_shutdown((weft_runtime *)&not_a_runtime), WEFT_EHANDLE);
}

/* A task joining a task of another runtime is refused; a plain thread may
 * join tasks of any runtime. */
typedef struct cross {
  weft_task *other;
  int rc;
} cross;

static void noop_task(void *arg) { (void)arg; }

static void cross_joiner(void *arg) {
  cross *c = arg;
  c->rc = weft_task_join(c->other);
}

static void cross_follower(void *arg) {
  cross *c = arg;
  c->rc = weft_task_after(c->other);
}

static void cross_runtime_join(void) {
  weft_runtime *a = tt_open_workers(2);
  weft_runtime *b = tt_open_workers(2);
  weft_task *tb, *ta;
  EXPECT_OK(weft_task_spawn(b, &tb, noop_task, NULL, NULL));
  cross c = {tb, 0};
  EXPECT_OK(weft_task_spawn(a, &ta, cross_joiner, &c, NULL));
  EXPECT_OK(weft_task_join(ta));
  EXPECT(c.rc == WEFT_EINVAL);
  /* Following it is refused too, even once it has completed (it is not
   * joined yet, so its runtime is known). */
  while (!tt_task_done(tb))
    tt_sleep_ms(1);
  c.rc = 0;
  EXPECT_OK(weft_task_spawn(a, &ta, cross_follower, &c, NULL));
  EXPECT_OK(weft_task_join(ta));
  EXPECT_MSG(c.rc == WEFT_EINVAL,
             "weft_task_after of another runtime's "
             "completed task: %d",
             c.rc);
  EXPECT_OK(weft_task_join(tb)); /* the handle is still the plain thread's */
  tt_close(b);
  tt_close(a);
}

/* Two runtimes and plain threads: a thread keeps the runtime it first used
 * until that one shuts down; a thread that used none takes the newest
 * open. */
static void *second_thread(void *arg) {
  weft_runtime **which = arg;
  int *p;
  EXPECT_OK(weft_pinned_alloc(sizeof *p, (void **)&p));
  weft_mem_stats st = {.struct_size = sizeof st};
  for (int i = 0; i < 2; i++) {
    EXPECT_OK(weft_mem_stats_get(which[i], &st));
    if (st.pinned_blocks == 1)
      which[2] = which[i]; /* the runtime the block came from */
  }
  EXPECT_OK(weft_pinned_free(p));
  EXPECT_OK(weft_sync());
  return NULL;
}

static void two_runtimes(void) {
  weft_runtime *a = tt_open_workers(2);
  char *buf;
  EXPECT_OK(weft_pinned_alloc(4096, (void **)&buf));
  EXPECT_OK(weft_memset(buf, 7, 4096)); /* on main's stream, of a */
  weft_runtime *b = tt_open_workers(2);
  /* main still belongs to a: its sync waits for the memset */
  EXPECT_OK(weft_sync());
  for (int i = 0; i < 4096; i++)
    EXPECT_MSG(buf[i] == 7, "byte %d is %d after weft_sync", i, buf[i]);
  /* a thread new to weft takes b, the newest */
  weft_runtime *which[3] = {a, b, NULL};
  pthread_t th;
  EXPECT(pthread_create(&th, NULL, second_thread, which) == 0);
  EXPECT(pthread_join(th, NULL) == 0);
  EXPECT(which[2] == b);
  /* b's shutdown leaves main with a */
  tt_close(b);
  EXPECT_OK(weft_memset(buf, 9, 4096));
  EXPECT_OK(weft_sync());
  EXPECT(buf[4095] == 9);
  EXPECT_OK(weft_pinned_free(buf)); /* main can free a's block */
  tt_close(a);                      /* and a closes: nothing of it is left */
  EXPECT_ERR(weft_sync(), WEFT_ESTATE);
}

/* Two threads, each opening a runtime of its own: each thread's calls go
 * to the one it opened, although the other thread opened one after it and
 * before its first call. (They went to the later one: the first thread's
 * pinned block landed in the second runtime, whose owner's shutdown then
 * refused with a block live, or freed what the first thread's sync was
 * using.) */
typedef struct own_rt {
  pthread_barrier_t *bar;
  int first; /* opens before the other thread */
  weft_runtime *rt;
} own_rt;

static void *own_runtime_thread(void *arg) {
  own_rt *o = arg;
  if (!o->first)
    pthread_barrier_wait(o->bar); /* 1: the other has opened its own */
  /* weft_init alone: tt_open's preloads would bind the thread first. */
  weft_runtime_opts opts;
  weft_runtime_opts_init(&opts);
  opts.workers = 1;
  EXPECT_OK(weft_init(&o->rt, &opts));
  if (o->first)
    pthread_barrier_wait(o->bar); /* 1 */
  pthread_barrier_wait(o->bar);   /* 2: both open, neither has called */
  EXPECT(weft_runtime_current() == o->rt);
  int *p;
  EXPECT_OK(weft_pinned_alloc(sizeof *p, (void **)&p));
  weft_mem_stats st = {.struct_size = sizeof st};
  EXPECT_OK(weft_mem_stats_get(o->rt, &st));
  EXPECT_EQ_INT((int)st.pinned_blocks, 1);
  EXPECT_OK(weft_memset(p, 5, sizeof *p));
  EXPECT_OK(weft_sync());
  EXPECT(*p == 0x05050505);
  pthread_barrier_wait(o->bar); /* 3: both allocated */
  EXPECT_OK(weft_pinned_free(p));
  pthread_barrier_wait(o->bar); /* 4: both freed */
  EXPECT_OK(weft_shutdown(o->rt));
  return NULL;
}

static void own_runtimes(void) {
  pthread_barrier_t bar;
  EXPECT(pthread_barrier_init(&bar, NULL, 2) == 0);
  own_rt o[2] = {{&bar, 1, NULL}, {&bar, 0, NULL}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    EXPECT(pthread_create(&th[i], NULL, own_runtime_thread, &o[i]) == 0);
  for (int i = 0; i < 2; i++)
    EXPECT(pthread_join(th[i], NULL) == 0);
  EXPECT(o[0].rt != o[1].rt);
  pthread_barrier_destroy(&bar);
}

static void memset_sync(void *arg) {
  EXPECT_OK(weft_memset(arg, 3, 4096));
  EXPECT_OK(weft_sync());
}

/* Counts the free events of rt's device 0 in one pool, checking that each
 * asks for blocking sync exactly when the pool is the blocking one. */
static int pooled(weft_runtime *rt, int blocking) {
  weft__ptrvec *v = &rt->h.events.free[blocking];
  for (size_t i = 0; i < v->n; i++) {
    weft__event *e = v->v[i];
    EXPECT_MSG(((e->flags & WEFT__EVENT_BLOCKING) != 0) == blocking,
               "a %s pool's event %s blocking sync",
               blocking ? "blocking" : "polled", blocking ? "lacks" : "has");
  }
  return (int)v->n;
}

/* A plain thread's weft_sync waits on an event with blocking sync (it
 * sleeps in the driver); a task's on a polled one without (CUDA holds
 * only some hundreds of blocking-sync events pending, docs/decisions/cuda.md).
 */
static void event_pools(void) {
  weft_runtime *rt = tt_open_workers(2);
  char *buf;
  EXPECT_OK(weft_pinned_alloc(4096, (void **)&buf));
  /* None made yet: a task's sync below must make a polled one. */
  EXPECT_EQ_INT(pooled(rt, 0), 0);
  EXPECT_EQ_INT(pooled(rt, 1), 0);
  EXPECT_OK(weft_memset(buf, 1, 4096));
  EXPECT_OK(weft_sync());
  EXPECT_EQ_INT(pooled(rt, 1), 1);
  EXPECT_EQ_INT(pooled(rt, 0), 0);
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, memset_sync, buf, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT(pooled(rt, 0) > 0);
  EXPECT_EQ_INT(pooled(rt, 1), 1);
  EXPECT(buf[0] == 3 && buf[4095] == 3);
  EXPECT_OK(weft_pinned_free(buf));
  tt_close(rt);
}

static void stats_task(void *arg) {
  weft_task_stats st = {.struct_size = sizeof st};
  EXPECT_OK(weft_task_stats_get(arg, &st));
  EXPECT(st.live >= 1);          /* this one */
  EXPECT(st.stacks_in_use >= 1); /* its stack */
}

/* weft_task_stats_get: counts while a task lives and after, and its
 * checks. */
static void task_stats(void) {
  weft_runtime *rt = tt_open_workers(2);
  weft_task_stats st = {.struct_size = sizeof st};
  EXPECT_OK(weft_task_stats_get(rt, &st));
  EXPECT(st.live == 0 && st.stacks_in_use == 0);
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, stats_task, rt, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_task_stats_get(rt, &st));
  EXPECT(st.live == 0 && st.stacks_in_use == 0);
  EXPECT_ERR(weft_task_stats_get(NULL, &st), WEFT_EINVAL);
  EXPECT_ERR(weft_task_stats_get(rt, NULL), WEFT_EINVAL);
  st.struct_size = 1;
  EXPECT_ERR(weft_task_stats_get(rt, &st), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "struct_size") != NULL);
  st.struct_size = sizeof st + 8;
  EXPECT_ERR(weft_task_stats_get(rt, &st), WEFT_EINVAL);
  /* A caller built before streams was added: the rest is filled, streams
   * is left as it was. */
  st.struct_size = offsetof(weft_task_stats, streams);
  st.streams = 12345;
  st.live = 99;
  EXPECT_OK(weft_task_stats_get(rt, &st));
  EXPECT(st.live == 0 && st.streams == 12345);
  /* One built before streams_taken_over was: streams is filled. */
  st.struct_size = offsetof(weft_task_stats, streams_taken_over);
  st.streams_taken_over = 777;
  EXPECT_OK(weft_task_stats_get(rt, &st));
  EXPECT(st.streams != 12345 && st.streams_taken_over == 777);
  st.struct_size = sizeof st;
  EXPECT_OK(weft_task_stats_get(rt, &st));
  EXPECT_EQ_INT((int)st.streams_taken_over, 0); /* no stream held work */
  tt_close(rt);
}

/* Past the streams made ahead, a lease takes over the stream of the task
 * that returned longest ago with work queued (docs/decisions/cuda.md,
 * "Streams past those made ahead are taken over"). */
enum { TAKERS = 8, TAKER_INTS = 1024 };
static tt_gate take_gate[2]; /* a gate each: one spin writes its state */
static int *take_buf;        /* device: TAKERS x TAKER_INTS */

static void gated(void *arg) { tt_gate_launch(arg); }

static void taker(void *arg) {
  int i = (int)(intptr_t)arg;
  EXPECT_OK(weft_memset(take_buf + (size_t)i * TAKER_INTS, i + 1,
                        TAKER_INTS * sizeof(int)));
}

static void streams_taken_over(void) {
  weft_runtime *rt = tt_open_ahead(2);
  for (int i = 0; i < 2; i++)
    tt_gate_init(&take_gate[i]);
  size_t bytes = (size_t)TAKERS * TAKER_INTS * sizeof(int);
  EXPECT_OK(weft_device_alloc(bytes, (void **)&take_buf));
  /* Both streams made ahead held by returned tasks whose work waits for
   * the gate; then each taker's lease finds the pool empty. */
  weft_task *g[2], *t[TAKERS];
  for (int i = 0; i < 2; i++) {
    EXPECT_OK(weft_task_spawn(rt, &g[i], gated, &take_gate[i], NULL));
    while (!tt_task_returned(g[i]))
      sched_yield();
  }
  for (int i = 0; i < TAKERS; i++) {
    EXPECT_OK(weft_task_spawn(rt, &t[i], taker, (void *)(intptr_t)i, NULL));
    while (!tt_task_returned(t[i]))
      sched_yield();
  }
  tt_expect_streams_ahead(rt, 2, "tasks returned with work behind a gate");
  /* Each taker took a stream over (the second gate perhaps too); weft
   * check takes none. */
  weft_task_stats ts = {.struct_size = sizeof ts};
  EXPECT_OK(weft_task_stats_get(rt, &ts));
  EXPECT_MSG(rt->h.bk->check ? ts.streams_taken_over == 0
                             : ts.streams_taken_over >= TAKERS,
             "%llu streams taken over by %d takers",
             (unsigned long long)ts.streams_taken_over, TAKERS);
  /* Under weft check each taker made a stream of its own, its work free
   * to complete. */
  if (!rt->h.bk->check)
    EXPECT_MSG(!tt_task_done(t[TAKERS - 1]),
               "a taker completed with the gate closed");
  for (int i = 0; i < 2; i++)
    tt_gate_open(&take_gate[i]);
  for (int i = 0; i < 2; i++)
    EXPECT_OK(weft_task_join(g[i]));
  for (int i = 0; i < TAKERS; i++)
    EXPECT_OK(weft_task_join(t[i]));
  unsigned char *host = malloc(bytes);
  EXPECT(host != NULL);
  EXPECT_OK(weft_copy(host, take_buf, bytes));
  EXPECT_OK(weft_sync());
  for (int i = 0; i < TAKERS; i++)
    EXPECT_MSG(host[(size_t)i * TAKER_INTS * sizeof(int)] == i + 1 &&
                   host[(size_t)(i + 1) * TAKER_INTS * sizeof(int) - 1] ==
                       i + 1,
               "taker %d's memset is not in its buffer", i);
  free(host);
  EXPECT_OK(weft_device_free(take_buf));
  for (int i = 0; i < 2; i++)
    tt_gate_fini(&take_gate[i]);
  tt_close(rt);
}

int main(void) {
  env_checks();
  streams_taken_over();
  init_and_shutdown_checks();
  cross_runtime_join();
  two_runtimes();
  own_runtimes();
  event_pools();
  task_stats();
  no_runtime_calls();
  bad_options();
  default_workers_follow_affinity();
  init_with(1, 0);
  init_with(2, 128 * 1024);
  init_with(4, 256 * 1024);
  shutdown_waits();
  unjoined_owners_freed();
  busy_objects();
  in_task();
  no_runtime_calls();
  puts("ok");
  return 0;
}
