/* The public runtime object: which backend is open and its devices. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "error_internal.h"
#include "runtime_internal.h"
#include "weft/runtime.h"

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
    if (strcmp(name, weft_backend_name(kinds[i])) == 0) {
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

void weft_runtime_opts_init(weft_runtime_opts *opts) {
  if (!opts)
    return;
  memset(opts, 0, sizeof *opts);
  opts->struct_size = sizeof *opts;
  opts->backend = WEFT_BACKEND_AUTO;
}

int weft_init(weft_runtime **rtp, const weft_runtime_opts *user) {
  weft_runtime_opts opts;
  weft_runtime_opts_init(&opts);
  if (!rtp)
    return weft__err(WEFT_EINVAL, "weft_init: rt is NULL");
  if (user) {
    /* Accept smaller (older) option structs; refuse unknown larger ones. */
    if (user->struct_size < offsetof(weft_runtime_opts, backend) ||
        user->struct_size > sizeof opts)
      return weft__err(WEFT_EINVAL,
                       "weft_init: opts->struct_size %zu is not valid "
                       "(call weft_runtime_opts_init)",
                       user->struct_size);
    memcpy(&opts, user, user->struct_size);
  }
  if (opts.backend != WEFT_BACKEND_AUTO && opts.backend != WEFT_BACKEND_HOST &&
      opts.backend != WEFT_BACKEND_CUDA)
    return weft__err(WEFT_EINVAL, "weft_init: unknown backend %d",
                     (int)opts.backend);
  if (opts.host_threads < 0)
    return weft__err(WEFT_EINVAL, "weft_init: host_threads is negative");

  weft_runtime *rt = calloc(1, sizeof *rt);
  if (!rt)
    return weft__err(WEFT_ENOMEM, "weft_init: out of memory");
  weft__backend_config cfg = {.host_threads = opts.host_threads};
  int rc = weft__backend_open(opts.backend, 1, &cfg, &rt->bk);
  if (rc) {
    free(rt);
    return rc;
  }
  rt->opts = opts;
  *rtp = rt;
  return 0;
}

int weft_shutdown(weft_runtime *rt) {
  if (!rt)
    return weft__err(WEFT_EINVAL, "weft_shutdown: rt is NULL");
  int rc = weft__backend_close(rt->bk);
  if (rc)
    return rc;
  free(rt);
  return 0;
}

weft_backend_kind weft_runtime_backend(const weft_runtime *rt) {
  return rt ? rt->bk->ops->kind : WEFT_BACKEND_AUTO;
}

int weft_device_count(weft_runtime *rt, int *count) {
  if (!rt || !count)
    return weft__err(WEFT_EINVAL, "weft_device_count: NULL argument");
  *count = rt->bk->ndev;
  return 0;
}

int weft_device_get_info(weft_runtime *rt, int dev, weft_device_info *info) {
  if (!rt || !info)
    return weft__err(WEFT_EINVAL, "weft_device_get_info: NULL argument");
  if (dev < 0 || dev >= rt->bk->ndev)
    return weft__err(WEFT_ENODEV, "weft_device_get_info: no device %d", dev);
  /* Free memory changes; everything else was read at open. */
  return rt->bk->ops->device_info(rt->bk, dev, info);
}
