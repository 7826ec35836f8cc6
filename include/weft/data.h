/* Data that moves itself: a region of host memory registered as logical
 * data, of which weft makes, fills and keeps coherent a copy (an
 * instance) on each device that a task uses it on.
 *
 *   weft_data *d;
 *   weft_data_register(rt, x, bytes, &d);      x: host memory, any kind
 *   weft_access acc = weft_data_access(d, WEFT_RW);
 *   weft_task_opts o;
 *   weft_task_opts_init(&o);
 *   o.accesses = &acc;
 *   o.naccesses = 1;
 *   weft_task_spawn(rt, &t, scale, d, &o);     any device (o.device)
 *     ... in scale: float *p; weft_data_get(d, WEFT_RW, (void **)&p);
 *         then launch kernels on p, on the task's stream
 *   weft_data_sync(d);                         x holds the result
 *   weft_data_unregister(d);
 *
 * A task declares the handle like any data-flow access (weft/dataflow.h:
 * weft_data_access gives the access naming all of it), so that it is
 * ordered after the earlier tasks of its spawner whose accesses conflict;
 * then weft_data_get gives the instance on the task's device: allocated
 * there on first use (stream-ordered), filled when the task reads and the
 * instance is not valid, from a valid instance of another device (a peer
 * copy) or else from the host, on the task's stream, after the earlier
 * writers' GPU work. Reading on several devices keeps a valid instance on
 * each; a get for writing makes the task's the only valid one (MSI
 * coherence, as StarPU's). Copies never wait on the host: the GPU orders
 * them.
 *
 * The handle is the unit of coherence: declare all of it (sub-ranges
 * order tasks but the instance is the whole region), with at least the
 * mode the task's get asks for. Between register and unregister the host
 * memory is weft's: read it after weft_data_sync, and leave it unwritten.
 *
 * Eviction: past weft_runtime_opts.data_limit (WEFT_DATA_LIMIT) bytes of
 * instances on a device, or when an allocation there fails for want of
 * memory, the get that needs a new instance first evicts the least
 * recently used instances of the runtime's handles on that device that no
 * running task holds (a task holds what it got until it returns): its
 * stream follows their users' GPU work, writes back an instance that is
 * its handle's only valid copy (waiting for the copy), and frees it. So a
 * program whose data outgrows the device runs, as long as each task's own
 * handles fit; when nothing can go (every instance held), the instance is
 * allocated past the limit after 0.1 ms. weft_mem_stats_get counts the
 * evictions and their bytes; the trace shows each as a range "weft_data
 * evict" in the task that made it, with its copy back.
 * weft check (WEFT_CHECK=1) reports a get of a handle the task did not
 * declare with the get's mode: data flow ordered nothing for it.
 * A task spawned on WEFT_DEVICE_ANY goes to the device whose valid
 * instances hold the most bytes of the handles it declares (at spawn).
 *
 * Copies at spawn: copies start at the get, or earlier where
 * weft_data_prefetch asks, or, with weft_runtime_opts.data_prefetch (or
 * WEFT_DATA_PREFETCH=1), at the spawn of each task that declares a read:
 * the spawn queues the handle for its device's fillers, up to four tasks
 * of weft's own a device that copy, each on its stream, in the order the
 * readers were spawned, so the copies overlap the work the readers wait
 * behind. Only from a valid host copy that no task spawned earlier is yet
 * to write (the fill would be stale), only where the room is free (a fill
 * never evicts), and not under weft check. Off by default: on the H200's
 * tiled Cholesky it ran 0.60 to 1.05 x the copies at get, where every
 * worker issues copies at once (docs/decisions/data.md, "Copies start at
 * spawn"); a program whose readers wait long behind other work may gain. */
#ifndef WEFT_DATA_H
#define WEFT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "dataflow.h"
#include "runtime.h"

WEFT_BEGIN_DECLS

typedef struct weft_data weft_data;

/* Bytes weft moved for a handle, and what it allocated, since it was
 * registered. */
