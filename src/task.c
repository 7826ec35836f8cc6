/* Task lifecycle: spawn, join, detach, yield, and the end of a task, which
 * waits (on the device, not on a thread) for the GPU work it queued. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admission.h"
#include "dataflow.h"
#include "door.h"
#include "graph_internal.h"
#include "registry.h"
#include "runtime_state.h"
#include "trace.h"

enum { MAGIC_TASK = 0x5441534bu }; /* "TASK" */

void weft_task_opts_init(weft_task_opts *opts) {
  if (!opts)
    return;
  memset(opts, 0, sizeof *opts);
  opts->struct_size = sizeof *opts;
  opts->priority = WEFT_PRIORITY_NORMAL;
  opts->device = WEFT_DEVICE_INHERIT;
}

weft_task *weft_task_self(void) {
  weft_task *t = weft__worker_task();
  return t ? (weft_task *)weft__handle_of(&t->hdr) : NULL;
}

/* Whether h names t's current life: a task object, and h made for it. */
static int names_task(const weft_task *h, const weft_task *t) {
  /* Atomic: a stale handle's check may race the object's recycling. */
  return __atomic_load_n(&t->hdr.magic, __ATOMIC_ACQUIRE) == MAGIC_TASK &&
         weft__handle_live(h, &t->hdr);
}

const char *weft_task_name(const weft_task *task) {
  weft_task *t = task ? (weft_task *)weft__handle_obj(task) : NULL;
  return t && names_task(task, t) ? t->name : "";
}

static void all_link(weft_runtime *rt, weft_task *t) {
  t->all_prev = NULL;
  t->all_next = rt->tasks.all;
  if (rt->tasks.all)
    rt->tasks.all->all_prev = t;
  rt->tasks.all = t;
}

/* Copies name into buf, cut if need be at the edge of a UTF-8 character,
 * not inside one: traces and messages carry it. */
static void copy_name(char *buf, size_t size, const char *name) {
  size_t n = strlen(name);
  if (n >= size) {
    n = size - 1;
    /* Back over the continuation bytes of the character cut, and its
     * first byte, unless the character ends exactly at n. */
    size_t i = n;
    while (i > 0 && ((unsigned char)name[i - 1] & 0xC0) == 0x80)
      i--;
    if (i > 0 && (unsigned char)name[i - 1] >= 0xC0) {
      unsigned lead = (unsigned char)name[i - 1];
      size_t len = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
      if (i - 1 + len > n)
        n = i - 1;
    }
  }
  memcpy(buf, name, n);
  buf[n] = '\0';
}

void weft__task_set_data_hooks(weft_runtime *rt, weft__place_fn place,
                               weft__prefetch_fn prefetch, weft__uses_fn uses) {
  atomic_store(&rt->tasks.placer, place);
  atomic_store(&rt->tasks.prefetcher, prefetch);
  atomic_store(&rt->tasks.uses, uses);
}

/* The device a task spawned with opts.device = want, declaring a (n of
 * them), goes to. */
static int place(weft_runtime *rt, int want, const weft_access *a, size_t n) {
  if (want >= 0)
    return want;
  if (want == WEFT_DEVICE_INHERIT) {
    weft__exec *x = weft__caller_self();
    return x && x->rt == rt ? x->dev : 0;
  }
  /* WEFT_DEVICE_ANY: where the task's registered data is, if any; else
   * the fewest live tasks, looking from a device that moves on by one
   * each time, so that ties go round. */
  weft__place_fn placer = n ? atomic_load(&rt->tasks.placer) : NULL;
  int there = placer ? placer(rt, a, n) : -1;
  if (there >= 0 && there < rt->h.bk->ndev)
    return there;
  int ndev = rt->h.bk->ndev,
      from = (int)(atomic_fetch_add(&rt->tasks.any_next, 1) % ndev);
  int best = from, least = atomic_load(&rt->tasks.dev_live[from]);
  for (int i = 1; i < ndev; i++) {
    int d = (from + i) % ndev, live = atomic_load(&rt->tasks.dev_live[d]);
    if (live < least) {
      best = d;
      least = live;
    }
  }
  return best;
}

int weft_task_device(void) {
  weft__caller c;
  int rc = weft__door("weft_task_device", 0, NULL, &c);
  return rc ? rc : c.dev;
}

