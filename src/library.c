/* weft/library.h: handles of described libraries, cached per thread (or
 * per stream) and device, bound to the caller's stream.
 *
 * The cache is a small table per thread; a slot belongs to one runtime
 * (its epoch), so a thread that outlives a runtime makes fresh handles for
 * the next. Every handle made is also in one registry, so that shutdown
 * destroys its runtime's handles whichever threads made them, and so that
 * a per_stream handle is found by its stream from any thread: for those
 * the thread's slot is only a shortcut. A reused per-stream handle
 * (WEFT_LIBRARY_PER_STREAM_REUSED) moves in the registry to a stream that
 * has none once its own is idle; every move adds to `moves` under the
 * stream pool's lock, and a slot of such a handle made before the last
 * move is checked against the registry again before it is used. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "door.h"
#include "error_internal.h"
#include "library_internal.h"
#include "registry.h"
#include "stream_pool.h"
#include "worker.h"

/* 64 slots of 80 bytes a thread: a few libraries, each with a few keyed
 * handles (cuFFT plans of a few shapes). */
enum { SLOTS = 64 };

/* What names a handle: its library, device, key and runtime, and for a
 * per_stream library the stream it belongs to. */
typedef struct ident {
  const weft_library *lib;
  int dev;
  uint32_t key_bytes;
  uint64_t epoch;
  void *owner; /* per_stream: the stream; else NULL */
  unsigned char key[WEFT_LIBRARY_KEY_MAX];
} ident;

typedef struct slot {
  ident id;
  void *handle;
  void *stream;   /* the native stream it is bound to, or NULL */
  uint64_t moves; /* `moves` when it was found in the registry */
} slot;

static _Thread_local slot slots[SLOTS];
static _Thread_local unsigned next_evict; /* per_stream slots, round robin */
static _Thread_local unsigned last_hit;   /* looked at first */

typedef struct made {
  ident id;
  void *handle;
  weft__stream *ws; /* per_stream: the owner's weft stream */
  int kept;         /* asked for while its stream captured: never lent */
} made;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static made *registry;
static size_t nmade, cap;
/* Reused per-stream handles moved to another stream so far (atomic; added
 * to under the stream pool's lock). */
static uint64_t moves;

static int same(const ident *a, const ident *b) {
  return a->lib == b->lib && a->dev == b->dev && a->epoch == b->epoch &&
         a->owner == b->owner && a->key_bytes == b->key_bytes &&
         (a->key_bytes == 0 || memcmp(a->key, b->key, a->key_bytes) == 0);
}

/* The calling thread's slot for id, taking a free, stale or empty one if need
 * be, or one holding a per_stream handle (the registry keeps those: the
 * slot is a shortcut), for any handle; NULL when none can be had. Not inlined:
 * a task can resume on another thread, and a thread-local address kept across
 * that would name the old thread's table. */
__attribute__((noinline)) static slot *slot_for(const ident *id) {
  slot *last = &slots[last_hit % SLOTS];
  if (last->id.lib && same(&last->id, id))
    return last;
  slot *free_slot = NULL;
  for (int i = 0; i < SLOTS; i++) {
    slot *s = &slots[i];
    if (s->id.lib && same(&s->id, id)) {
      last_hit = (unsigned)i;
      return s;
    }
    /* A slot without a handle is one whose make failed (or is under way
     * in a task that looks its slot up again after): free to take. */
    if (!free_slot && (!s->id.lib || s->id.epoch != id->epoch || !s->handle))
      free_slot = s;
  }
  for (int i = 0; !free_slot && i < SLOTS; i++) {
    slot *s = &slots[next_evict++ % SLOTS];
    if (s->id.owner)
      free_slot = s;
  }
  if (free_slot) {
    *free_slot = (slot){*id, NULL, NULL, 0};
    last_hit = (unsigned)(free_slot - slots);
  }
  return free_slot;
}

typedef struct create_call {
  const weft_library *lib;
  weft__backend *bk;
  int dev, rc;
  const void *key;
  size_t key_bytes;
  void *handle;
} create_call;

