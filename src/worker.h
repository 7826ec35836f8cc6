/* Workers and their run queues. worker.c holds what every layer above may
 * call: the running worker and task, making a task ready, suspending the
 * running one, waking a parked worker. sched.c holds the worker threads'
 * loop (running, stealing, polling, parking) and the guest slot; runq.c
 * the queues. */
#ifndef WEFT__WORKER_H
#define WEFT__WORKER_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include "fiber.h"
#include "task_object.h"
#include "trace_format.h"

typedef struct weft__worker weft__worker;

/* ---- run queues (runq.c): two priority levels, each with two ends ---- */

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

/* ---- workers ---- */

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
  struct weft__sched *home; /* &rt->sched */
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
  /* Parking, under rt->sched.park_lock: a parked worker is on
   * rt->sched.parked and sleeps on its own condition variable until a
   * waker pops it. */
  pthread_cond_t park_cv;
  struct weft__worker *park_next;
  int parked, woken;
  int searching;      /* counted in rt->sched.nsearching */
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

/* weft_runtime.sched: written by sched.c and worker.c. */
typedef struct weft__sched {
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
  /* What a task's fiber runs (weft__task_body, given at start). */
  void (*body)(weft_task *t);
  /* Parking: idle workers sleep, each on its own condition variable, on a
   * stack of parked workers (the most recently parked, whose caches are
   * warmest, is woken first). */
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
  /* weft__sched_each: a function every worker runs once between tasks. */
  /* One call at a time: a flag, not a mutex, for a task caller yields
   * while it holds it (no mutex is held across a fiber switch). */
  atomic_int each_busy;
  void (*each_fn)(void *);
  void *each_arg;
  atomic_uint each_gen;
  atomic_int each_left;
} weft__sched;

/* ---- worker.c ---- */

/* The running worker and task of this thread. sched.c sets them as it
 * enters a worker or a task. */
extern _Thread_local weft__worker *weft__worker_tls;
extern _Thread_local weft_task *weft__task_tls;
/* The calling worker and task. Not inlined: a fiber can resume on another
 * thread, and a cached thread-local address would then name the old
 * thread's variable. */
weft__worker *weft__worker_self(void);
weft_task *weft__worker_task(void);
/* Makes a task runnable: on the calling worker's queue, else injected. */
void weft__worker_ready(struct weft__sched *sc, weft_task *t);
/* Switches from the running task to its worker's scheduler, which then
 * performs after. Returns when the task is resumed. */
void weft__worker_suspend(weft_task *t, after_switch after);
/* Wakes a parked worker unless one is already searching. */
void weft__worker_wake(struct weft__sched *sc);
/* Takes w, found at *link on the parked stack, off it and wakes it as a
 * searcher. park_lock held. */
void weft__worker_unpark(struct weft__sched *sc, weft__worker **link,
                         weft__worker *w);
/* Runs fn(arg) on the calling thread's own stack: from a task, by
 * switching to the worker's scheduler context for the call (library code
 * such as cuBLAS's first initialisation needs more stack than a fiber
 * has); elsewhere, directly. */
void weft__worker_call_on_stack(void (*fn)(void *), void *arg);

/* Notes when and why (WEFT_TRF_READY_*) t was made ready, for the trace's
 * runtime-latency figures, and that it is ready, for the watchdog;
 * nothing when neither is on. */
void weft__mark_ready(weft_task *t, int why);

/* ---- sched.c ---- */

/* Starts the workers; each task's fiber will run body(task). */
int weft__sched_start(weft_runtime *rt, void (*body)(weft_task *t));
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
static inline void weft__spin_pause(int one_cpu, int n) {
  if (one_cpu) {
    sched_yield();
    return;
  }
  for (int i = 0; i < n; i++)
    weft__cpu_relax();
}

#endif
