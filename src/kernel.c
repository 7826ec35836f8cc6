/* weft/kernel.h: launches on the caller's stream. */
#include "weft/kernel.h"
#include "door.h"

int weft_launch(const weft_kernel *k, weft_dim3 grid, weft_dim3 block,
                size_t shared_bytes, void **args) {
  weft__caller c;
  int rc = weft__door("weft_launch", WEFT__DOOR_ISSUE, NULL, &c);
  if (rc)
    return rc;
  rc = weft__launch(c.s, k, grid, block, shared_bytes, args);
  return rc;
}

int weft_kernel_preload(const weft_kernel *k) {
  weft__caller c;
  int rc = weft__door("weft_kernel_preload", 0, NULL, &c);
  return rc ? rc : weft__kernel_preload(c.bk, c.dev, k);
}
