/* The public runtime object: which backend is open and its devices. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admission.h"
#include "backend.h"
#include "checker.h"
#include "cpus.h"
#include "data_live.h"
#include "error_internal.h"
#include "graph_internal.h"
#include "library_internal.h"
#include "memory_internal.h"
#include "mutex.h"
#include "range.h"
#include "registry.h"
#include "runtime_state.h"
#include "stream_pool.h"
#include "trace.h"
#include "watchdog.h"
#include "weft/runtime.h"

void weft_runtime_opts_init(weft_runtime_opts *opts) {
  if (!opts)
    return;
  memset(opts, 0, sizeof *opts);
  opts->struct_size = sizeof *opts;
  opts->backend = WEFT_BACKEND_AUTO;
  opts->check = -1;
  opts->admission = -1;
  opts->watchdog_ms = -1;
  opts->data_prefetch = -1;
}

/* An on/off option (name) or, for -1, its variable env (unset or empty:
 * dflt): 0 or 1, else WEFT_EINVAL reported. */
static int switch_wanted(const char *name, const char *env_name, int opt,
                         int dflt, int *on) {
  if (opt == 0 || opt == 1) {
    *on = opt;
    return 0;
  }
  if (opt != -1)
    return weft__err(WEFT_EINVAL, "weft_init: %s %d is not -1, 0 or 1", name,
                     opt);
  const char *env = getenv(env_name);
  if (!env || !*env) {
    *on = dflt;
    return 0;
  }
  if (strcmp(env, "0") == 0 || strcmp(env, "1") == 0) {
    *on = env[0] == '1';
    return 0;
  }
  return weft__err(WEFT_EINVAL, "weft_init: %s='%s' is not 0 or 1", env_name,
                   env);
}

/* opts.admission, or WEFT_ADMISSION for -1 (unset: the default depth): 0
 * (off) to WEFT__ADMISSION_MAX, else WEFT_EINVAL reported. */
static int admission_wanted(int opt, int *depth) {
  if (opt >= 0 && opt <= WEFT__ADMISSION_MAX) {
    *depth = opt;
    return 0;
  }
  if (opt != -1)
    return weft__err(WEFT_EINVAL,
                     "weft_init: admission %d is not -1, 0 (off) or a depth "
                     "of 1 to %d",
                     opt, WEFT__ADMISSION_MAX);
  const char *env = getenv("WEFT_ADMISSION");
  *depth = WEFT__ADMISSION_DEFAULT;
  if (!env || !*env)
    return 0;
  char *end;
  errno = 0;
  long v = strtol(env, &end, 10);
  if (errno || *env < '0' || *env > '9' || *end || v > WEFT__ADMISSION_MAX)
    return weft__err(WEFT_EINVAL,
                     "weft_init: WEFT_ADMISSION='%s' is not 0 (off) or a "
                     "depth of 1 to %d",
                     env, WEFT__ADMISSION_MAX);
  *depth = (int)v;
  return 0;
}

/* opts.data_limit, or WEFT_DATA_LIMIT for 0: bytes, or with a K, M or G
 * suffix (powers of 1024); unset or 0 means no limit. */
static int data_limit_wanted(size_t *bytes) {
  const char *env = getenv("WEFT_DATA_LIMIT");
  if (*bytes || !env || !*env)
    return 0;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(env, &end, 10);
  int shift = 0;
  if (*end && !end[1])
    shift = *end == 'K' || *end == 'k'   ? 10
            : *end == 'M' || *end == 'm' ? 20
            : *end == 'G' || *end == 'g' ? 30
                                         : -1;
  else if (*end)
    shift = -1;
  if (errno || *env < '0' || *env > '9' || shift < 0 || v > (SIZE_MAX >> shift))
    return weft__err(WEFT_EINVAL,
                     "weft_init: WEFT_DATA_LIMIT='%s' is not a number of "
                     "bytes (a K, M or G suffix allowed)",
                     env);
  *bytes = (size_t)v << shift;
  return 0;
}

/* The longest watchdog limit, a day, in ms. */
#define WATCHDOG_MAX_MS (24 * 3600 * 1000)

/* opts.watchdog_ms, or WEFT_WATCHDOG (seconds, decimals allowed) for -1:
 * 0 (off) or 1 ms to a day, else WEFT_EINVAL reported. */
