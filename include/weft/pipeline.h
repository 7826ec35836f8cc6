/* A pipelined map over chunks of host data: copy a chunk in, run kernels on
 * it, copy the result out, with the three stages of different chunks
 * overlapping (both copy engines and the compute engine busy at once),
 * and no stream written by the caller. */
#ifndef WEFT_MAP_H
#define WEFT_MAP_H

#include "common.h"

WEFT_BEGIN_DECLS

/* Queues the work for chunk index on the current stream: kernels reading
 * dev_in (the chunk, already copied in) and writing dev_out (copied out
 * after fn returns). Returns 0 or an error, which stops the map. Runs in a
 * task; it must not wait (weft_sync) or the pipeline stalls. */
typedef int (*weft_chunk_fn)(void *dev_in, void *dev_out, size_t index,
                             void *user);

typedef struct weft_map_opts {
  size_t struct_size; /* sizeof(weft_map_opts), set by _opts_init */
  /* Chunks in flight, each on its own task and stream; default 3 (one
   * copying in, one computing, one copying out). */
  int depth;
} weft_map_opts;

/* Fills *opts with the defaults; NULL is ignored.
 * Errors: none. Context: any thread; never blocks. */
WEFT_API void weft_map_opts_init(weft_map_opts *opts);

/* For each of nchunks chunks: copies in_chunk bytes from in + i * in_chunk
 * to device memory, calls fn, and copies out_chunk bytes of the result to
 * out + i * out_chunk. out_chunk 0 means the kernels work in place: dev_out
 * is dev_in and in_chunk bytes are copied back. Host buffers may be pinned
 * or pageable (pageable ones are staged; pinned is fastest). Returns when
 * every chunk is done, with the first error in the order of the map's
 * tasks (not of time); nchunks 0 returns 0 at once. A failed chunk stops
 * the chunks not yet started (weft/error.h says what stays written).
 * Errors: WEFT_EINVAL (in, out or fn NULL, in_chunk 0, depth outside
 * 1..64, opts->struct_size other than sizeof(weft_map_opts)), WEFT_ESTATE
 * (no runtime, or the runtime is shutting down), WEFT_ENOMEM, device
 * errors, and fn's errors.
 * Context: any thread; may switch (it joins the map's tasks). */
WEFT_API int weft_map_chunks(const void *in, size_t in_chunk, void *out,
                             size_t out_chunk, size_t nchunks, weft_chunk_fn fn,
                             void *user, const weft_map_opts *opts);

WEFT_END_DECLS

#endif
