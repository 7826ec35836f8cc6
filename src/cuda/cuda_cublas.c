/* weft_cublas: a cuBLAS handle that follows the calling task's stream.
 *
 * Creating a handle is expensive (cublasCreate took 16 ms the first time
 * and 70-150 us after on the H200) and cublasSetStream cheap (32 ns), so
 * each thread keeps one handle per device, made on first use, and moves it
 * to the caller's stream only when that changed. Tasks move between worker
 * threads, so a task asks again after it waited or yielded. The handles
 * are destroyed when the runtime shuts down; a thread notices a new
 * runtime by its epoch and makes fresh ones. */
#include <cublas_v2.h>
#include <pthread.h>
#include <stdlib.h>

#include "cuda_internal.h"
#include "error_internal.h"
#include "runtime_internal.h"
#include "weft/cuda.h"

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

/* Every handle made, for destruction at shutdown. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cublasHandle_t *all;
static size_t nall, cap;

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
  c->st = weft__cuda_set_device(c->dev) == 0 ? cublasCreate(&c->h)
                                             : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasHandle_t weft_cublas(void) {
  weft__exec *x = weft__exec_get("weft_cublas");
  if (!x)
    return NULL;
  weft__stream *s;
  if (weft__exec_stream(x, &s) != 0)
    return NULL;
  if (s->hdr.bk->ops->kind != WEFT_BACKEND_CUDA) {
    weft__err(WEFT_ENOTSUP, "weft_cublas: the runtime uses the %s backend",
              s->hdr.bk->ops->name);
    return NULL;
  }
  if (x->dev >= MAX_DEVS) {
    weft__err(WEFT_ENOTSUP, "weft_cublas: device %d (at most %d)", x->dev,
              MAX_DEVS);
    return NULL;
  }
  handle_slot *slot = slot_for(x->dev);
  cudaStream_t cs = ((weft__cuda_stream *)s)->cs;
  if (slot->epoch != x->rt->epoch || !slot->h) {
    create_call c = {.dev = x->dev};
    weft__call_on_thread_stack(create, &c);
    if (c.st != CUBLAS_STATUS_SUCCESS) {
      cublas_fail(c.st, "cublasCreate");
      return NULL;
    }
    cublasHandle_t h = c.h;
    /* The task may have moved thread during the call: the slot to fill is
     * this thread's. If it already has a handle, that one is used; the
     * new one stays remembered and goes at shutdown. */
    slot = slot_for(x->dev);
    if (remember(h) != 0) {
      cublasDestroy(h);
      weft__err(WEFT_ENOMEM, "weft_cublas: out of memory");
      return NULL;
    }
    if (slot->epoch != x->rt->epoch || !slot->h)
      *slot = (handle_slot){x->rt->epoch, h, NULL};
  }
  if (slot->stream != cs) {
    cublasStatus_t st = cublasSetStream(slot->h, cs);
    if (st != CUBLAS_STATUS_SUCCESS) {
      cublas_fail(st, "cublasSetStream");
      return NULL;
    }
    slot->stream = cs;
  }
  return slot->h;
}

void weft__cuda_cublas_release(weft__backend *b) {
  (void)b;
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < nall; i++)
    cublasDestroy(all[i]);
  free(all);
  all = NULL;
  nall = cap = 0;
  pthread_mutex_unlock(&lock);
}
