/* Registered data (weft/data.h), as its files share it: a handle, its
 * instances (one per device), each runtime's room for them, and the
 * registry of handles. data_handles.c owns the registry and the rules of
 * an instance's state; data_evict.c makes room; data_get.c gives a task
 * its instance; data_lifecycle.c registers a handle and runs weft's own
 * tasks on it (copies at spawn, prefetch, sync, unregister); data_blocks.c
 * registers a region as blocks homed on devices.
 * docs/decisions/data.md says why. */
#ifndef WEFT__DATA_INTERNAL_H
#define WEFT__DATA_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"
#include "weft/data.h"

enum { IDLE, FILLING, EVICTING }; /* instance.busy */

typedef struct instance {
  void *ptr;
  int valid;
  int busy;        /* FILLING: a task allocates or fills it; EVICTING */
  int recorded;    /* ready was recorded */
  int prefetching; /* queued for its device's filler (data_lifecycle.c) */
  int from_host;   /* a fill read the host; ready says when it is done */
  struct weft_data *fill_next; /* next in that queue */
  weft_event *ready;           /* recorded after its last fill */
  uint64_t last_use; /* use_clock at its last get: eviction takes the least */
  /* The tasks given it, or filled from it, since its last write (a writer
   * comes after the earlier ones by data flow): an eviction waits for
   * their GPU work. Completed ones are dropped as eviction looks. */
  weft_task **users;
  size_t nusers, capusers;
  /* The last user dropped: following it tells weft check that what has
   * completed comes before the eviction. */
  weft_task *gone;
} instance;

/* Filler tasks a device at most: several issue copies side by side, as
 * the readers' own gets would (docs/decisions/data.md, "Copies start at
 * spawn"). */
#define WEFT__DATA_FILLERS 4

/* One device's room for a runtime's instances: bytes held (allocated, or
 * being allocated), against weft__data_limit; and the handles whose
 * instance there a spawn asked to fill, oldest first (queued of them),
 * with how many filler tasks work through them (data_lifecycle.c). */
typedef struct room {
  size_t held;
  struct weft_data *fill_head, *fill_tail;
  int fillers;
  size_t queued;
} room;

/* The instances of one runtime's handles, a room per device. Under the
 * registry's lock. */
typedef struct usage {
  struct usage *next;
  const weft_runtime *rt;
  size_t handles;
  int ndev;
  room dev[];
} usage;

/* A task spawned declaring a handle, yet to return (data_uses.c). */
typedef struct use_ahead {
  const weft_task *t;
  const void *by; /* its spawner (weft__data_spawner) */
  uint64_t id;    /* its spawn order */
  int own;        /* a task of weft's own (data_lifecycle.c) */
} use_ahead;

/* A prefetch task a task started (weft__data_follow_own). */
typedef struct own_task {
  weft_task *t;
  const void *by; /* the task that started it (weft__data_spawner) */
} own_task;

struct weft_data {
  weft_runtime *rt;
  unsigned char *host;
  size_t bytes;
  int block; /* one of weft_data_register_blocks': given back with them */
  usage *use;
  pthread_mutex_t lock; /* the fields below; never held across a weft call
                           that may switch */
  int host_valid, host_filling;
  /* Under weft check, the file its findings go to (else -1), the slot of
   * its guarded host pages (host_guard.h; -1 when none), the device named
   * as holding a valid copy, whether loads may pass (the host's copy is
   * valid too), and the pages' own protection (weft__guard_prot; -2 until
   * the first guard asks). */
  int check_fd, guard, guard_dev, guard_reads, guard_prot;
  uint64_t writes;  /* gets for writing published: an eviction's write-back
                       makes the host valid only if none came meanwhile */
  uint64_t writers; /* tasks spawned declaring a write of it, counted while
                       copies start at spawn: one that has yet to get
                       makes a later reader's fill from the host stale */
  weft_data_stats st;
  /* Its users ahead, in spawn order: [ahead_at, nahead) of ahead, those
   * before the first not returned dropped as eviction looks. */
  use_ahead *ahead;
  size_t ahead_at, nahead, capahead;
  /* weft_data_prefetch's tasks that a task started: in its record, so a
   * later writer of another spawner does not follow them by data flow;
   * the next get for writing (or the unregister) follows them instead
   * (weft__data_follow_own). */
  own_task *own;
  size_t nown, capown;
  int ndev;
  instance inst[];
};