/* "task-<id>", written by hand: snprintf cost a spawn too much for a name
 * rarely read (docs/decisions/scheduler.md, "Two cuts on the spawn and end
 * path"). */
static void default_name(char buf[32], uint64_t id) {
  char digits[20];
  int n = 0;
  do {
    digits[n++] = (char)('0' + id % 10);
    id /= 10;
  } while (id);
  memcpy(buf, "task-", 5);
  for (int i = 0; i < n; i++)
    buf[5 + i] = digits[n - 1 - i];
  buf[5 + n] = '\0';
}

/* Under weft check, the caller's context for the happens-before of a spawn
 * or join: a plain thread that has made no weft call yet has none, and
 * its clock would be lost between joining one task and spawning the next
 * (two tasks on two devices' streams then looked unordered). Made here,
 * outside rt->h.lock; NULL when the thread's runtime is another. */
static weft__exec *checked_self(weft_runtime *rt, const char *call) {
  weft__exec *x = weft__caller_self();
  if (!x) {
    x = weft__caller_get(call);
    if (x && x->rt != rt)
      x = NULL;
  }
  return x;
}

/* A task object for fn(arg) on dev, counted live and ready to be made
 * ready, in *out: 0, or the error reported (rt closing, out of memory).
 * name NULL: "task-<id>"; detached: no handle will be joined. */
static int task_new(weft_runtime *rt, int dev, int high, weft_task_fn fn,
                    void *arg, const char *name, int detached,
                    weft_task **out) {
  pthread_mutex_lock(&rt->h.lock);
  if (rt->closing) {
    pthread_mutex_unlock(&rt->h.lock);
    return weft__err(WEFT_ESTATE, "weft_task_spawn: runtime is shutting down");
  }
  weft_task *t = (weft_task *)weft__pool_get(&rt->tasks.pool, sizeof *t);
  if (!t) {
    pthread_mutex_unlock(&rt->h.lock);
    return weft__err(WEFT_ENOMEM, "weft_task_spawn: out of memory");
  }
  __atomic_store_n(&t->hdr.magic, MAGIC_TASK, __ATOMIC_RELAXED);
  all_link(rt, t);
  atomic_fetch_add(&rt->tasks.nlive, 1);
  pthread_mutex_unlock(&rt->h.lock);

  t->x.rt = rt;
  t->x.bk = rt->h.bk;
  t->x.dev = dev;
  atomic_fetch_add(&rt->tasks.dev_live[dev], 1);
  t->x.high = high;
  t->x.adm = NULL;
  if (t->x.high) /* before it can run: admission holds others from now */
    atomic_fetch_add(&rt->h.adm.nhigh_live, 1);
  t->x.is_task = 1;
  t->fn = fn;
  t->arg = arg;
  t->id = atomic_fetch_add(&rt->tasks.next_id, 1) + 1;
  if (name)
    copy_name(t->name, sizeof t->name, name);
  else
    default_name(t->name, t->id);
  if (weft__trace_on_for(rt->h.bk))
    weft__trace_task_name(t->id, t->name);
  if (detached)
    t->handle_gone = t->detached = 1;
  t->x.check_vc = NULL;
  t->x.flow = NULL;
  t->x.decl = NULL;
  t->x.ndecl = 0;
  t->x.decl_lost = 0;
  t->flow_deps = NULL;
  t->nflow_deps = 0;
  t->flow_host = 0;
  t->wait_test = NULL;
  atomic_store_explicit(&t->queued_in, NULL, memory_order_relaxed);
  *out = t;
  return 0;
}

/* Undoes task_new for a task never made ready. */
static void task_drop(weft_runtime *rt, weft_task *t) {
  int dev = t->x.dev, high = t->x.high;
  pthread_mutex_lock(&rt->h.lock);
  weft__task_free(rt, t);
  atomic_fetch_sub(&rt->tasks.nlive, 1);
  atomic_fetch_sub(&rt->tasks.dev_live[dev], 1);
  if (high)
    atomic_fetch_sub(&rt->h.adm.nhigh_live, 1);
  pthread_cond_broadcast(&rt->done_cv);
  pthread_mutex_unlock(&rt->h.lock);
}

/* A join (dataflow.h): a detached task that only follows the readers a
 * range's record folds into it, so that a later writer follows the join
 * alone instead of every reader since the last write. Readers that
 * completed are left out (but under weft check, below): with one left,
 * that reader stands for the join,
 * and with none, nothing is made. It waits for the others to return
 * without a stack (weft__task_join_advance), so joins of readers that
 * wait hold no memory beyond their task object. Admission never holds a
 * join: it issues nothing through the door. */
