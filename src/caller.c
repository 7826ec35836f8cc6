/* Finding the caller's context: the running task's exec, or a plain
 * thread's, made on its first call for the runtime it uses; the stream an
 * exec leases, and the failure it records.
 *
 * A shutdown marks its runtime's thread contexts dead instead of freeing
 * them, since the threads still point at them: each thread frees its own
 * on its next call, or when it exits. */
#include <stdlib.h>
#include <string.h>

#include "caller.h"
#include "caller_declare.h"
#include "checker.h"
#include "dataflow.h"
#include "registry.h"
#include "stream_pool.h"
#include "worker.h"

static _Thread_local weft__exec *tls_thread_exec;
static pthread_key_t thread_key;
static pthread_once_t thread_key_once = PTHREAD_ONCE_INIT;

static void exec_free(weft__exec *x) {
  /* Left by a thread whose runtime shut down: shutdown ran their helpers
   * and freed them with its tasks, so only the jobs remain. */
  for (int i = 0; i < x->npending; i++)
    free(x->pending[i]);
  free(x->pending);
  free(x->first_msg);
  free(x->ranges);
  weft__flow_free(x->flow);
  weft__check_exec_gone(NULL, x);
  free(x);
}

weft__exec *weft__caller_self(void) {
  weft_task *t = weft__worker_task();
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

int weft__caller_refuse_in_capture(const weft__exec *x, const char *call,
                                   const char *why) {
  if (!x || !x->stream || !x->stream->capture)
    return 0;
  weft__capture *cap = x->stream->capture;
  /* Inside a data-flow step the refusal is the step's failure, and the
   * capture makes no graph (weft/dataflow.h). */
  if (cap->in_step && !cap->failed)
    cap->failed = WEFT_ESTATE;
  return weft__err(WEFT_ESTATE,
                   "%s inside a graph capture: %s; end the capture first "
                   "(weft_graph_end)",
                   call, why);
}

int weft__caller_capture_refused(const char *call, const char *why) {
  return weft__caller_refuse_in_capture(weft__caller_self(), call, why);
}

/* Thread exit, while the thread's runtime lives: what the runtime says a
 * thread's end does (its staged copies joined, its open ranges ended:
 * runtime.c), then its stream given back. Under the registry lock, which
 * a shutdown takes to leave the registry (before it frees the runtime's
 * tasks) and while it ends the threads' ranges. */
static void thread_exit(void *p) {
  weft__exec *x = p;
  weft__registry_lock();
  if (!atomic_load(&x->dead)) {
    weft__runtime_head *rt = weft__head(x->rt);
    if (rt->thread_end)
      rt->thread_end(x, !weft__registry_has_locked(x->rt));
    pthread_mutex_lock(&rt->lock);
    for (weft__exec **pp = &rt->threads; *pp; pp = &(*pp)->next)
      if (*pp == x) {
        *pp = x->next;
        break;
      }
    pthread_mutex_unlock(&rt->lock);
    weft__caller_release_stream(x);
  }
  weft__registry_unlock();
  exec_free(x);
}

static void make_key(void) { pthread_key_create(&thread_key, thread_exit); }

/* The calling thread's context, made for rt (NULL: the newest open
 * runtime) if the thread has none. */
static weft__exec *exec_get_for(const char *call, weft_runtime *pick) {
  weft__exec *x = weft__caller_self();
  if (x)
    return x;
  pthread_once(&thread_key_once, make_key);
  x = calloc(1, sizeof *x);
  if (!x) {
    weft__err(WEFT_ENOMEM, "%s: out of memory", call);
    return NULL;
  }
  weft__registry_lock();
  weft_runtime *rt = pick ? pick : weft__registry_newest();
  if (!rt) {
    weft__registry_unlock();
    free(x);
    weft__err(WEFT_ESTATE, "%s: no weft runtime is open (weft_init)", call);
    return NULL;
  }
  weft__runtime_head *rh = weft__head(rt);
  x->rt = rt;
  x->bk = rh->bk;
  if (x->bk->check)
    weft__check_thread_start(x->bk->check, x);
  pthread_mutex_lock(&rh->lock);
  x->next = rh->threads;
  rh->threads = x;
  pthread_mutex_unlock(&rh->lock);
  tls_thread_exec = x;
  pthread_setspecific(thread_key, x);
  weft__registry_unlock();
  return x;
}

weft__exec *weft__caller_get(const char *call) {
  return exec_get_for(call, NULL);
}

int weft__caller_adopt(weft_runtime *rt) {
  return exec_get_for("weft_init", rt) ? 0 : weft__caller_get_failed();
}

/* Shutdown: the runtime's thread contexts die with it; their threads free
 * them and make new ones, for a runtime still open, on their next call. */
void weft__caller_threads_release(weft_runtime *rt) {
  weft__registry_lock();
  weft__runtime_head *rh = weft__head(rt);
  weft__exec *x = rh->threads;
  rh->threads = NULL;
  while (x) {
    weft__exec *next = x->next;
    weft__caller_release_stream(x);
    atomic_store_explicit(&x->dead, 1, memory_order_release);
    x = next;
  }
  weft__registry_unlock();
}

int weft__caller_fail(weft__exec *x, int rc) {
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

int weft__caller_lease(weft__exec *x, weft__stream **out) {
  weft_runtime *rt = x->rt;
  weft__stream *s;
  int rc = weft__stream_pool_get(rt, x->dev, x->high, &s);
  if (rc)
    return rc;
  if (x->bk->check)
    weft__check_lease(x->bk->check, s);
  x->stream = s;
  *out = s;
  return 0;
}

void weft__caller_release_stream(weft__exec *x) {
  weft_runtime *rt = x->rt;
  /* A task dropped its capture when it returned; a thread's goes now. */
  if (x->drop_capture)
    x->drop_capture(x, "its thread or runtime ended");
  weft__stream_pool_put(rt, &x->stream, x->high, &x->lender);
}

/* ---- what a caller did, told to weft check ---- */

void weft__caller_issues(weft__exec *x, weft__stream *s) {
  if (s->hdr.bk->check)
    weft__check_issue(s->hdr.bk->check, x, s);
}

void weft__caller_synced(weft__exec *x, weft__stream *s) {
  if (s->hdr.bk->check)
    weft__check_synced(s->hdr.bk->check, x, s);
}

void weft__caller_event_synced(weft__exec *x, weft__event *e) {
  if (e->hdr.bk->check)
    weft__check_event_synced(e->hdr.bk->check, x, e);
}

void weft__caller_device_synced(weft__exec *x, int dev) {
  if (x->bk->check)
    weft__check_device_synced(x->bk->check, x, dev);
}

void weft__caller_joined(weft__exec *x, weft__exec *done) {
  if (x->bk->check)
    weft__check_joined(x->bk->check, x, done);
}

void weft__caller_follows(weft__stream *s, weft__exec *done) {
  if (s->hdr.bk->check)
    weft__check_after(s->hdr.bk->check, s, done);
}

void weft__caller_spawned(weft__exec *parent, weft__exec *child) {
  if (child->bk->check)
    weft__check_spawn(child->bk->check, parent, child);
}

void weft__caller_allocated(weft__exec *x, const void *p, size_t n,
                            int pinned) {
  if (x->bk->check)
    weft__check_alloc(x->bk->check, p, n, pinned);
}

void weft__caller_made(weft__exec *x, const void *p) {
  if (x->bk->check && x->is_task && !x->data_own_copy)
    weft__check_made_by(x->bk->check, p, x);
}

void weft__caller_freeing(weft__exec *x, const void *p) {
  if (x->bk->check)
    weft__check_dealloc(x->bk->check, p);
}

int weft__caller_declares(const void *p, size_t bytes, unsigned mode) {
  weft__exec *x = weft__caller_self();
  if (!x || !x->bk->check || !x->decl)
    return 0;
  for (uint32_t i = 0; i < x->ndecl; i++) {
    const weft_access *d = &x->decl[i];
    if (d->ptr == p && d->bytes == bytes && (d->mode & mode) == mode)
      return 0;
  }
  weft_access *n = realloc(x->decl, (x->ndecl + 1) * sizeof *n);
  if (!n)
    return weft__err(WEFT_ENOMEM, "weft check: out of memory for a "
                                  "declaration");
  n[x->ndecl++] = (weft_access){p, bytes, mode};
  x->decl = n;
  return 0;
}

void weft__caller_gets(const void *p, size_t bytes, unsigned mode) {
  weft__exec *x = weft__caller_self();
  if (x && x->bk->check)
    weft__check_data_get(x->bk->check, x, p, bytes, mode);
}

void weft__caller_own_copy(int on) {
  weft__exec *x = weft__caller_self();
  if (x)
    x->data_own_copy = on;
}

int weft__caller_own_copying(void) {
  weft__exec *x = weft__caller_self();
  return x && x->data_own_copy;
}

int weft__caller_capturing(void) {
  weft__exec *x = weft__caller_self();
  return x && x->stream && x->stream->capture;
}

const void *weft__caller_thread(void) {
  weft__exec *x = weft__caller_self();
  return x && !x->is_task ? x : NULL;
}

int weft__caller_others_alive(const weft__exec *x) {
  return x->bk->check && weft__check_others_alive(x->bk->check);
}

void weft__caller_implicit_sync(weft__exec *x, const char *call,
                                const char *what, uint64_t ns, int alive) {
  if (x->bk->check)
    weft__check_implicit_sync(x->bk->check, x, call, what, ns, alive);
}

void weft__caller_gone(weft__exec *x) { weft__check_exec_gone(NULL, x); }
