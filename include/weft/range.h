/* User ranges: named spans of a task's or a thread's time, for the trace
 * and for NVIDIA's tools.
 *
 * weft_range_push opens a range and weft_range_pop closes the innermost
 * one. Ranges nest per task: a task's stack of open ranges goes with it
 * when it suspends and resumes on another worker; a plain thread has a
 * stack of its own. In a trace (WEFT_TRACE) each range is one slice of
 * PyTorch's category "user_annotation", so Perfetto and Holistic Trace
 * Analysis show it as they show PyTorch's record_function ranges, and
 * `weft trace report --range NAME` gives the report for the time inside
 * the ranges of that name (docs/TRACE.md). In a build with NVTX (a CUDA
 * build) each range is also an NVTX push/pop range for Nsight Systems.
 * With tracing off a push and its pop cost tens of nanoseconds (the
 * `ranges` benchmark). */
#ifndef WEFT_RANGE_H
#define WEFT_RANGE_H

#include "common.h"

WEFT_BEGIN_DECLS

/* The bytes of a range's name that are kept (the rest is cut off). */
enum { WEFT_RANGE_NAME_MAX = 63 };

/* Opens a range named name (copied; WEFT_RANGE_NAME_MAX bytes kept) in the
 * calling task, or plain thread, inside the ranges it has open. A range a
 * task leaves open when its function returns is closed then, and said on
 * stderr; one a plain thread leaves open is closed when the thread exits
 * or by weft_shutdown, whichever comes first, and said on stderr.
 * Errors: WEFT_EINVAL (name NULL), WEFT_ESTATE (no runtime),
 * WEFT_ENOMEM. Context: any task or thread; never blocks. */
WEFT_API int weft_range_push(const char *name);

/* Closes the innermost range the calling task or plain thread opened.
 * Errors: WEFT_ESTATE (no range open: none pushed, or all popped; no
 * runtime). Context: any task or thread; never blocks. */
WEFT_API int weft_range_pop(void);

WEFT_END_DECLS

#endif
