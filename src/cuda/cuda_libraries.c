/* weft/cuda_libraries.h: the toolkit's libraries as descriptions on the
 * handle cache of weft/library.h (library.c), each compiled in when the
 * build found it (WEFT_HAVE_<LIB>) and opened at its first handle's create
 * (cuda_libload.h), which the cache runs on the thread's own stack with
 * weft check looking away (a handle's set-up is deliberate, once). */
#include <stdlib.h>
#include <string.h>

#include "cuda_device.h"
#include "cuda_libload.h"
#include "error_internal.h"
#include "library_internal.h"
#include "weft/cuda_libraries.h"

/* Fetches lib's handle for key into *h, the caller refused unless it runs
 * on the CUDA backend; 0 or the error. */
static int fetch(const char *call, const weft_library *lib, const void *key,
                 size_t key_bytes, void **h) {
  *h = NULL;
  weft__stream *s;
  return weft__library_enter(call, WEFT_BACKEND_CUDA, lib, key, key_bytes, &s,
                             h);
}

/* The handle of an unkeyed library, or NULL. */
static void *fetch_handle(const char *call, const weft_library *lib) {
  void *h;
  return fetch(call, lib, NULL, 0, &h) == 0 ? h : NULL;
}

/* A describe for a library whose statuses weft has no words for: the
 * loader's, when it would not open. */
#define DESCRIBE_MISSING(fn, so)                                               \
  static const char *fn(int st) { return weft__cuda_lib_missing(&so, st); }

static int not_built(const char *call, const char *lib) {
  return weft__err(WEFT_ENOTSUP, "%s: weft was built without %s", call, lib);
}

/* ---- cuBLASLt ---- */

#if WEFT_HAVE_CUBLASLT
static struct {
  __typeof__(cublasLtCreate) *create;
  __typeof__(cublasLtDestroy) *destroy;
  __typeof__(cublasLtGetStatusString) *status_string;
} lt;
static const weft__cuda_symbol lt_syms[] = {
    WEFT__CUDA_SYM(lt, create, "cublasLtCreate"),
    WEFT__CUDA_SYM(lt, destroy, "cublasLtDestroy"),
    WEFT__CUDA_SYM(lt, status_string, "cublasLtGetStatusString")};
static weft__cuda_lib lt_so =
    WEFT__CUDA_LIB("cublasLt", CUBLAS_VER_MAJOR, lt_syms);

static int lt_create(void *user, int dev, const void *key, size_t key_bytes,
                     void **h) {
  (void)user, (void)key, (void)key_bytes;
  /* On dev by asking CUDA: the cache is stale after the thread's own
   * cudaSetDevice (cuda_device.h), and each create below binds to the
   * current device. */
  int rc = weft__cuda_use_device(dev, NULL);
  if (rc)
    return rc;
  if (weft__cuda_lib_open(&lt_so))
    return WEFT__CUDA_LIB_MISSING;
  return (int)lt.create((cublasLtHandle_t *)h);
}

/* cuBLASLt takes its stream per call. */
static int lt_set_stream(void *user, void *h, void *stream) {
  (void)user, (void)h, (void)stream;
  return 0;
}

static void lt_destroy(void *user, void *h) {
  (void)user;
  lt.destroy(h);
}

static const char *lt_describe(int st) {
  if (st == WEFT__CUDA_LIB_MISSING)
    return weft__cuda_lib_missing(&lt_so, st);
  /* A negative status is the device switch's WEFT_E* code, maybe before
   * the open. */
  return st > 0 ? lt.status_string((cublasStatus_t)st) : NULL;
}

static const weft_library lt_lib = {.struct_size = sizeof lt_lib,
                                    .name = "cublasLt",
                                    .create = lt_create,
                                    .set_stream = lt_set_stream,
                                    .destroy = lt_destroy,
                                    .describe = lt_describe};
#endif

cublasLtHandle_t weft_cublaslt(void) {
#if WEFT_HAVE_CUBLASLT
  return fetch_handle("weft_cublaslt", &lt_lib);
#else
  not_built("weft_cublaslt", "cuBLASLt");
  return NULL;
#endif
}

