/* weft check (WEFT_CHECK, weft_runtime_opts.check) on every backend: each
 * planted bug is reported, naming the tasks involved, and its correctly
 * ordered twin is silent.
 *
 * Races: two tasks' memsets of one buffer; a kernel writing a buffer and
 * another task copying it out; two kernels reading one buffer through a
 * parameter not marked read-only; a graph replay against another task's
 * memset. Twins: weft_task_after, a join before the second spawn, an event
 * waited on, a parameter marked read-only (weft_kernel.reads), two tasks
 * replaying one graph (replays of a graph are ordered). Implicit
 * synchronisation: weft_device_sync from a task while another is alive; its
 * twins from the only task alive and from a plain thread. Declared data
 * (weft/dataflow.h): a write where a read was declared, and past the declared
 * range; its twin declared in full. Registered data (weft/data.h): a get of
 * a handle the task did not declare; its twin declared; a copy from its
 * host memory while a device holds the valid copy; its twin after
 * weft_data_sync. With checking off nothing is reported. Each case runs in
 * a fresh runtime, its findings written to a file of the test's. The racing
 * tasks meet after their operations (each holds its stream until the other has
 * queued): a task that ended first would hand its stream to the next, and one
 * stream's work is ordered, so there would be no race to find. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host_guard.h"
#include "task_common.h"
#include "weft_internal.h"

enum { N = 1024 };

typedef struct world {
  weft_runtime *rt;
  int *buf, *other;    /* device */
  int *host;           /* pinned */
  int *reg;            /* the registered host memory: host, or pageable */
  weft_task *first;    /* for weft_task_after */
  weft_event *ev;      /* recorded by the first task */
  int recorded;        /* set once it is */
  weft_graph *graph;   /* replayed by the graph cases */
  weft_kernel reads_0; /* copy_int without its read-only mark */
  int meet;            /* racing tasks wait for each other (meet()) */
  int arrived;
  int synced; /* set when the device-syncer is done */
} world;

static world W;

typedef void (*case_fn)(void);

/* With W.meet, waits until the other racing task got here too. */
static void meet(void) {
  if (!W.meet)
    return;
  tt_add(&W.arrived, 1);
  while (tt_load(&W.arrived) < 2)
    weft_yield();
}

static weft_task *spawn(weft_task_fn fn, const char *name) {
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.name = name;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(W.rt, &t, fn, NULL, &o));
  return t;
}

static void memset_task(void *arg) {
  (void)arg;
  EXPECT_OK(weft_memset(W.buf, 1, N * sizeof(int)));
  meet();
  EXPECT_OK(weft_sync());
}

static void after_memset_task(void *arg) {
  (void)arg;
  EXPECT_OK(weft_task_after(W.first));
  EXPECT_OK(weft_memset(W.buf, 2, N * sizeof(int)));
  EXPECT_OK(weft_sync());
}

static void kernel_write_task(void *arg) {
  (void)arg;
  float *f = (float *)W.buf;
  int n = N;
  float a = 1, b = 1;
  void *args[] = {&f, &n, &a, &b};
  EXPECT_OK(weft_launch(&tk.axpb, WEFT_DIM1(N / TEST_THREADS),
                        WEFT_DIM1(TEST_THREADS), 0, args));
  meet();
  EXPECT_OK(weft_sync());
}

static void copy_out_task(void *arg) {
  (void)arg;
  EXPECT_OK(weft_copy(W.host, W.buf, N * sizeof(int)));
  meet();
  EXPECT_OK(weft_sync());
}

