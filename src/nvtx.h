/* Task ranges for NVIDIA's tools (NVTX): each run slice of a task, on the
 * worker thread that runs it, is a range named after the task, so Nsight
 * Systems shows which task ran where without weft's own tracer.
 *
 * Pushed on every resume, traced or not, on both backends of a build that
 * has the NVTX headers (a CUDA build): with no tool attached an NVTX call
 * is an indirect call to an empty function (NVTX initialises itself on
 * first use and finds no tool), a cost too small to measure on a fiber
 * switch (docs/decisions/tracing.md, "NVTX ranges always, not only when
 * tracing"). Whether a tool is there is NVTX's to find
 * out (NVTX_INJECTION64_PATH, which nsys sets). A range is pushed and
 * popped on the same thread around one fiber switch, so ranges never
 * nest across tasks and always balance. */
#ifndef WEFT__NVTX_H
#define WEFT__NVTX_H

#ifdef WEFT_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
static inline void weft__nvtx_push(const char *name) { nvtxRangePushA(name); }
static inline void weft__nvtx_pop(void) { nvtxRangePop(); }
#else
static inline void weft__nvtx_push(const char *name) { (void)name; }
static inline void weft__nvtx_pop(void) {}
#endif

#endif