/* ---- cuSPARSE ---- */

#if WEFT_HAVE_CUSPARSE
static struct {
  __typeof__(cusparseCreate) *create;
  __typeof__(cusparseSetStream) *set_stream;
  __typeof__(cusparseDestroy) *destroy;
  __typeof__(cusparseGetErrorString) *error_string;
} sp;
static const weft__cuda_symbol sp_syms[] = {
    WEFT__CUDA_SYM(sp, create, "cusparseCreate"),
    WEFT__CUDA_SYM(sp, set_stream, "cusparseSetStream"),
    WEFT__CUDA_SYM(sp, destroy, "cusparseDestroy"),
    WEFT__CUDA_SYM(sp, error_string, "cusparseGetErrorString")};
static weft__cuda_lib sp_so =
    WEFT__CUDA_LIB("cusparse", CUSPARSE_VER_MAJOR, sp_syms);

static int sp_create(void *user, int dev, const void *key, size_t key_bytes,
                     void **h) {
  (void)user, (void)key, (void)key_bytes;
  int rc = weft__cuda_use_device(dev, NULL);
  if (rc)
    return rc;
  if (weft__cuda_lib_open(&sp_so))
    return WEFT__CUDA_LIB_MISSING;
  return (int)sp.create((cusparseHandle_t *)h);
}

static int sp_set_stream(void *user, void *h, void *stream) {
  (void)user;
  return (int)sp.set_stream(h, stream);
}

static void sp_destroy(void *user, void *h) {
  (void)user;
  sp.destroy(h);
}

static const char *sp_describe(int st) {
  if (st == WEFT__CUDA_LIB_MISSING)
    return weft__cuda_lib_missing(&sp_so, st);
  return st > 0 ? sp.error_string((cusparseStatus_t)st) : NULL;
}

static const weft_library sp_lib = {.struct_size = sizeof sp_lib,
                                    .name = "cusparse",
                                    .create = sp_create,
                                    .set_stream = sp_set_stream,
                                    .destroy = sp_destroy,
                                    .describe = sp_describe};
#endif

cusparseHandle_t weft_cusparse(void) {
#if WEFT_HAVE_CUSPARSE
  return fetch_handle("weft_cusparse", &sp_lib);
#else
  not_built("weft_cusparse", "cuSPARSE");
  return NULL;
#endif
}

/* ---- cuSOLVER (dense) ---- */

#if WEFT_HAVE_CUSOLVER
static struct {
  __typeof__(cusolverDnCreate) *create;
  __typeof__(cusolverDnSetStream) *set_stream;
  __typeof__(cusolverDnDestroy) *destroy;
} dn;
static const weft__cuda_symbol dn_syms[] = {
    WEFT__CUDA_SYM(dn, create, "cusolverDnCreate"),
    WEFT__CUDA_SYM(dn, set_stream, "cusolverDnSetStream"),
    WEFT__CUDA_SYM(dn, destroy, "cusolverDnDestroy")};
static weft__cuda_lib dn_so =
    WEFT__CUDA_LIB("cusolver", CUSOLVER_VER_MAJOR, dn_syms);
DESCRIBE_MISSING(dn_describe, dn_so)

static int dn_create(void *user, int dev, const void *key, size_t key_bytes,
                     void **h) {
  (void)user, (void)key, (void)key_bytes;
  int rc = weft__cuda_use_device(dev, NULL);
  if (rc)
    return rc;
  if (weft__cuda_lib_open(&dn_so))
    return WEFT__CUDA_LIB_MISSING;
  return (int)dn.create((cusolverDnHandle_t *)h);
}

static int dn_set_stream(void *user, void *h, void *stream) {
  (void)user;
  return (int)dn.set_stream(h, stream);
}

static void dn_destroy(void *user, void *h) {
  (void)user;
  dn.destroy(h);
}

static const weft_library dn_lib = {.struct_size = sizeof dn_lib,
                                    .name = "cusolverDn",
                                    .create = dn_create,
                                    .set_stream = dn_set_stream,
                                    .destroy = dn_destroy,
                                    .describe = dn_describe,
                                    .per_stream =
                                        WEFT_LIBRARY_PER_STREAM_REUSED};
