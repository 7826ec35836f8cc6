/* Error codes. Every weft call returns 0 or one of these negative codes.
 * A failed call changes nothing: outputs stay untouched and nothing leaks. */
#ifndef WEFT_ERROR_H
#define WEFT_ERROR_H

#include "common.h"

WEFT_BEGIN_DECLS

/* One list generates the enum, weft_strerror() and weft_err_name(). */
#define WEFT_ERRNO_MAP(X)                                                      \
  X(EINVAL, -1, "invalid argument")                                            \
  X(ENOMEM, -2, "out of memory")                                               \
  X(ENOTSUP, -3, "operation not supported by this backend")                    \
  X(ENODEV, -4, "no such device or backend")                                   \
  X(EBUSY, -5, "resource busy: work or objects still live")                    \
  X(EAGAIN, -6, "operation not complete yet")                                  \
  X(EHANDLE, -7, "invalid or destroyed handle")                                \
  X(EDEVICE, -8, "device operation failed")                                    \
  X(ELOST, -9, "device context lost; every later GPU call fails")              \
  X(ESTATE, -10, "call not valid in the current state")                        \
  X(ERANGE, -11, "value out of range")                                         \
  X(EIO, -12, "input/output error")                                            \
  X(EFORMAT, -13, "malformed input")

typedef enum weft_errno {
#define WEFT__ERR_ENUM(name, value, text) WEFT_##name = (value),
  WEFT_ERRNO_MAP(WEFT__ERR_ENUM)
#undef WEFT__ERR_ENUM
} weft_errno;

/* Human-readable text for an error code ("unknown error" for others).
 * Never NULL; static storage; callable from anywhere. */
WEFT_API const char *weft_strerror(int err);

/* The code's name without prefix, e.g. "EINVAL" ("UNKNOWN" for others).
 * Never NULL; static storage; callable from anywhere. */
WEFT_API const char *weft_err_name(int err);

/* Details of the most recent failure on the calling thread (or, inside a
 * task, the calling task): which call failed, where, and for device errors
 * the backend's own error name and message, e.g.
 * "cudaMallocAsync: cudaErrorMemoryAllocation: out of memory (src/cuda/...)".
 * Empty string when nothing failed yet. The string stays valid until the
 * next failing weft call on this thread or task. */
WEFT_API const char *weft_last_error_message(void);

/* The backend's raw error code of that failure (a cudaError_t value on the
 * CUDA backend), or 0 when the failure did not come from the backend. */
WEFT_API int weft_last_error_raw(void);

WEFT_END_DECLS

#endif