/* copy_int(dst, src): reads W.buf, writes a word of W.other of its own. */
static void read_task(const weft_kernel *k, int slot) {
  int *dst = W.other + slot, *src = W.buf;
  void *args[] = {&dst, &src};
  EXPECT_OK(weft_launch(k, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  meet();
  EXPECT_OK(weft_sync());
}
static void read_marked_a(void *arg) { (void)arg, read_task(&tk.copy_int, 1); }
static void read_marked_b(void *arg) { (void)arg, read_task(&tk.copy_int, 2); }
static void read_plain_a(void *arg) { (void)arg, read_task(&W.reads_0, 1); }
static void read_plain_b(void *arg) { (void)arg, read_task(&W.reads_0, 2); }

static void record_task(void *arg) {
  (void)arg;
  EXPECT_OK(weft_memset(W.buf, 3, N * sizeof(int)));
  EXPECT_OK(weft_event_record(W.ev));
  tt_store(&W.recorded, 1);
  EXPECT_OK(weft_sync());
}

static void wait_event_task(void *arg) {
  (void)arg;
  while (!tt_load(&W.recorded))
    weft_yield();
  EXPECT_OK(weft_event_wait(W.ev));
  EXPECT_OK(weft_memset(W.buf, 4, N * sizeof(int)));
  EXPECT_OK(weft_sync());
}

static void replay_task(void *arg) {
  (void)arg;
  for (int i = 0; i < 3; i++)
    EXPECT_OK(weft_graph_launch(W.graph));
  meet();
  EXPECT_OK(weft_sync());
}

static void device_sync_task(void *arg) {
  (void)arg;
  EXPECT_OK(weft_memset(W.buf, 0, N * sizeof(int)));
  EXPECT_OK(weft_device_sync());
  tt_add(&W.synced, 1);
}

/* Alive until the device-syncer is done: a task the sync could stall. */
static void bystander_task(void *arg) {
  (void)arg;
  EXPECT_OK(weft_memset(W.other, 0, N * sizeof(int)));
  while (!tt_load(&W.synced))
    weft_yield();
  EXPECT_OK(weft_sync());
}

/* Runs fn in a task named name that declares acc[0..n), and joins it. */
static void spawn_joined(const char *name, const weft_access *acc, size_t n,
                         weft_task_fn fn) {
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.name = name;
  o.accesses = acc;
  o.naccesses = n;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(W.rt, &t, fn, NULL, &o));
  EXPECT_OK(weft_task_join(t));
}

/* memset_task, which writes all of W.buf, declaring only mode on its
 * first bytes bytes. */
static void spawn_declared(const char *name, unsigned mode, size_t bytes) {
  weft_access acc = {W.buf, bytes, mode};
  spawn_joined(name, &acc, 1, memset_task);
}

static void memset_declared_read(void) {
  spawn_declared("declared-reader", WEFT_READ, N * sizeof(int));
}

static void memset_declared_half(void) {
  spawn_declared("declared-half", WEFT_WRITE, N * sizeof(int) / 2);
}

static void memset_declared_write(void) {
  spawn_declared("declared-writer", WEFT_RW, N * sizeof(int));
}

/* A declaring task's own scratch, allocated in its body (which no
 * declaration at the spawn could name), used and freed there. */
static void scratch_task(void *arg) {
  (void)arg;
  int *scratch, *pinned;
  EXPECT_OK(weft_device_alloc(N * sizeof(int), (void **)&scratch));
  EXPECT_OK(weft_pinned_alloc(N * sizeof(int), (void **)&pinned));
  EXPECT_OK(weft_memset(scratch, 5, N * sizeof(int)));
  EXPECT_OK(weft_copy(pinned, scratch, N * sizeof(int)));
  EXPECT_OK(weft_copy(W.buf, scratch, N * sizeof(int)));
  EXPECT_OK(weft_sync());
  EXPECT_OK(weft_device_free(scratch));
  EXPECT_OK(weft_pinned_free(pinned));
}

static void own_scratch(void) {
  weft_access acc = {W.buf, N * sizeof(int), WEFT_WRITE};
  spawn_joined("scratch-user", &acc, 1, scratch_task);
}

/* ---- the cases ---- */

/* WEFT__FLOW_FOLD readers of W.buf (a read-only kernel parameter each),
 * detached, all done before one more is declared: the record folds them
 * into a join (dataflow.c), and a writer after the last is ordered after
 * every one of them, which weft check must see although they are gone
 * (CI once saw two false races here in the data-flow suite). */
static int fold_launched;

/* The first FOLD hold their streams until all have launched: on one
 * stream in turn their reads would be ordered by it. */
static void fold_reader(void *arg) {
  int slot = (int)(intptr_t)arg, *dst = W.other + slot, *src = W.buf;
  void *args[] = {&dst, &src};
  EXPECT_OK(weft_launch(&tk.copy_int, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  tt_add(&fold_launched, 1);
  while (slot <= WEFT__FLOW_FOLD && tt_load(&fold_launched) < WEFT__FLOW_FOLD)
    weft_yield();
  EXPECT_OK(weft_sync());
}

/* Reader slot of W.buf, declared with the word of W.other it writes. */
static void spawn_fold_reader(int slot, weft_task **t) {
  weft_access acc[2] = {{W.buf, N * sizeof(int), WEFT_READ},
                        {W.other + slot, sizeof(int), WEFT_WRITE}};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.accesses = acc;
  o.naccesses = 2;
  o.name = "folded-reader";
  EXPECT_OK(weft_task_spawn(W.rt, t, fold_reader, (void *)(intptr_t)slot, &o));
}

static void folded_readers_then_writer(void) {
  fold_launched = 0;
  for (int i = 1; i <= WEFT__FLOW_FOLD; i++)
    spawn_fold_reader(i, NULL);
  /* Done, and this thread learns nothing of it: no join, no sync. */
  weft_task_stats st = {.struct_size = sizeof st};
  do {
    tt_sleep_ms(1);
    EXPECT_OK(weft_task_stats_get(W.rt, &st));
  } while (st.live > 0);
  weft_task *last, *writer;
  spawn_fold_reader(WEFT__FLOW_FOLD + 1, &last);
  weft_access acc = {W.buf, N * sizeof(int), WEFT_WRITE};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.accesses = &acc;
  o.naccesses = 1;
  o.name = "folded-writer";
  EXPECT_OK(weft_task_spawn(W.rt, &writer, memset_task, NULL, &o));
  EXPECT_OK(weft_task_join(last));
  EXPECT_OK(weft_task_join(writer));
}

static void two_memsets(void) {
  weft_task *a = spawn(memset_task, "setter-a");
  weft_task *b = spawn(memset_task, "setter-b");
  EXPECT_OK(weft_task_join(a));
  EXPECT_OK(weft_task_join(b));
}

/* One after the other: the second task leases the stream the first gave
 * back, so this run ordered them by stream order, yet nothing in the
 * program does: another run could give them two streams at once. */
static void two_memsets_in_turn(void) {
  W.meet = 0;
  weft_task *a = spawn(memset_task, "setter-a");
  while (!tt_task_done(a))
    tt_sleep_ms(1);
  weft_task *b = spawn(memset_task, "setter-b");
  EXPECT_OK(weft_task_join(a));
  EXPECT_OK(weft_task_join(b));
}

static void two_memsets_ordered(void) {
  W.first = spawn(memset_task, "setter-a");
  weft_task *b = spawn(after_memset_task, "setter-b");
  EXPECT_OK(weft_task_join(b));
  EXPECT_OK(weft_task_join(W.first));
}

static void kernel_then_copy(void) {
  weft_task *a = spawn(kernel_write_task, "kernel-writer");
  weft_task *b = spawn(copy_out_task, "copier");
  EXPECT_OK(weft_task_join(a));
  EXPECT_OK(weft_task_join(b));
}

static void kernel_then_copy_joined(void) {
  EXPECT_OK(weft_task_join(spawn(kernel_write_task, "kernel-writer")));
  EXPECT_OK(weft_task_join(spawn(copy_out_task, "copier")));
}

static void two_readers_marked(void) {
  weft_task *a = spawn(read_marked_a, "reader-a");
  weft_task *b = spawn(read_marked_b, "reader-b");
  EXPECT_OK(weft_task_join(a));
  EXPECT_OK(weft_task_join(b));
}

static void two_readers_unmarked(void) {
  weft_task *a = spawn(read_plain_a, "reader-a");
  weft_task *b = spawn(read_plain_b, "reader-b");
  EXPECT_OK(weft_task_join(a));
  EXPECT_OK(weft_task_join(b));
}

static void event_ordered(void) {
  W.recorded = 0;
  weft_task *b = spawn(wait_event_task, "waiter");
  weft_task *a = spawn(record_task, "recorder");
  EXPECT_OK(weft_task_join(a));
  EXPECT_OK(weft_task_join(b));
}

static void make_graph(void) {
  EXPECT_OK(weft_graph_begin());
  EXPECT_OK(weft_memset(W.buf, 5, N * sizeof(int)));
  EXPECT_OK(weft_graph_end(&W.graph));
}

static void graph_two_replayers(void) {
  make_graph();
  weft_task *a = spawn(replay_task, "replayer-a");
  weft_task *b = spawn(replay_task, "replayer-b");
  EXPECT_OK(weft_task_join(a));
  EXPECT_OK(weft_task_join(b));
  EXPECT_OK(weft_graph_destroy(W.graph));
}

static void graph_against_memset(void) {
  make_graph();
  weft_task *a = spawn(replay_task, "replayer");
  weft_task *b = spawn(memset_task, "setter");
  EXPECT_OK(weft_task_join(a));
  EXPECT_OK(weft_task_join(b));
  EXPECT_OK(weft_graph_destroy(W.graph));
}

static void sync_in_task(void) {
  W.synced = 0;
  weft_task *b = spawn(bystander_task, "bystander");
  EXPECT_OK(weft_task_join(spawn(device_sync_task, "device-syncer")));
  EXPECT_OK(weft_task_join(b));
}

/* Returns with a 50 ms kernel queued: alive (not done) when the
 * device-syncer's sync starts, done by the time the sync returns, the
 * very work it waited for. */
static int owner_queued;
static void kernel_owner_task(void *arg) {
  (void)arg;
  const int *flag = &W.host[0]; /* never set: the kernel runs its time */
  int *state = &W.host[1];
  long long ns = 50 * 1000 * 1000;
  W.host[0] = 0;
  void *args[] = {&flag, &state, &ns};
  EXPECT_OK(weft_launch(&tk.spin_until, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  tt_store(&owner_queued, 1);
}

static void sync_outlasts_the_other(void) {
  tt_store(&owner_queued, 0);
  weft_task *k = spawn(kernel_owner_task, "kernel-owner");
  while (!tt_load(&owner_queued))
    sched_yield();
  EXPECT_OK(weft_task_join(spawn(device_sync_task, "device-syncer")));
  EXPECT_OK(weft_task_join(k));
}

/* No other task to stall: nothing lost, nothing reported. */
static void sync_in_lone_task(void) {
  EXPECT_OK(weft_task_join(spawn(device_sync_task, "device-syncer")));
}

static void sync_on_thread(void) {
  EXPECT_OK(weft_memset(W.buf, 0, N * sizeof(int)));
  EXPECT_OK(weft_device_sync());
}

/* Runs c in a fresh runtime (check on or off) with its findings going to a
 * file; returns the findings and fills out with what was printed. */
/* Joined, then spawned, from a thread that makes no other weft call: the
 * join and the spawn order the writer before the reader, which runs on
 * another stream (a holder task keeps the writer's). */
static int holding, released;

static void holder_task(void *arg) {
  (void)arg;
  EXPECT_OK(weft_memset(W.other, 0, N * sizeof(int)));
  tt_store(&holding, 1);
  while (!tt_load(&released))
    weft_yield();
  EXPECT_OK(weft_sync());
}

static void *fresh_thread(void *arg) {
  (void)arg;
  EXPECT_OK(weft_task_join(spawn(memset_task, "setter")));
  weft_task *h = spawn(holder_task, "holder");
  while (!tt_load(&holding))
    tt_sleep_ms(1);
  EXPECT_OK(weft_task_join(spawn(copy_out_task, "copier")));
  tt_store(&released, 1);
  EXPECT_OK(weft_task_join(h));
  return NULL;
}

static void joined_from_fresh_thread(void) {
  holding = released = 0;
  pthread_t th;
  EXPECT(pthread_create(&th, NULL, fresh_thread, NULL) == 0);
  EXPECT(pthread_join(th, NULL) == 0);
}

/* Registered data (weft/data.h) asked for by a task that declared it, or
 * did not. */
static weft_data *D;

static void data_get_task(void *arg) {
  (void)arg;
  int *p;
  EXPECT_OK(weft_data_get(D, WEFT_RW, (void **)&p));
  EXPECT_OK(weft_data_get(D, WEFT_RW, (void **)&p)); /* reported once */
  EXPECT_OK(weft_memset(p, 0, N * sizeof(int)));
  EXPECT_OK(weft_sync());
}

static void data_get(int declare) {
  EXPECT_OK(weft_data_register(W.rt, W.host, N * sizeof(int), &D));
  weft_access a = weft_data_access(D, WEFT_RW);
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.name = declare ? "declared-getter" : "undeclared-getter";
  o.accesses = declare ? &a : NULL;
  o.naccesses = declare ? 1 : 0;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(W.rt, &t, data_get_task, NULL, &o));
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_data_unregister(D));
}

static void data_get_undeclared(void) { data_get(0); }
static void data_get_declared(void) { data_get(1); }

/* Declared and got for reading, the copy filled by the get, then written:
 * the fill is weft's own, not a declaration of the task's (it covered the
 * task's later writes, unreported). */
static void data_read_task(void *arg) {
  (void)arg;
  int *p;
  EXPECT_OK(weft_data_get(D, WEFT_READ, (void **)&p));
  EXPECT_OK(weft_memset(p, 0, N * sizeof(int)));
  EXPECT_OK(weft_sync());
}

static void data_get_read_then_written(void) {
  EXPECT_OK(weft_data_register(W.rt, W.host, N * sizeof(int), &D));
  weft_access a = weft_data_access(D, WEFT_READ);
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.name = "declared-reader-writes";
  o.accesses = &a;
  o.naccesses = 1;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(W.rt, &t, data_read_task, NULL, &o));
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_data_unregister(D));
}

/* Registered data written on a device by one task, then read through its
 * host memory by the next (a copy from it), with or without
 * weft_data_sync between: the host copy is stale without it. */
static void host_writer_task(void *arg) {
  (void)arg;
  int *p;
  EXPECT_OK(weft_data_get(D, WEFT_RW, (void **)&p));
  EXPECT_OK(weft_memset(p, 1, N * sizeof(int)));
}

static void host_reader_task(void *arg) {
  (void)arg;
  EXPECT_OK(weft_copy(W.other, W.reg, N * sizeof(int)));
  EXPECT_OK(weft_sync());
}

static void host_read(int synced) {
  EXPECT_OK(weft_data_register(W.rt, W.reg, N * sizeof(int), &D));
  weft_access a[3] = {weft_data_access(D, WEFT_RW),
                      weft_data_access(D, WEFT_READ),
                      {W.other, N * sizeof(int), WEFT_WRITE}};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.name = "host-writer";
  o.accesses = &a[0];
  o.naccesses = 1;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(W.rt, &t, host_writer_task, NULL, &o));
  EXPECT_OK(weft_task_join(t));
  if (synced)
    EXPECT_OK(weft_data_sync(D));
  o.name = "host-reader";
  o.accesses = &a[1];
  o.naccesses = 2;
  EXPECT_OK(weft_task_spawn(W.rt, &t, host_reader_task, NULL, &o));
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_data_unregister(D));
}

