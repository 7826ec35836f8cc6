/* What registered data (data_get.c, data_evict.c, data_lifecycle.c) tells weft
 * check of the calling task: the device instance it gave the task stands for
 * the handle the task declared, so the task's operations on it are declared
 * too; and a get of a handle the task did not declare. Apart from caller.h,
 * whose includers are many enough (DESIGN.md's header rule); caller.c
 * implements it.
 */
#ifndef WEFT__CALLER_DECLARE_H
#define WEFT__CALLER_DECLARE_H

#include <stddef.h>

/* Under weft check, adds [p, p + bytes) with mode to the calling task's
 * declared accesses, unless covered already; nothing otherwise, or for a
 * task without declarations (the checker holds those to nothing).
 * Returns 0, or WEFT_ENOMEM. */
int weft__caller_declares(const void *p, size_t bytes, unsigned mode);

/* Under weft check, reports a get of registered data whose host range
 * [p, p + bytes) the calling task did not declare with mode. */
void weft__caller_gets(const void *p, size_t bytes, unsigned mode);

/* on 1 before, 0 after, a weft_copy made by registered data itself
 * through a handle's host memory (a fill from it, a write-back into it):
 * weft check's answer on stale host memory lets it pass. Per exec, not
 * per thread: a staged copy may suspend the task. */
void weft__caller_own_copy(int on);

/* 0, or WEFT_ESTATE reported for call (why: what it would do) when the
 * caller is capturing a graph. */
int weft__caller_capture_refused(const char *call, const char *why);

/* 1 while the calling exec issues such a copy. */
int weft__caller_own_copying(void);

/* 1 when the calling exec is capturing a graph. */
int weft__caller_capturing(void);

/* The calling plain thread's context, as an identity: each plain thread
 * keeps a data-flow record of its own, which registered data tells apart
 * by it. NULL in a task, or in a thread new to weft (it has spawned
 * nothing). */
const void *weft__caller_thread(void);

#endif