typedef struct join_ctx {
  weft_runtime *rt;
  int dev;
} join_ctx;

static void join_body(void *arg) { (void)arg; }

static int spawn_join(void *ctx, const void *const *m, uint32_t n,
                      const void **out) {
  const join_ctx *jc = ctx;
  weft_runtime *rt = jc->rt;
  const void *live[WEFT__FLOW_FOLD];
  uint32_t k = 0;
  /* weft check learns a completed reader's work only from following it
   * (weft_task_after's "completed" case): under it the join keeps them. */
  int all = rt->h.bk->check != NULL;
  pthread_mutex_lock(&rt->h.lock);
  for (uint32_t i = 0; i < n && i < WEFT__FLOW_FOLD; i++)
    if (all || weft__task_live(m[i], (weft_task *)weft__handle_obj(m[i])))
      live[k++] = m[i];
  pthread_mutex_unlock(&rt->h.lock);
  if (k <= 1) {
    *out = k ? live[0] : NULL;
    return 0;
  }
  const void **d = NULL;
  if (k > WEFT__FLOW_INLINE && !(d = malloc(k * sizeof *d)))
    return WEFT_ENOMEM;
  weft_task *t;
  int rc = task_new(rt, jc->dev, 0, join_body, NULL, "dataflow join", 1, &t);
  if (rc) {
    free(d);
    return rc;
  }
  t->flow_deps = d ? d : t->flow_inline;
  memcpy((void *)t->flow_deps, live, k * sizeof *live);
  t->nflow_deps = k;
  if (rt->h.bk->check)
    weft__caller_spawned(checked_self(rt, "weft_task_spawn"), &t->x);
  *out = weft__handle_of(&t->hdr);
  /* It runs once they all returned: until then it holds no stack. */
  pthread_mutex_lock(&rt->h.lock);
  weft__mark_ready(t, WEFT_TRF_READY_SPAWN);
  weft__task_join_advance(rt, t);
  pthread_mutex_unlock(&rt->h.lock);
  return 0;
}