/* A library's set-up (allocations, a device-wide sync) runs once per
 * handle and is deliberate: weft check looks away meanwhile. */
static void create(void *arg) {
  create_call *c = arg;
  if (c->bk->ops->bind_device)
    c->bk->ops->bind_device(c->bk, c->dev);
  weft__check_quiet++;
  c->rc =
      c->lib->create(c->lib->user, c->dev, c->key, c->key_bytes, &c->handle);
  weft__check_quiet--;
}

/* A create or set_stream that returned status: WEFT_EDEVICE, with the
 * library's own words for it when the description has them. */
static int lib_fail(const weft_library *lib, const char *call, int status) {
  const char *name = lib->name ? lib->name : "(unnamed library)";
  const char *says = lib->describe ? lib->describe(status) : NULL;
  return weft__err_raw(WEFT_EDEVICE, status,
                       "weft_library_handle %s: %s returned %d%s%s", name, call,
                       status, says ? ": " : "", says ? says : "");
}

static int too_many(const weft_library *lib) {
  return weft__err(WEFT_ENOMEM,
                   "weft_library_handle %s: more than %d handles (libraries, "
                   "keys and devices) on one thread",
                   lib->name ? lib->name : "(unnamed library)", SLOTS);
}

/* The registry's entry for id, or NULL; under the lock. */
static made *made_find(const ident *id) {
  for (size_t i = 0; i < nmade; i++)
    if (same(&registry[i].id, id))
      return &registry[i];
  return NULL;
}

/* For id, a reused per-stream library's caller on weft stream ws: another
 * stream's handle of the same kind whose stream is idle (in the pool, its
 * work done), moved to ws; NULL if none. *was: the native stream it was
 * bound to. Under the lock, so that nobody finds it by its old stream
 * meanwhile; the pool's lock orders the move before that stream's next
 * lease. */
static made *lend_idle(const ident *id, weft_runtime *rt, weft__stream *ws,
                       void **was) {
  for (size_t i = 0; i < nmade; i++) {
    made *m = &registry[i];
    ident k = m->id;
    k.owner = id->owner;
    if (m->kept || !m->ws || m->ws == ws || !same(&k, id) ||
        !weft__stream_pool_claim_idle(rt, m->ws, &moves))
      continue;
    /* A plain thread gives its stream back at its exit, work and all. */
    if (weft__stream_query(m->ws) != 0)
      continue;
    *was = m->id.owner;
    m->id.owner = id->owner;
    m->ws = ws;
    return m;
  }
  return NULL;
}

/* A plain thread's handles go with it, as its table does: destroyed at
 * its exit (workers' live until shutdown, and a per_stream handle is its
 * stream's). Its runtime's shutdown destroyed them already if it came
 * first. */
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void thread_gone(void *unused) {
  (void)unused;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < SLOTS; i++) {
    slot *s = &slots[i];
    if (!s->id.lib || s->id.owner || !s->handle)
      continue;
    for (size_t j = 0; j < nmade; j++)
      if (registry[j].handle == s->handle && same(&registry[j].id, &s->id)) {
        if (s->id.lib->destroy)
          s->id.lib->destroy(s->id.lib->user, s->handle);
        registry[j] = registry[--nmade];
        break;
      }
    *s = (slot){0};
  }
  pthread_mutex_unlock(&lock);
}

static void make_exit_key(void) { pthread_key_create(&exit_key, thread_gone); }

static int remember(const ident *id, void *handle, weft__stream *ws) {
  if (!id->owner && !weft__worker_self()) {
    pthread_once(&exit_once, make_exit_key);
    pthread_setspecific(exit_key, (void *)1);
  }
  pthread_mutex_lock(&lock);
  if (nmade == cap) {
    size_t nc = cap ? 2 * cap : 16;
    made *v = realloc(registry, nc * sizeof *v);
    if (!v) {
      pthread_mutex_unlock(&lock);
      return WEFT_ENOMEM;
    }
    registry = v;
    cap = nc;
  }
  /* Made while its stream captures: the graph's replays use it. */
  registry[nmade++] = (made){*id, handle, ws, ws && ws->capture};
  pthread_mutex_unlock(&lock);
  return 0;
}

