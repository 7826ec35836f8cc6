/* weft/library.h's cache as weft's own libraries use it (src/cuda/). */
#ifndef WEFT__LIBRARY_INTERNAL_H
#define WEFT__LIBRARY_INTERNAL_H

#include "backend.h"
#include "weft/library.h"

/* The door of a call (call: its name) of weft's own libraries: finds the
 * caller (weft__door, which leases its stream), refuses it unless its
 * runtime's backend is kind, and gives its stream in *s and, with lib (a
 * valid description) non-NULL, lib's handle for key in *handle. 0 or the
 * error, reported. */
int weft__library_enter(const char *call, weft_backend_kind kind,
                        const weft_library *lib, const void *key,
                        size_t key_bytes, weft__stream **s, void **handle);

/* The calling task's or thread's stream, or NULL: for a library's
 * set_stream, which the cache hands the native stream alone. */
weft__stream *weft__library_caller_stream(void);

/* Destroys the library handles made under rt (weft/library.h). */
void weft__library_release(struct weft_runtime *rt);

#endif
