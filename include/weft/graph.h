/* Graphs: a task's GPU work captured once and replayed with one launch.
 *
 * When work is small, issuing it costs more than running it: eight tiny
 * kernels and a copy per batch keep the CPU busier than the GPU. A graph
 * records the GPU work the calling task (or plain thread) issues between
 * weft_graph_begin and weft_graph_end, and weft_graph_launch queues all of
 * it again with one call, on the caller's stream:
 *
 *   weft_graph *g;
 *   weft_graph_begin();                  // record from here, run nothing
 *   for (int l = 0; l < 8; l++)
 *     weft_launch(&layer, grid, block, 0, args[l]);
 *   weft_copy(out, y, bytes);            // pinned or device memory
 *   weft_graph_end(&g);                  // instantiate once
 *   for (int b = 0; b < nbatches; b++) {
 *     fill(in);                          // the buffers the graph reads
 *     weft_graph_launch(g);              // one call for nine operations
 *     weft_sync();
 *   }
 *   weft_graph_destroy(g);
 *
 * What is recorded: weft_launch, weft_copy between pinned or device memory,
 * weft_memset, and, on CUDA, everything else queued on the caller's stream
 * meanwhile: cuBLAS through weft_cublas() and <<<>>> launches on
 * weft_cuda_stream(). On CUDA the graph is a CUDA graph (stream capture,
 * one cudaGraphLaunch per replay); on the host backend weft records the
 * operations and queues them again, with the same semantics.
 *
 * While capturing, nothing waits and nothing allocates: weft_sync,
 * weft_event_record/wait/sync, weft_task_after, weft_map_chunks,
 * weft_device_alloc/free, weft_pinned_free, weft_device_sync,
 * weft_graph_launch and, on CUDA, a weft_copy to or from pageable memory
 * (staging waits for the GPU; the host backend has no pageable memory)
 * are refused with WEFT_ESTATE and change nothing; the capture goes on. A task
 * may yield, spawn and join tasks, and move between worker threads while
 * it captures: the capture belongs to its stream, not to a thread (CUDA's
 * relaxed capture mode, since weft, not the thread, enforces the rules).
 * A task that returns with a capture open loses it, and its join reports
 * WEFT_ESTATE. A task spawned inside a capture with declared accesses
 * (weft/dataflow.h) is a step of the graph: run at once, recorded, and
 * ordered by its data; on CUDA the steps run on branches of the capture
 * and the graph keeps the edges between them, so a replay runs them
 * concurrently where their data allows.
 *
 * A graph keeps pointers, not data: the buffers it was recorded with are
 * the ones every replay reads and writes. Device and pinned memory that a
 * live graph's weft_copy or weft_memset uses (anywhere in the
 * allocation) or weft_launch uses (a kernel argument equal to the start
 * of an allocation) cannot be freed:
 * weft_device_free and weft_pinned_free return WEFT_EBUSY until the graph
 * is destroyed. (Memory a <<<>>> or cuBLAS call uses is not seen.)
 *
 * Replays of one graph run one after another, in launch order, whichever
 * stream they were launched on (as CUDA orders launches of one executable
 * graph); capture one graph per task for replays that overlap. A GPU
 * error inside a replay is reported by the caller's next weft_sync.
 *
 * Errors: WEFT_ESTATE (no runtime, a capture already open or none open, a
 * refused call inside a capture), WEFT_EHANDLE (g not a live graph, or of
 * another runtime), WEFT_EINVAL (g or out NULL, an update of another
 * shape), WEFT_ENOMEM, WEFT_EDEVICE (CUDA refused the capture: the
 * message says which call). Context: any task or plain thread of a
 * runtime; none of these calls switch the fiber or block. */
#ifndef WEFT_GRAPH_H
#define WEFT_GRAPH_H

#include <stddef.h>

#include "weft/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct weft_graph weft_graph;

/* Starts recording the caller's GPU work instead of running it. */
WEFT_API int weft_graph_begin(void);

/* Ends the capture and makes the recorded work a graph, *out (untouched
 * on failure: a second end by mistake keeps the graph's handle). The
 * capture is over whatever the result (but for WEFT_ESTATE
 * from inside a step of it, weft/dataflow.h, which leaves it open): if a
 * call inside it failed or CUDA invalidated it, the error is returned
 * here and no graph is made. */
WEFT_API int weft_graph_end(weft_graph **out);

/* Ends the capture and puts what it recorded into g in place of what g
 * held, without instantiating again (cudaGraphExecUpdate on CUDA): the
 * same operations in the same order with new arguments, buffers or sizes.
 * Cheaper than weft_graph_end plus weft_graph_destroy when a loop's
 * buffers change. WEFT_EINVAL, g unchanged, if the shape differs (another
 * kernel, another kind or count of operations) or g was captured on
 * another device than this capture's. As with weft_graph_end,
 * the capture is over whatever the result (but for a call from inside a
 * step): refused (g not a live graph,
 * WEFT_EHANDLE) or failed, what it recorded is dropped. The buffers g no
 * longer uses are released as weft_graph_destroy releases them: replays
 * queued before the update still use them, and a free right after is
 * ordered after those replays. An update and a launch of g from two
 * threads run one after the other. */
WEFT_API int weft_graph_update(weft_graph *g);

/* Queues one replay of g on the caller's stream; WEFT_EINVAL if the
 * caller runs on another device than g was captured on (its operations
 * name that device's memory). */
WEFT_API int weft_graph_launch(weft_graph *g);

/* Frees g once replays already queued have run (they are not cancelled),
 * and releases the memory it held busy, without waiting: a weft_device_free
 * or weft_pinned_free of that memory right after is ordered after those
 * replays, so memory allocated next is never written by them. From then on g is
 * refused with WEFT_EHANDLE by every graph call, even after a new graph reuses
 * its memory; a call on g racing the destroy from another thread either
 * completes, g freed after it, or is refused. */
WEFT_API int weft_graph_destroy(weft_graph *g);

/* What a graph holds, as captured. */
typedef struct weft_graph_info {
  size_t ops;     /* operations (CUDA: the graph's nodes) */
  size_t kernels; /* of which kernel launches */
  size_t copies;  /* copies and memsets */
  size_t refs;    /* allocations it holds busy */
} weft_graph_info;

WEFT_API int weft_graph_get_info(const weft_graph *g, weft_graph_info *info);

#ifdef __cplusplus
}
#endif

#endif
