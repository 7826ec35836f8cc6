/* Backends of a build with CUDA. */
#include "backend.h"

extern const struct weft__backend_ops weft__host_ops;
extern const struct weft__backend_ops weft__cuda_ops;

const struct weft__backend_ops *const weft__backends[] = {
    &weft__cuda_ops, &weft__host_ops, NULL};
