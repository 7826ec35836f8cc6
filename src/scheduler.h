/* The task runtime's internals: tasks, workers, run queues, the GPU wait
 * set and the stream and event pools. */
#ifndef WEFT__SCHEDULER_H
#define WEFT__SCHEDULER_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "backend.h"
#include "caller.h"
#include "dataflow.h"
#include "error_internal.h"
#include "fiber.h"
#include "mem_pinned.h"
#include "trace.h"
#include "weft/task.h"

typedef struct weft__worker weft__worker;

/* Whoever issues GPU work: a task, or a plain thread. */
struct weft__exec {
  weft_runtime *rt;
  weft__stream *stream; /* leased on the first GPU operation */
  /* Work may have been queued on stream since a weft_sync last saw it
   * idle: set whenever the stream is handed out (weft__exec_stream), so a
   * task that ends right after a sync skips asking the device. */
  int unsynced;
  int dev;
  int high;        /* priority: stream from the greatest-priority pool */
  int pending_err; /* first error not yet returned by weft_sync */
  int first_err;   /* first error of the task's life, for join */
  int first_raw;
  char *first_msg; /* its message (malloc'd: failures are rare) */
  int is_task;
  weft__errinfo errinfo; /* weft_last_error_message() while it runs */
  /* The chunks of this exec's staged copies to pageable memory whose
   * helper tasks still run (memory.c); joined by weft_sync and when a task
   * returns. */
  struct weft__stage_job **pending;
  int npending, cap_pending;
  struct weft__exec *next;   /* runtime's list of plain-thread contexts */
  struct weft__vc *check_vc; /* weft check: what it has seen (check.c) */
  struct weft__flow *flow;   /* its spawns' declared data (dataflow.c) */
  /* Under weft check: the task's own declared accesses, which its GPU
   * operations on tracked memory must keep within (check.c). */
  weft_access *decl;
  uint32_t ndecl;
  /* Priority-aware admission (admission.c): what a normal-priority task
   * has in flight; NULL until the policy first holds it. */
  struct weft__admission *adm;
  atomic_int dead; /* a plain thread's, after its runtime shut down */
};

typedef enum task_state {
  TASK_READY,     /* in a run queue */
  TASK_RUNNING,   /* on a worker */
  TASK_SUSPENDED, /* waiting: GPU wait set, a join, or task_after */
  TASK_FINISHING, /* function returned; its stream's work still running */
  TASK_DONE
} task_state;

struct weft_task {
  weft__obj hdr; /* magic live from spawn until the object is recycled */
  weft__exec x;
  weft__fiber fiber;
  weft_task_fn fn;
  void *arg;
  char name[32];
  uint64_t id;
  task_state state; /* written by the thread moving the task; informative
                       except FINISHING, which the wait set reads */
  /* Under rt->lock: what waiters and handle checks look at. */
  int handle_gone;        /* joined or detached: the handle is spent */
  int returned;           /* fn returned */
  int done;               /* and its GPU work completed */
  struct weft_task *next; /* run queue or wait-set link */
  struct weft_task *prev; /* run queue: the other end's way */
  /* The run queue holding it, NULL when none; changed under that queue's
   * lock, read without it by a joining thread looking for it in the
   * injection queue (sched.c). */
  struct weft__rq *_Atomic queued_in;
  struct weft_task *waiters; /* tasks waiting for this one to return or end */
  int thread_waiters;        /* plain threads in weft_task_join */
  weft__event *end_ev;       /* recorded on return when work is pending */
  weft__event *wait_ev;      /* what a suspended task waits for */
  /* Or a test the poll calls instead: set only inside weft_wait_until,
   * NULL otherwise (from spawn on). */
  int (*wait_test)(void *arg);
  void *wait_arg;
  int wait_cancelled; /* its weft_wait_until was ended by weft_shutdown */
  int wait_rc;
  int wait_for_end; /* in waiters: 1 = until DONE, 0 = until returned */
  int detached;     /* frees itself when DONE */
  /* Blocking in a waiters list, under rt->lock: a wake that arrives while
   * the task is still switching out is remembered and applied by the
   * scheduler once it has (no lock is held across the switch: TSan sees
   * each fiber as a thread of its own). */
  int blocking, blocked, wake_pending;
  struct weft_task *all_prev, *all_next; /* every task object of rt */
  /* Runtime latency, while tracing: when and why the task was last made
   * ready; its next run slice reports the delay (trace.h). */
  uint64_t ready_ns;
  uint8_t ready_why; /* WEFT__TR_READY_* */
  uint8_t yielded;   /* last suspended by weft_yield (sched.c's busy_poll) */
  /* Declared data (dataflow.c): the earlier tasks to follow before fn
   * runs, and whether to wait for their GPU work on the host too. */
  const void **flow_deps; /* task handles: flow_inline, or malloc'd */
  const void *flow_inline[WEFT__FLOW_INLINE];
  uint32_t nflow_deps;
  uint8_t flow_host;
};

