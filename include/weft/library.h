/* Library handles that follow the task: describe a library once (how to
 * make a handle, bind it to a stream, destroy it) and weft_library_handle
 * returns a handle bound to the calling task's stream, as weft_cublas does
 * for cuBLAS:
 *
 *   static int make(void *user, int dev, const void *key, size_t n,
 *                   void **h) {
 *     return cusparseCreate((cusparseHandle_t *)h); }   // 0 on success
 *   static int bind(void *user, void *h, void *stream) {
 *     return cusparseSetStream(h, stream); }
 *   static void drop(void *user, void *h) { cusparseDestroy(h); }
 *   static const weft_library sp = {.struct_size = sizeof sp,
 *       .name = "mysparse", .create = make, .set_stream = bind,
 *       .destroy = drop};
 *   ...in a task:
 *   void *h;
 *   if (weft_library_handle(&sp, &h) == 0) { ...use h on the task's stream }
 *
 * A library with many handles per thread told apart by what they are for
 * (plans of different shapes) asks weft_library_handle_keyed with a key of
 * up to WEFT_LIBRARY_KEY_MAX bytes, which create receives; the plain call
 * is the key of 0 bytes. weft's own cuBLAS, cuBLASLt, cuFFT, cuRAND,
 * cuSOLVER and cuSPARSE handles (weft/cuda.h, weft/cuda_libraries.h) are
 * descriptions like these.
 *
 * Handles are cached per worker thread (or plain thread) and device, made
 * on first use on the thread's own stack (library set-up needs more stack
 * than a fiber has), re-bound only when the caller's stream differs from
 * the one the handle was last bound to, and destroyed at weft_shutdown. A
 * task may move between threads when it waits or yields, so it asks again
 * after that. A thread runs one task at a time, so no two tasks call into
 * one handle at once; their GPU work may still run at once on their two
 * streams, so a library whose handle carries device state (cuRAND's
 * generator, a cuFFT plan's work area) asks for a handle per stream
 * instead (per_stream), and one that needs per-stream state beside a
 * shared handle keeps it itself, set in set_stream (cuBLAS's workspace).
 * A handle per stream whose state matters only while work runs (a plan's
 * work area, cuSOLVER's) may be lent on: with per_stream
 * WEFT_LIBRARY_PER_STREAM_REUSED, a stream that has none takes the handle
 * of a stream that is back in weft's pool with its work done, bound anew,
 * so a program makes as many as its streams use at once rather than one
 * for every stream it ever ran on. A handle asked for while its stream
 * captures a graph stays with that stream (the graph's replays use it).
 *
 * The stream passed to set_stream is the task's native stream: a
 * cudaStream_t on the CUDA backend, the host backend's stream object there
 * (a library of host code can use it as a key; it cannot queue on it).
 * The description must outlive every runtime that used it (a static): its
 * address keys the cache.
 *
 * Errors: WEFT_ESTATE (no runtime), WEFT_EINVAL (NULL lib or handle, a
 * description without create or set_stream, a struct_size not
 * sizeof(weft_library), per_stream not one of the three values, a key
 * longer than WEFT_LIBRARY_KEY_MAX or NULL with a length), WEFT_EDEVICE (create
 * or set_stream returned non-zero: the message has the value and what describe
 * says of it; or create returned 0 with a NULL handle), WEFT_ENOMEM (also: more
 * than 64 handles on one thread). Context: any task or plain thread; blocks the
 * worker only for a create (once per thread, device and key). */
#ifndef WEFT_LIBRARY_H
#define WEFT_LIBRARY_H

#include <stddef.h>

#include "weft/common.h"
#include "weft/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_LIBRARY_KEY_MAX 32

/* weft_library.per_stream's values. */
enum {
  WEFT_LIBRARY_PER_THREAD = 0, /* a handle per thread, moved between streams */
  WEFT_LIBRARY_PER_STREAM = 1, /* a handle per stream, kept by it for good */
  /* A handle per stream, lent to another stream once its own is back in
   * the pool with its work done. */
  WEFT_LIBRARY_PER_STREAM_REUSED = 2
};

typedef struct weft_library {
  size_t struct_size; /* sizeof(weft_library) */
  const char *name;   /* for messages */
  /* Makes a handle for device dev (current on the calling thread) and the
   * key it was asked for (NULL and 0 from weft_library_handle); 0, or
   * non-zero on failure. The handle must not be NULL (NULL is refused as
   * a failure: it would name no handle to keep). */
  int (*create)(void *user, int dev, const void *key, size_t key_bytes,
                void **handle);
  /* Binds the handle to stream; 0 or non-zero on failure. */
  int (*set_stream)(void *user, void *handle, void *stream);
  /* Frees the handle (at weft_shutdown, the device still open); may be
   * NULL. */
  void (*destroy)(void *user, void *handle);
  void *user; /* passed to the three */
  /* The library's words for a status create or set_stream returned, for
   * the error message; may be NULL. */
  const char *(*describe)(int status);
  /* WEFT_LIBRARY_PER_THREAD (0): a handle per thread, moved between the
   * streams of the tasks that run there. WEFT_LIBRARY_PER_STREAM (1): a
   * handle per stream, for libraries whose handles carry device state two
   * streams must not share at once (cuRAND's generator state): a stream
   * runs one task's work at a time, in order. Found from any thread; more
   * handles, each bound once. WEFT_LIBRARY_PER_STREAM_REUSED (2): the
   * same, but a stream's handle goes to another stream that asks once its
   * own stream is idle (state used only while work runs: a cuFFT plan's
   * work area, cuSOLVER's); bound again when it moves. */
  int per_stream;
} weft_library;

WEFT_API int weft_library_handle(const weft_library *lib, void **handle);

/* Makes lib's handle for device dev on every worker thread of rt now, and
 * on the calling thread when it is a plain one (it runs tasks while it
 * joins one), so that a task's first weft_library_handle on any of them is
 * as cheap as its hundredth (creation is what costs, a cublasCreate a
 * thread for cuBLAS). Each worker makes its own between
 * tasks, on its own stack; the call returns when all have. Handles made per
 * stream (per_stream) and keyed handles are made with their stream or key, not
 * here. Errors: WEFT_EINVAL (rt or lib NULL, a bad description, a
 * per_stream library), WEFT_ENODEV (no device dev), WEFT_EDEVICE (a
 * create failed; the other workers' handles stay), WEFT_ENOMEM. Context:
 * a plain thread or a task (which yields until the workers are done). */
WEFT_API int weft_library_warm(weft_runtime *rt, const weft_library *lib,
                               int dev);
WEFT_API int weft_library_handle_keyed(const weft_library *lib, const void *key,
                                       size_t key_bytes, void **handle);

#ifdef __cplusplus
}
#endif

#endif
