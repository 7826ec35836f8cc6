/* weft/library.h: handles of user-described libraries, cached per thread
 * and device, bound to the caller's stream.
 *
 * The cache is a small table per thread; a slot belongs to one runtime
 * (its epoch), so a thread that outlives a runtime makes fresh handles for
 * the next. Every handle made is also in one registry, so that shutdown
 * destroys its runtime's handles whichever threads made them. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "caller.h"
#include "error_internal.h"
#include "scheduler.h"
#include "weft/library.h"

enum { SLOTS = 32 };

typedef struct slot {
  const weft_library *lib;
  int dev;
  uint64_t epoch;
  void *handle;
  void *stream; /* the native stream it is bound to, or NULL */
} slot;

static _Thread_local slot slots[SLOTS];

typedef struct made {
  const weft_library *lib;
  void *handle;
  uint64_t epoch;
} made;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static made *registry;
static size_t nmade, cap;

/* The calling thread's slot for (lib, dev, epoch), taking a free or stale
 * one if need be; NULL when all are taken. Not inlined: a task can resume
 * on another thread, and a thread-local address kept across that would
 * name the old thread's table. */
__attribute__((noinline)) static slot *slot_for(const weft_library *lib,
                                                int dev, uint64_t epoch) {
  slot *free_slot = NULL;
  for (int i = 0; i < SLOTS; i++) {
    slot *s = &slots[i];
    if (s->lib == lib && s->dev == dev && s->epoch == epoch)
      return s;
    if (!free_slot && (!s->lib || s->epoch != epoch))
      free_slot = s;
  }
  if (free_slot)
    *free_slot = (slot){lib, dev, epoch, NULL, NULL};
  return free_slot;
}

typedef struct create_call {
  const weft_library *lib;
  weft__backend *bk;
  int dev, rc;
  void *handle;
} create_call;

static void create(void *arg) {
  create_call *c = arg;
  if (c->bk->ops->bind_device)
    c->bk->ops->bind_device(c->bk, c->dev);
  c->rc = c->lib->create(c->lib->user, c->dev, &c->handle);
}

static int remember(const weft_library *lib, void *handle, uint64_t epoch) {
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
  registry[nmade++] = (made){lib, handle, epoch};
  pthread_mutex_unlock(&lock);
  return 0;
}

int weft_library_handle(const weft_library *lib, void **handle) {
  if (!lib || !handle)
    return weft__err(WEFT_EINVAL, "weft_library_handle: %s is NULL",
                     lib ? "handle" : "lib");
  const char *name = lib->name ? lib->name : "(unnamed library)";
  if (lib->struct_size != sizeof *lib || !lib->create || !lib->set_stream)
    return weft__err(WEFT_EINVAL,
                     "weft_library_handle %s: the description needs "
                     "struct_size = sizeof(weft_library), create and "
                     "set_stream",
                     name);
  weft__caller c;
  int rc = weft__caller_get("weft_library_handle", &c);
  if (rc)
    return rc;
  weft__backend *bk = c.s->hdr.bk;
  void *stream = bk->ops->native_stream ? bk->ops->native_stream(c.s) : c.s;
  slot *s = slot_for(lib, c.dev, c.epoch);
  if (!s)
    return weft__err(WEFT_ENOMEM,
                     "weft_library_handle %s: more than %d libraries and "
                     "devices on one thread",
                     name, SLOTS);
  if (!s->handle) {
    create_call cc = {lib, bk, c.dev, 0, NULL};
    weft__call_on_thread_stack(create, &cc);
    if (cc.rc)
      return weft__err(WEFT_EDEVICE,
                       "weft_library_handle %s: create returned %d", name,
                       cc.rc);
    if (remember(lib, cc.handle, c.epoch) != 0) {
      if (lib->destroy)
        lib->destroy(lib->user, cc.handle);
      return weft__err(WEFT_ENOMEM, "weft_library_handle %s: out of memory",
                       name);
    }
    /* The task may have moved to another thread meanwhile: the handle is
     * that thread's now, unless it has one (ours is destroyed at
     * shutdown with the rest). */
    s = slot_for(lib, c.dev, c.epoch);
    if (!s)
      return weft__err(WEFT_ENOMEM,
                       "weft_library_handle %s: more than %d libraries and "
                       "devices on one thread",
                       name, SLOTS);
    if (!s->handle) {
      s->handle = cc.handle;
      s->stream = NULL;
    }
  }
  if (s->stream != stream) {
    rc = lib->set_stream(lib->user, s->handle, stream);
    if (rc)
      return weft__err(WEFT_EDEVICE,
                       "weft_library_handle %s: set_stream returned %d", name,
                       rc);
    s->stream = stream;
  }
  *handle = s->handle;
  return 0;
}

void weft__library_release(weft_runtime *rt) {
  pthread_mutex_lock(&lock);
  size_t keep = 0;
  for (size_t i = 0; i < nmade; i++) {
    made *m = &registry[i];
    if (m->epoch != rt->epoch) {
      registry[keep++] = *m;
      continue;
    }
    if (m->lib->destroy)
      m->lib->destroy(m->lib->user, m->handle);
  }
  nmade = keep;
  if (nmade == 0) {
    free(registry);
    registry = NULL;
    cap = 0;
  }
  pthread_mutex_unlock(&lock);
}