static int watchdog_wanted(int opt, int *ms) {
  if (opt >= 0 && opt <= WATCHDOG_MAX_MS) {
    *ms = opt;
    return 0;
  }
  if (opt != -1)
    return weft__err(WEFT_EINVAL,
                     "weft_init: watchdog_ms %d is not -1, 0 (off) or 1 to "
                     "%d",
                     opt, WATCHDOG_MAX_MS);
  const char *env = getenv("WEFT_WATCHDOG");
  *ms = 0;
  if (!env || !*env)
    return 0;
  /* Digits with at most one point: strtod alone would take hexadecimal,
   * exponents, "inf" and leading spaces. */
  int digits = 0, points = 0, others = 0;
  for (const char *c = env; *c; c++) {
    if (*c >= '0' && *c <= '9')
      digits++;
    else if (*c == '.')
      points++;
    else
      others++;
  }
  double s = digits > 0 && points <= 1 && !others ? strtod(env, NULL) : -1;
  if (s < 0 || s * 1000 > WATCHDOG_MAX_MS || (s > 0 && s < 0.001))
    return weft__err(WEFT_EINVAL,
                     "weft_init: WEFT_WATCHDOG='%s' is not 0 (off) or a "
                     "number of seconds from 0.001 to 86400",
                     env);
  *ms = (int)(s * 1000 + 0.5);
  return 0;
}

static int rt_locks_init(weft_runtime *rt) {
  if (weft__mutex_init(&rt->h.lock))
    goto fail_lock;
  if (pthread_cond_init(&rt->done_cv, NULL))
    goto fail_done;
  if (weft__mutex_init(&rt->sched.park_lock))
    goto fail_park;
  if (weft__wait_init(&rt->waits, &rt->sched))
    goto fail_wait;
  if (weft__rq_init(&rt->sched.inject))
    goto fail_inject;
  return 0;
fail_inject:
  weft__wait_fini(&rt->waits);
fail_wait:
  pthread_mutex_destroy(&rt->sched.park_lock);
fail_park:
  pthread_cond_destroy(&rt->done_cv);
fail_done:
  pthread_mutex_destroy(&rt->h.lock);
fail_lock:
  return weft__err(WEFT_ENOMEM, "weft_init: cannot create locks");
}

static void rt_locks_fini(weft_runtime *rt) {
  weft__rq_fini(&rt->sched.inject);
  weft__wait_fini(&rt->waits);
  pthread_mutex_destroy(&rt->sched.park_lock);
  pthread_cond_destroy(&rt->done_cv);
  pthread_mutex_destroy(&rt->h.lock);
}

/* Thread counts: an option (0: not set) or else the environment variable,
 * 1 to WEFT__MAX_THREADS; anything else is refused with the name of what
 * was wrong. 0 stays 0: the default (the cores, cpus.h). */
/* opts.streams's default (runtime.h). */
#define STREAMS_AHEAD 32

/* opts.<opt> (0: the default) or else the environment's env: min to max. */
static int count_opt(const char *opt, const char *env, int *n, int min,
                     int max) {
  if (*n < 0 || (*n > 0 && *n < min) || *n > max)
    return weft__err(WEFT_EINVAL,
                     "weft_init: opts.%s = %d: %d to %d, or 0 for "
                     "the default",
                     opt, *n, min, max);
  const char *e = getenv(env);
  if (*n > 0 || !e || !*e)
    return 0;
  char *end;
  errno = 0;
  long v = strtol(e, &end, 10);
  if (errno || *e < '0' || *e > '9' || *end != '\0' || v < min || v > max)
    return weft__err(WEFT_EINVAL,
                     "weft_init: %s='%s' is not a number from %d "
                     "to %d",
                     env, e, min, max);
  *n = (int)v;
  return 0;
}

static int thread_count(const char *opt, const char *env, int *n) {
  return count_opt(opt, env, n, 1, WEFT__MAX_THREADS);
}

/* The trace file must be writable: found now, not after the run, when the
 * runtime is already gone. The tracer writes it at shutdown. *created
 * says whether this made the file, for a failed weft_init to remove. */
static int trace_path_ok(const char *path, int *created) {
  int existed = access(path, F_OK) == 0;
  FILE *f = fopen(path, "a");
  if (!f)
    return weft__err(WEFT_EIO,
                     "weft_init: cannot write the trace file '%s': "
                     "%s",
                     path, strerror(errno));
  fclose(f);
  *created = !existed;
  return 0;
}

