/* weft/library.h's cache as weft's own libraries use it (src/cuda/): with
 * the caller already looked up, and its backend checked. */
#ifndef WEFT__LIBRARY_INTERNAL_H
#define WEFT__LIBRARY_INTERNAL_H

#include "door.h"
#include "weft/library.h"

/* weft_library_handle_keyed for caller c, lib a valid description. */
int weft__library_handle_for(const weft__caller *c, const weft_library *lib,
                             const void *key, size_t key_bytes, void **handle);

/* Destroys the library handles made under rt (weft/library.h). */
void weft__library_release(struct weft_runtime *rt);

#endif
