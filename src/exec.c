/* Execution contexts (a task, or a plain thread), their leased streams,
 * and the runtime's pools of streams and sync events. */
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "check.h"
#include "dataflow.h"
#include "scheduler.h"

/* ---- the runtime plain threads use ----
 *
 * A plain thread keeps the runtime it first used until that runtime shuts
 * down; a thread that opens a runtime while it uses none uses that one (two
 * threads each opening their own had both ended up on the later one, and
 * the first thread's work then ran in a runtime its owner shut down under
 * it); any other thread that has used none takes the most recently opened
 * runtime still open. (Before, a thread followed whichever runtime was opened
 * last: opening a second runtime cut the main thread off from the first, whose
 * queued work it could then no longer wait for, and whose pinned blocks it
 * could not free.) A shutdown marks its runtime's thread contexts dead
 * instead of freeing them, since the threads still point at them: each
 * thread frees its own on its next call, or when it exits. */

static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_runtime **open_rts; /* open, oldest first */
static size_t nopen, cap_open;
static atomic_uint_fast64_t epochs;

static _Thread_local weft__exec *tls_thread_exec;
static pthread_key_t thread_key;
static pthread_once_t thread_key_once = PTHREAD_ONCE_INIT;

/* Lock held. */
static weft_runtime *newest_open(void) {
  return nopen ? open_rts[nopen - 1] : NULL;
}

int weft__runtime_register(weft_runtime *rt) {
  pthread_mutex_lock(&global_lock);
  if (nopen == cap_open) {
    size_t cap = cap_open ? cap_open * 2 : 4;
    weft_runtime **v = realloc(open_rts, cap * sizeof *v);
    if (!v) {
      pthread_mutex_unlock(&global_lock);
      return weft__err(WEFT_ENOMEM, "weft_init: out of memory");
    }
    open_rts = v;
    cap_open = cap;
  }
  rt->epoch = atomic_fetch_add(&epochs, 1) + 1;
  open_rts[nopen++] = rt;
  pthread_mutex_unlock(&global_lock);
  return 0;
}

int weft__runtime_is_open(weft_runtime *rt) {
  pthread_mutex_lock(&global_lock);
  size_t i = 0;
  while (i < nopen && open_rts[i] != rt)
    i++;
  int open = i < nopen; /* under the lock: another shutdown changes nopen */
  pthread_mutex_unlock(&global_lock);
  return open;
}

int weft__runtime_check(weft_runtime *rt, const char *call) {
  if (!rt)
    return weft__err(WEFT_EINVAL, "%s: rt is NULL", call);
  if (!weft__runtime_is_open(rt))
    return weft__err(WEFT_EHANDLE,
                     "%s: not an open runtime (already shut down?)", call);
  return 0;
}

int weft__runtime_unregister(weft_runtime *rt) {
  int found = 0;
  pthread_mutex_lock(&global_lock);
  for (size_t i = 0; i < nopen; i++)
    if (open_rts[i] == rt) {
      memmove(&open_rts[i], &open_rts[i + 1],
              (nopen - i - 1) * sizeof *open_rts);
      nopen--;
      found = 1;
      break;
    }
  if (nopen == 0) {
    free(open_rts);
    open_rts = NULL;
    cap_open = 0;
  }
  pthread_mutex_unlock(&global_lock);
  return found;
}

/* ---- exec lookup ---- */

static void exec_free(weft__exec *x) {
  free(x->pending);
  free(x->first_msg);
  weft__flow_free(x->flow);
  weft__check_exec_gone(NULL, x);
  free(x);
}

weft__exec *weft__exec_self(void) {
  weft_task *t = weft__task_self();
  if (t)
    return &t->x;
  weft__exec *x = tls_thread_exec;
  if (x && atomic_load_explicit(&x->dead, memory_order_acquire)) {
    /* Its runtime shut down: this thread owns the remains. */
    tls_thread_exec = NULL;
    pthread_setspecific(thread_key, NULL);
    exec_free(x);
    return NULL;
  }
  return x;
}

/* Thread exit: give the thread's stream back while its runtime lives. */
static void thread_exit(void *p) {
  weft__exec *x = p;
  pthread_mutex_lock(&global_lock);
  if (!atomic_load(&x->dead)) {
    weft_runtime *rt = x->rt;
    pthread_mutex_lock(&rt->lock);
    for (weft__exec **pp = &rt->threads; *pp; pp = &(*pp)->next)
      if (*pp == x) {
        *pp = x->next;
        break;
      }
    pthread_mutex_unlock(&rt->lock);
    weft__exec_release_stream(x);
  }
  pthread_mutex_unlock(&global_lock);
  exec_free(x);
}