/* Run queue (runq.c): two priority levels, each with two ends. */
typedef struct weft__rq {
  pthread_mutex_t lock;
  weft_task *top[2], *bottom[2]; /* top: oldest; bottom: newest */
  atomic_int n;                  /* tasks queued, both levels */
  atomic_int n_high;             /* of which high priority */
} weft__rq;

int weft__rq_init(weft__rq *q);
void weft__rq_fini(weft__rq *q);
/* At the bottom (the owner's end), or at the top (behind everything). */
void weft__rq_push(weft__rq *q, weft_task *t, int at_top);
/* One task of level l (1 high, 0 normal) from either end, or NULL. */
weft_task *weft__rq_pop_level(weft__rq *q, int l, int from_top);
/* High priority first, then normal. */
weft_task *weft__rq_pop(weft__rq *q, int from_top);
/* Half the tasks (at least one), oldest first, high priority first, as a
 * list linked by next; *taken says how many. */
weft_task *weft__rq_take_half(weft__rq *q, int *taken);
/* t, if q still holds it: 1 then, else 0. */
int weft__rq_take(weft__rq *q, weft_task *t);

/* What the scheduler does right after a task switched away: the task's
 * stack is then no longer in use, so only now may another worker see it. */
typedef enum after_switch {
  AFTER_NONE,
  AFTER_YIELD, /* requeue the task */
  AFTER_WAIT,  /* add the task to the GPU wait set */
  AFTER_BLOCK, /* the task waits in another task's waiters list */
  AFTER_EXIT,  /* the task returned: release its stack, finish it */
  AFTER_CALL   /* run w->call(w->call_arg) on the thread's stack, resume */
} after_switch;

struct weft__worker {
  weft_runtime *rt;
  int index;
  pthread_t thread;
  weft__fiber sched; /* the worker thread's own context */
  weft_task *cur;
  after_switch after;
  void (*call)(void *); /* AFTER_CALL */
  void *call_arg;
  weft__rq rq;
  unsigned rng;
  void *altstack;
  /* Parking, under rt->park_lock: a parked worker is on rt->parked and
   * sleeps on its own condition variable until a waker pops it. */
  pthread_cond_t park_cv;
  struct weft__worker *park_next;
  int parked, woken;
  int searching;      /* counted in rt->nsearching */
  unsigned each_seen; /* the last weft__sched_each run here */
  /* A high-priority task yielded here: the next pick is a normal task if
   * one is ready (find_near). */
  int normal_next;
  /* The guest slot only (sched.c, "the joining thread works"): the task
   * its plain thread waits for, and for what (1: done, 0: returned). */
  weft_task *guest_for;
  int guest_end;
  int guest_left; /* its task yielded: the workers have it */
};

typedef struct weft__ptrvec {
  void **v;
  size_t n, cap;
} weft__ptrvec;

/* Devices a runtime uses at most (weft_init refuses more). */
#define WEFT__MAX_DEVICES 64

struct weft_runtime {
  weft_runtime_opts opts;
  weft__backend *bk;
  uint64_t epoch; /* distinguishes runtimes for thread contexts */