#endif

cusolverDnHandle_t weft_cusolver_dn(void) {
#if WEFT_HAVE_CUSOLVER
  return fetch_handle("weft_cusolver_dn", &dn_lib);
#else
  not_built("weft_cusolver_dn", "cuSOLVER");
  return NULL;
#endif
}

/* ---- cuRAND ---- */

#if WEFT_HAVE_CURAND
static struct {
  __typeof__(curandCreateGenerator) *create;
  __typeof__(curandSetStream) *set_stream;
  __typeof__(curandGenerateSeeds) *generate_seeds;
  __typeof__(curandDestroyGenerator) *destroy;
  __typeof__(curandSetPseudoRandomGeneratorSeed) *set_seed;
  __typeof__(curandSetGeneratorOffset) *set_offset;
} rnd;
static const weft__cuda_symbol rnd_syms[] = {
    WEFT__CUDA_SYM(rnd, create, "curandCreateGenerator"),
    WEFT__CUDA_SYM(rnd, set_stream, "curandSetStream"),
    WEFT__CUDA_SYM(rnd, generate_seeds, "curandGenerateSeeds"),
    WEFT__CUDA_SYM(rnd, destroy, "curandDestroyGenerator"),
    WEFT__CUDA_SYM(rnd, set_seed, "curandSetPseudoRandomGeneratorSeed"),
    WEFT__CUDA_SYM(rnd, set_offset, "curandSetGeneratorOffset")};
static weft__cuda_lib rnd_so =
    WEFT__CUDA_LIB("curand", CURAND_VER_MAJOR, rnd_syms);
DESCRIBE_MISSING(rand_describe, rnd_so)

static int rand_create(void *user, int dev, const void *key, size_t key_bytes,
                       void **h) {
  (void)user, (void)key, (void)key_bytes;
  int rc = weft__cuda_use_device(dev, NULL);
  if (rc)
    return rc;
  if (weft__cuda_lib_open(&rnd_so))
    return WEFT__CUDA_LIB_MISSING;
  return (int)rnd.create((curandGenerator_t *)h,
                         CURAND_RNG_PSEUDO_PHILOX4_32_10);
}

/* Called once, when the stream's generator is made (per_stream). The
 * generator's first draw would allocate its state (a cudaMalloc, which
 * weft check reports, inside a task); curandGenerateSeeds does that here,
 * once per stream. Each new seed still costs a device-wide wait in the
 * next draw (the header says so; docs/decisions/libraries.md, "cuRAND's
 * set-up moved out of the tasks"). */
static int rand_set_stream(void *user, void *h, void *stream) {
  (void)user;
  curandStatus_t st = rnd.set_stream(h, stream);
  weft__check_quiet++;
  if (st == CURAND_STATUS_SUCCESS)
    st = rnd.generate_seeds(h);
  weft__check_quiet--;
  return (int)st;
}

static void rand_destroy(void *user, void *h) {
  (void)user;
  rnd.destroy(h);
}

static const weft_library rand_lib = {.struct_size = sizeof rand_lib,
                                      .name = "curand",
                                      .create = rand_create,
                                      .set_stream = rand_set_stream,
                                      .destroy = rand_destroy,
                                      .describe = rand_describe,
                                      .per_stream = WEFT_LIBRARY_PER_STREAM};
#endif

curandGenerator_t weft_curand(unsigned long long seed,
                              unsigned long long offset) {
#if WEFT_HAVE_CURAND
  curandGenerator_t g = fetch_handle("weft_curand", &rand_lib);
  if (!g)
    return NULL;
  curandStatus_t st = rnd.set_seed(g, seed);
  if (st == CURAND_STATUS_SUCCESS)
    st = rnd.set_offset(g, offset);
  if (st != CURAND_STATUS_SUCCESS) {
    weft__err_raw(WEFT_EDEVICE, (int)st,
                  "weft_curand: setting seed and offset: curandStatus %d",
                  (int)st);
    return NULL;
  }
  return g;
#else
  (void)seed, (void)offset;
  not_built("weft_curand", "cuRAND");
  return NULL;
#endif
}

