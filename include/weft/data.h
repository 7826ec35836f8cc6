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
 *   weft_task_spawn(rt, &t, scale, d, &o);     any device (o.device); then
 *   weft_task_detach(t);                       join or detach t, as ever
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
 * memory, the get that needs a new instance first evicts instances of the
 * runtime's handles on that device that no running task holds (a task
 * holds what it got until it returns). It spares longest what the tasks
 * spawned and not yet returned will use soonest: first go the instances
 * no such task declares, then the one whose next such task was spawned
 * last, the least recently used among equals (Belady's rule, on what the
 * spawns have said so far). Its stream follows their users' GPU work,
 * writes back an instance that is its handle's only valid copy (waiting
 * for the copy), and frees it. So a program whose data outgrows the
 * device runs, as long as each task's own handles fit; when nothing can
 * go (every instance held), the instance is allocated past the limit
 * after 0.1 ms. weft_mem_stats_get counts the evictions and their bytes;
 * the trace shows each as a range "weft_data evict" in the task that made
 * it, with its copy back.
 * weft check (WEFT_CHECK=1) reports a get of a handle the task did not
 * declare with the get's mode: data flow ordered nothing for it; a weft
 * operation (a copy, a read-only kernel argument) reading a handle's host
 * memory while a device holds its valid copy ("stale": sync first); and
 * one writing it (a copy into it, a kernel argument not marked read-only)
 * before the handle is unregistered; and a CPU load or store of its host
 * memory while a device holds the only valid copy, or a CPU store while a
 * device holds a copy too, caught by protecting the whole pages of the
 * host range meanwhile (not under a sanitizer, or where the program's own
 * SIGSEGV handler came first): reported with the address, once until the
 * copies change, and the access then goes on. The pages get back the
 * protection they had (read-only memory stays read-only).
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
 * data of rt, its host copy valid, into *out (untouched on failure). A
 * handle still registered keeps weft_shutdown from closing rt
 * (WEFT_EBUSY, whose message names the first such handle's address and
 * size). Its sync, prefetch and unregister come from a task or thread
 * whose runtime is rt (a thread keeps the runtime it first used).
 * Errors: WEFT_EINVAL (NULL argument, bytes 0 or past the end of memory,
 * a region overlapping one registered with rt), WEFT_EHANDLE (rt not
 * open), WEFT_ENOMEM. Context: any thread; never blocks. */
WEFT_API int weft_data_register(weft_runtime *rt, void *ptr, size_t bytes,
                                weft_data **out);

/* The access naming all of d with mode (WEFT_READ, WEFT_WRITE, WEFT_RW),
 * for weft_task_opts.accesses; for d NULL or no longer registered, an
 * access naming no memory, which spawn refuses (WEFT_EINVAL).
 * Errors: none. Context: any thread; never blocks. */
WEFT_API weft_access weft_data_access(const weft_data *d, unsigned mode);

/* *ptr: d's instance on the calling task's device, ready for what mode
 * says in the task's stream order (see above). mode must be what the task
 * declared, or less.
 * Errors: WEFT_EINVAL (ptr NULL, mode not WEFT_READ, WEFT_WRITE or
 * WEFT_RW, d not registered, d of another runtime, no valid copy to read:
 * an earlier fill failed), WEFT_ESTATE (not in a task, or inside a graph
 * capture), WEFT_ENOMEM, device errors; *ptr NULL on failure.
 * Context: a task; may switch (a copy from pageable memory is staged; a
 * task filling the same instance is waited for). */
WEFT_API int weft_data_get(weft_data *d, unsigned mode, void **ptr);

/* weft_data_prefetch's device for d's host copy (weft_task_opts.device
 * never takes it). */
enum { WEFT_DATA_HOST = -3 };

/* Starts making d's instance on device valid, so that the tasks that
 * read d there find it filled: a task of weft's own, placed on device and
 * declaring d for reading (after the earlier writers of d of the calling
 * spawner, as any reader, and after the calling task's own work queued
 * so far if it got d), asks for it and ends; this returns at once. A
 * fill that fails is left to the next task that asks.
 * device WEFT_DATA_HOST starts the write-back instead: weft_data_sync's
 * copy back, without waiting for it, so that it overlaps the work still
 * to come and a later weft_data_sync or unregister finds the host copy
 * valid (and copies nothing). The task goes to the device of the last
 * task spawned declaring d that has yet to return, else of a valid
 * instance, else the caller's; a copy back that fails is left to the
 * next sync or unregister.
 * Errors: WEFT_EINVAL (d not registered; device neither one of d's
 * runtime's nor WEFT_DATA_HOST; the caller a task or thread of another
 * runtime; in a capture, a device other than the capture's), WEFT_ESTATE
 * (d's runtime shutting down, or in a graph capture), WEFT_ENOMEM.
 * Context: any thread of d's runtime; never blocks. */
WEFT_API int weft_data_prefetch(weft_data *d, int device);