static void host_read_stale(void) { host_read(0); }
static void host_read_synced(void) { host_read(1); }

/* A task that writes registered data through its host memory (a copy
 * into it), the handle declared: weft's until unregistered, whatever the
 * copies' state. */
static void host_copy_into_task(void *arg) {
  (void)arg;
  EXPECT_OK(weft_copy(W.reg, W.buf, N * sizeof(int)));
  EXPECT_OK(weft_sync());
}

static void host_write(void) {
  EXPECT_OK(weft_data_register(W.rt, W.reg, N * sizeof(int), &D));
  weft_access a[2] = {weft_data_access(D, WEFT_WRITE),
                      {W.buf, N * sizeof(int), WEFT_READ}};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.name = "host-writer-direct";
  o.accesses = a;
  o.naccesses = 2;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(W.rt, &t, host_copy_into_task, NULL, &o));
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_data_unregister(D));
}

/* One task reads the stale host memory, then writes it (copies both
 * ways): two findings, one for each direction, though the handle, task
 * and call are the same. */
static void host_read_write_task(void *arg) {
  (void)arg;
  EXPECT_OK(weft_copy(W.other, W.reg, N * sizeof(int)));
  EXPECT_OK(weft_copy(W.reg, W.other, N * sizeof(int)));
  EXPECT_OK(weft_sync());
}