/* Makes a handle for id on the thread's own stack, binds it to stream
 * unless that is NULL, and registers it (ws: a per-stream handle's weft
 * stream). */
static int make(const ident *id, weft__backend *bk, const void *key,
                void *stream, weft__stream *ws, void **handle) {
  const weft_library *lib = id->lib;
  create_call cc = {lib, bk, id->dev, 0, key, id->key_bytes, NULL};
  weft__worker_call_on_stack(create, &cc);
  if (cc.rc)
    return lib_fail(lib, "create", cc.rc);
  if (!cc.handle)
    return weft__err(WEFT_EDEVICE,
                     "weft_library_handle %s: create returned 0 and no "
                     "handle",
                     lib->name ? lib->name : "(unnamed library)");
  int rc = stream ? lib->set_stream(lib->user, cc.handle, stream) : 0;
  if (rc) {
    if (lib->destroy)
      lib->destroy(lib->user, cc.handle);
    return lib_fail(lib, "set_stream", rc);
  }
  if (remember(id, cc.handle, ws) != 0) {
    if (lib->destroy)
      lib->destroy(lib->user, cc.handle);
    return weft__err(WEFT_ENOMEM, "weft_library_handle %s: out of memory",
                     lib->name ? lib->name : "(unnamed library)");
  }
  *handle = cc.handle;
  return 0;
}

int weft_library_handle(const weft_library *lib, void **handle) {
  return weft_library_handle_keyed(lib, NULL, 0, handle);
}

/* The checks every entry makes; 0 or the error, reported. */
static int valid(const char *call, const weft_library *lib, const void *key,
                 size_t key_bytes, void **handle) {
  if (!lib || !handle)
    return weft__err(WEFT_EINVAL, "%s: %s is NULL", call,
                     lib ? "handle" : "lib");
  const char *name = lib->name ? lib->name : "(unnamed library)";
  if (key_bytes > WEFT_LIBRARY_KEY_MAX || (key_bytes && !key))
    return weft__err(WEFT_EINVAL,
                     "%s %s: a key of %zu bytes (at most "
                     "%d, and not NULL)",
                     call, name, key_bytes, WEFT_LIBRARY_KEY_MAX);
  if (lib->struct_size != sizeof *lib || !lib->create || !lib->set_stream)
    return weft__err(WEFT_EINVAL,
                     "%s %s: the description needs "
                     "struct_size = sizeof(weft_library), create and "
                     "set_stream",
                     call, name);
  if (lib->per_stream < WEFT_LIBRARY_PER_THREAD ||
      lib->per_stream > WEFT_LIBRARY_PER_STREAM_REUSED)
    return weft__err(WEFT_EINVAL,
                     "%s %s: per_stream is %d, not "
                     "WEFT_LIBRARY_PER_THREAD, _PER_STREAM or "
                     "_PER_STREAM_REUSED",
                     call, name, lib->per_stream);
  return 0;
}

static int handle_for(const weft__caller *c, const weft_library *lib,
                      const void *key, size_t key_bytes, void **handle);

int weft_library_handle_keyed(const weft_library *lib, const void *key,
                              size_t key_bytes, void **handle) {
  int rc = valid("weft_library_handle", lib, key, key_bytes, handle);
  weft__caller c;
  if (rc == 0)
    rc = weft__door("weft_library_handle", WEFT__DOOR_ISSUE, NULL, &c);
  return rc ? rc : handle_for(&c, lib, key, key_bytes, handle);
}

weft__stream *weft__library_caller_stream(void) {
  weft__exec *x = weft__caller_self();
  return x ? x->stream : NULL;
}

