/* weft/kernel.h: launches on the caller's stream. */
#include "weft/kernel.h"
#include "scheduler.h"

int weft_launch(const weft_kernel *k, weft_dim3 grid, weft_dim3 block,
                size_t shared_bytes, void **args) {
  weft__caller c;
  int rc = weft__caller_get("weft_launch", &c);
  if (rc)
    return rc;
  rc = weft__launch(c.s, k, grid, block, shared_bytes, args);
  return rc;
}

int weft_kernel_preload(const weft_kernel *k) {
  weft__exec *x = weft__exec_get("weft_kernel_preload");
  if (!x)
    return weft__exec_get_failed();
  return weft__kernel_preload(x->rt->bk, x->dev, k);
}