static void host_read_then_write(void) {
  EXPECT_OK(weft_data_register(W.rt, W.reg, N * sizeof(int), &D));
  weft_access a[2] = {weft_data_access(D, WEFT_RW),
                      {W.other, N * sizeof(int), WEFT_RW}};
  weft_task_opts o;
  weft_task_opts_init(&o);
  o.name = "host-writer";
  o.accesses = a;
  o.naccesses = 1;
  weft_task *t;
  EXPECT_OK(weft_task_spawn(W.rt, &t, host_writer_task, NULL, &o));
  EXPECT_OK(weft_task_join(t));
  o.name = "host-read-write";
  o.naccesses = 2;
  EXPECT_OK(weft_task_spawn(W.rt, &t, host_read_write_task, NULL, &o));
  EXPECT_OK(weft_task_join(t));
  EXPECT_OK(weft_data_unregister(D));
}

/* The same cases on pageable host memory, whose copies weft stages
 * through pinned buffers (the host backend tells memory apart so under
 * WEFT_HOST_PAGEABLE=1, as CUDA does). */
static void on_pageable(void (*c)(void)) {
  int *p = malloc(N * sizeof(int));
  EXPECT(p != NULL);
  memset(p, 0, N * sizeof(int));
  W.reg = p;
  c();
  W.reg = W.host;
  free(p);
}
static void pageable_read_stale(void) { on_pageable(host_read_stale); }
static void pageable_read_synced(void) { on_pageable(host_read_synced); }
static void pageable_write(void) { on_pageable(host_write); }