int weft__library_enter(const char *call, weft_backend_kind kind,
                        const weft_library *lib, const void *key,
                        size_t key_bytes, weft__stream **s, void **handle) {
  weft__caller c;
  int rc = weft__door(call, WEFT__DOOR_ISSUE, NULL, &c);
  if (rc)
    return rc;
  if (c.bk->ops->kind != kind)
    return weft__err(WEFT_ENOTSUP, "%s: the runtime uses the %s backend", call,
                     c.bk->ops->name);
  *s = c.s;
  return lib ? handle_for(&c, lib, key, key_bytes, handle) : 0;
}

/* Everything but the common case: finds or takes a slot, makes or finds
 * the handle, binds it. Not inlined into handle_for, so
 * that the common case pays for none of its frame. */
__attribute__((noinline)) static int handle_slow(const weft__caller *caller,
                                                 const weft_library *lib,
                                                 const void *key,
                                                 size_t key_bytes, void *stream,
                                                 void *owner, void **handle) {
  const weft__caller c = *caller;
  int rc;
  weft__backend *bk = c.s->hdr.bk;
  ident id = {lib, c.dev, (uint32_t)key_bytes, c.epoch, owner, {0}};
  if (key_bytes)
    memcpy(id.key, key, key_bytes);
  int reused = lib->per_stream == WEFT_LIBRARY_PER_STREAM_REUSED;
  /* Read before the registry: a move after it makes the slot look again. */
  uint64_t seen = __atomic_load_n(&moves, __ATOMIC_ACQUIRE);
  slot *s = slot_for(&id);
  if (!s)
    return too_many(lib);
  if (reused && s->handle) {
    /* Still this stream's, unless it moved since (or must stay: a
     * capture's). */
    pthread_mutex_lock(&lock);
    made *m = made_find(&id);
    if (m && m->handle == s->handle) {
      s->moves = seen;
      m->kept |= c.s->capture != NULL;
    } else {
      s->handle = NULL;
    }
    pthread_mutex_unlock(&lock);
  }
  if (!s->handle) {
    void *h = NULL, *bound = NULL;
    if (lib->per_stream) {
      /* Found by its stream, bound to it once when made (or moved to it,
       * bound again). The stream is leased to this task alone, so nobody
       * else makes one for it meanwhile. */
      pthread_mutex_lock(&lock);
      made *m = made_find(&id);
      bound = stream;
      if (!m && reused)
        m = lend_idle(&id, c.x->rt, c.s, &bound);
      if (m) {
        h = m->handle;
        m->kept |= c.s->capture != NULL;
      }
      pthread_mutex_unlock(&lock);
      if (!m && (rc = make(&id, bk, key, stream, c.s, &h)) != 0)
        return rc;
    } else if ((rc = make(&id, bk, key, NULL, NULL, &h)) != 0) {
      return rc;
    }
    /* The task may have moved to another thread meanwhile: the handle is
     * that thread's now, unless it has one (ours is destroyed at
     * shutdown with the rest). */
    s = slot_for(&id);
    if (!s)
      return too_many(lib);
    if (!s->handle || reused) { /* that thread's may be one moved on */
      s->handle = h;
      s->stream = bound;
      s->moves = seen;
    }
  }
  if (s->stream != stream) {
    rc = lib->set_stream(lib->user, s->handle, stream);
    if (rc)
      return lib_fail(lib, "set_stream", rc);
    s->stream = stream;
  }
  *handle = s->handle;
  return 0;
}

/* The common case, a task asking again on the thread and stream it asked
 * on last: the slot found last, checked in place. Nothing here switches,
 * so the thread-local address cannot go stale. */
/* weft_library_handle_keyed for caller c, lib a valid description. */
static int handle_for(const weft__caller *c, const weft_library *lib,
                      const void *key, size_t key_bytes, void **handle) {
  weft__backend *bk = c->s->hdr.bk;
  void *stream = bk->ops->native_stream ? bk->ops->native_stream(c->s) : c->s;
  void *owner = lib->per_stream ? stream : NULL;
  const slot *s = &slots[last_hit % SLOTS];
  if (s->id.lib == lib && s->handle && s->stream == stream &&
      s->id.dev == c->dev && s->id.epoch == c->epoch && s->id.owner == owner &&
      s->id.key_bytes == key_bytes &&
      (key_bytes == 0 || memcmp(s->id.key, key, key_bytes) == 0) &&
      (lib->per_stream != WEFT_LIBRARY_PER_STREAM_REUSED ||
       (s->moves == __atomic_load_n(&moves, __ATOMIC_ACQUIRE) &&
        !c->s->capture))) {
    *handle = s->handle;
    return 0;
  }
  return handle_slow(c, lib, key, key_bytes, stream, owner, handle);
}

