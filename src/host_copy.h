/* Host-to-host copies for staging: into a pinned block that only a DMA
 * engine will read next. */
#ifndef WEFT__HOST_COPY_H
#define WEFT__HOST_COPY_H

#include <stddef.h>

/* Copies n bytes of src to dst (not overlapping), past a size with stores
 * that bypass the CPU's caches, as memcpy otherwise. docs/decisions/
 * memory.md, "Staging with non-temporal stores". */
void weft__copy_for_dma(void *dst, const void *src, size_t n);

#endif
