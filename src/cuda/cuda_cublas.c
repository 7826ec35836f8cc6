/* weft_cublas: a cuBLAS handle that follows the calling task's stream.
 *
 * Creating a handle is expensive and cublasSetStream cheap
 * (docs/decisions/libraries.md, "Library handles: per thread, like
 * cuBLAS's, for now"), so each thread keeps one handle per device in
 * weft/library.h's cache, made on first use and moved to the caller's
 * stream only when that changed; this file is the cache's description of
 * cuBLAS; each stream's workspace comes from cuda_workspace.c.
 */
#include <cublas_v2.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_cublas.h"
#include "cuda_device.h"
#include "cuda_internal.h"
#include "cuda_libload.h"
#include "error_internal.h"
#include "library_internal.h"
#include "registry.h"

/* The cuBLAS calls weft makes, opened at first use (cuda_libload.h). */
static struct {
  __typeof__(cublasCreate_v2) *create;
  __typeof__(cublasDestroy_v2) *destroy;
  __typeof__(cublasSetStream_v2) *set_stream;
  __typeof__(cublasSetWorkspace_v2) *set_workspace;
  __typeof__(cublasGetStatusString) *status_string;
} cb;

static const weft__cuda_symbol cb_syms[] = {
    WEFT__CUDA_SYM(cb, create, "cublasCreate_v2"),
    WEFT__CUDA_SYM(cb, destroy, "cublasDestroy_v2"),
    WEFT__CUDA_SYM(cb, set_stream, "cublasSetStream_v2"),
    WEFT__CUDA_SYM(cb, set_workspace, "cublasSetWorkspace_v2"),
    WEFT__CUDA_SYM(cb, status_string, "cublasGetStatusString")};
static weft__cuda_lib cb_so =
    WEFT__CUDA_LIB("cublas", CUBLAS_VER_MAJOR, cb_syms);

static int cublas_fail(cublasStatus_t st, const char *call) {
  int code = st == CUBLAS_STATUS_ALLOC_FAILED      ? WEFT_ENOMEM
             : st == CUBLAS_STATUS_NOT_INITIALIZED ? WEFT_ENODEV
                                                   : WEFT_EDEVICE;
  return weft__err_raw(code, (int)st, "%s: %s", call, cb.status_string(st));
}

/* A failure of set_stream's own, re-reported by weft_cublas over the
 * cache's generic message. set_stream runs in the calling task after any
 * switch inside the cache, so its thread is the one the cache returns
 * on. */
static _Thread_local struct {
  int code;
  char message[256];
} bind_error;

static void bind_failed(int code) {
  bind_error.code = code;
  snprintf(bind_error.message, sizeof bind_error.message, "%s",
           weft_last_error_message());
}

/* Clears, and re-reports as the last error, the thread's bind_error. Not
 * inlined: weft_cublas() may resume on another thread inside the cache,
 * and a thread-local's address computed before that would be the old
 * thread's. */
static __attribute__((noinline)) void bind_clear(void) { bind_error.code = 0; }

static __attribute__((noinline)) void bind_report(void) {
  if (bind_error.code) {
    weft__err(bind_error.code, "%s", bind_error.message);
    bind_error.code = 0;
  }
}

/* Opening cuBLAS and cublasCreate need more stack than a task's fiber has
 * by default (docs/decisions/libraries.md, "cuBLAS needs
 * deep stacks"): the cache runs it on the thread's own stack, the device
 * already current. */
static int lib_create(void *user, int dev, const void *key, size_t key_bytes,
                      void **handle) {
  (void)user;
  (void)key;
  (void)key_bytes;
  /* cublasCreate binds the handle to the current device; the cache's bind
   * trusts the thread's cached device, which code that called cudaSetDevice
   * itself has made stale (cuda_device.h). */
  int rc = weft__cuda_use_device(dev, NULL);
  if (rc)
    return rc;
  if (weft__cuda_lib_open(&cb_so))
    return WEFT__CUDA_LIB_MISSING;
  cublasHandle_t h;
  cublasStatus_t st = cb.create(&h);
  if (st == CUBLAS_STATUS_SUCCESS)
    *handle = h;
  return (int)st;
}

/* cublasSetStream puts the handle back on cuBLAS's default workspace, so
 * the stream's own is set after it. */
static int lib_set_stream(void *user, void *handle, void *stream) {
  (void)user;
  cublasHandle_t h = handle;
  /* The cache hands the native stream alone; the caller's weft stream
   * holds the workspace. Looked up here, not passed down from
   * weft_cublas(): the task may have resumed on another thread since. */
  weft__cuda_stream *s = (weft__cuda_stream *)weft__library_caller_stream();
  if (!s || s->cs != stream) {
    bind_failed(weft__err(WEFT_ESTATE, "weft_cublas: internal: the handle "
                                       "is bound to another stream than the "
                                       "caller's"));
    return -1;
  }
  int rc = weft__cuda_workspace_for(s);
  if (rc != 0) {
    bind_failed(rc);
    return -1;
  }
  cublasStatus_t st = cb.set_stream(h, stream);
  if (st == CUBLAS_STATUS_SUCCESS && s->ws)
    if ((st = cb.set_workspace(h, s->ws, s->ws_bytes)) != CUBLAS_STATUS_SUCCESS)
      bind_failed(cublas_fail(st, "cublasSetWorkspace"));
  return (int)st;
}

static void lib_destroy(void *user, void *handle) {
  (void)user;
  cb.destroy(handle);
}

static const char *lib_describe(int status) {
  if (status == WEFT__CUDA_LIB_MISSING)
    return weft__cuda_lib_missing(&cb_so, status);
  return status > 0 ? cb.status_string((cublasStatus_t)status) : NULL;
}

static const weft_library cublas_lib = {.struct_size = sizeof cublas_lib,
                                        .name = "cublas",
                                        .create = lib_create,
                                        .set_stream = lib_set_stream,
                                        .destroy = lib_destroy,
                                        .describe = lib_describe};

int weft__cuda_cublas_warm(weft_runtime *rt) {
  int rc0 = weft__registry_check(rt, "weft_cublas_warm");
  if (rc0)
    return rc0;
  if (weft_runtime_backend(rt) != WEFT_BACKEND_CUDA)
    return weft__err(WEFT_ENOTSUP, "weft_cublas_warm: the runtime is not on "
                                   "the CUDA backend");
  int n = 0, rc = weft_device_count(rt, &n);
  for (int dev = 0; rc == 0 && dev < n; dev++)
    rc = weft_library_warm(rt, &cublas_lib, dev);
  return rc;
}

cublasHandle_t weft__cuda_cublas(void) {
  weft__stream *s;
  void *e;
  bind_clear();
  if (weft__library_enter("weft_cublas", WEFT_BACKEND_CUDA, &cublas_lib, NULL,
                          0, &s, &e) != 0) {
    bind_report();
    return NULL;
  }
  return e;
}

int weft__cuda_cublas_workspace(void **ptr, size_t *bytes) {
  if (!ptr || !bytes)
    return weft__err(WEFT_EINVAL, "weft_cublas_workspace: NULL argument");
  *ptr = NULL;
  *bytes = 0;
  weft__stream *cs;
  int rc = weft__library_enter("weft_cublas_workspace", WEFT_BACKEND_CUDA, NULL,
                               NULL, 0, &cs, NULL);
  if (rc)
    return rc;
  const weft__cuda_stream *s = (const weft__cuda_stream *)cs;
  *ptr = s->ws;
  *bytes = s->ws_bytes;
  return 0;
}