  /* nworkers threads, then one more slot: the guest, which a plain thread
   * waiting for a task fills while it runs tasks itself (sched.c). Its
   * queue is stolen from like the workers'. */
  int nworkers;
  weft__worker *workers;
  atomic_int guest; /* 1 while a plain thread holds the guest slot */
  /* The process may run on one CPU only (cpus.h): spins yield it. */
  int one_cpu;
  weft__rq inject; /* tasks spawned or woken off the workers */
  atomic_int stop;

  /* Parking (sched.c): idle workers sleep, each on its own condition
   * variable, on a stack of parked workers (the most recently parked, whose
   * caches are warmest, is woken first). */
  pthread_mutex_t park_lock;
  weft__worker *parked;
  atomic_int nparked;
  /* Workers awake without a task: woken and not yet running one, or
   * holding the polling role. Work made ready while one searches needs no
   * wake-up. */
  atomic_int nsearching;
  atomic_int poller;             /* 1 while an idle worker holds the role */
  weft__worker *_Atomic polling; /* that worker, for completion hooks */
  atomic_uint_fast64_t busy_polled_ns; /* last poll between tasks */
  atomic_int sentinel; /* 1 while a parked worker keeps watch (sched.c) */
  atomic_long nlive;   /* spawned and not DONE; changed under lock */
  /* Priority-aware admission (admission.h): the depth, 0 for off, and the
   * high-priority tasks spawned and not DONE. */
  atomic_int admission;
  atomic_int nhigh_live;
  /* Live tasks placed on each device, for WEFT_DEVICE_ANY (task.c). */
  atomic_int dev_live[WEFT__MAX_DEVICES];
  atomic_uint any_next;
  /* weft__sched_each: a function every worker runs once between tasks. */
  pthread_mutex_t each_lock; /* one at a time */
  void (*each_fn)(void *);
  void *each_arg;
  atomic_uint each_gen;
  atomic_int each_left;

  /* GPU wait set (wait.c): tasks suspended on an event, polled a batch at
   * a time from a cursor that goes round the list. */
  pthread_mutex_t wait_lock;
  weft_task *waits;
  weft_task **wait_cursor; /* &rt->waits or &(a waiting task)->next */
  atomic_int nwaits;
  /* Of which waits for a test (weft_wait_until): no backend reports
   * their completion, so the poller must look for it (sched.c). */
  atomic_int ntests;

  /* Task lifecycle, stream and event pools, thread contexts. */
  pthread_mutex_t lock;
  pthread_cond_t done_cv; /* a task ended: thread joiners and shutdown */
  weft__pool tasks;
  int closing;
  /* weft_shutdown began: weft_wait_until's waits end with WEFT_ESTATE,
   * since what they wait for is outside weft and may never come (wait.c).
   * Atomic: the poll reads it without the lock. */
  atomic_int cancel_waits;
  atomic_uint_fast64_t next_id;
  weft__ptrvec *streams; /* [dev * 2 + high] free streams */
  weft__ptrvec *events;  /* [dev * 2 + blocking] free sync events */
  size_t pooled_streams; /* leased or free, made by the runtime */
  size_t pooled_events;
  weft__exec *threads; /* plain-thread contexts */
  weft_task *all;      /* every task object not yet recycled */

  weft__stack_pool stacks;
  weft__pinned_cache pinned;
  int tracing;

  /* Live graphs (graph.c), under lock: handles are checked against it. */
  struct weft_graph *graphs;
  size_t ngraphs;
};

/* Notes when and why t was made ready, for the trace's runtime-latency
 * figures; nothing when not tracing. */
static inline void weft__mark_ready(weft_task *t, int why) {
  if (weft__trace_on_for(t->x.rt->bk)) {
    t->ready_ns = weft__trace_now();
    t->ready_why = (uint8_t)why;
  }
}

/* The calling worker, task and execution context. Not inlined: a fiber can
 * resume on another thread, and a cached thread-local address would then
 * name the old thread's variable. */
weft__worker *weft__worker_self(void);
weft_task *weft__task_self(void);
weft__exec *weft__exec_self(void);
/* The exec of the calling task or thread, or NULL with WEFT_ESTATE recorded
 * when no runtime is open. */
weft__exec *weft__exec_get(const char *call);
/* weft_init, rt registered open: a plain thread that uses no open runtime
 * uses rt from now on. Returns 0 or what weft__exec_get_failed reports. */
