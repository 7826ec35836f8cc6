/* The calling thread's current device, cached per thread so that a task
 * resumed on a thread whose device is already its own costs no driver
 * call. Beneath every other file of the CUDA backend, which all use it. */
#include "cuda_device.h"
#include "error_internal.h"

_Thread_local int weft__cuda_cur_dev = -1;

int weft__cuda_set_device_slow(int dev) {
  cudaError_t e = cudaSetDevice(dev);
  if (e != cudaSuccess) {
    weft__cuda_cur_dev = -1; /* CUDA does not say what is current now */
    return weft__cuda_error(e, "cudaSetDevice", __FILE__, __LINE__);
  }
  weft__cuda_cur_dev = dev;
  return 0;
}

int weft__cuda_use_device(int dev, int *prev) {
  int cur;
  WEFT__CUDA_CHECK(cudaGetDevice, &cur);
  if (prev)
    *prev = cur;
  weft__cuda_cur_dev = cur;
  return weft__cuda_set_device(dev);
}

int weft__cuda_put_back(int prev, cudaError_t e, int rc) {
  if (weft__cuda_is_sticky(e))
    return rc;
  int rc2 = weft__cuda_set_device(prev);
  return rc ? rc : rc2;
}

int weft__cuda_device_was_stale(int dev, cudaError_t e) {
  int cur;
  if (weft__cuda_is_sticky(e))
    return 0;
  if (cudaGetDevice(&cur) != cudaSuccess || cur == dev)
    return 0; /* the failure has another cause; the caller reports it */
  (void)cudaGetLastError(); /* the failure is about to be retried away */
  if (cudaSetDevice(dev) != cudaSuccess) {
    weft__cuda_cur_dev = -1;
    return 0;
  }
  weft__cuda_cur_dev = dev;
  return 1;
}