/* A plain thread's exit while its runtime lives (caller.c): the staged
 * copies it never synced are joined (their failures have no one left to
 * tell; once the runtime is closing, they have run, and their tasks may
 * be freed: the thread's context frees the jobs), and the ranges it left
 * open end, said on stderr (weft/range.h). The registry lock is held,
 * which keeps weft_shutdown from ending the same ranges meanwhile. */
static void thread_end(weft__exec *x, int closing) {
  if (!closing)
    (void)weft__memory_join_pending(x);
  if (x->nranges)
    weft__range_end_all(x, "a thread", "exited");
}

int weft_init(weft_runtime **rtp, const weft_runtime_opts *user) {
  weft_runtime_opts opts;
  weft_runtime_opts_init(&opts);
  if (!rtp)
    return weft__err(WEFT_EINVAL, "weft_init: rt is NULL");
  if (user) {
    /* Accept smaller (older) option structs; refuse unknown larger ones. */
    if (user->struct_size <
            offsetof(weft_runtime_opts, backend) + sizeof(weft_backend_kind) ||
        user->struct_size > sizeof opts)
      return weft__err(WEFT_EINVAL,
                       "weft_init: opts->struct_size %zu is not valid "
                       "(call weft_runtime_opts_init)",
                       user->struct_size);
    memcpy(&opts, user, user->struct_size);
  }
  if (opts.backend != WEFT_BACKEND_AUTO && opts.backend != WEFT_BACKEND_HOST &&
      opts.backend != WEFT_BACKEND_CUDA)
    return weft__err(WEFT_EINVAL, "weft_init: unknown backend %d",
                     (int)opts.backend);
  int rc0 = thread_count("workers", "WEFT_WORKERS", &opts.workers);
  if (rc0 == 0)
    rc0 = thread_count("host_threads", "WEFT_HOST_THREADS", &opts.host_threads);
  if (rc0 == 0)
    rc0 = count_opt("host_devices", "WEFT_HOST_DEVICES", &opts.host_devices, 1,
                    WEFT_HOST_DEVICES_MAX);
  /* A copy's staging needs two blocks: one fills while one moves. */
  if (rc0 == 0)
    rc0 = count_opt("stage_chunks", "WEFT_STAGE_CHUNKS", &opts.stage_chunks, 2,
                    256);
  if (rc0 == 0)
    rc0 = count_opt("stage_chunk_kib", "WEFT_STAGE_CHUNK_KIB",
                    &opts.stage_chunk_kib, 64, 65536);
  if (rc0 == 0)
    rc0 = count_opt("streams", "WEFT_STREAMS", &opts.streams, 1, 65536);
  int check = 0, admission = 0, watchdog = 0, prefetch = 0;
  if (rc0 == 0)
    rc0 = switch_wanted("check", "WEFT_CHECK", opts.check, 0, &check);
  if (rc0 == 0)
    rc0 = switch_wanted("data_prefetch", "WEFT_DATA_PREFETCH",
                        opts.data_prefetch, 0, &prefetch);
  if (rc0 == 0)
    rc0 = admission_wanted(opts.admission, &admission);
  if (rc0 == 0)
    rc0 = watchdog_wanted(opts.watchdog_ms, &watchdog);
  if (rc0 == 0)
    rc0 = data_limit_wanted(&opts.data_limit);
  if (rc0)
    return rc0;
  if (opts.stack_size == 0)
    opts.stack_size = 64 * 1024;
  if (opts.stack_size < 16 * 1024 || opts.stack_size > ((size_t)1 << 30))
    return weft__err(WEFT_EINVAL,
                     "weft_init: stack_size %zu outside 16 KiB .. 1 GiB",
                     opts.stack_size);
  if (weft__worker_task())
    return weft__err(WEFT_ESTATE, "weft_init: called from a task");

  weft_runtime *rt = calloc(1, sizeof *rt);
  if (!rt)
    return weft__err(WEFT_ENOMEM, "weft_init: out of memory");
  rt->opts = opts;
  rt->opts.watchdog_ms = watchdog;
  rt->opts.data_prefetch = prefetch;
  rt->h.watchdog = watchdog > 0;
  atomic_init(&rt->h.adm.depth, admission);
  rt->h.adm.cancel = &rt->waits.cancel;
  int rc = rt_locks_init(rt);
  if (rc)
    goto fail_locks;
  weft__backend_config cfg = {
      .host_threads = opts.host_threads,
      .host_devices = opts.host_devices > 0 ? opts.host_devices : 1};
  rc = weft__backend_open(opts.backend, 1, &cfg, &rt->h.bk);
  if (rc)
    goto fail_backend;
  rt->waits.bk = rt->h.bk;
  if (rt->h.bk->ndev > WEFT__MAX_DEVICES) {
    rc = weft__err(WEFT_ENOTSUP, "weft_init: %d devices (at most %d)",
                   rt->h.bk->ndev, WEFT__MAX_DEVICES);
    goto fail_pools;
  }
  rc = weft__stream_pool_init(rt);
  if (rc == 0)
    rc = weft__event_pool_init(rt);
  if (rc == 0)
    rc = weft__stream_pool_fill(rt, opts.streams > 0 ? opts.streams
                                                     : STREAMS_AHEAD);
  if (rc)
    goto fail_pools;
  if (check && !(rt->h.bk->check = weft__check_new(rt->h.bk, weft__caller_self,
                                                   &rt->tasks.nlive))) {
    rc = WEFT_ENOMEM;
    goto fail_pools;
  }
  if (rt->h.bk->check && rt->h.bk->ops->check_start)
    rt->h.bk->ops->check_start(rt->h.bk);
  rc = weft__stack_pool_init(&rt->stacks, opts.stack_size);
  if (rc) {
    weft__err(rc, "weft_init: cannot create the stack pool");
    goto fail_pools;
  }
  rc = weft__pinned_cache_init(&rt->pinned, rt, rt->h.bk);
  if (rc) {
    weft__err(rc, "weft_init: cannot create the pinned cache");
    goto fail_pinned;
  }
  const char *trace = opts.trace_path ? opts.trace_path : getenv("WEFT_TRACE");
  char ranked[4096];
  int trace_created = 0;
  if (trace && *trace) {
    rc = weft__trace_rank_path(trace, ranked, sizeof ranked);
    if (rc)
      rc = weft__err(WEFT_EINVAL,
                     "weft_init: the trace path is too long (%zu bytes, "
                     "with the rank's suffix at most %zu)",
                     strlen(trace), sizeof ranked - 1);
    else
      trace = ranked;
    if (rc == 0)
      rc = trace_path_ok(trace, &trace_created);
    if (rc == 0)
      rc = weft__trace_open(trace, rt->h.bk->ops->name, rt->h.bk,
                            rt->h.bk->info, rt->h.bk->ndev);
    if (rc == 0 && rt->h.bk->ops->trace_start &&
        (rc = rt->h.bk->ops->trace_start(rt->h.bk)) != 0)
      weft__trace_close();
    if (rc)
      goto fail_trace;
    rt->tracing = 1;
  }
  /* Before any task can run: it only reads the tasks' stall records. */
  rc = watchdog > 0 ? weft__watchdog_start(rt, watchdog) : 0;
  if (rc == 0)
    rc = weft__registry_add(rt);
  if (rc)
    goto fail_sched;
  rt->h.thread_end = thread_end;
  /* The caller's next plain-thread calls go here, not to a runtime another
   * thread opens meanwhile (caller.c). */
  rc = weft__caller_adopt(rt);
  if (rc == 0)
    rc = weft__sched_start(rt, weft__task_body);
  if (rc) {
    weft__registry_remove(rt);
    weft__caller_threads_release(rt);
    goto fail_sched;
  }
  /* Emptied now, not left with an earlier run's trace, so that a run that
   * crashes before weft_shutdown writes this one cannot pass for it. */
  if (rt->tracing && truncate(trace, 0) != 0)
    fprintf(stderr, "weft: could not empty the trace file '%s': %s\n", trace,
            strerror(errno));
  *rtp = rt;
  return 0;

fail_sched:
  weft__watchdog_stop(rt);
  if (rt->tracing) {
    if (rt->h.bk->ops->trace_stop)
      rt->h.bk->ops->trace_stop(rt->h.bk);
    weft__trace_close();
  }
fail_trace:
  if (trace_created) /* a failed call leaves no file behind */
    unlink(trace);
  weft__pinned_cache_fini(&rt->pinned);
fail_pinned:
  weft__stack_pool_fini(&rt->stacks);
fail_pools:
  weft__stream_pool_fini(rt); /* the streams made ahead too */
  weft__event_pool_fini(rt);
  if (rt->h.bk->check && rt->h.bk->ops->check_stop)
    rt->h.bk->ops->check_stop(rt->h.bk);
  weft__check_free(rt->h.bk->check);
  rt->h.bk->check = NULL;
  weft__backend_close(rt->h.bk);
fail_backend:
  rt_locks_fini(rt);
fail_locks:
  free(rt);
  return rc;
}

