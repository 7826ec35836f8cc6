/* Declared data (weft/dataflow.h): each spawner's record of who last wrote
 * and who has read each byte range since, and the ordering it implies. */
#ifndef WEFT__DATAFLOW_H
#define WEFT__DATAFLOW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "weft/dataflow.h"
#include "weft/task.h"

typedef struct weft__flow weft__flow;
struct weft__exec;

/* 0, or WEFT_EINVAL for a bad access (reported as call's). */
int weft__flow_validate(const weft_access *a, size_t n, const char *call);

/* Room for this many dependencies in the caller's own buffer: the usual
 * count (a tile operation's two inputs and its output), so a spawn
 * allocates no list for them. */
#define WEFT__FLOW_INLINE 4

/* Records the accesses a[0..n) of the task whose handle is self, spawned
 * by x, and returns in *deps the handles of the earlier tasks it must
 * follow (NULL when none; buf, which has room for WEFT__FLOW_INLINE, when
 * they fit; else malloc'd), and in *host whether its host code waits for
 * their work. All or nothing: 0, or WEFT_ENOMEM with the record as it
 * was. The accesses were validated. */
int weft__flow_declare(struct weft__exec *x, weft_task *self,
                       const weft_access *a, size_t n, const void **buf,
                       const void ***deps, uint32_t *ndeps, int *host);

/* The same in record *fp (made if NULL) for any identity self: a graph
 * capture's steps (graph.c) use their own record. */
int weft__flow_note(weft__flow **fp, const void *self, const weft_access *a,
                    size_t n, const void **buf, const void ***deps,
                    uint32_t *ndeps, int *host);

/* Frees a dependency list that weft__flow_declare or weft__flow_note
 * returned, unless it is the caller's buf. */
static inline void weft__flow_deps_free(const void **deps, const void **buf) {
  if (deps != buf)
    free((void *)deps);
}

/* Before a task's function runs: follows its earlier tasks (and frees the
 * list), on the device or, when that fails, on the host. With
 * WEFT_ACCESS_HOST it then waits for them on the host too: 0, or that
 * wait's error, recorded as the task's (its join reports it), and then
 * its function must not run. */
int weft__flow_enter(weft_task *t);

/* 1 when every task that t follows has completed, its GPU work too (the
 * scheduler's test for a task that cannot start: it ends only after
 * them, or the tasks that follow it would not be ordered after them). */
int weft__flow_deps_done(weft_task *t);

/* Memory at [p, p + n) was freed by x: its data ends in x's record. */
void weft__flow_forget(struct weft__exec *x, const void *p, size_t n);

/* The ranges x's record holds (for tests). */
size_t weft__flow_ranges(const struct weft__exec *x);

void weft__flow_free(weft__flow *f);

#endif
