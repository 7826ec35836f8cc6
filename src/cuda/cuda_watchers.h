/* The CUDA backend's CUPTI watchers, started and stopped with the backend
 * (cuda_backend.c): weft check's view of raw CUDA calls (cuda_checker.c)
 * and the tracer's source (cuda_trace.c). */
#ifndef WEFT__CUDA_WATCHERS_H
#define WEFT__CUDA_WATCHERS_H

#include <stdint.h>

#include "backend.h"

/* weft check (cuda_checker.c). */

void weft__cuda_check_start(weft__backend *b);
void weft__cuda_check_stop(weft__backend *b);

/* Tracing through CUPTI (cuda_trace.c). */
int weft__cuda_trace_start(weft__backend *b);
void weft__cuda_trace_stop(weft__backend *b);
void weft__cuda_trace_task(weft__backend *b, uint64_t id, const char *name);
/* The id CUPTI gives s's operations (cuda_ops.c). */
uint32_t weft__cuda_trace_stream_id(weft__stream *s);

#endif