int weft__exec_adopt(weft_runtime *rt);
/* What a failed weft__exec_get recorded: WEFT_ESTATE (no runtime) or
 * WEFT_ENOMEM (no memory for a plain thread's context). */
static inline int weft__exec_get_failed(void) { return weft__err_slot()->code; }

/* weft_init and weft_shutdown: rt joins and leaves the open runtimes a
 * plain thread may take (exec.c). register fails only with WEFT_ENOMEM;
 * unregister returns 1 if rt was open. A shutdown of a handle not open
 * (shut down already) is refused by is_open. */
int weft__runtime_register(weft_runtime *rt);
int weft__runtime_unregister(weft_runtime *rt);
int weft__runtime_is_open(weft_runtime *rt);
/* 0 when rt is an open runtime, else WEFT_EINVAL (NULL) or WEFT_EHANDLE
 * (never opened, or shut down: its memory is gone, so nothing of it is
 * read), with a message naming call. */
int weft__runtime_check(weft_runtime *rt, const char *call);

/* sched.c */
int weft__sched_start(weft_runtime *rt);
/* Runs fn(arg) once on every worker thread, on its own stack, between
 * tasks, and returns when all have (a task caller yields meanwhile, so its
 * own worker gets to it). */
void weft__sched_each(weft_runtime *rt, void (*fn)(void *), void *arg);
void weft__sched_stop(weft_runtime *rt);
/* A plain thread about to wait (lock not held) until other returns
 * (until_end 0) or completes: works in the guest slot meanwhile, running
 * other if it is still injected and what the tasks it runs spawn or wake,
 * so that neither a spawn's nor a join's wake-up lies on its path
 * (sched.c, "the joining thread works"). Returns 1 after working (other
 * may still not be there: the thread gave the slot up), 0 at once when the
 * slot is taken or the thread is a worker. */
int weft__sched_guest(weft_runtime *rt, weft_task *other, int until_end);
/* Makes a task runnable: on the calling worker's queue, else injected. */
void weft__sched_ready(weft_runtime *rt, weft_task *t);
/* Switches from the running task to its worker's scheduler, which then
 * performs after. Returns when the task is resumed. */
void weft__sched_suspend(weft_task *t, after_switch after);

/* task.c */
/* The scheduler ran the task's function to its end: finish it. */
void weft__task_returned(weft_task *t);
/* Runs when a task's GPU work has completed (or it had none). */
void weft__task_finalize(weft_task *t);

/* The task a public handle names, for call; NULL with *rc the error,
 * reported, when the handle is NULL or not live (joined, detached, its
 * object reused: pool.h's generations). */
weft_task *weft__task_of(const weft_task *h, const char *call, int *rc);
/* Suspends the calling task (rt->lock held) until other returns
 * (until_end 0) or completes (1); on a plain thread, blocks. Returns with
 * the lock held. */
void weft__task_wait_for(weft_runtime *rt, weft_task *other, int until_end);
/* 1 if handle h still names a live task, other (its object; rt->lock
 * held). A handle joined or detached since names a task that completed:
 * its object is dead or already someone else's (pool.h's generations
 * tell). */
int weft__task_live(const weft_task *h, const weft_task *other);

/* memory.c: joins x's pending staging tasks; their first error. */
int weft__exec_join_pending(weft__exec *x);

/* wait.c */
/* Waits for ev: suspends a task (polled by the workers), blocks a thread. */
int weft__exec_wait_event(weft__exec *x, weft__event *ev);
/* The same for an event just recorded, which is not queried first (it is
 * almost always pending then: a CUDA call spent for nothing). */
int weft__exec_wait_recorded(weft__exec *x, weft__event *ev);
/* Adds t, whose wait_ev is set, to the wait set. */
void weft__wait_add(weft_runtime *rt, weft_task *t);
/* Makes t's wait one on test(arg) instead of an event, counted in
 * rt->ntests until the waiter takes it back (weft__wait_test_done). */
void weft__wait_test_set(weft_runtime *rt, weft_task *t, int (*test)(void *),
                         void *arg);
