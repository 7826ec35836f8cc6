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

/* A range keeps at most this many readers since its last write: the next
 * reader first folds them into one join (below). */
#define WEFT__FLOW_FOLD 64

/* Makes an identity that follows every one of m[0..n) (n at most
 * WEFT__FLOW_FOLD; the record's owner's: a task, or a capture's step) and
 * puts it in *out: 0, or a negative WEFT_E* code with nothing made. The
 * record calls it to fold a range's readers into one, so that a writer
 * follows one identity instead of every reader since the last write. The
 * owner may leave out members that completed: *out may then be one of m,
 * or NULL when none is left to follow. m is the caller's, copied. */
typedef int (*weft__flow_join_fn)(void *ctx, const void *const *m, uint32_t n,
                                  const void **out);

/* Records the accesses a[0..n) of the task whose handle is self, spawned
 * by x, and returns in *deps the handles of the earlier tasks it must
 * follow (NULL when none; buf, which has room for WEFT__FLOW_INLINE, when
 * they fit; else malloc'd), and in *host whether its host code waits for
 * their work. join(ctx, ...) makes joins (above). All or nothing: 0, or
 * an error (WEFT_ENOMEM, or join's) with the record saying what it said
 * (its ranges may be cut finer, and readers folded into joins made).
 * The accesses were validated. Cost: O(log r) expected in the r ranges
 * the record holds, plus the ranges the accesses cover and the
 * dependencies found (a range gives at most 17). */
int weft__flow_declare(struct weft__exec *x, weft_task *self,
                       const weft_access *a, size_t n, weft__flow_join_fn join,
                       void *ctx, const void **buf, const void ***deps,
                       uint32_t *ndeps, int *host);

/* The same in record *fp (made if NULL) for any identity self: a graph
 * capture's steps (graph.c) use their own record. */
int weft__flow_note(weft__flow **fp, const void *self, const weft_access *a,
                    size_t n, weft__flow_join_fn join, void *ctx,
                    const void **buf, const void ***deps, uint32_t *ndeps,
                    int *host);

/* Frees a dependency list that weft__flow_declare or weft__flow_note
 * returned, unless it is the caller's buf. */
static inline void weft__flow_deps_free(const void **deps, const void **buf) {
  if (deps != buf)
    free((void *)deps);
}

/* Memory at [p, p + n) was freed by x: its data ends in x's record. */
void weft__flow_forget(struct weft__exec *x, const void *p, size_t n);

/* The ranges x's record holds (for tests). */
size_t weft__flow_ranges(const struct weft__exec *x);

/* The steps x's record has taken so far: nodes passed, entries copied or
 * compared (for tests, which hold it to O(log n) an access). */
uint64_t weft__flow_work(const struct weft__exec *x);

void weft__flow_free(weft__flow *f);

#endif