/* The registered handles, sorted by address (a call checks its handle
 * here before touching it), and the runtimes' usage; under lock. The
 * lock comes before any handle's. */
typedef struct weft__data_registry {
  pthread_mutex_t lock;
  void **live;         /* the handles, by address (ptrvec.h's order) */
  weft_data **by_host; /* the same, by runtime, then host address */
  size_t n, cap;
  usage *usages;
} weft__data_registry;
extern weft__data_registry weft__data_reg;

/* ---- data_handles.c ---- */

/* rt's handle whose host range holds p, or NULL. The registry's lock
 * held. */
weft_data *weft__data_holding(const weft_runtime *rt, const void *p);
/* The index in by_host of rt's first handle (rt's run of handles ends
 * where another runtime's starts). The registry's lock held. */
size_t weft__data_first_of(const weft_runtime *rt);
/* Enters d (its fields set, its lock made) in the registry; WEFT_EINVAL
 * (it overlaps a handle of its runtime) or WEFT_ENOMEM, reported. */
int weft__data_enter(weft_data *d);
/* WEFT_DEVICE_ANY's choice for a task declaring a (data_core.h's
 * weft__place_fn): the device whose valid instances hold the most bytes
 * of the handles it names (by their host ranges), or -1 where none has
 * any. */
int weft__data_place(weft_runtime *rt, const weft_access *a, size_t n);
/* 1 if d is a registered handle. */
int weft__data_is_live(const weft_data *d);
/* WEFT_EINVAL, for call, reported: d is not registered. */
int weft__data_not_live(const char *call);
/* 0 if d is registered and the calling thread's runtime is d's; else
 * WEFT_EINVAL, for call, reported saying which. */
int weft__data_usable(const weft_data *d, const char *call);
/* weft_data_unregister_n's work; blocks set when
 * weft_data_unregister_blocks gives back its own. */
int weft__data_unregister_n(weft_data *const *d, size_t n, int blocks);
/* Gives back the bytes of d's instance on dev (reg's lock not held). */
void weft__data_unhold(weft_data *d, int dev);
/* Removes d from the registry and frees it: its instances are freed. */
void weft__data_forget(weft_data *d);

/* weft check's question (data_core.h's weft__stale_fn), for ctx's
 * runtime; weft's own copies (the fills' reads of the host, the
 * write-backs into it: weft__caller_own_copy) are never reported. */
int weft__data_stale_host(void *ctx, const void *p, size_t n, int write,
                          const void **base, size_t *bytes, int *dev);

/* d's lock held: guards d's host pages (weft check) while a device holds
 * a valid copy and weft writes none into the host (a sync's copy, an
 * eviction's write-back): against every access where the device's is the
 * only valid copy, against stores where the host's is valid too. Takes
 * the guard down otherwise, counting the CPU access its fault reported,
 * if any. Called after each change of those states. */
void weft__data_guard(weft_data *d);

/* Take d's lock once *busy is clear, or once no instance of d is being
 * evicted, yielding meanwhile (a filler or evicter drops the lock while
 * it works). */
void weft__data_lock_unless_busy(weft_data *d, const int *busy);
void weft__data_lock_unless_evicting(weft_data *d);
/* The rest: d's lock held. Whether an instance of d is being evicted. */
int weft__data_evicting(const weft_data *d);
/* A valid instance other than dev's, not being evicted, to fill from, or
 * -1 for the host. */
int weft__data_source_of(const weft_data *d, int dev);
/* Copies at spawn (data_lifecycle.c), for an access (p, mode) of a task
 * spawned on dev: queues rt's handle whose host range holds p for a fill
 * of its instance there, if the task reads it and the fill may start now,
 * and counts a write. Returns 1 if one more filler task is to be
 * started for the device (it is counted already). */
int weft__data_queue_fill(weft_runtime *rt, int dev, const void *p,
                          unsigned mode);
/* A filler's next handle (done: the one it just filled, or NULL), or
 * NULL with the filler counted out when none is queued. */
weft_data *weft__data_next_fill(weft_runtime *rt, int dev, weft_data *done);
/* Takes d out of the fill queues; returns 1 while a filler still works on
 * it. */
int weft__data_unqueue_fills(weft_data *d);
/* Adds t to in's users (for a write, in place of them), and stamps the
 * use; a full list first drops its completed users (rt's tasks). */
int weft__data_add_user(weft_runtime *rt, instance *in, weft_task *t,
                        int write);