void weft__wait_test_done(weft_runtime *rt, weft_task *t);
/* Polls up to batch waiting tasks' events, going round the set from where
 * the last poll stopped, so a poll costs the same however many tasks wait.
 * Returns the number made ready. */
int weft__wait_poll(weft_runtime *rt, int batch);
/* The poller's batch, and a busy worker's between two tasks: an event
 * query costs ~0.2 us on CUDA. */
#define WEFT__POLL_BATCH 64
#define WEFT__POLL_BATCH_BUSY 4

/* library.c */
/* Destroys the library handles made under rt (weft/library.h). */
void weft__library_release(weft_runtime *rt);

/* graph.c */
/* 0, or WEFT_ESTATE reported (call, why) if x's stream is capturing a
 * graph: the public calls that wait or allocate check it first. */
int weft__refuse_in_capture(const weft__exec *x, const char *call,
                            const char *why);
/* Runs fn(arg) at once as a data-flow step of the graph x's stream is
 * capturing, ordered by its accesses a[0..n) after the earlier steps
 * (graph.c explains how). 0, or the error, reported; the capture then
 * makes no graph. */
int weft__graph_step(weft__exec *x, weft_task_fn fn, void *arg,
                     const weft_access *a, size_t n);
/* Ends and drops a capture x left open (why: for the message), failing x
 * with WEFT_ESTATE so that its join or next weft_sync says so. */
void weft__graph_drop_capture(weft__exec *x, const char *why);

/* exec.c */
/* Records a failure of a GPU operation against x and returns rc. */
int weft__exec_fail(weft__exec *x, int rc);
/* Leases a stream for x from the runtime's pool (or makes one). A
 * failure is reported (weft_last_error_message) but not recorded against
 * x: the caller decides whether x failed. */
int weft__exec_lease(weft__exec *x, weft__stream **out);
/* The exec's stream, leased on first use; a failed lease fails x. */
static inline int weft__exec_stream(weft__exec *x, weft__stream **out) {
  x->unsynced = 1;
  if (x->stream) {
    *out = x->stream;
    return 0;
  }
  int rc = weft__exec_lease(x, out);
  return rc ? weft__exec_fail(x, rc) : 0;
}
/* Returns x's stream to its pool. */
void weft__exec_release_stream(weft__exec *x);
/* Gives task exec x, which has no stream yet, the stream of other, a task
 * x follows that has returned and whose work is still queued (it finishes
 * when its end event completes), if it suits (device, priority pool);
 * returns whether it did. x's work must come after other's anyway, so
 * the stream's own order is the wait, and no false dependency is added;
 * without it every task of a chain would hold a stream until its work
 * was done, a stream per task in flight (docs/NOTES.md). Not under weft
 * check, whose clocks follow each lease. Runtime lock held; x a task's. */
int weft__task_take_stream(weft__exec *x, weft_task *other);
/* A pooled event of device dev; blocking: one a plain thread will wait on
 * with weft__event_sync (it sleeps there), else one polled by tasks (or
 * queried; the pinned cache's, synced at shutdown, spin there briefly). */
int weft__event_pool_get(weft_runtime *rt, int dev, int blocking,
                         weft__event **out);
void weft__event_pool_put(weft_runtime *rt, weft__event *e);
void weft__exec_threads_release(weft_runtime *rt);
/* Makes n streams of normal priority per device into the pools (n from
 * opts.streams), so that tasks lease them without a driver call; on
 * failure drains the pools, as weft__pools_drain. */
int weft__pools_fill(weft_runtime *rt, int n);
void weft__pools_drain(weft_runtime *rt);

static inline void weft__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Between two looks of a spin: n pauses, or, when the runtime's threads
 * share one CPU, the CPU itself. There a spinner only delays the thread
 * it waits for (a worker woken to run a task, the task that will end the
 * wait) until the kernel takes the CPU from it; sched_yield hands it over
 * at once, and returns at once when no other thread wants it. */
static inline void weft__spin_pause(const weft_runtime *rt, int n) {
  if (rt->one_cpu) {
    sched_yield();
    return;
  }
  for (int i = 0; i < n; i++)
    weft__cpu_relax();
}

#endif