/* Registered data written on a device, then touched on the CPU through
 * its host memory, a load or a store that no weft call makes: weft check
 * guards the pages while a device holds the only valid copy, and against
 * stores while the host's copy is valid too (host_guard.h), where the
 * process's SIGSEGV handler is weft's. Pageable memory of three
 * whole pages, touched in the middle one. */
static size_t cpu_ints; /* three pages of ints */
static int *cpu_mem;
static volatile int cpu_sink;
static char cpu_at[64]; /* "at ADDRESS", the int touched */

static void cpu_writer_task(void *arg) {
  (void)arg;
  int *p;
  EXPECT_OK(weft_data_get(D, WEFT_RW, (void **)&p));
  EXPECT_OK(weft_memset(p, 1, cpu_ints * sizeof(int)));
}

static void cpu_load(void) {
  cpu_sink = ((volatile int *)cpu_mem)[cpu_ints / 2];
}

static void cpu_reader_task(void *arg) { (void)arg, cpu_load(); }

/* A weft_copy from the stale host memory: its own finding, and its
 * executor's or staging's load of the guarded pages is not a second. */
static void cpu_copier_task(void *arg) {
  (void)arg;
  EXPECT_OK(weft_copy(W.other, cpu_mem, N * sizeof(int)));
  EXPECT_OK(weft_sync());
}