/* ---- cuFFT ---- */

#if WEFT_HAVE_CUFFT
static struct {
  __typeof__(cufftCreate) *create;
  __typeof__(cufftMakePlanMany) *make_plan_many;
  __typeof__(cufftSetStream) *set_stream;
  __typeof__(cufftDestroy) *destroy;
} fft;
static const weft__cuda_symbol fft_syms[] = {
    WEFT__CUDA_SYM(fft, create, "cufftCreate"),
    WEFT__CUDA_SYM(fft, make_plan_many, "cufftMakePlanMany"),
    WEFT__CUDA_SYM(fft, set_stream, "cufftSetStream"),
    WEFT__CUDA_SYM(fft, destroy, "cufftDestroy")};
static weft__cuda_lib fft_so =
    WEFT__CUDA_LIB("cufft", CUFFT_VER_MAJOR, fft_syms);
DESCRIBE_MISSING(fft_describe, fft_so)

static int fft_create(void *user, int dev, const void *key, size_t key_bytes,
                      void **h) {
  (void)user, (void)key_bytes;
  int rc = weft__cuda_use_device(dev, NULL);
  if (rc)
    return rc;
  if (weft__cuda_lib_open(&fft_so))
    return WEFT__CUDA_LIB_MISSING;
  weft_fft_shape sh;
  memcpy(&sh, key, sizeof sh);
  cufftHandle *plan = malloc(sizeof *plan);
  if (!plan)
    return CUFFT_ALLOC_FAILED;
  size_t work = 0;
  cufftResult r = fft.create(plan);
  if (r == CUFFT_SUCCESS) {
    r = fft.make_plan_many(*plan, sh.rank, sh.n, NULL, 1, 0, NULL, 1, 0,
                           sh.type, sh.batch, &work);
    if (r != CUFFT_SUCCESS)
      fft.destroy(*plan);
  }
  if (r != CUFFT_SUCCESS) {
    free(plan);
    return (int)r;
  }
  *h = plan;
  return 0;
}

static int fft_set_stream(void *user, void *h, void *stream) {
  (void)user;
  return (int)fft.set_stream(*(cufftHandle *)h, stream);
}

static void fft_destroy(void *user, void *h) {
  (void)user;
  fft.destroy(*(cufftHandle *)h);
  free(h);
}

static const weft_library fft_lib = {.struct_size = sizeof fft_lib,
                                     .name = "cufft",
                                     .create = fft_create,
                                     .set_stream = fft_set_stream,
                                     .destroy = fft_destroy,
                                     .describe = fft_describe,
                                     .per_stream =
                                         WEFT_LIBRARY_PER_STREAM_REUSED};
#endif

int weft_cufft_plan(const weft_fft_shape *shape, cufftHandle *plan) {
  if (!shape || !plan)
    return weft__err(WEFT_EINVAL, "weft_cufft_plan: NULL argument");
  if (shape->rank < 1 || shape->rank > 3 || shape->batch < 1)
    return weft__err(WEFT_EINVAL,
                     "weft_cufft_plan: rank %d, batch %d (rank 1 to 3, "
                     "batch 1 or more)",
                     shape->rank, shape->batch);
  /* The key: the shape with the unused sizes zeroed, so that what the
   * caller left there does not split one shape into two plans. */
  weft_fft_shape key;
  memset(&key, 0, sizeof key);
  key.rank = shape->rank;
  key.type = shape->type;
  key.batch = shape->batch;
  for (int i = 0; i < shape->rank; i++) {
    if (shape->n[i] < 1)
      return weft__err(WEFT_EINVAL, "weft_cufft_plan: n[%d] = %d", i,
                       shape->n[i]);
    key.n[i] = shape->n[i];
  }
#if WEFT_HAVE_CUFFT
  void *h;
  int rc = fetch("weft_cufft_plan", &fft_lib, &key, sizeof key, &h);
  if (rc == 0)
    *plan = *(cufftHandle *)h;
  return rc;
#else
  return not_built("weft_cufft_plan", "cuFFT");
#endif
}
