/* weft_cublas: a cuBLAS handle that follows the calling task's stream.
 *
 * Creating a handle is expensive (cublasCreate took 16 ms the first time
 * and 70-150 us after on the H200) and cublasSetStream cheap (32 ns), so
 * each thread keeps one handle per device, made on first use, and moves it
 * to the caller's stream only when that changed. Tasks move between worker
 * threads, so a task asks again after it waited or yielded. The handles
 * are destroyed when the runtime shuts down; a thread notices a new
 * runtime by its epoch and makes fresh ones.
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
#include <stdlib.h>

#include "caller.h"
#include "check.h"
#include "cuda_internal.h"
#include "error_internal.h"

#define MAX_DEVS 16

typedef struct handle_slot {
  uint64_t epoch; /* the runtime it belongs to */
  cublasHandle_t h;
  cudaStream_t stream; /* the stream it is set to */
} handle_slot;

static _Thread_local handle_slot tls[MAX_DEVS];

/* Not inlined: a task can resume on another thread, and a thread-local
 * address cached across that would name the old thread's slot. */
__attribute__((noinline)) static handle_slot *slot_for(int dev) {
  return &tls[dev];
}

/* Every handle made, for destruction at shutdown, and every stream's
 * workspace (ptr NULL: cuBLAS's default, after a size of 0 or a failed
 * allocation, so that it is not tried again). */
typedef struct workspace {
  cudaStream_t stream;
  int dev;
  void *ptr;
  size_t bytes;
} workspace;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cublasHandle_t *all;
static size_t nall, cap;
static workspace *spaces;
static size_t nspaces, spaces_cap;

static int cublas_fail(cublasStatus_t st, const char *call) {
  int code = st == CUBLAS_STATUS_ALLOC_FAILED      ? WEFT_ENOMEM
             : st == CUBLAS_STATUS_NOT_INITIALIZED ? WEFT_ENODEV
                                                   : WEFT_EDEVICE;
  return weft__err_raw(code, (int)st, "%s: %s", call,
                       cublasGetStatusString(st));
}

static int remember(cublasHandle_t h) {
  pthread_mutex_lock(&lock);
  if (nall == cap) {
    size_t nc = cap ? cap * 2 : 16;
    cublasHandle_t *v = realloc(all, nc * sizeof *v);
    if (!v) {
      pthread_mutex_unlock(&lock);
      return WEFT_ENOMEM;
    }
    all = v;
    cap = nc;
  }
  all[nall++] = h;
  pthread_mutex_unlock(&lock);
  return 0;
}

typedef struct create_call {
  int dev;
  cublasHandle_t h;
  cublasStatus_t st;
} create_call;

/* cublasCreate loads cuBLAS on first use and needs more stack than a
 * task's fiber has (it overflowed 64 KiB on the H200), so it runs on the
 * worker thread's own stack. */
static void create(void *arg) {
  create_call *c = arg;
  weft__check_quiet++; /* cuBLAS's own set-up, once per thread */
  c->st = weft__cuda_set_device(c->dev) == 0 ? cublasCreate(&c->h)
                                             : CUBLAS_STATUS_NOT_INITIALIZED;
  weft__check_quiet--;
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
 * current device) and copies it to *out. Returns 0, or -1 with the error
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
    return -1;
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
      weft__err(WEFT_ENOMEM, "weft_cublas: out of memory");
      return -1;
    }
    spaces = v;
    spaces_cap = nc;
  }
  *out = (workspace){cs, dev, ptr, ptr ? (size_t)bytes : 0};
  spaces[nspaces++] = *out;
  pthread_mutex_unlock(&lock);
  return 0;
}

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

cublasHandle_t weft__cuda_cublas(void) {
  weft__caller me;
  cudaStream_t cs = NULL;
  if (caller_cuda("weft_cublas", &me, &cs) != 0)
    return NULL;
  if (me.dev >= MAX_DEVS) {
    weft__err(WEFT_ENOTSUP, "weft_cublas: device %d (at most %d)", me.dev,
              MAX_DEVS);
    return NULL;
  }
  handle_slot *slot = slot_for(me.dev);
  if (slot->epoch != me.epoch || !slot->h) {
    create_call c = {.dev = me.dev};
    weft__call_on_thread_stack(create, &c);
    if (c.st != CUBLAS_STATUS_SUCCESS) {
      cublas_fail(c.st, "cublasCreate");
      return NULL;
    }
    cublasHandle_t h = c.h;
    /* The task may have moved thread during the call: the slot to fill is
     * this thread's. If it already has a handle, that one is used; the
     * new one stays remembered and goes at shutdown. */
    slot = slot_for(me.dev);
    if (remember(h) != 0) {
      cublasDestroy(h);
      weft__err(WEFT_ENOMEM, "weft_cublas: out of memory");
      return NULL;
    }
    if (slot->epoch != me.epoch || !slot->h)
      *slot = (handle_slot){me.epoch, h, NULL};
  }
  if (slot->stream != cs) {
    workspace w;
    if (workspace_for(cs, me.dev, &w) != 0)
      return NULL;
    slot->stream = NULL; /* until both calls succeeded */
    cublasStatus_t st = cublasSetStream(slot->h, cs);
    if (st != CUBLAS_STATUS_SUCCESS) {
      cublas_fail(st, "cublasSetStream");
      return NULL;
    }
    if (w.ptr && (st = cublasSetWorkspace(slot->h, w.ptr, w.bytes)) !=
                     CUBLAS_STATUS_SUCCESS) {
      cublas_fail(st, "cublasSetWorkspace");
      return NULL;
    }
    slot->stream = cs;
  }
  return slot->h;
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
  for (size_t i = 0; i < nall; i++)
    cublasDestroy(all[i]);
  free(all);
  all = NULL;
  nall = cap = 0;
  /* The streams were drained before the libraries are released; cudaFree
   * would wait for them anyway. */
  for (size_t i = 0; i < nspaces; i++)
    if (spaces[i].ptr && weft__cuda_set_device(spaces[i].dev) == 0)
      cudaFree(spaces[i].ptr);
  free(spaces);
  spaces = NULL;
  nspaces = spaces_cap = 0;
  pthread_mutex_unlock(&lock);
}
