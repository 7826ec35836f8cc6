/* Memory and copies on the current stream. */
#ifndef WEFT_MEMORY_H
#define WEFT_MEMORY_H

#include "common.h"

WEFT_BEGIN_DECLS

/* Queues a copy of bytes from src to dst on the current stream; the
 * direction is inferred from the pointers. Returns once queued; the data is
 * there after weft_sync(). src and dst must stay valid until then. */
WEFT_API int weft_copy(void *dst, const void *src, size_t bytes);

/* Queues setting bytes of dst to value on the current stream. */
WEFT_API int weft_memset(void *dst, int value, size_t bytes);

/* Allocates device memory ordered on the current stream: usable at once by
 * work queued later on the same stream. Errors: WEFT_EINVAL (bytes 0),
 * WEFT_ENOMEM. */
WEFT_API int weft_device_alloc(size_t bytes, void **ptr);

/* Frees device memory ordered on the current stream: work queued before
 * still sees it. NULL is ignored. Errors: WEFT_EINVAL (not from
 * weft_device_alloc, or already freed). */
WEFT_API int weft_device_free(void *ptr);

/* Page-locked host memory, which copies need to stay asynchronous. */
WEFT_API int weft_pinned_alloc(size_t bytes, void **ptr);
WEFT_API int weft_pinned_free(void *ptr);

WEFT_END_DECLS

#endif
