/* weft_cublas: a cuBLAS handle that follows the calling task's stream.
 *
 * Creating a handle is expensive (cublasCreate took 16 ms the first time
 * and 70-150 us after on the H200) and cublasSetStream cheap (32 ns), so
 * each thread keeps one handle per device in weft/library.h's cache, made
 * on first use and moved to the caller's stream only when that changed;
 * this file is the cache's description of cuBLAS, plus the workspaces.
 *
 * Workspaces belong to streams, not handles. A thread's handle serves every
 * task that runs on the thread, each on its own stream, so one workspace
 * per handle would let two tasks' kernels share scratch memory at the same
 * time. A stream is leased to one task at a time and runs its work in
 * order, so a workspace tied to the stream is never used by two kernels at
 * once, whichever handle queued them. cublasSetStream puts the handle back
 * on cuBLAS's default workspace, so the stream's own is set again after it.
 * Size: NVIDIA's recommendation for cublasSetWorkspace (32 MiB on compute
 * capability 9.x and later, 4 MiB before), or WEFT_CUBLAS_WORKSPACE_KIB;
 * 0 there leaves cuBLAS its own default. */
#include <cublas_v2.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "caller.h"
#include "check.h"
#include "cuda_internal.h"
#include "error_internal.h"
#include "library_internal.h"

/* What the cache holds for cuBLAS: the handle and the device it serves,
 * which set_stream needs to find the stream's workspace. */
typedef struct cublas_entry {
  cublasHandle_t h;
  int dev;
} cublas_entry;

/* Every stream's workspace (ptr NULL: cuBLAS's default, after a size of 0
 * or a failed allocation, so that it is not tried again). */
typedef struct workspace {
  cudaStream_t stream;
  int dev;
  void *ptr;
  size_t bytes;
} workspace;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static workspace *spaces;
static size_t nspaces, spaces_cap;

static int cublas_fail(cublasStatus_t st, const char *call) {
  int code = st == CUBLAS_STATUS_ALLOC_FAILED      ? WEFT_ENOMEM
             : st == CUBLAS_STATUS_NOT_INITIALIZED ? WEFT_ENODEV
                                                   : WEFT_EDEVICE;
  return weft__err_raw(code, (int)st, "%s: %s", call,
                       cublasGetStatusString(st));
}

/* A failure of set_stream's own, re-reported by weft_cublas over the
 * cache's generic message. set_stream runs in the calling task and
 * nothing switches before the cache returns, so the thread is the
 * task's. */
static _Thread_local struct {
  int code;
  char message[256];
} bind_error;

static void bind_failed(int code) {
  bind_error.code = code;
  snprintf(bind_error.message, sizeof bind_error.message, "%s",
           weft_last_error_message());
}

/* The workspace size for dev, in bytes; -1 after reporting a bad
 * WEFT_CUBLAS_WORKSPACE_KIB. */
static long long workspace_bytes(int dev) {
  const char *env = getenv("WEFT_CUBLAS_WORKSPACE_KIB");
  if (env && *env) {
    char *end;
    errno = 0;
    long long kib = strtoll(env, &end, 10);
    if (errno || *end || kib < 0 || kib > (1LL << 30)) {
      weft__err(WEFT_EINVAL,
                "weft_cublas: WEFT_CUBLAS_WORKSPACE_KIB='%s' is not a number "
                "of KiB",
                env);
      return -1;
    }
    return kib * 1024;
  }
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) !=
      cudaSuccess) {
    cudaGetLastError();
    major = 0;
  }
  return major >= 9 ? 32LL << 20 : 4LL << 20;
}

/* Looks up the workspace of stream cs on dev, under the lock. */
static int workspace_find(cudaStream_t cs, int dev, workspace *out) {
  for (size_t i = 0; i < nspaces; i++)
    if (spaces[i].stream == cs && spaces[i].dev == dev) {
      *out = spaces[i];
      return 1;
    }
  return 0;
}

/* Finds or makes the workspace of stream cs on dev (the calling thread's
 * current device) and copies it to *out. Returns 0, or the error,
 * reported. */
static int workspace_for(cudaStream_t cs, int dev, workspace *out) {
  pthread_mutex_lock(&lock);
  int found = workspace_find(cs, dev, out);
  pthread_mutex_unlock(&lock);
  if (found)
    return 0;
  /* Only this stream's task asks for its workspace, so no other thread
   * adds the same one meanwhile; the allocation runs unlocked. */
  long long bytes = workspace_bytes(dev);
  if (bytes < 0)
    return WEFT_EINVAL;
  void *ptr = NULL;
  /* Once per stream for the runtime's life: deliberate, not reported. */
  weft__check_quiet++;
  cudaError_t me = bytes > 0 ? cudaMalloc(&ptr, (size_t)bytes) : cudaSuccess;
  weft__check_quiet--;
  if (me != cudaSuccess) {
    cudaGetLastError(); /* out of memory: fall back to cuBLAS's default */
    ptr = NULL;
  }
  pthread_mutex_lock(&lock);
  if (nspaces == spaces_cap) {
    size_t nc = spaces_cap ? spaces_cap * 2 : 16;
    workspace *v = realloc(spaces, nc * sizeof *v);
    if (!v) {
      pthread_mutex_unlock(&lock);
      if (ptr)
        cudaFree(ptr);
      return weft__err(WEFT_ENOMEM, "weft_cublas: out of memory");
    }
    spaces = v;
    spaces_cap = nc;
  }
  *out = (workspace){cs, dev, ptr, ptr ? (size_t)bytes : 0};
  spaces[nspaces++] = *out;
  pthread_mutex_unlock(&lock);
  return 0;
}

