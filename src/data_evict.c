/* Making room for registered data's instances (data_internal.h): past the
 * runtime's limit, or when a device runs out, an instance that no running
 * task holds is evicted by the task that needs the room, written back
 * first when it is its handle's only valid copy: the one whose next user
 * among the tasks spawned comes latest (none first), the least recently
 * used among equals (data_uses.c). */
#include <pthread.h>
#include <stdint.h>

#include "caller_declare.h"
#include "clock.h"
#include "data_core.h"
#include "data_internal.h"

/* An instance chosen for eviction, marked EVICTING. */
typedef struct victim {
  weft_data *d;
  int dev;
  int dirty;       /* its only valid copy: written back first */
  uint64_t writes; /* the handle's, when picked */
} victim;

/* Picks the instance on dev of rt's handles that no running task holds,
 * of a handle none of whose instances is being evicted, whose next user
 * comes latest, then least recently used, and marks it,
 * into *v; returns 1, or 0 with *in_use set if some were held. The
 * registry's lock held (then each handle's in turn). */
static int pick_victim(weft_runtime *rt, int dev, victim *v, int *in_use) {
  weft_data *best = NULL;
  uint64_t best_use = UINT64_MAX, best_next = 0;
  *in_use = 0;
  for (size_t i = weft__data_first_of(rt);
       i < weft__data_reg.n && weft__data_reg.by_host[i]->rt == rt; i++) {
    weft_data *o = weft__data_reg.by_host[i];
    instance *c = &o->inst[dev];
    pthread_mutex_lock(&o->lock);
    if (c->ptr && c->busy == IDLE && !weft__data_evicting(o)) {
      if (!weft__data_users_returned(rt, c)) {
        *in_use = 1;
      } else {
        uint64_t next = weft__data_next_use(rt, o);
        if (!best || next > best_next ||
            (next == best_next && c->last_use < best_use)) {
          best = o;
          best_use = c->last_use;
          best_next = next;
        }
      }
    }
    pthread_mutex_unlock(&o->lock);
  }
  if (!best)
    return 0;
  instance *c = &best->inst[dev];
  pthread_mutex_lock(&best->lock);
  int ok = c->ptr && c->busy == IDLE && !weft__data_evicting(best) &&
           weft__data_users_returned(rt, c);
  if (ok) {
    /* Dirty unless the host or another instance is valid. One eviction of
     * a handle at a time: a second one, of an instance a writer made valid
     * meanwhile, would write back the newer data, and the first's older
     * copy would then land on top of it. */
    c->busy = EVICTING;
    weft__data_guard(best); /* down while the write-back may write the host */
    *v = (victim){best, dev,
                  c->valid && !best->host_valid &&
                      weft__data_source_of(best, dev) < 0,
                  best->writes};
  }
  pthread_mutex_unlock(&best->lock);
  return ok;
}

/* Evicts v in the calling task: its stream follows the instance's users
 * and its last fill, writes it back if dirty (waiting for the copy), and
 * frees it; the instance is then unallocated and invalid. */
static int evict(weft_runtime *rt, const victim *v) {
  weft_data *o = v->d;
  instance *in = &o->inst[v->dev];
  /* EVICTING keeps gets and fills away: users and ptr stay as they are. */
  int ranged = weft_range_push("weft_data evict") == 0;
  int rc = weft__data_follow_users(o, in); /* all returned: a victim's */
  if (rc == 0)
    rc = weft__data_after_fill(in, in->recorded);
  /* weft check: the evicting task reads and frees the instance, and
   * writes the host copy, for the handle's tasks. */
  if (rc == 0)
    rc = weft__caller_declares(in->ptr, o->bytes, WEFT_RW);
  if (rc == 0 && v->dirty)
    rc = weft__caller_declares(o->host, o->bytes, WEFT_WRITE);
  if (rc == 0 && v->dirty) {
    weft__caller_own_copy(1);
    rc = weft_copy(o->host, in->ptr, o->bytes);
    weft__caller_own_copy(0);
  }
  if (rc == 0 && v->dirty)
    rc = weft_sync();
  if (rc == 0)
    rc = weft_device_free(in->ptr);
  if (ranged)
    weft_range_pop();
  size_t bytes = o->bytes;
  if (rc == 0) /* while EVICTING still keeps an unregister of o waiting */
    weft__data_unhold(o, v->dev);
  pthread_mutex_lock(&o->lock);
  if (rc == 0) {
    in->ptr = NULL;
    in->valid = 0;
    in->recorded = 0;
    in->nusers = 0;
    o->st.evictions++;
    if (v->dirty) {
      /* Valid unless a get for writing that began before the pick
       * published after it: its instance is then the only valid copy (and
       * the host's was not valid before either). */
      if (o->writes == v->writes)
        o->host_valid = 1;
      o->st.to_host += bytes;
      o->st.copies++;
    }
  }
  in->busy = IDLE;
  weft__data_guard(o);
  pthread_mutex_unlock(&o->lock);
  if (rc == 0)
    weft__data_evicted(rt, bytes, v->dirty ? bytes : 0);
  return rc;
}

/* How long a task that needs room waits for instances held by running
 * tasks before it goes past the limit instead: never for ever, since the
 * holders may be waiting for room too (docs/decisions/data.md, "Eviction
 * under a limit"). */
#define ROOM_WAIT_NS 100000u

/* Holds room for d's instance on dev within the runtime's limit, evicting
 * what it must; past the limit when nothing can go. */
static int make_room(weft_data *d, int dev, int may_evict) {
  size_t limit = weft__data_limit(d->rt);
  uint64_t since = 0;
  for (;;) {
    pthread_mutex_lock(&weft__data_reg.lock);
    size_t *held = &d->use->dev[dev].held;
    victim v;
    int in_use = 0;
    if (limit && *held && *held + d->bytes > limit) {
      if (!may_evict) {
        pthread_mutex_unlock(&weft__data_reg.lock);
        return WEFT_EAGAIN;
      }
      if (pick_victim(d->rt, dev, &v, &in_use)) {
        pthread_mutex_unlock(&weft__data_reg.lock);
        int rc = evict(d->rt, &v);
        if (rc)
          return rc;
        continue;
      }
      if (in_use && !since)
        since = weft__clock_ns();
      if (in_use && weft__clock_ns() - since < ROOM_WAIT_NS) {
        pthread_mutex_unlock(&weft__data_reg.lock);
        weft_yield();
        continue;
      }
    }
    *held += d->bytes; /* within the limit, or past it: nothing can go */
    pthread_mutex_unlock(&weft__data_reg.lock);
    return 0;
  }
}

/* Allocates d's instance on dev into *p, within the limit; when the device
 * itself runs out, evicts and tries again while anything can go. */
int weft__data_alloc_instance(weft_data *d, int dev, int may_evict, void **p) {
  int rc = make_room(d, dev, may_evict);
  if (rc) {
    *p = NULL;
    return rc;
  }
  for (;;) {
    weft__caller_own_copy(1); /* weft's instance, not the task's scratch */
    rc = weft_device_alloc(d->bytes, p);
    weft__caller_own_copy(0);
    if (rc != WEFT_ENOMEM || !may_evict)
      break;
    victim v;
    int in_use;
    pthread_mutex_lock(&weft__data_reg.lock);
    int found = pick_victim(d->rt, dev, &v, &in_use);
    pthread_mutex_unlock(&weft__data_reg.lock);
    if (!found || evict(d->rt, &v) != 0)
      break;
  }
  if (rc) {
    *p = NULL;
    weft__data_unhold(d, dev);
  }
  return rc;
}
