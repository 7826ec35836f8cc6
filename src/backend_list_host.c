/* Backends of a host-only build. */
#include "backend.h"

extern const struct weft__backend_ops weft__host_ops;

const struct weft__backend_ops *const weft__backends[] = {&weft__host_ops,
                                                          NULL};