/* Makes d's host copy valid again: ordered after the earlier tasks of the
 * calling spawner that write d (an internal task declaring d read), after
 * the calling task's own work queued so far if it got d, and after the
 * GPU work still queued of any task that got d's instance and has
 * returned (another spawner's too), it copies a valid instance back if
 * the host's is not, and returns once the host memory holds it. Device
 * instances stay valid.
 * Errors: WEFT_EINVAL (d not registered; the caller a task or thread of
 * another runtime than d's, whose declarations cannot name d's tasks),
 * WEFT_ESTATE (d's runtime shutting down, or in a graph capture),
 * WEFT_ENOMEM, device errors.
 * Context: any thread; may switch (blocks a plain thread). */
WEFT_API int weft_data_sync(weft_data *d);

/* weft_data_sync, after the earlier tasks of the calling spawner that
 * read or write d, then frees d's instances and d (each free after the
 * queued GPU work of the tasks that got it and returned). The host memory
 * is the caller's again.
 * Errors: weft_data_sync's; WEFT_EBUSY (a task that declared d has yet
 * to return and the unregister would not follow it: the calling task
 * itself, or a task spawned by another task or plain thread than the
 * caller, each of which keeps a data-flow record of its own; unregister d
 * after it, from its spawner); WEFT_EINVAL also for a block of
 * weft_data_register_blocks (weft_data_unregister_blocks gives back its
 * blocks together); on failure d stays registered.
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

/* ---- Data in blocks over devices ----
 *
 * A region registered as blocks: n handles of block_bytes each (the last
 * shorter when block_bytes does not divide the bytes), block i homed on a
 * device of the runtime by a layout, as CUDASTF's composite data and
 * StarPU's filters cut data over places. Each block is a weft_data like
 * any other (declared, got on any device, synced); its home is where
 * weft_data_blocks_place starts its copy, and what weft_data_blocks_device
 * gives for weft_task_opts.device. A task on WEFT_DEVICE_ANY declaring a
 * block goes where that block is valid: its home, once placed.
 *
 *   weft_data_blocks *m;
 *   weft_data_register_blocks(rt, a, bytes, tile, WEFT_DATA_CYCLIC, &m);
 *   weft_data_blocks_place(m);               each block to its home
 *   for (size_t i = 0; i < weft_data_blocks_count(m); i++) {
 *     weft_access acc = weft_data_access(weft_data_blocks_at(m, i), WEFT_RW);
 *     o.device = weft_data_blocks_device(m, i);  ... weft_task_spawn
 *   }
 *   weft_data_unregister_blocks(m);          a holds the result */
typedef struct weft_data_blocks weft_data_blocks;

/* Where block i of n goes among a runtime's D devices. */
typedef enum weft_data_layout {
  WEFT_DATA_BLOCKED = 0, /* runs of consecutive blocks: device i * D / n */
  WEFT_DATA_CYCLIC = 1   /* dealt round: device i % D */
} weft_data_layout;

/* The most blocks one registration makes. */
#define WEFT_DATA_BLOCKS_MAX 65536

/* Registers bytes of host memory at ptr as blocks of block_bytes over
 * rt's devices by layout (above) into *out (untouched on failure); all
 * or nothing.
 * Errors: WEFT_EINVAL (NULL argument, bytes or block_bytes 0, a region
 * past the end of memory, more than WEFT_DATA_BLOCKS_MAX blocks, an
 * unknown layout, a region overlapping one registered with rt),
 * WEFT_EHANDLE (rt not open), WEFT_ENOMEM; nothing is registered then
 * (a failure after the first block undoes the blocks made, which needs no
 * memory and cannot fail).
 * Context: any thread; never blocks. */
WEFT_API int weft_data_register_blocks(weft_runtime *rt, void *ptr,
                                       size_t bytes, size_t block_bytes,
                                       weft_data_layout layout,
                                       weft_data_blocks **out);

/* The number of blocks of b; 0 for b NULL or no longer registered.
 * Errors: none. Context: any thread; never blocks. */
WEFT_API size_t weft_data_blocks_count(const weft_data_blocks *b);

/* Block i's handle; NULL for b NULL or no longer registered, i past the
 * last block, or a block already unregistered by a
 * weft_data_unregister_blocks that failed.
 * Errors: none. Context: any thread; never blocks. */
WEFT_API weft_data *weft_data_blocks_at(const weft_data_blocks *b, size_t i);

/* Block i's home device (its layout's).
 * Errors: WEFT_EINVAL (b NULL or no longer registered, i past the last
 * block), reported.
 * Context: any thread; never blocks. */
WEFT_API int weft_data_blocks_device(const weft_data_blocks *b, size_t i);

/* weft_data_prefetch of each block to its home device; returns at once.
 * On failure the blocks before the failing one are on their way.
 * Errors: weft_data_prefetch's; WEFT_EINVAL for b NULL or no longer
 * registered.
 * Context: any thread of b's runtime; never blocks. */
WEFT_API int weft_data_blocks_place(weft_data_blocks *b);

/* weft_data_unregister_n of every block (the host memory holds the
 * result), then frees b. On failure b stays, with the blocks still
 * registered, and may be given here again.
 * Errors: weft_data_unregister_n's; WEFT_EINVAL for b NULL or already
 * unregistered.
 * Context: any thread; may switch (blocks a plain thread). */
WEFT_API int weft_data_unregister_blocks(weft_data_blocks *b);

WEFT_END_DECLS

#endif
