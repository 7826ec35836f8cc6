/* cuBLAS workspaces, one per stream, kept per backend and freed at its
 * weft_shutdown (ops->release_libraries).
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
 * 0 there leaves cuBLAS its own default.
 *
 * A stream per task means as many streams as tasks in flight: a data-flow
 * program queues thousands at once, and a full workspace each can run the
 * device out of memory, its cudaMalloc per stream (serialised in the
 * driver) costing more than the work (docs/decisions/libraries.md, "Full
 * workspaces for a device's first 32 streams, slices after"). So the first
 * FULL_STREAMS streams of a device get the full size, each its own
 * allocation, and later ones a SLICE of a slab shared by SLAB_SLICES
 * streams (one cudaMalloc per SLAB_SLICES streams): still a workspace per
 * stream, never cuBLAS's default, which the streams of one handle would
 * share. Each stream finds its own on its weft stream, in O(1). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "cuda_device.h"
#include "cuda_internal.h"
#include "error_internal.h"

enum {
  FULL_STREAMS = 32, /* per device, the recommended size each */
  SLICE = 256 << 10, /* later streams' workspace, bytes (>= 16 KiB) */
  SLAB_SLICES = 64,  /* slices per slab */
};

/* A runtime's workspace allocations, freed at its weft_shutdown, and per
 * device the full workspaces handed out and the slab being sliced. Kept
 * per backend: two runtimes may be open at once. All under the lock. */
typedef struct block {
  int dev;
  void *ptr;
} block;

typedef struct owner {
  struct owner *next;
  const weft__backend *bk;
  block *blocks;
  size_t nblocks, cap;
  struct {
    unsigned full;
    char *slab;
    unsigned sliced;
  } dev[WEFT__MAX_DEVICES];
} owner;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static owner *owners;

/* bk's record, made if missing; NULL when out of memory. Under the lock. */
static owner *owner_of(const weft__backend *bk) {
  for (owner *o = owners; o; o = o->next)
    if (o->bk == bk)
      return o;
  owner *o = calloc(1, sizeof *o);
  if (o) {
    o->bk = bk;
    o->next = owners;
    owners = o;
  }
  return o;
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

/* Keeps p (an allocation of dev) for release; under the lock. */
static int keep_block(owner *o, int dev, void *p) {
  if (o->nblocks == o->cap) {
    size_t nc = o->cap ? o->cap * 2 : 16;
    block *v = realloc(o->blocks, nc * sizeof *v);
    if (!v)
      return weft__err(WEFT_ENOMEM, "weft_cublas: out of memory");
    o->blocks = v;
    o->cap = nc;
  }
  o->blocks[o->nblocks++] = (block){dev, p};
  return 0;
}

/* cudaMalloc of a workspace: once per stream (or slab) for the runtime's
 * life, deliberate, so weft check looks away. NULL when it failed (out of
 * memory: that stream falls back to cuBLAS's default). */
static void *ws_malloc(size_t bytes) {
  void *p = NULL;
  weft__check_quiet++;
  cudaError_t e = cudaMalloc(&p, bytes);
  weft__check_quiet--;
  if (e != cudaSuccess) {
    cudaGetLastError();
    p = NULL;
  }
  return p;
}

/* Makes the workspace of stream s (on its device) unless it has one.
 * Returns 0, or the error, reported. Only the task leasing s calls this, so
 * s's fields need no lock. */
int weft__cuda_workspace_for(weft__cuda_stream *s) {
  if (s->ws_made)
    return 0;
  int dev = s->base.hdr.dev;
  long long bytes = workspace_bytes(dev);
  if (bytes < 0)
    return WEFT_EINVAL;
  if (bytes == 0 || dev < 0 || dev >= WEFT__MAX_DEVICES) {
    s->ws_made = 1; /* cuBLAS's default */
    return 0;
  }
  /* cudaMalloc allocates on the current device and cannot notice a stale
   * cache (code on the thread that called cudaSetDevice itself): ask CUDA,
   * as for every call that would act silently on the wrong device
   * (cuda_device.h). */
  int rc = weft__cuda_use_device(dev, NULL);
  if (rc)
    return rc;
  void *p = NULL;
  size_t got = 0;
  pthread_mutex_lock(&lock);
  owner *o = owner_of(s->base.hdr.bk);
  if (!o) {
    pthread_mutex_unlock(&lock);
    return weft__err(WEFT_ENOMEM, "weft_cublas: out of memory");
  }
  if (o->dev[dev].full < FULL_STREAMS) {
    o->dev[dev].full++;
    pthread_mutex_unlock(&lock);
    /* The large allocation runs unlocked. */
    p = ws_malloc((size_t)bytes);
    got = (size_t)bytes;
    pthread_mutex_lock(&lock);
    if (p && (rc = keep_block(o, dev, p)) != 0) {
      cudaFree(p);
      p = NULL;
    }
  } else {
    size_t slice = (size_t)bytes < SLICE ? (size_t)bytes : SLICE;
    if (!o->dev[dev].slab || o->dev[dev].sliced == SLAB_SLICES) {
      /* Rare (one stream in SLAB_SLICES): the others wait meanwhile. */
      char *slab = ws_malloc((size_t)SLICE * SLAB_SLICES);
      if (slab && (rc = keep_block(o, dev, slab)) != 0) {
        cudaFree(slab);
        slab = NULL;
      }
      o->dev[dev].slab = slab;
      o->dev[dev].sliced = 0;
    }
    if (o->dev[dev].slab) {
      p = o->dev[dev].slab + (size_t)o->dev[dev].sliced++ * SLICE;
      got = slice;
    }
  }
  pthread_mutex_unlock(&lock);
  if (rc)
    return rc;
  s->ws = p;
  s->ws_bytes = p ? got : 0;
  s->ws_made = 1;
  return 0;
}

void weft__cuda_workspace_release(weft__backend *b) {
  pthread_mutex_lock(&lock);
  /* The streams were drained before the libraries are released; cudaFree
   * would wait for them anyway. The handles went with the cache's. */
  owner **pp = &owners;
  while (*pp && (*pp)->bk != b)
    pp = &(*pp)->next;
  owner *o = *pp;
  if (o) {
    *pp = o->next;
    for (size_t i = 0; i < o->nblocks; i++)
      if (weft__cuda_set_device(o->blocks[i].dev) == 0)
        cudaFree(o->blocks[i].ptr);
    free(o->blocks);
    free(o);
  }
  pthread_mutex_unlock(&lock);
}