/* Objects the program made through the runtime and still holds: what the
 * backend counts, less the runtime's own pooled streams and events. */
static size_t user_objects(weft_runtime *rt, char *what, size_t len) {
  weft__backend_counts c;
  weft__backend_get_counts(rt->h.bk, &c);
  weft__pinned_stats p;
  weft__pinned_cache_stats(&rt->pinned, &p);
  size_t ev = c.events - rt->h.events.n;
  size_t st = c.streams - weft__stream_pool_count(rt);
  pthread_mutex_lock(&rt->h.lock);
  size_t graphs = rt->ngraphs;
  pthread_mutex_unlock(&rt->h.lock);
  weft__data_left data;
  weft__data_live(rt, &data);
  /* Registered data's instances are its own, named with it. */
  ev -= data.events <= ev ? data.events : ev;
  size_t dev = c.device_allocs;
  dev -= data.allocs <= dev ? data.allocs : dev;
  int n = snprintf(what, len,
                   "%zu events, %zu streams (weft_host_stream), %zu device "
                   "and %zu pinned allocations, %zu graphs, %zu registered "
                   "data (weft_data_unregister",
                   ev, st, dev, p.blocks_in_use, graphs, data.handles);
  if (data.blocks && n > 0 && (size_t)n < len)
    n += snprintf(what + n, len - (size_t)n,
                  "; %zu of them blocks: weft_data_unregister_blocks",
                  data.blocks);
  if (n > 0 && (size_t)n < len)
    n += snprintf(what + n, len - (size_t)n, ")");
  if (data.handles && n > 0 && (size_t)n < len)
    snprintf(what + n, len - (size_t)n,
             ", the first at %p (%zu bytes); their copies on the devices "
             "hold %zu device allocations and %zu events, not counted "
             "above",
             data.host, data.bytes, data.allocs, data.events);
  return ev + st + dev + p.blocks_in_use + graphs + data.handles;
}