enum {
  CPU_LOAD,
  CPU_STORE,
  CPU_LOAD_IN_TASK,
  CPU_LOAD_SYNCED,
  CPU_STORE_SYNCED,
  CPU_COPY
};

static void cpu_access(int how) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  cpu_ints = 3 * page / sizeof(int);
  EXPECT(posix_memalign((void **)&cpu_mem, page, cpu_ints * sizeof(int)) == 0);
  memset(cpu_mem, 0, cpu_ints * sizeof(int));
  snprintf(cpu_at, sizeof cpu_at, "at %p,", (void *)&cpu_mem[cpu_ints / 2]);
  EXPECT_OK(weft_data_register(W.rt, cpu_mem, cpu_ints * sizeof(int), &D));
  weft_access w = weft_data_access(D, WEFT_RW);
  spawn_joined("cpu-writer", &w, 1, cpu_writer_task);
  if (how == CPU_LOAD_SYNCED || how == CPU_STORE_SYNCED)
    EXPECT_OK(weft_data_sync(D));
  if (how == CPU_LOAD || how == CPU_LOAD_SYNCED)
    cpu_load();
  if (how == CPU_STORE || how == CPU_STORE_SYNCED)
    ((volatile int *)cpu_mem)[cpu_ints / 2] = 7;
  if (how == CPU_LOAD_IN_TASK) {
    weft_task_opts o;
    weft_task_opts_init(&o);
    o.name = "cpu-reader";
    weft_task *t;
    EXPECT_OK(weft_task_spawn(W.rt, &t, cpu_reader_task, NULL, &o));
    EXPECT_OK(weft_task_join(t));
  }
  if (how == CPU_COPY) {
    weft_access c[2] = {weft_data_access(D, WEFT_READ),
                        {W.other, N * sizeof(int), WEFT_WRITE}};
    spawn_joined("cpu-copier", c, 2, cpu_copier_task);
  }
  EXPECT_OK(weft_data_unregister(D));
  /* The write-back came after the store, and after a sync none came. */
  EXPECT(cpu_mem[cpu_ints / 2] == (how == CPU_STORE_SYNCED ? 7 : 0x01010101));
  free(cpu_mem);
}

static void cpu_reader_get(void *arg) {
  (void)arg;
  int *p;
  EXPECT_OK(weft_data_get(D, WEFT_READ, (void **)&p));
}

/* Read-only memory registered and read on a device: the guard comes and
 * goes, and the pages must stay read-only (a store in a child process
 * still faults), not become writable. */
static void cpu_readonly(void) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = 3 * page;
  int *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT(m != MAP_FAILED);
  memset(m, 5, bytes);
  EXPECT(mprotect(m, bytes, PROT_READ) == 0);
  EXPECT_OK(weft_data_register(W.rt, m, bytes, &D));
  weft_access r = weft_data_access(D, WEFT_READ);
  spawn_joined("readonly-reader", &r, 1, cpu_reader_get);
  cpu_sink = ((volatile int *)m)[bytes / sizeof(int) / 2];
  EXPECT_OK(weft_data_unregister(D));
  EXPECT(cpu_sink == 0x05050505);
  pid_t pid = fork();
  EXPECT(pid >= 0);
  if (pid == 0) {
    signal(SIGSEGV, SIG_DFL);
    ((volatile int *)m)[bytes / sizeof(int) / 2] = 7;
    _exit(0);
  }
  int st;
  EXPECT(waitpid(pid, &st, 0) == pid);
  EXPECT_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV,
             "read-only registered memory became writable (child: %s %d)",
             WIFSIGNALED(st) ? "signal" : "exit",
             WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  EXPECT(munmap(m, bytes) == 0);
}

static void cpu_load_stale(void) { cpu_access(CPU_LOAD); }
static void cpu_store(void) { cpu_access(CPU_STORE); }
static void cpu_load_in_task(void) { cpu_access(CPU_LOAD_IN_TASK); }
static void cpu_load_synced(void) { cpu_access(CPU_LOAD_SYNCED); }
static void cpu_store_synced(void) { cpu_access(CPU_STORE_SYNCED); }
static void cpu_copy(void) { cpu_access(CPU_COPY); }

/* Whether pages are guarded in this process: not under a sanitizer, whose
 * SIGSEGV handler weft leaves in place. */