/* ---- made ahead ---- */

typedef struct warm_job {
  const weft_library *lib;
  weft_runtime *rt;
  int dev;
  pthread_mutex_t lock;
  int rc;        /* the first failure, or 0 */
  int raw;       /* its library status */
  char msg[512]; /* and its message, from the worker that saw it */
} warm_job;

/* On one worker thread, its own stack: the thread's handle for (lib,
 * dev), made unless it has one. */
static void warm_here(void *arg) {
  warm_job *j = arg;
  ident id = {j->lib, j->dev, 0, weft__head(j->rt)->epoch, NULL, {0}};
  slot *s = slot_for(&id);
  if (s && s->handle)
    return;
  /* Not in a task: make() creates right here, on this stack. */
  void *h;
  int rc =
      s ? make(&id, weft__head(j->rt)->bk, NULL, NULL, NULL, &h) : WEFT_ENOMEM;
  if (rc == 0) {
    s->handle = h;
    s->stream = NULL;
    return;
  }
  pthread_mutex_lock(&j->lock);
  if (!j->rc) {
    j->rc = rc;
    j->raw = weft__err_slot()->raw; /* the library's own status */
    snprintf(j->msg, sizeof j->msg, "%s",
             s ? weft_last_error_message() : "out of memory");
  }
  pthread_mutex_unlock(&j->lock);
}

int weft_library_warm(weft_runtime *rt, const weft_library *lib, int dev) {
  int rc = weft__registry_check(rt, "weft_library_warm");
  if (rc)
    return rc;
  void *unused;
  rc = valid("weft_library_warm", lib, NULL, 0, &unused);
  if (rc)
    return rc;
  if (lib->per_stream)
    return weft__err(WEFT_EINVAL,
                     "weft_library_warm %s: its handles are per stream, made "
                     "with their stream",
                     lib->name ? lib->name : "(unnamed library)");
  weft__backend *bk = weft__head(rt)->bk;
  if (dev < 0 || dev >= bk->ndev)
    return weft__err(WEFT_ENODEV, "weft_library_warm: no device %d", dev);
  warm_job j = {.lib = lib, .rt = rt, .dev = dev};
  if (pthread_mutex_init(&j.lock, NULL))
    return weft__err(WEFT_ENOMEM, "weft_library_warm: out of memory");
  weft__sched_each(rt, warm_here, &j);
  /* A plain thread runs tasks while it joins one (sched.c's guest); its
   * own current device is put back after. */
  if (!weft__worker_task()) {
    int cur = weft__backend_current_device(bk);
    warm_here(&j);
    if (cur >= 0)
      bk->ops->bind_device(bk, cur);
  }
  pthread_mutex_destroy(&j.lock);
  if (j.rc)
    return weft__err_raw(j.rc, j.raw, "weft_library_warm %s: on a worker: %s",
                         lib->name ? lib->name : "(unnamed library)", j.msg);
  return 0;
}

void weft__library_release(weft_runtime *rt) {
  pthread_mutex_lock(&lock);
  size_t keep = 0;
  for (size_t i = 0; i < nmade; i++) {
    made *m = &registry[i];
    if (m->id.epoch != weft__head(rt)->epoch) {
      registry[keep++] = *m;
      continue;
    }
    if (m->id.lib->destroy)
      m->id.lib->destroy(m->id.lib->user, m->handle);
  }
  nmade = keep;
  if (nmade == 0) {
    free(registry);
    registry = NULL;
    cap = 0;
  }
  pthread_mutex_unlock(&lock);
}