int weft_shutdown(weft_runtime *rt) {
  if (!rt)
    return weft__err(WEFT_EINVAL, "weft_shutdown: rt is NULL");
  if (!weft__registry_has(rt))
    return weft__err(WEFT_EHANDLE, "weft_shutdown: not an open runtime "
                                   "(already shut down?)");
  if (weft__worker_task())
    return weft__err(WEFT_ESTATE, "weft_shutdown: called from a task");
  pthread_mutex_lock(&rt->h.lock);
  rt->closing = 1;
  atomic_store(&rt->waits.cancel, 1);
  while (atomic_load(&rt->tasks.nlive) > 0)
    pthread_cond_wait(&rt->done_cv, &rt->h.lock);
  pthread_mutex_unlock(&rt->h.lock);
  /* No task runs and none can start (closing), so the count is stable;
   * counting takes locks of its own. */
  char what[512];
  if (user_objects(rt, what, sizeof what) > 0) {
    pthread_mutex_lock(&rt->h.lock);
    rt->closing = 0;
    atomic_store(&rt->waits.cancel, 0);
    pthread_mutex_unlock(&rt->h.lock);
    return weft__err(WEFT_EBUSY, "weft_shutdown: still live: %s", what);
  }

  if (!weft__registry_remove(rt)) /* another shutdown got here first */
    return weft__err(WEFT_EHANDLE, "weft_shutdown: runtime already shut "
                                   "down");
  weft__watchdog_stop(rt); /* before the task objects go */
  weft__sched_stop(rt);
  /* Finished tasks never joined: their handles die with the runtime, and
   * what they own (a record of their children's data, say) with them. */
  while (rt->tasks.all)
    weft__task_free(rt, rt->tasks.all);
  weft__pool_drain(&rt->tasks.pool);
  weft__graph_retired_release(rt);
  weft__pool_drain(&rt->graph_pool);
  /* Ranges its plain threads left open end here, before the trace is
   * written (weft/range.h); under the registry lock, which an exiting
   * thread holds while it ends its own (caller.c, thread_end). */
  weft__registry_lock();
  pthread_mutex_lock(&rt->h.lock);
  for (weft__exec *x = rt->h.threads; x; x = x->next)
    if (x->nranges)
      weft__range_end_all(x, "a thread", "reached weft_shutdown");
  pthread_mutex_unlock(&rt->h.lock);
  weft__registry_unlock();
  weft__caller_threads_release(rt);
  weft__library_release(rt);
  if (rt->h.bk->ops->release_libraries)
    rt->h.bk->ops->release_libraries(rt->h.bk);
  weft__pinned_cache_fini(&rt->pinned);
  weft__stream_pool_fini(rt);
  weft__event_pool_fini(rt);
  int trc = 0;
  if (rt->tracing) {
    /* Everything queued has completed (tasks ended, pools drained), so the
     * backend has seen every operation; flush, then write the file. */
    weft__device_sync(rt->h.bk, 0);
    if (rt->h.bk->ops->trace_stop)
      rt->h.bk->ops->trace_stop(rt->h.bk);
    trc = weft__trace_close();
  }
  weft__stack_pool_fini(&rt->stacks);
  if (rt->h.bk->check && rt->h.bk->ops->check_stop)
    rt->h.bk->ops->check_stop(rt->h.bk);
  weft__check_free(rt->h.bk->check);
  rt->h.bk->check = NULL;
  int rc = weft__backend_close(rt->h.bk);
  rt_locks_fini(rt);
  free(rt);
  return rc ? rc : trc;
}