static void make_key(void) { pthread_key_create(&thread_key, thread_exit); }

/* The calling thread's context, made for rt (NULL: the newest open
 * runtime) if the thread has none. */
static weft__exec *exec_get_for(const char *call, weft_runtime *pick) {
  weft__exec *x = weft__exec_self();
  if (x)
    return x;
  pthread_once(&thread_key_once, make_key);
  x = calloc(1, sizeof *x);
  if (!x) {
    weft__err(WEFT_ENOMEM, "%s: out of memory", call);
    return NULL;
  }
  pthread_mutex_lock(&global_lock);
  weft_runtime *rt = pick ? pick : newest_open();
  if (!rt) {
    pthread_mutex_unlock(&global_lock);
    free(x);
    weft__err(WEFT_ESTATE, "%s: no weft runtime is open (weft_init)", call);
    return NULL;
  }
  x->rt = rt;
  if (rt->bk->check)
    weft__check_thread_start(rt->bk->check, x);
  pthread_mutex_lock(&rt->lock);
  x->next = rt->threads;
  rt->threads = x;
  pthread_mutex_unlock(&rt->lock);
  tls_thread_exec = x;
  pthread_setspecific(thread_key, x);
  pthread_mutex_unlock(&global_lock);
  return x;
}

weft__exec *weft__exec_get(const char *call) {
  return exec_get_for(call, NULL);
}

int weft__exec_adopt(weft_runtime *rt) {
  return exec_get_for("weft_init", rt) ? 0 : weft__exec_get_failed();
}

/* Shutdown: the runtime's thread contexts die with it; their threads free
 * them and make new ones, for a runtime still open, on their next call. */
void weft__exec_threads_release(weft_runtime *rt) {
  pthread_mutex_lock(&global_lock);
  weft__exec *x = rt->threads;
  rt->threads = NULL;
  while (x) {
    weft__exec *next = x->next;
    weft__exec_release_stream(x);
    atomic_store_explicit(&x->dead, 1, memory_order_release);
    x = next;
  }
  pthread_mutex_unlock(&global_lock);
}

int weft__caller_get(const char *call, weft__caller *c) {
  weft__exec *x = weft__exec_get(call);
  if (!x)
    return weft__exec_get_failed();
  int rc = weft__exec_stream(x, &c->s);
  if (rc)
    return rc;
  weft_runtime *rt = x->rt;
  if (atomic_load_explicit(&rt->admission, memory_order_relaxed) &&
      x->is_task && !x->high &&
      atomic_load_explicit(&rt->nhigh_live, memory_order_relaxed) > 0 &&
      (rc = weft__admit(x, c->s)) != 0)
    return rc;
  if (rt->bk->check)
    weft__check_issue(rt->bk->check, x, c->s);
  c->x = x;
  c->dev = x->dev;
  c->epoch = rt->epoch;
  return 0;
}

int weft__exec_fail(weft__exec *x, int rc) {
  if (!x->pending_err)
    x->pending_err = rc;
  /* Failures seen off the exec's own slot (e.g. by a worker polling for
   * it) are copied so the exec reports them. */
  weft__errinfo *slot = weft__err_slot();
  if (slot != &x->errinfo)
    x->errinfo = *slot;
  if (!x->first_err) {
    x->first_err = rc;
    x->first_raw = slot->raw;
    x->first_msg = strdup(slot->msg);
  }
  return rc;
}

/* ---- pools ---- */

static int vec_push(weft__ptrvec *v, void *p) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 16;
    void **nv = realloc(v->v, cap * sizeof *nv);
    if (!nv)
      return WEFT_ENOMEM;
    v->v = nv;
    v->cap = cap;
  }
  v->v[v->n++] = p;
  return 0;
}

static void *vec_pop(weft__ptrvec *v) { return v->n ? v->v[--v->n] : NULL; }

int weft__exec_lease(weft__exec *x, weft__stream **out) {
  weft_runtime *rt = x->rt;
  weft__ptrvec *v = &rt->streams[x->dev * 2 + x->high];
  pthread_mutex_lock(&rt->lock);
  weft__stream *s = vec_pop(v);
  pthread_mutex_unlock(&rt->lock);
  if (!s) {
    const weft_device_info *di = &rt->bk->info[x->dev];
    int prio = x->high ? di->priority_greatest : di->priority_least;
    int rc = weft__stream_create(rt->bk, x->dev, prio, &s);
    if (rc)
      return rc;
    pthread_mutex_lock(&rt->lock);
    rt->pooled_streams++;
    pthread_mutex_unlock(&rt->lock);
  }
  if (rt->bk->check)
    weft__check_lease(rt->bk->check, s);
  x->stream = s;
  *out = s;
  return 0;
}