/* cublasCreate loads cuBLAS on first use and needs more stack than a
 * task's fiber has (it overflowed 64 KiB on the H200): the cache runs it
 * on the thread's own stack, the device already current. */
static int lib_create(void *user, int dev, const void *key, size_t key_bytes,
                      void **handle) {
  (void)user;
  (void)key;
  (void)key_bytes;
  cublas_entry *e = malloc(sizeof *e);
  if (!e)
    return CUBLAS_STATUS_ALLOC_FAILED;
  cublasStatus_t st = cublasCreate(&e->h);
  if (st != CUBLAS_STATUS_SUCCESS) {
    free(e);
    return (int)st;
  }
  e->dev = dev;
  *handle = e;
  return 0;
}

/* cublasSetStream puts the handle back on cuBLAS's default workspace, so
 * the stream's own is set after it. */
static int lib_set_stream(void *user, void *handle, void *stream) {
  (void)user;
  cublas_entry *e = handle;
  workspace w;
  int rc = workspace_for(stream, e->dev, &w);
  if (rc != 0) {
    bind_failed(rc);
    return -1;
  }
  cublasStatus_t st = cublasSetStream(e->h, stream);
  if (st == CUBLAS_STATUS_SUCCESS && w.ptr)
    if ((st = cublasSetWorkspace(e->h, w.ptr, w.bytes)) !=
        CUBLAS_STATUS_SUCCESS)
      bind_failed(cublas_fail(st, "cublasSetWorkspace"));
  return (int)st;
}

static void lib_destroy(void *user, void *handle) {
  (void)user;
  cublas_entry *e = handle;
  cublasDestroy(e->h);
  free(e);
}

static const char *lib_describe(int status) {
  return status > 0 ? cublasGetStatusString((cublasStatus_t)status) : NULL;
}

static const weft_library cublas_lib = {.struct_size = sizeof cublas_lib,
                                        .name = "cublas",
                                        .create = lib_create,
                                        .set_stream = lib_set_stream,
                                        .destroy = lib_destroy,
                                        .describe = lib_describe};

/* The caller (weft__caller_get) and its CUDA stream, for call. Returns 0
 * or the error, reported. */
static int caller_cuda(const char *call, weft__caller *c, cudaStream_t *cs) {
  int rc = weft__caller_get(call, c);
  if (rc)
    return rc;
  if (c->s->hdr.bk->ops->kind != WEFT_BACKEND_CUDA)
    return weft__err(WEFT_ENOTSUP, "%s: the runtime uses the %s backend", call,
                     c->s->hdr.bk->ops->name);
  *cs = ((weft__cuda_stream *)c->s)->cs;
  return 0;
}

int weft__cuda_cublas_warm(weft_runtime *rt) {
  if (!rt)
    return weft__err(WEFT_EINVAL, "weft_cublas_warm: rt is NULL");
  if (weft_runtime_backend(rt) != WEFT_BACKEND_CUDA)
    return weft__err(WEFT_ENOTSUP, "weft_cublas_warm: the runtime is not on "
                                   "the CUDA backend");
  int n = 0, rc = weft_device_count(rt, &n);
  for (int dev = 0; rc == 0 && dev < n; dev++)
    rc = weft_library_warm(rt, &cublas_lib, dev);
  return rc;
}

cublasHandle_t weft__cuda_cublas(void) {
  weft__caller me;
  cudaStream_t cs = NULL;
  if (caller_cuda("weft_cublas", &me, &cs) != 0)
    return NULL;
  void *e;
  bind_error.code = 0;
  if (weft__library_handle_for(&me, &cublas_lib, NULL, 0, &e) != 0) {
    if (bind_error.code) {
      weft__err(bind_error.code, "%s", bind_error.message);
      bind_error.code = 0;
    }
    return NULL;
  }
  return ((cublas_entry *)e)->h;
}

int weft__cuda_cublas_workspace(void **ptr, size_t *bytes) {
  if (!ptr || !bytes)
    return weft__err(WEFT_EINVAL, "weft_cublas_workspace: NULL argument");
  *ptr = NULL;
  *bytes = 0;
  weft__caller c;
  cudaStream_t cs = NULL;
  int rc = caller_cuda("weft_cublas_workspace", &c, &cs);
  if (rc)
    return rc;
  workspace w;
  pthread_mutex_lock(&lock);
  if (workspace_find(cs, c.dev, &w)) {
    *ptr = w.ptr;
    *bytes = w.bytes;
  }
  pthread_mutex_unlock(&lock);
  return 0;
}

void weft__cuda_cublas_release(weft__backend *b) {
  (void)b;
  pthread_mutex_lock(&lock);
  /* The streams were drained before the libraries are released; cudaFree
   * would wait for them anyway. The handles went with the cache's. */
  for (size_t i = 0; i < nspaces; i++)
    if (spaces[i].ptr && weft__cuda_set_device(spaces[i].dev) == 0)
      cudaFree(spaces[i].ptr);
  free(spaces);
  spaces = NULL;
  nspaces = spaces_cap = 0;
  pthread_mutex_unlock(&lock);
}