weft_runtime *weft_runtime_current(void) {
  weft__exec *x = weft__caller_self();
  if (!x)
    x = weft__caller_get("weft_runtime_current");
  return x ? x->rt : NULL;
}

weft_backend_kind weft_runtime_backend(const weft_runtime *rt) {
  return rt && weft__registry_has((weft_runtime *)rt) ? rt->h.bk->ops->kind
                                                      : WEFT_BACKEND_AUTO;
}

int weft_device_count(weft_runtime *rt, int *count) {
  int rc = weft__registry_check(rt, "weft_device_count");
  if (rc)
    return rc;
  if (!count)
    return weft__err(WEFT_EINVAL, "weft_device_count: count is NULL");
  *count = rt->h.bk->ndev;
  return 0;
}

int weft_device_peer(weft_runtime *rt, int dev, int peer, int *direct) {
  int rc = weft__registry_check(rt, "weft_device_peer");
  if (rc)
    return rc;
  if (!direct)
    return weft__err(WEFT_EINVAL, "weft_device_peer: direct is NULL");
  int bad = dev < 0 || dev >= rt->h.bk->ndev ? dev : peer;
  if (bad < 0 || bad >= rt->h.bk->ndev)
    return weft__err(WEFT_ENODEV, "weft_device_peer: no device %d", bad);
  if (dev == peer || !rt->h.bk->ops->device_peer) {
    *direct = 1;
    return 0;
  }
  return rt->h.bk->ops->device_peer(rt->h.bk, dev, peer, direct);
}

int weft_device_get_info(weft_runtime *rt, int dev, weft_device_info *info) {
  int rc = weft__registry_check(rt, "weft_device_get_info");
  if (rc)
    return rc;
  if (!info)
    return weft__err(WEFT_EINVAL, "weft_device_get_info: info is NULL");
  if (dev < 0 || dev >= rt->h.bk->ndev)
    return weft__err(WEFT_ENODEV, "weft_device_get_info: no device %d", dev);
  /* Free memory changes; everything else was read at open. */
  return rt->h.bk->ops->device_info(rt->h.bk, dev, info);
}

int weft_runtime_set_admission(weft_runtime *rt, int depth) {
  if (!rt)
    return weft__err(WEFT_EINVAL, "weft_runtime_set_admission: rt is NULL");
  if (depth < 0 || depth > WEFT__ADMISSION_MAX)
    return weft__err(WEFT_EINVAL,
                     "weft_runtime_set_admission: depth %d is not 0 (off) or "
                     "1 to %d",
                     depth, WEFT__ADMISSION_MAX);
  if (!weft__registry_has(rt))
    return weft__err(WEFT_EHANDLE, "weft_runtime_set_admission: not an open "
                                   "runtime");
  atomic_store(&rt->h.adm.depth, depth);
  return 0;
}