static int guarding(void) {
  void *page;
  size_t bytes = (size_t)sysconf(_SC_PAGESIZE);
  EXPECT(posix_memalign(&page, bytes, bytes) == 0);
  int slot = weft__guard_on(page, bytes, PROT_READ | PROT_WRITE, 0, 2, 0);
  weft__guard_off(slot);
  free(page);
  return slot >= 0;
}

static size_t run(case_fn c, int check, char *out, size_t len) {
  FILE *f = tmpfile(); /* the findings; failures still go to stderr */
  EXPECT(f != NULL);
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.workers = 2;
  /* The planted races are real: on the host backend one executor thread
   * runs both streams' operations one after the other, so that TSan (and
   * the memory) see no race while weft check still sees two streams that
   * nothing orders. */
  o.host_threads = 1;
  o.check = check;
  W.rt = tt_open(&o);
  if (weft__runtime_backend(W.rt)->check)
    weft__check_set_output(weft__runtime_backend(W.rt)->check, f);
  EXPECT_OK(weft_device_alloc(N * sizeof(int), (void **)&W.buf));
  EXPECT_OK(weft_device_alloc(N * sizeof(int), (void **)&W.other));
  EXPECT_OK(weft_pinned_alloc(N * sizeof(int), (void **)&W.host));
  W.reg = W.host;
  EXPECT_OK(weft_event_create(&W.ev));
  EXPECT_OK(weft_sync());
  c();
  weft__checker *k = weft__runtime_backend(W.rt)->check;
  EXPECT((k != NULL) == (check == 1));
  size_t found = weft__check_findings(k);
  EXPECT_OK(weft_event_destroy(&W.ev));
  EXPECT_OK(weft_device_free(W.buf));
  EXPECT_OK(weft_device_free(W.other));
  EXPECT_OK(weft_pinned_free(W.host));
  tt_close(W.rt);
  rewind(f);
  size_t n = fread(out, 1, len - 1, f);
  out[n] = '\0';
  fclose(f);
  return found;
}

enum { KIND_SYNC, KIND_RACE, KIND_UNDECLARED, KIND_STALE };

static void expect(const char *name, case_fn c, int kind, const char *who1,
                   const char *who2) {
  char out[8192];
  W.meet = kind == KIND_RACE;
  W.arrived = 0;
  size_t n = run(c, 1, out, sizeof out);
  W.meet = 0;
  EXPECT_MSG(n >= 1, "%s: no finding; findings: %s", name, out);
  EXPECT_MSG(strstr(out, kind == KIND_RACE         ? "weft check: race:"
                         : kind == KIND_UNDECLARED ? "weft check: undeclared:"
                         : kind == KIND_STALE
                             ? "weft check: stale:"
                             : "weft check: implicit sync:") != NULL,
             "%s: not the right kind of finding: %s", name, out);
  EXPECT_MSG(strstr(out, who1) != NULL, "%s: '%s' not named: %s", name, who1,
             out);
  EXPECT_MSG(!who2 || strstr(out, who2) != NULL, "%s: '%s' not named: %s", name,
             who2, out);
}

/* meet: the tasks run side by side (no ordering between them to wait
 * for), so the silence is the checker's, not the scheduling's. */
static void silent(const char *name, case_fn c, int concurrent) {
  char out[8192];
  W.meet = concurrent;
  W.arrived = 0;
  size_t n = run(c, 1, out, sizeof out);
  W.meet = 0;
  EXPECT_MSG(n == 0 && strstr(out, "weft check") == NULL,
             "%s: %zu findings where the twin is ordered: %s", name, n, out);
}

