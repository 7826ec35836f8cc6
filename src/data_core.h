/* What registered data (data_*.c) asks of the core below it: the runtime's
 * limit on its instances per device (weft_runtime_opts.data_limit),
 * how far a task it gave an instance to has got, the evictions that
 * weft_mem_stats_get reports, a say in where WEFT_DEVICE_ANY places a
 * task, weft check's view of stale host copies, and the events behind
 * instances' fills. memory.c, task_end.c and task.c implement it. */
#ifndef WEFT__DATA_CORE_H
#define WEFT__DATA_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "weft/dataflow.h"
#include "weft/event.h"
#include "weft/runtime.h"
#include "weft/task.h"

/* Bytes of instances a device of rt may hold; 0: no limit. */
size_t weft__data_limit(const weft_runtime *rt);

/* Counts an eviction of bytes, written_back of them copied to the host
 * first. */
void weft__data_evicted(weft_runtime *rt, size_t bytes, size_t written_back);

/* Where task h of rt stands: 0 its function runs (or is yet to), 1 it
 * returned and its GPU work may still be queued, 2 it completed (or the
 * handle names a task joined or detached since). */
int weft__task_progress(weft_runtime *rt, const weft_task *h);
/* The device task h of rt runs on, or -1 once it has returned. */
int weft__task_device_if_running(weft_runtime *rt, const weft_task *h);

/* 1 if a spawn starts the copies its task will read
 * (weft_runtime_opts.data_prefetch), which weft check turns off. */
int weft__data_prefetch_on(const weft_runtime *rt);

/* For weft check (checker.h's weft__check_stale_fn, which says what it
 * answers): ctx is the runtime. */
typedef int (*weft__stale_fn)(void *ctx, const void *p, size_t n, int write,
                              const void **base, size_t *bytes, int *dev);
/* Under weft check, tells it so (once rt's first handle is registered);
 * else nothing. */
void weft__data_set_check_hook(weft_runtime *rt, weft__stale_fn fn);
/* An event for an instance's fills, on the calling task's device, untimed
 * (a timed one made every get's wait dearer: docs/decisions/data.md, "A
 * get's wait for its fill"); weft_event_record, _wait and _destroy take
 * it. */
int weft__data_event_create(weft_event **ev);
/* 1 if ev's latest record completed; unlike weft_event_query, weft check
 * learns nothing from it (weft's own question, not the caller's sync). */
int weft__data_event_done(weft_event *ev);
/* Under weft check, the file descriptor its findings go to, for a
 * handle's guarded host pages (host_guard.h); -1 without it. Asked at
 * registration: weft check is on or off for a runtime's life. */
int weft__data_check_fd(const weft_runtime *rt);
/* Counts and traces the finding that a CPU access to the guarded pages
 * of the bytes at base (valid on dev) printed. */
void weft__data_check_cpu_access(const weft_runtime *rt, const void *base,
                                 size_t bytes, int dev);

/* For WEFT_DEVICE_ANY: the device a task declaring accesses a (n of
 * them) would best run on, or -1 for no preference. */
typedef int (*weft__place_fn)(weft_runtime *rt, const weft_access *a, size_t n);
/* Called by the spawn of a task declaring a (n of them), placed on dev:
 * starts the copies it will read. */
typedef void (*weft__prefetch_fn)(weft_runtime *rt, int dev,
                                  const weft_access *a, size_t n);
/* Called by the spawn of task t (spawn order id), declaring a (n of
 * them), once its spawn cannot fail: notes it as a user ahead of the
 * handles it names, which eviction spares longest. */
typedef void (*weft__uses_fn)(weft_runtime *rt, const weft_task *t, uint64_t id,
                              const weft_access *a, size_t n);
/* Sets rt's, once its first handle is registered (task.c asks them);
 * prefetch may be NULL. */
void weft__task_set_data_hooks(weft_runtime *rt, weft__place_fn place,
                               weft__prefetch_fn prefetch, weft__uses_fn uses);

#endif