void weft__exec_release_stream(weft__exec *x) {
  weft_runtime *rt = x->rt;
  /* A task dropped its capture when it returned; a thread's goes now. */
  if (!x->is_task)
    weft__graph_drop_capture(x, "its thread or runtime ended");
  /* Taken under the lock: while a task finishes, one that follows it may
   * take its stream over (weft__task_take_stream). */
  pthread_mutex_lock(&rt->lock);
  weft__stream *s = x->stream;
  x->stream = NULL;
  if (!s) {
    pthread_mutex_unlock(&rt->lock);
    return;
  }
  if (vec_push(&rt->streams[s->hdr.dev * 2 + x->high], s) != 0) {
    rt->pooled_streams--;
    pthread_mutex_unlock(&rt->lock);
    weft__stream_destroy(&s);
    return;
  }
  pthread_mutex_unlock(&rt->lock);
}

int weft__event_pool_get(weft_runtime *rt, int dev, int blocking,
                         weft__event **out) {
  blocking = blocking != 0;
  pthread_mutex_lock(&rt->lock);
  weft__event *e = vec_pop(&rt->events[dev * 2 + blocking]);
  pthread_mutex_unlock(&rt->lock);
  if (!e) {
    /* Polled: tasks wait for it in the wait set. Blocking sync only where
     * a plain thread will wait on it (it sleeps, not spins): CUDA made
     * about 448 such events pending behind running work, the next record
     * waited for that work (docs/NOTES.md). */
    int rc = weft__event_create(
        rt->bk, dev, blocking ? WEFT__EVENT_BLOCKING : WEFT__EVENT_POLLED, &e);
    if (rc)
      return rc;
    pthread_mutex_lock(&rt->lock);
    rt->pooled_events++;
    pthread_mutex_unlock(&rt->lock);
  }
  *out = e;
  return 0;
}

void weft__event_pool_put(weft_runtime *rt, weft__event *e) {
  pthread_mutex_lock(&rt->lock);
  int blocking = (e->flags & WEFT__EVENT_BLOCKING) != 0;
  if (vec_push(&rt->events[e->hdr.dev * 2 + blocking], e) != 0) {
    rt->pooled_events--;
    pthread_mutex_unlock(&rt->lock);
    weft__event_destroy(&e);
    return;
  }
  pthread_mutex_unlock(&rt->lock);
}

int weft__pools_fill(weft_runtime *rt, int n) {
  for (int d = 0; d < rt->bk->ndev; d++) {
    weft__ptrvec *v = &rt->streams[d * 2];
    int prio = rt->bk->info[d].priority_least;
    size_t first = v->n;
    for (int i = 0; i < n; i++) {
      weft__stream *s;
      int rc = weft__stream_create(rt->bk, d, prio, &s);
      if (rc == 0 && vec_push(v, s) != 0) {
        weft__stream_destroy(&s);
        rc = weft__err(WEFT_ENOMEM, "weft_init: out of memory");
      }
      if (rc) {
        weft__pools_drain(rt);
        return rc;
      }
      rt->pooled_streams++;
    }
    /* Leased newest first: reversed, the first lease gets the lowest id
     * (weft check's clocks and the trace's stream numbers stay small). */
    for (size_t i = first, j = v->n - 1; i < j; i++, j--) {
      void *t = v->v[i];
      v->v[i] = v->v[j];
      v->v[j] = t;
    }
  }
  return 0;
}

void weft__pools_drain(weft_runtime *rt) {
  for (int d = 0; d < rt->bk->ndev; d++) {
    for (int h = 0; h < 2; h++) {
      weft__ptrvec *v = &rt->streams[d * 2 + h];
      weft__stream *s;
      while ((s = vec_pop(v)) != NULL)
        weft__stream_destroy(&s);
      free(v->v);
    }
    for (int b = 0; b < 2; b++) {
      weft__event *e;
      while ((e = vec_pop(&rt->events[d * 2 + b])) != NULL)
        weft__event_destroy(&e);
      free(rt->events[d * 2 + b].v);
    }
  }
  free(rt->streams);
  free(rt->events);
  rt->streams = NULL;
  rt->events = NULL;
  rt->pooled_streams = rt->pooled_events = 0;
}