int main(void) {
  test_kernels_init(&tk);
  W.reads_0 = tk.copy_int;
  W.reads_0.reads = 0;
  expect("two memsets", two_memsets, KIND_RACE, "'setter-a'", "'setter-b'");
  silent("two memsets, weft_task_after", two_memsets_ordered, 0);
  expect("two memsets in turn, one stream", two_memsets_in_turn, KIND_RACE,
         "'setter-a'", "'setter-b'");
  expect("kernel then copy", kernel_then_copy, KIND_RACE, "'kernel-writer'",
         "'copier'");
  silent("kernel then copy, joined between", kernel_then_copy_joined, 0);
  silent("joined, then spawned, from a thread new to weft",
         joined_from_fresh_thread, 0);
  expect("two readers, unmarked", two_readers_unmarked, KIND_RACE, "'reader-a'",
         "'reader-b'");
  silent("two readers, marked read-only", two_readers_marked, 1);
  silent("an event waited on", event_ordered, 0);
  silent("two tasks replaying one graph", graph_two_replayers, 1);
  expect("a graph replay against a memset", graph_against_memset, KIND_RACE,
         "'replayer'", "'setter'");
  expect("weft_device_sync from a task", sync_in_task, KIND_SYNC,
         "'device-syncer'", NULL);
  silent("weft_device_sync from the only task alive", sync_in_lone_task, 0);
  expect("weft_device_sync waiting for the only other task's work",
         sync_outlasts_the_other, KIND_SYNC, "'device-syncer'", NULL);
  expect("a write where a read was declared", memset_declared_read,
         KIND_UNDECLARED, "'declared-reader'", NULL);
  expect("a write past the declared half", memset_declared_half,
         KIND_UNDECLARED, "'declared-half'", NULL);
  silent("a write declared", memset_declared_write, 0);
  silent("a declaring task's own scratch", own_scratch, 0);
  expect("registered data asked for, undeclared", data_get_undeclared,
         KIND_UNDECLARED, "'undeclared-getter'", "weft_data_get");
  {
    char out[8192];
    size_t n = run(data_get_undeclared, 1, out, sizeof out);
    EXPECT_MSG(n == 1, "two undeclared gets of one handle: %zu findings: %s", n,
               out);
  }
  silent("registered data asked for, declared", data_get_declared, 0);
  expect("registered data got for reading, its filled copy written",
         data_get_read_then_written, KIND_UNDECLARED,
         "'declared-reader-writes'", "for writing");
  expect("registered data read through stale host memory", host_read_stale,
         KIND_STALE, "'host-reader'", "weft_copy");
  silent("registered data read through host memory after weft_data_sync",
         host_read_synced, 0);
  {
    char out[8192];
    size_t n = run(host_read_then_write, 1, out, sizeof out);
    EXPECT_MSG(n >= 2 && strstr(out, "weft_copy reads registered") &&
                   strstr(out, "weft_copy writes registered"),
               "stale host memory read, then written, by one task's "
               "weft_copy: %zu findings, expected one each way: %s",
               n, out);
  }
  expect("registered data written through its host memory", host_write,
         KIND_STALE, "'host-writer-direct'", "writes registered data");
  /* Staged copies: the check sees their host side. */
  EXPECT(setenv("WEFT_HOST_PAGEABLE", "1", 1) == 0);
  expect("pageable registered data read through stale host memory",
         pageable_read_stale, KIND_STALE, "'host-reader'", "reads registered");
  silent("pageable registered data read after weft_data_sync (a staged "
         "write-back, weft's own)",
         pageable_read_synced, 0);
  expect("pageable registered data written through its host memory",
         pageable_write, KIND_STALE, "'host-writer-direct'",
         "writes registered data");
  EXPECT(unsetenv("WEFT_HOST_PAGEABLE") == 0);
  /* CPU loads and stores, seen through guarded pages. */
  if (guarding()) {
    expect("registered data loaded on the CPU while stale", cpu_load_stale,
           KIND_STALE, "a plain thread reads registered data on the CPU",
           cpu_at);
    expect("registered data stored on the CPU", cpu_store, KIND_STALE,
           "a plain thread writes registered data on the CPU", cpu_at);
    expect("registered data loaded on the CPU in a task", cpu_load_in_task,
           KIND_STALE, "task 'cpu-reader' reads", cpu_at);
    silent("registered data loaded on the CPU after weft_data_sync",
           cpu_load_synced, 0);
    expect("registered data stored on the CPU after weft_data_sync (a "
           "device's copy valid too)",
           cpu_store_synced, KIND_STALE, "a plain thread writes",
           "holds a copy too");
    for (int pageable = 0; pageable < 2; pageable++) {
      char out[8192];
      if (pageable)
        EXPECT(setenv("WEFT_HOST_PAGEABLE", "1", 1) == 0);
      size_t n = run(cpu_copy, 1, out, sizeof out);
      EXPECT(unsetenv("WEFT_HOST_PAGEABLE") == 0);
      EXPECT_MSG(n == 1 && strstr(out, "weft_copy reads registered") != NULL,
                 "a weft_copy from stale guarded memory%s: %zu findings, "
                 "expected its own alone: %s",
                 pageable ? " (staged)" : "", n, out);
    }
    silent("read-only memory registered and read on a device stays "
           "read-only",
           cpu_readonly, 0);
  } else {
    puts("CPU accesses to registered data: not checked (the SIGSEGV handler "
         "is not weft's)");
  }
  silent("folded readers, then a writer", folded_readers_then_writer, 0);
  silent("weft_device_sync from a plain thread", sync_on_thread, 0);
  char out[8192];
  W.meet = 1;
  W.arrived = 0;
  EXPECT_MSG(run(two_memsets, 0, out, sizeof out) == 0 &&
                 strstr(out, "weft check") == NULL,
             "checking off, yet: %s", out);
  puts("ok");
  return 0;
}
