/* The CUDA backend's graphs: stream capture into a cudaGraph_t,
 * instantiated once; a replay is one cudaGraphLaunch.
 *
 * Capture mode: relaxed. The global and thread-local modes forbid
 * "unsafe" calls (cudaMalloc, syncs) on threads, but weft's tasks move
 * between worker threads and share them: a task captured on worker 1 may
 * resume on worker 2, and the task that runs on worker 1 meanwhile must
 * not have its cudaMalloc refused for a capture that is not its own. The
 * capture belongs to the stream, which only its task queues on, and weft
 * refuses the calls that cannot be captured before they reach CUDA
 * (graph.c), so the thread-based checks would only misfire. */
#include <stdlib.h>

#include "cuda_device.h"
#include "cuda_internal.h"
#include "error_internal.h"

typedef struct cuda_graph {
  cudaGraphExec_t exec;
  int dev;
  size_t nodes, kernels, copies;
} cuda_graph;

static int begin_capture(weft__stream *s) {
  WEFT__CUDA_ON_DEV(s->hdr.dev, cudaStreamBeginCapture, weft__cuda_stream_of(s),
                    cudaStreamCaptureModeRelaxed);
  return 0;
}

int weft__cuda_capture_begin(weft__stream *s) {
  weft__cuda_backend *b = (weft__cuda_backend *)s->hdr.bk;
  /* Counted before it begins: no flag write may land in it. */
  atomic_fetch_add(&b->captures, 1);
  int rc = begin_capture(s);
  if (rc)
    atomic_fetch_sub(&b->captures, 1);
  return rc;
}

/* What the captured graph holds, for weft_graph_get_info. */
static void count_nodes(cudaGraph_t graph, cuda_graph *g) {
  size_t n = 0;
  g->nodes = g->kernels = g->copies = 0;
  if (cudaGraphGetNodes(graph, NULL, &n) != cudaSuccess || n == 0)
    return;
  cudaGraphNode_t *nodes = malloc(n * sizeof *nodes);
  if (!nodes || cudaGraphGetNodes(graph, nodes, &n) != cudaSuccess) {
    free(nodes);
    g->nodes = n;
    return;
  }
  g->nodes = n;
  for (size_t i = 0; i < n; i++) {
    enum cudaGraphNodeType t;
    if (cudaGraphNodeGetType(nodes[i], &t) != cudaSuccess)
      continue;
    g->kernels += t == cudaGraphNodeTypeKernel;
    g->copies += t == cudaGraphNodeTypeMemcpy || t == cudaGraphNodeTypeMemset;
  }
  free(nodes);
}

int weft__cuda_capture_end(weft__stream *s, void **out) {
  int rc = weft__cuda_set_device(s->hdr.dev);
  cudaGraph_t graph = NULL;
  /* Ends the capture even when rc says the device could not be made
   * current: the stream must not stay capturing. */
  cudaError_t e = cudaStreamEndCapture(weft__cuda_stream_of(s), &graph);
  atomic_fetch_sub(&((weft__cuda_backend *)s->hdr.bk)->captures, 1);
  if (e != cudaSuccess) {
    /* After an error that destroyed the context, every call fails with
     * it: that is the cause, and it is WEFT_ELOST (weft/error.h). */
    if (weft__cuda_is_sticky(e))
      return weft__cuda_error_as(WEFT_ELOST, e, "cudaStreamEndCapture",
                                 __FILE__, __LINE__);
    if (graph)
      cudaGraphDestroy(graph);
    return weft__cuda_error_as(WEFT_EDEVICE, e,
                               "cudaStreamEndCapture (the capture was "
                               "invalidated by a call CUDA cannot capture)",
                               __FILE__, __LINE__);
  }
  if (rc) {
    cudaGraphDestroy(graph);
    return rc;
  }
  cuda_graph *g = *out;
  if (g) {
    cudaGraphExecUpdateResultInfo info;
    e = cudaGraphExecUpdate(g->exec, graph, &info);
    if (e != cudaSuccess && weft__cuda_is_sticky(e))
      return weft__cuda_error_as(WEFT_ELOST, e, "cudaGraphExecUpdate", __FILE__,
                                 __LINE__);
    if (e != cudaSuccess) {
      (void)cudaGetLastError(); /* not sticky: clear it */
      cudaGraphDestroy(graph);
      return weft__err_raw(WEFT_EINVAL, (int)e,
                           "weft_graph_update: the capture differs from the "
                           "graph (cudaGraphExecUpdate: %s, result %d); the "
                           "graph is unchanged",
                           cudaGetErrorString(e), (int)info.result);
    }
    count_nodes(graph, g);
    cudaGraphDestroy(graph);
    return 0;
  }
  g = calloc(1, sizeof *g);
  if (!g) {
    cudaGraphDestroy(graph);
    return weft__err(WEFT_ENOMEM, "weft_graph_end: out of host memory");
  }
  g->dev = s->hdr.dev;
  count_nodes(graph, g);
  e = cudaGraphInstantiate(&g->exec, graph, 0);
  cudaGraphDestroy(graph); /* the executable graph is independent of it */
  if (e != cudaSuccess) {
    free(g);
    return weft__cuda_error(e, "cudaGraphInstantiate", __FILE__, __LINE__);
  }
  *out = g;
  return 0;
}

int weft__cuda_graph_launch(weft__stream *s, void *gp) {
  cuda_graph *g = gp;
  WEFT__CUDA_ON_DEV(s->hdr.dev, cudaGraphLaunch, g->exec,
                    weft__cuda_stream_of(s));
  return 0;
}

void weft__cuda_graph_counts(void *gp, size_t *ops, size_t *kernels,
                             size_t *copies) {
  const cuda_graph *g = gp;
  *ops = g->nodes;
  *kernels = g->kernels;
  *copies = g->copies;
}

/* A replay in flight is not cut short: CUDA frees the executable graph
 * once it completes. */
void weft__cuda_graph_destroy(weft__backend *b, void *gp) {
  (void)b;
  cuda_graph *g = gp;
  if (weft__cuda_set_device(g->dev) == 0)
    cudaGraphExecDestroy(g->exec);
  free(g);
}