int weft_task_spawn(weft_runtime *rt, weft_task **task, weft_task_fn fn,
                    void *arg, const weft_task_opts *user) {
  weft_task_opts opts;
  weft_task_opts_init(&opts);
  if (!rt || !fn)
    return weft__err(WEFT_EINVAL, "weft_task_spawn: %s is NULL",
                     rt ? "fn" : "rt");
  /* A task of rt proves rt open; anyone else pays for the lookup. */
  weft_task *self = weft__worker_task();
  if (!self || self->x.rt != rt) {
    int orc = weft__registry_check(rt, "weft_task_spawn");
    if (orc)
      return orc;
  }
  if (user) {
    if (user->struct_size < offsetof(weft_task_opts, name) + sizeof(char *) ||
        user->struct_size > sizeof opts)
      return weft__err(WEFT_EINVAL,
                       "weft_task_spawn: opts->struct_size %zu is not valid "
                       "(call weft_task_opts_init)",
                       user->struct_size);
    memcpy(&opts, user, user->struct_size);
  }
  if (opts.priority != WEFT_PRIORITY_NORMAL &&
      opts.priority != WEFT_PRIORITY_HIGH)
    return weft__err(WEFT_EINVAL, "weft_task_spawn: unknown priority %d",
                     (int)opts.priority);
  if ((opts.device < 0 && opts.device != WEFT_DEVICE_INHERIT &&
       opts.device != WEFT_DEVICE_ANY) ||
      opts.device >= rt->h.bk->ndev)
    return weft__err(WEFT_ENODEV, "weft_task_spawn: no device %d", opts.device);
  int vrc =
      weft__flow_validate(opts.accesses, opts.naccesses, "weft_task_spawn");
  if (vrc)
    return vrc;
  int dev = place(rt, opts.device, opts.accesses, opts.naccesses);
  /* Declarations are ordered in their spawner's record. */
  weft__exec *spawner = NULL;
  if (opts.naccesses) {
    spawner = weft__caller_get("weft_task_spawn");
    if (!spawner)
      return weft__caller_get_failed();
    if (spawner->rt != rt)
      return weft__err(WEFT_EINVAL, "weft_task_spawn: accesses declared by a "
                                    "task or thread of another runtime");
    /* Inside a graph capture: a step of the graph, run now (graph.c). */
    if (spawner->stream && spawner->stream->capture) {
      if (dev != spawner->dev)
        return weft__err(WEFT_EINVAL,
                         "weft_task_spawn: a step of a graph capture runs on "
                         "the capture's device %d, not %d",
                         spawner->dev, dev);
      int src =
          weft__graph_step(spawner, fn, arg, opts.accesses, opts.naccesses);
      /* A failed call leaves *task as it was (weft/error.h). */
      if (src == 0 && task)
        *task = NULL;
      return src;
    }
  }

  /* Registered data the task reads starts moving now (weft/data.h,
   * "Copies at spawn"). */
  weft__prefetch_fn prefetch =
      spawner ? atomic_load(&rt->tasks.prefetcher) : NULL;
  if (prefetch)
    prefetch(rt, dev, opts.accesses, opts.naccesses);

  weft_task *t;
  int rc = task_new(rt, dev, opts.priority == WEFT_PRIORITY_HIGH, fn, arg,
                    opts.name, !task, &t);
  if (rc)
    return rc;
  if (spawner) {
    int host = 0;
    join_ctx jc = {rt, dev};
    rc = weft__flow_declare(spawner, (weft_task *)weft__handle_of(&t->hdr),
                            opts.accesses, opts.naccesses, spawn_join, &jc,
                            t->flow_inline, &t->flow_deps, &t->nflow_deps,
                            &host);
    if (rc) {
      /* Nothing was recorded and nothing ran: the task goes unseen. */
      task_drop(rt, t);
      return rc == WEFT_ENOMEM
                 ? weft__err(WEFT_ENOMEM, "weft_task_spawn: out of memory "
                                          "for its declared accesses")
                 : rc;
    }
    t->flow_host = (uint8_t)host;
    /* weft check holds the task's operations to them; without memory for
     * the copy it checks nothing (fewer findings, never a false one). */
    if (rt->h.bk->check) { /* task_new left decl NULL, ndecl 0 */
      t->x.decl = malloc(opts.naccesses * sizeof *t->x.decl);
      if (t->x.decl) {
        memcpy(t->x.decl, opts.accesses, opts.naccesses * sizeof *t->x.decl);
        t->x.ndecl = (uint32_t)opts.naccesses;
      } else {
        t->x.decl_lost = 1;
      }
    }
    /* Registered data it names: eviction spares what tasks ahead use. */
    weft__uses_fn uses = atomic_load(&rt->tasks.uses);
    if (uses)
      uses(rt, (weft_task *)weft__handle_of(&t->hdr), t->id, opts.accesses,
           opts.naccesses);
  }
  if (rt->h.bk->check) /* the child starts with what its spawner has seen */
    weft__caller_spawned(checked_self(rt, "weft_task_spawn"), &t->x);
  /* Only now: a failed spawn leaves *task as it was (weft/error.h). */
  if (task)
    *task = (weft_task *)weft__handle_of(&t->hdr);
  weft__mark_ready(t, WEFT_TRF_READY_SPAWN);
  weft__worker_ready(&rt->sched, t);
  return 0;
}

/* Whether h's task was joined or detached, or its object reused for
 * another task since weft__task_of looked (a second join racing the
 * first): under the lifecycle lock, which the pool's reuse takes. */
static int gone_under_lock(const weft_task *h, const weft_task *t) {
  return !names_task(h, t) || t->handle_gone;
}