typedef struct weft_data_stats {
  uint64_t to_device; /* host to a device */
  uint64_t to_host;   /* a device to the host */
  uint64_t device_to_device;
  uint64_t copies;    /* all three kinds */
  uint64_t instances; /* device instances allocated */
  uint64_t evictions; /* instances evicted to make room for others */
} weft_data_stats;

/* Registers bytes of host memory at ptr (pageable or pinned) as logical
 * data of rt, its host copy valid, into *out. A handle still registered
 * keeps weft_shutdown from closing rt (WEFT_EBUSY, which names it).
 * Errors: WEFT_EINVAL (NULL argument, bytes 0 or past the end of memory,
 * a region overlapping one registered with rt), WEFT_ESTATE (rt shut
 * down), WEFT_ENOMEM. Context: any thread; never blocks. */
WEFT_API int weft_data_register(weft_runtime *rt, void *ptr, size_t bytes,
                                weft_data **out);

/* The access naming all of d with mode (WEFT_READ, WEFT_WRITE, WEFT_RW),
 * for weft_task_opts.accesses; for d NULL, an access that spawn refuses.
 * Errors: none. Context: any thread; never blocks. */
WEFT_API weft_access weft_data_access(const weft_data *d, unsigned mode);

/* *ptr: d's instance on the calling task's device, ready for what mode
 * says in the task's stream order (see above). mode must be what the task
 * declared, or less.
 * Errors: WEFT_EINVAL (ptr NULL, mode not WEFT_READ, WEFT_WRITE or
 * WEFT_RW, d not registered, d of another runtime), WEFT_ESTATE (not in a
 * task), WEFT_ENOMEM, device errors; *ptr NULL on failure.
 * Context: a task; may switch (a copy from pageable memory is staged; a
 * task filling the same instance is waited for). */
WEFT_API int weft_data_get(weft_data *d, unsigned mode, void **ptr);

/* Starts making d's instance on device valid, so that the tasks that
 * read d there find it filled: a task of weft's own, placed on device and
 * declaring d for reading (after the earlier writers of d of the calling
 * spawner, as any reader), asks for it and ends; this returns at once. A
 * fill that fails is left to the next task that asks.
 * Errors: WEFT_EINVAL (d not registered; device not one of d's runtime's),
 * WEFT_ESTATE (rt shut down, or in a graph capture), WEFT_ENOMEM.
 * Context: any thread of d's runtime; never blocks. */
WEFT_API int weft_data_prefetch(weft_data *d, int device);

/* Makes d's host copy valid again: ordered after the earlier tasks of the
 * calling spawner that write d (an internal task declaring d read), it
 * copies a valid instance back if the host's is not, and returns once the
 * host memory holds it. Device instances stay valid.
 * Errors: WEFT_EINVAL (d not registered; the caller a task or thread of
 * another runtime than d's, whose declarations cannot name d's tasks),
 * WEFT_ESTATE (no runtime, or in a graph capture), WEFT_ENOMEM, device
 * errors.
 * Context: any thread; may switch (blocks a plain thread). */
WEFT_API int weft_data_sync(weft_data *d);

/* weft_data_sync, after the earlier tasks of the calling spawner that
 * read or write d, then frees d's instances and d. The host memory is the
 * caller's again.
 * Errors: weft_data_sync's; on failure d stays registered.
 * Context: any thread; may switch (blocks a plain thread). */
WEFT_API int weft_data_unregister(weft_data *d);

/* weft_data_unregister of n handles, their write-backs side by side
 * (one after another, each waits for its copy back). On failure, the
 * handles whose unregister succeeded are unregistered, the rest stay.
 * Errors: weft_data_unregister's; WEFT_EINVAL also for d NULL with n > 0,
 * or a handle given twice (nothing unregistered then).
 * Context: any thread; may switch (blocks a plain thread). */
WEFT_API int weft_data_unregister_n(weft_data *const *d, size_t n);

/* d's figures so far, into *out.
 * Errors: WEFT_EINVAL (NULL, or d not registered). Context: any thread;
 * never blocks. */
WEFT_API int weft_data_stats_get(const weft_data *d, weft_data_stats *out);

WEFT_END_DECLS

#endif
