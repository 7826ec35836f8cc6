/* Ordering from declared data: a task spawned with the buffers it reads and
 * writes (weft_task_opts.accesses) is ordered after the earlier tasks whose
 * accesses conflict with its own, and weft does the ordering; the program is
 * written in sequential order and runs as concurrently as its data allows.
 *
 *   weft_access acc[] = {{a, bytes, WEFT_READ}, {c, bytes, WEFT_RW}};
 *   weft_task_opts o;
 *   weft_task_opts_init(&o);
 *   o.accesses = acc;
 *   o.naccesses = 2;
 *   weft_task_spawn(rt, NULL, update_c, args, &o);
 *
 * Program order is spawn order, per spawner: the tasks one task (or one plain
 * thread) spawns with declarations are ordered among themselves; tasks spawned
 * by different spawners are not ordered by their declarations. A task's
 * children are ordered among themselves only: a task ordered after their
 * parent follows the parent's own work, so a parent that spawns children on
 * its declared data joins them before it returns. A task is ordered after the
 * last earlier writer of every byte it reads, and after the last writer and
 * every reader since of every byte it writes; readers of the same data run
 * concurrently. Ranges are byte ranges of any memory (device, pinned, or host
 * memory that GPU work reads): a sub-range conflicts only with what overlaps
 * it.
 *
 * The ordering is on the GPU: before the task's function runs, its stream is
 * made to wait for the earlier tasks' GPU work (as weft_task_after does, so
 * the task's host code waits only until they have queued their work, not until
 * it ran). A task whose host code reads what earlier tasks' GPU work wrote
 * (pinned memory) adds WEFT_ACCESS_HOST to that access, and its function
 * starts only once that work completed. If the ordering itself fails (out
 * of memory; WEFT_EDEADLK when an earlier task waits for this one, by
 * joining it say), the function does not run and the task's join returns
 * the error.
 *
 * Freeing memory (weft_device_free, weft_pinned_free) ends its data in the
 * freeing spawner's declarations: a new allocation at the same address is new
 * data. The spawner's own accesses are not tracked: it orders itself after its
 * children with joins, weft_task_after or weft_sync as usual. Cost: per
 * access, O(log n) expected in the n ranges the spawner's record holds,
 * plus the ranges it covers and the tasks it follows, whatever the order
 * the ranges are declared in. A range keeps at most 64 readers since its
 * last write: the next reader folds those still running into a join, an
 * internal task named "dataflow join" that follows them (it shows in
 * traces and in weft_task_stats' live count), and a writer then follows
 * the join; so the bookkeeping grows with the distinct ranges, not with
 * the tasks spawned.
 *
 * Inside a graph capture (weft/graph.h) a spawn with declarations is a
 * step of the graph, not a task: its function runs at once, in the
 * spawner (on the capture's stream, or on CUDA a branch of it), and its
 * GPU work is recorded, ordered after the earlier steps of the same
 * capture that its accesses conflict with; *task is set to NULL (there is
 * nothing to join). A replay of the graph then runs every step with those
 * edges in one launch. The capture's rules hold in a step (nothing waits
 * or allocates), WEFT_ACCESS_HOST and a step spawning steps are refused
 * with WEFT_ESTATE, and any refusal or failure makes weft_graph_end
 * return the error with no graph. Steps are ordered among themselves, not
 * with the spawner's tasks outside the capture. */
#ifndef WEFT_DATAFLOW_H
#define WEFT_DATAFLOW_H

#include <stddef.h>

enum {
  WEFT_READ = 1u << 0,
  WEFT_WRITE = 1u << 1,
  WEFT_RW = WEFT_READ | WEFT_WRITE,
  /* With WEFT_READ: the task's host code reads it, so it starts after the
   * earlier writers' GPU work completed. */
  WEFT_ACCESS_HOST = 1u << 2,
};

typedef struct weft_access {
  const void *ptr; /* first byte */
  size_t bytes;    /* > 0 */
  unsigned mode;   /* WEFT_READ, WEFT_WRITE or WEFT_RW, | WEFT_ACCESS_HOST */
} weft_access;

#endif
