/* weft check (WEFT_CHECK=1, weft_runtime_opts.check): finds the implicit
 * synchronisations that destroy overlap and the races between tasks that
 * streams of their own make possible.
 *
 * Races: every stream and every execution context (task or plain thread)
 * carries a vector clock over streams. An operation issued on stream s by
 * context x is ordered after everything x has seen (VC_s joins VC_x) and
 * ticks s; an event record copies VC_s, a wait joins it into the waiting
 * stream, a weft_sync or event sync joins it into the waiting context;
 * spawn hands the parent's clock to the child, and a task's end (its
 * stream's work included) reaches whoever joins it or follows it
 * (weft_task_after). An access to a tracked allocation (weft's device
 * memory, pinned blocks) is checked against the accesses of other streams
 * kept for it: overlapping ranges, one of them a write, and the older one
 * not ordered before the newer (VC_s[its stream] below its tick) is a race.
 * Copies and memsets give exact ranges; a pointer argument of a kernel
 * into a tracked allocation counts as a write of the element it points at
 * (how far the kernel goes is not known) unless the descriptor marks the
 * parameter read-only (weft_kernel.reads).
 *
 * Findings go to stderr, one line each starting "weft check:", and into
 * the trace as instant events (cat "weft_check"). Every hook is a NULL
 * test when checking is off. */
#ifndef WEFT__CHECKER_H
#define WEFT__CHECKER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "backend.h"

typedef struct weft__checker weft__checker;
typedef struct weft__exec weft__exec;
typedef struct weft__vc weft__vc;

/* A span an operation touches. */
typedef struct weft__check_span {
  const void *p;
  size_t n; /* 0: to the end of the allocation p lies in */
  int write;
} weft__check_span;

/* For the runtime of backend owner, whose trace (if it traces) gets the
 * findings; self finds the calling exec (or NULL), nlive counts its live
 * tasks (implicit syncs matter only while another lives). NULL on ENOMEM
 * (reported). */
weft__checker *weft__check_new(const void *owner, weft__exec *(*self)(void),
                               const atomic_long *nlive);
/* Prints the summary line if there were findings. */
void weft__check_free(weft__checker *k);
size_t weft__check_findings(const weft__checker *k);
/* The file descriptor findings are printed to (each print is flushed):
 * for a finding written without stdio (host_guard.h's, from a signal
 * handler), which weft__check_printed then counts and traces as msg. */
int weft__check_fd(weft__checker *k);
void weft__check_printed(weft__checker *k, const char *kind, const char *msg);
/* Where findings go (NULL: stderr); for tests, which read them back. */
void weft__check_set_output(weft__checker *k, FILE *out);

/* s was leased from the pool by a new holder: ordered after its earlier
 * holders' work only by what the new one learns (see checker.c). */
void weft__check_lease(weft__checker *k, weft__stream *s);
/* Context x (NULL: none known) issues an operation on s: s is ordered
 * after what x has seen, and x's task becomes s's owner for messages. */
void weft__check_issue(weft__checker *k, weft__exec *x, weft__stream *s);
/* Registered data's answer (weft/data.h), given by the layer above: 1 if
 * an operation reading (write 0) or writing host memory [p, p + n) of
 * ctx's runtime touches a handle's host memory that it must not: a read
 * while the host copy is stale, *dev then the device holding the valid
 * copy; a write at any time between register and unregister, *dev a
 * device holding a valid copy, or -1 for the host alone. The handle's
 * range in *base and *bytes. 0 where there is none. */
typedef int (*weft__check_stale_fn)(void *ctx, const void *p, size_t n,
                                    int write, const void **base, size_t *bytes,
                                    int *dev);
/* Sets it, once registered data exists; ctx is passed back. */
void weft__check_set_stale(weft__checker *k, weft__check_stale_fn fn,
                           void *ctx);
/* An operation on s (call names it; kernel: its name or NULL) touching
 * spans: ticks s, checks and records each span; registered host memory
 * touched against weft__check_stale_fn's answer is reported. */
