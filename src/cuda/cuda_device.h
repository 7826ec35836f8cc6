/* The calling thread's current device, and calls that need it current.
 * For the files of src/cuda/ only. */
#ifndef WEFT__CUDA_DEVICE_H
#define WEFT__CUDA_DEVICE_H

#include "cuda_error.h"

/* The CUDA runtime's current device is per OS thread, and a kernel launch
 * fails unless its stream's device is current. cudaSetDevice on every launch
 * would cost more than the launch budget allows, so each thread remembers
 * the device weft last made current. The cache goes stale when code on the
 * thread calls cudaSetDevice itself (a user's task, a library); the hot
 * calls notice because CUDA then fails them, and WEFT__CUDA_ON_DEV resyncs
 * and retries once. Calls that would instead act silently on the wrong
 * device (creating streams and events, device-wide sync and queries) do not
 * trust the cache and use weft__cuda_use_device. */
extern _Thread_local int weft__cuda_cur_dev; /* -1: not known yet */

int weft__cuda_set_device_slow(int dev) __attribute__((cold));

/* Makes dev current unless the cache says it already is. */
static inline int weft__cuda_set_device(int dev) {
  if (__builtin_expect(weft__cuda_cur_dev == dev, 1))
    return 0;
  return weft__cuda_set_device_slow(dev);
}

/* Makes dev current after asking CUDA which device is, and refreshes the
 * cache. *prev, when not NULL, receives the device that was current so the
 * caller can put it back. */
int weft__cuda_use_device(int dev, int *prev);
/* After a call that ended in e and rc, on a device weft__cuda_use_device
 * made current: makes prev current again (unless e is sticky, when CUDA
 * can do nothing) and returns rc, or the put-back's failure. */
int weft__cuda_put_back(int prev, cudaError_t e, int rc);

/* After a call on dev failed with e: if the thread's real device was not dev
 * (the cache was stale), makes dev current, clears CUDA's record of the
 * failure and returns 1 so the caller retries. Else 0. Never touches CUDA
 * after a sticky error. */
int weft__cuda_device_was_stale(int dev, cudaError_t e) __attribute__((cold));

/* Runs fn(...), which needs dev current, returning the translated error from
 * the calling function on failure. A failure caused by a stale cache is
 * retried once with the right device; a failed call enqueued nothing, so
 * the retry cannot duplicate work. */
#define WEFT__CUDA_ON_DEV(dev, fn, ...)                                        \
  do {                                                                         \
    int rc_ = weft__cuda_set_device(dev);                                      \
    if (__builtin_expect(rc_ != 0, 0))                                         \
      return rc_;                                                              \
    cudaError_t e_ = fn(__VA_ARGS__);                                          \
    if (__builtin_expect(e_ != cudaSuccess, 0)) {                              \
      if (weft__cuda_device_was_stale(dev, e_))                                \
        e_ = fn(__VA_ARGS__);                                                  \
      if (e_ != cudaSuccess)                                                   \
        return weft__cuda_error(e_, #fn, __FILE__, __LINE__);                  \
    }                                                                          \
  } while (0)

#endif
