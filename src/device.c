/* weft/device.h: the backends by name, and which ones this build has. A
 * leaf: the backend layer (backend.c) calls it, it calls nothing above. */
#include <strings.h>

#include "backend.h"
#include "error_internal.h"
#include "weft/device.h"

const char *weft_backend_name(weft_backend_kind kind) {
  switch (kind) {
  case WEFT_BACKEND_AUTO:
    return "auto";
  case WEFT_BACKEND_HOST:
    return "host";
  case WEFT_BACKEND_CUDA:
    return "cuda";
  }
  return "unknown";
}

int weft_backend_parse(const char *name, weft_backend_kind *out) {
  static const weft_backend_kind kinds[] = {
      WEFT_BACKEND_AUTO, WEFT_BACKEND_HOST, WEFT_BACKEND_CUDA};
  if (!name || !out)
    return weft__err(WEFT_EINVAL, "weft_backend_parse: NULL argument");
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strcasecmp(name, weft_backend_name(kinds[i])) == 0) {
      *out = kinds[i];
      return 0;
    }
  return weft__err(WEFT_EINVAL, "unknown backend '%s' (auto, host or cuda)",
                   name);
}

int weft_backend_built(weft_backend_kind kind) {
  for (int i = 0; weft__backends[i]; i++)
    if (weft__backends[i]->kind == kind)
      return 1;
  return 0;
}