/* 1 if no user of in runs (its GPU work may be queued), after dropping
 * the completed ones. */
int weft__data_users_returned(weft_runtime *rt, instance *in);
/* The calling task's stream follows the GPU work of in's users that have
 * returned (completed ones, and the last one dropped as completed, cost
 * nothing and tell weft check the order), the calling task aside: a copy
 * from the instance, its eviction or its free must wait for the work of
 * another spawner's tasks, which data flow does not order before the
 * caller's. Not in a graph capture, whose steps the graph
 * orders. Takes d's lock; 0 or the first error. */
int weft__data_follow_users(weft_data *d, instance *in);
/* Makes the caller's stream wait for in's last fill, if recorded (no
 * lock needed). */
int weft__data_after_fill(const instance *in, int recorded);

/* ---- data_uses.c ---- */

/* The spawn hook (data_core.h's weft__uses_fn): t, spawned id-th, is a
 * user ahead of each of rt's handles that a names. Without memory for
 * it, the note is skipped: eviction guesses worse, nothing fails. */
void weft__data_note_uses(weft_runtime *rt, const weft_task *t, uint64_t id,
                          const weft_access *a, size_t n);
/* Who spawns from here, as registered data tells spawners apart (each
 * keeps a data-flow record of its own): the calling task's handle, else
 * the plain thread's context (weft__caller_thread). */
const void *weft__data_spawner(void);
/* d's lock held: the spawn order of d's next user, the first of its users
 * ahead that has not returned; UINT64_MAX where none is ahead. */
uint64_t weft__data_next_use(weft_runtime *rt, weft_data *d);
/* Where d's write-back should run (weft_data_prefetch to the host): the
 * device of the last task spawned declaring d that has yet to return
 * (it writes or reads a valid instance there), else of a valid instance,
 * else WEFT_DEVICE_INHERIT. */
int weft__data_source_device(weft_data *d);
/* A task of the program spawned declaring d that has yet to return and
 * that an unregister by the caller would not follow: the calling task
 * itself, or one another task or plain thread spawned (data flow orders
 * only the caller's). NULL if none; takes d's lock. */
const weft_task *weft__data_unfollowed(weft_data *d);
/* t's spawner (weft__data_spawner) into *by, if t was spawned declaring
 * d and has yet to return: 1, else 0; takes d's lock. */
int weft__data_spawner_of(weft_data *d, const weft_task *t, const void **by);
/* on 1 before, 0 after, the calling thread's spawn of a task of weft's
 * own on a handle (data_lifecycle.c); weft__data_own_spawning says which. */
void weft__data_own_spawn(int on);
int weft__data_own_spawning(void);
/* Appends t, a prefetch task that the calling task by started, to d's own
 * tasks; -1 without memory. */
int weft__data_keep_own(weft_data *d, weft_task *t, const void *by);
/* The calling task's stream follows d's own prefetch tasks that tasks
 * other than its spawner started (weft_task_after, then detached), whose
 * reads of d's instances its write must follow: data flow orders those
 * of its own spawner. With join set, every one is joined instead (the
 * unregister). 0 or the first error. */
int weft__data_follow_own(weft_data *d, int join);

/* ---- data_evict.c ---- */

/* Allocates d's instance on dev into *p within the runtime's limit,
 * evicting what it must; when the device itself runs out, evicts and
 * tries again while anything can go. Without may_evict it evicts nothing
 * and fails with WEFT_EAGAIN (unreported) where it would have to. */
int weft__data_alloc_instance(weft_data *d, int dev, int may_evict, void **p);

/* ---- data_lifecycle.c ---- */

/* 1 while the calling thread spawns a task of weft's own on a handle. */
int weft__data_own_spawning(void);

/* The spawn hook (data_core.h's weft__prefetch_fn): queues each read of
 * a handle whose instance on dev may start filling for the device's
 * fillers, starting one where weft__data_queue_fill says. */
void weft__data_prefetch_at_spawn(weft_runtime *rt, int dev,
                                  const weft_access *a, size_t n);

/* ---- data_get.c ---- */

/* weft_data_get (prefetch 0), or a filler's get (1): a fill for reading
 * only while the host's copy is valid, evicting nothing; WEFT_EAGAIN
 * (unreported) with nothing moved where it cannot or need not fill. */
int weft__data_get(weft_data *d, unsigned mode, int prefetch, void **ptr);

#endif
