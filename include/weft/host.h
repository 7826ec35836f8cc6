/* The host backend's own streams and events, without tasks: the CPU
 * counterpart of the CUDA runtime's streams, for code that drives streams
 * itself (the benchmarks' raw baselines in a build without CUDA, tests,
 * experiments). Work queued on a stream runs in order on the backend's
 * executor threads; different streams run concurrently; events order and
 * time them, as cudaEvent_t does. No fiber, stream lease or pool is
 * involved: each call goes straight to the backend.
 *
 * Every function takes objects of a runtime opened on the host backend
 * (WEFT_BACKEND_HOST); on another backend the makers fail with
 * WEFT_ENOTSUP. Streams and events must be destroyed before weft_shutdown,
 * which otherwise fails with WEFT_EBUSY.
 *
 * Context: any thread, task or not. The sync calls block the calling
 * thread (a task's worker too: from a task prefer weft_sync and events).
 * Errors: WEFT_EINVAL for a NULL or foreign argument, WEFT_ENOMEM, and the
 * error of a kernel that failed, as the call says. */
#ifndef WEFT_HOST_H
#define WEFT_HOST_H

#include "common.h"
#include "kernel.h"
#include "runtime.h"

WEFT_BEGIN_DECLS

typedef struct weft_host_stream weft_host_stream;
typedef struct weft_host_event weft_host_event;

/* A stream on rt's device (0 .. weft_device_count - 1; each emulated
 * device has its own executor) at the given priority (0: normal; see
 * weft_device_info for the range; one outside it is clamped to it, as
 * CUDA does). Errors: WEFT_ENOTSUP when rt is not on
 * the host backend, WEFT_ENODEV, WEFT_ENOMEM. */
WEFT_API int weft_host_stream_create(weft_runtime *rt, int device, int priority,
                                     weft_host_stream **out);
/* Waits for the stream's work, then frees it; sets *s to NULL. */
WEFT_API int weft_host_stream_destroy(weft_host_stream **s);
/* Blocks until the stream's work is done; the first failure among it. */
WEFT_API int weft_host_stream_sync(weft_host_stream *s);
/* Work queued on s after this waits for ev's last record. Never blocks. */
WEFT_API int weft_host_stream_wait_event(weft_host_stream *s,
                                         weft_host_event *ev);
/* Queues k on s (arguments copied now, as cudaLaunchKernel does). */
WEFT_API int weft_host_launch(weft_host_stream *s, const weft_kernel *k,
                              weft_dim3 grid, weft_dim3 block, void **args);
/* Queues a copy of n bytes; any host memory. */
WEFT_API int weft_host_copy(weft_host_stream *s, void *dst, const void *src,
                            size_t n);

/* An event of rt's device, recorded on that device's streams only (as
 * CUDA's events are; any device's streams may wait for it); timing:
 * weft_host_event_elapsed_ms may use it. Errors: WEFT_ENOTSUP when rt is
 * not on the host backend, WEFT_ENODEV, WEFT_ENOMEM. */
WEFT_API int weft_host_event_create(weft_runtime *rt, int device, int timing,
                                    weft_host_event **out);
WEFT_API int weft_host_event_destroy(weft_host_event **ev);
WEFT_API int weft_host_event_record(weft_host_event *ev, weft_host_stream *s);
/* 0 when the work before the last record is done, WEFT_EAGAIN while it
 * runs. Never blocks. */
WEFT_API int weft_host_event_query(weft_host_event *ev);
/* Blocks until the work before the last record is done. */
WEFT_API int weft_host_event_sync(weft_host_event *ev);
/* Milliseconds between two completed timing events. */
WEFT_API int weft_host_event_elapsed_ms(weft_host_event *start,
                                        weft_host_event *end, float *ms);

/* The backend's own page-locked allocation, uncached (weft_pinned_alloc
 * caches): on the host backend, aligned host memory. Blocks the thread.
 * Errors: WEFT_ENOTSUP, WEFT_ENOMEM. */
WEFT_API int weft_host_pinned_alloc(weft_runtime *rt, size_t n, void **out);
WEFT_API int weft_host_pinned_free(weft_runtime *rt, void *p);

WEFT_END_DECLS

#endif
