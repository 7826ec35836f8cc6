/* Library handles that follow the task: describe a library once (how to
 * make a handle, bind it to a stream, destroy it) and weft_library_handle
 * returns a handle bound to the calling task's stream, as weft_cublas does
 * for cuBLAS:
 *
 *   static int make(void *user, int dev, void **h) {
 *     return cufftCreate((cufftHandle *)h) != CUFFT_SUCCESS; }   // etc.
 *   static int bind(void *user, void *h, void *stream) {
 *     return cufftSetStream(*(cufftHandle *)h, stream) != CUFFT_SUCCESS; }
 *   static void drop(void *user, void *h) { ... }
 *   static const weft_library fft = {sizeof fft, "cufft", make, bind, drop};
 *   ...in a task:
 *   void *h;
 *   if (weft_library_handle(&fft, &h) == 0) { ...use h on the task's stream }
 *
 * Handles are cached per worker thread (or plain thread) and device, made
 * on first use on the thread's own stack (library set-up needs more stack
 * than a fiber has), re-bound only when the caller's stream differs from
 * the one the handle was last bound to, and destroyed at weft_shutdown. A
 * task may move between threads when it waits or yields, so it asks again
 * after that; two tasks never use one handle at the same time, since a
 * thread runs one task at a time.
 *
 * The stream passed to set_stream is the task's native stream: a
 * cudaStream_t on the CUDA backend, the host backend's stream object there
 * (a library of host code can use it as a key; it cannot queue on it).
 * The description must outlive every runtime that used it (a static): its
 * address keys the cache.
 *
 * Errors: WEFT_ESTATE (no runtime), WEFT_EINVAL (NULL lib or handle, a
 * description without create or set_stream, or a struct_size not
 * sizeof(weft_library)), WEFT_EDEVICE (create or set_stream returned
 * non-zero: the message has the value), WEFT_ENOMEM. Context: any task or
 * plain thread; never blocks the worker (creation runs on it, once). */
#ifndef WEFT_LIBRARY_H
#define WEFT_LIBRARY_H

#include <stddef.h>

#include "weft/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct weft_library {
  size_t struct_size; /* sizeof(weft_library) */
  const char *name;   /* for messages */
  /* Makes a handle for device dev (current on the calling thread); 0 or
   * non-zero on failure. */
  int (*create)(void *user, int dev, void **handle);
  /* Binds the handle to stream; 0 or non-zero on failure. */
  int (*set_stream)(void *user, void *handle, void *stream);
  /* Frees the handle (at weft_shutdown, the device still open); may be
   * NULL. */
  void (*destroy)(void *user, void *handle);
  void *user; /* passed to the three */
} weft_library;

WEFT_API int weft_library_handle(const weft_library *lib, void **handle);

#ifdef __cplusplus
}
#endif

#endif