weft_task *weft__task_of(const weft_task *h, const char *call, int *rc) {
  if (!h) {
    *rc = weft__err(WEFT_EINVAL, "%s: task is NULL", call);
    return NULL;
  }
  /* Read without the lock (whose runtime is the task's to say): a handle
   * joined meanwhile is caught again under it (gone_under_lock). An
   * object's runtime never changes, but a reuse zeroes it for a moment. */
  weft_task *t = (weft_task *)weft__handle_obj(h);
  if (!names_task(h, t) || !t->x.rt) {
    *rc = weft__err(WEFT_EHANDLE,
                    "%s: not a live task handle (already joined or "
                    "detached?)",
                    call);
    return NULL;
  }
  *rc = 0;
  return t;
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A plain thread about to sleep until other returns or completes: watches
 * for it a while first (lock released), as cudaStreamSynchronize spins.
 * Sleeping costs the joiner a futex wake-up, more than a short task takes
 * (docs/decisions/scheduler.md, "Short watches before sleeping"; the idle
 * worker's watch, sched.c, is the other half). Returns with the lock held
 * again; the caller looks at the task once more before it sleeps. */
#define JOIN_SPIN_NS (20 * 1000u)

static void spin_for(weft_runtime *rt, weft_task *other, int until_end) {
  pthread_mutex_unlock(&rt->h.lock);
  /* Better still, it runs tasks meanwhile (sched.c, "the joining thread
   * works"); if another thread does, it watches. */
  if (weft__sched_guest(rt, other, until_end)) {
    pthread_mutex_lock(&rt->h.lock);
    return;
  }
  uint64_t until = mono_ns() + JOIN_SPIN_NS;
  int ok = 0;
  do {
    for (int i = 0; i < 64 && !ok; i++) {
      ok = until_end ? __atomic_load_n(&other->done, __ATOMIC_ACQUIRE)
                     : __atomic_load_n(&other->returned, __ATOMIC_ACQUIRE);
      weft__spin_pause(rt->sched.one_cpu, 1);
    }
  } while (!ok && mono_ns() < until);
  pthread_mutex_lock(&rt->h.lock);
}

/* WEFT_EDEADLK, reported for call, when other waits for self, directly or
 * through a chain of waiting tasks: self's wait would close a cycle that
 * no task in it can break, since each ends only after the next (an abuse
 * run found two tasks joining each other hanging without a word). The
 * lock held, so no link changes meanwhile; the walk is as long as the
 * chain, and stops after every live task in case a link went stale. */
static int wait_cycle(weft_runtime *rt, weft_task *self, weft_task *other,
                      const char *call) {
  if (!weft__task_waits_for(rt, other, self))
    return 0;
  /* Names the tasks in between too, as far as the message holds them. */
  char chain[320] = "";
  size_t n = 0;
  weft_task *t;
  for (t = other->waiting_for; t != self && n < sizeof chain;
       t = t->waiting_for)
    n += (size_t)snprintf(chain + n, sizeof chain - n,
                          ", which waits for task '%s' (id %llu)", t->name,
                          (unsigned long long)t->id);
  return weft__err(WEFT_EDEADLK,
                   "%s: task '%s' (id %llu) would wait for task '%s' (id "
                   "%llu)%s, which waits for task '%s': a cycle of waits that "
                   "would never end",
                   call, self->name, (unsigned long long)self->id, other->name,
                   (unsigned long long)other->id, chain, self->name);
}

int weft__task_wait_for(weft_runtime *rt, weft_task *other, int until_end,
                        int kind, const char *call) {
  weft_task *self = weft__worker_task();
  /* The life waited for ends the wait when it ends: a detached task is
   * recycled once done, and by the time a woken waiter looks again its
   * object may be a later task's, which this one must not wait for (two
   * tasks each waiting for the other's object hung a data-flow run). */
  const void *life = weft__handle_of(&other->hdr);
  int spun = 0;
  for (;;) {
    if (!weft__handle_live(life, &other->hdr))
      return 0;
    int ok = until_end ? other->done : other->returned;
    if (ok)
      return 0;
    if (self) {
      int rc = wait_cycle(rt, self, other, call);
      if (rc)
        return rc;
      self->wait_for_end = until_end;
      self->next = other->waiters;
      other->waiters = self;
      self->waiting_for = other; /* cleared by the wake (task_end.c) */
      self->state = TASK_SUSPENDED;
      self->blocking = 1;
      weft__task_stall(self, kind, NULL);
      pthread_mutex_unlock(&rt->h.lock);
      weft__worker_suspend(self, AFTER_BLOCK);
      pthread_mutex_lock(&rt->h.lock);
    } else if (!spun) {
      spun = 1; /* then look again, under the lock */
      spin_for(rt, other, until_end);
    } else {
      other->thread_waiters++;
      pthread_cond_wait(&rt->done_cv, &rt->h.lock);
      if (weft__handle_live(life, &other->hdr)) /* else a new life's count */
        other->thread_waiters--;
    }
  }
}

int weft_task_join(weft_task *h) {
  int rc;
  weft_task *t = weft__task_of(h, "weft_task_join", &rc);
  if (!t)
    return rc;
  weft_task *self = weft__worker_task();
  if (t == self)
    return weft__err(WEFT_ESTATE, "weft_task_join: a task cannot join itself");
  weft_runtime *rt = t->x.rt;
  /* A task suspended by another runtime's join would be resumed on that
   * runtime's workers and its stack returned to that runtime's pool. */
  if (self && self->x.rt != rt)
    return weft__err(WEFT_EINVAL,
                     "weft_task_join: task '%s' belongs to another runtime "
                     "(a task joins tasks of its own runtime; a plain thread "
                     "may join any)",
                     t->name);
  weft__exec *me = rt->h.bk->check ? checked_self(rt, "weft_task_join") : NULL;
  pthread_mutex_lock(&rt->h.lock);
  if (gone_under_lock(h, t)) {
    pthread_mutex_unlock(&rt->h.lock);
    return weft__err(WEFT_EHANDLE, "weft_task_join: not a live task handle "
                                   "(already joined or detached?)");
  }
  t->handle_gone = 1;
  rc = weft__task_wait_for(rt, t, 1, WEFT__STALL_JOIN, "weft_task_join");
  if (rc) { /* a cycle: refused, and t may still be joined */
    t->handle_gone = 0;
    pthread_mutex_unlock(&rt->h.lock);
    return rc;
  }
  if (me)
    weft__caller_joined(me, &t->x);
  rc = t->x.first_err;
  if (rc) /* hand the task's failure detail to the joiner */
    weft__err_raw(rc, t->x.first_raw, "task '%s': %s", t->name,
                  t->x.first_msg ? t->x.first_msg : weft_strerror(rc));
  weft__task_free(rt, t);
  pthread_mutex_unlock(&rt->h.lock);
  return rc;
}

int weft_task_detach(weft_task *h) {
  int rc;
  weft_task *t = weft__task_of(h, "weft_task_detach", &rc);
  if (!t)
    return rc;
  weft_runtime *rt = t->x.rt;
  pthread_mutex_lock(&rt->h.lock);
  if (gone_under_lock(h, t)) {
    pthread_mutex_unlock(&rt->h.lock);
    return weft__err(WEFT_EHANDLE, "weft_task_detach: not a live task handle "
                                   "(already joined or detached?)");
  }
  t->handle_gone = t->detached = 1;
  if (t->done)
    weft__task_free(rt, t);
  pthread_mutex_unlock(&rt->h.lock);
  return 0;
}

int weft_wait_until_named(int (*test)(void *arg), void *arg, const char *what) {
  if (!test)
    return weft__err(WEFT_EINVAL, "weft_wait_until: test is NULL");
  weft__caller c;
  int rc = weft__door("weft_wait_until", 0, NULL, &c);
  return rc ? rc : weft__wait_for_test(c.x, test, arg, what);
}

int weft_wait_until(int (*test)(void *arg), void *arg) {
  return weft_wait_until_named(test, arg, NULL);
}

void weft_yield(void) {
  weft_task *t = weft__worker_task();
  if (t)
    weft__worker_suspend(t, AFTER_YIELD);
}

int weft_task_stats_get(weft_runtime *rt, weft_task_stats *out) {
  int rc = weft__registry_check(rt, "weft_task_stats_get");
  if (rc)
    return rc;
  if (!out)
    return weft__err(WEFT_EINVAL, "weft_task_stats_get: out is NULL");
  /* Callers built before streams was added pass the smaller size. */
  if (out->struct_size < offsetof(weft_task_stats, streams) ||
      out->struct_size > sizeof *out)
    return weft__err(WEFT_EINVAL, "weft_task_stats_get: set out->struct_size "
                                  "to sizeof(weft_task_stats)");
  out->live = (uint64_t)atomic_load(&rt->tasks.nlive);
  pthread_mutex_lock(&rt->stacks.lock);
  out->stacks_in_use = rt->stacks.live;
  out->stacks_unguarded = rt->stacks.unguarded;
  pthread_mutex_unlock(&rt->stacks.lock);
  if (out->struct_size >=
      offsetof(weft_task_stats, streams) + sizeof out->streams) {
    out->streams = weft__stream_pool_count(rt);
  }
  if (out->struct_size >= offsetof(weft_task_stats, streams_taken_over) +
                              sizeof out->streams_taken_over)
    out->streams_taken_over = weft__stream_pool_taken(rt);
  return 0;
}