void weft__check_op(weft__checker *k, weft__stream *s, const char *call,
                    const char *kernel, const weft__check_span *spans,
                    size_t n);
/* The host side of a copy staged through pinned buffers (memory.c): its
 * operations touch the buffers, so registered host memory is checked here
 * against the stale answer alone (the CPU copies it, no stream). */
void weft__check_host(weft__checker *k, const char *call,
                      const weft__check_span *spans, size_t n);
/* A graph replay on s, which touches spans (what the capture recorded):
 * ordered after the graph's previous replay (*gvc, the graph's clock, made
 * on first use; weft__check_vc_free frees it), as CUDA orders them. */
void weft__check_replay(weft__checker *k, weft__stream *s,
                        const weft__check_span *spans, size_t n,
                        weft__vc **gvc);
void weft__check_vc_free(weft__vc *v);
void weft__check_record(weft__checker *k, weft__event *e, weft__stream *s);
void weft__check_wait(weft__checker *k, weft__stream *s, weft__event *e);
/* x has seen s's work up to now complete (a sync of s), or e's. */
void weft__check_synced(weft__checker *k, weft__exec *x, weft__stream *s);
void weft__check_event_synced(weft__checker *k, weft__exec *x, weft__event *e);
/* x waited for all of device dev's streams: it is after all their work. */
void weft__check_device_synced(weft__checker *k, weft__exec *x, int dev);
/* A plain thread's new context x starts with what has completed by now:
 * the thread that made it may have synced before, through an edge weft
 * does not see (pthread_create), and completed work cannot overlap what
 * the new thread queues. */
void weft__check_thread_start(weft__checker *k, weft__exec *x);
/* child starts with what parent (NULL: nothing) has seen. */
void weft__check_spawn(weft__checker *k, weft__exec *parent, weft__exec *child);
/* x now knows everything done knew at its end (a join); or stream s is
 * ordered after it (weft_task_after). done NULL, or a task already freed
 * (its clock with it): a task that completed, whose knowledge stands in
 * for what has completed on every stream by now (work that completed
 * cannot overlap what is queued after it). */
void weft__check_joined(weft__checker *k, weft__exec *x, weft__exec *done);
void weft__check_after(weft__checker *k, weft__stream *s, weft__exec *done);
/* Frees x's clock (a context going away). */
void weft__check_exec_gone(weft__checker *k, weft__exec *x);

/* Tracked allocations. */
void weft__check_alloc(weft__checker *k, const void *p, size_t n, int pinned);
void weft__check_dealloc(weft__checker *k, const void *p);
/* The tracked allocation at p is task x's own (it allocated it in its
 * body): x's accesses to it are held to no declaration, which could not
 * name it at the spawn. */
void weft__check_made_by(weft__checker *k, const void *p, const weft__exec *x);

/* A raw CUDA call (name) seen by the backend, reported if the calling
 * thread runs a task: an implicit synchronisation (ns: how long it took),
 * or work on the legacy default stream (default_stream). */
void weft__check_cuda_call(weft__checker *k, const char *name, const char *what,
                           uint64_t ns, int default_stream);

/* Whether a task besides the caller is alive (to be stalled by a call
 * that waits for the whole device). */
int weft__check_others_alive(const weft__checker *k);
/* A call that synchronises more than its caller's stream, made from a
 * task (x): reported with how long it took (ns; 0 if not measured), if
 * another task was alive when it began (alive, from
 * weft__check_others_alive then) or is now. */
void weft__check_implicit_sync(weft__checker *k, weft__exec *x,
                               const char *call, const char *what, uint64_t ns,
                               int alive);

/* A task (x) asking for registered data's instance (weft/data.h): the
 * handle's host range [p, p + bytes) must be among its declared accesses
 * with mode, or data flow ordered nothing for it: reported otherwise. */
void weft__check_data_get(weft__checker *k, const weft__exec *x, const void *p,
                          size_t bytes, unsigned mode);

#endif
