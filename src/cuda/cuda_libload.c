/* weft__cuda_lib_open (cuda_libload.h): dlopen by soname, then from the
 * toolkit directory weft was built against (WEFT_CUDA_LIBDIR), so that a
 * program that links the same library itself shares its one copy. Bound
 * lazily, as the dynamic linker binds a linked library, and never closed:
 * the handles weft made live until the process ends. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "cuda_libload.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *open_lib(const char *soname, char *why, size_t why_len) {
  void *h = dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
  if (h)
    return h;
  const char *e = dlerror();
  snprintf(why, why_len, "%s", e ? e : "dlopen failed");
#ifdef WEFT_CUDA_LIBDIR
  char path[512];
  if (snprintf(path, sizeof path, "%s/%s", WEFT_CUDA_LIBDIR, soname) <
          (int)sizeof path &&
      (h = dlopen(path, RTLD_LAZY | RTLD_LOCAL)))
    return h;
#endif
  return NULL;
}

static int resolve(weft__cuda_lib *lib) {
  char why[256] = "";
  void *h = open_lib(lib->soname, why, sizeof why);
  if (!h) {
    snprintf(lib->error, sizeof lib->error, "cannot load %s (%s)", lib->soname,
             why);
    return -1;
  }
  for (size_t i = 0; i < lib->nsyms; i++) {
    dlerror();
    void *p = dlsym(h, lib->syms[i].name);
    if (!p) {
      snprintf(lib->error, sizeof lib->error, "%s has no %s", lib->soname,
               lib->syms[i].name);
      for (size_t j = 0; j < i; j++)
        *lib->syms[j].to = NULL;
      return -1;
    }
    *lib->syms[i].to = p;
  }
  return 0;
}

int weft__cuda_lib_open(weft__cuda_lib *lib) {
  int st = atomic_load_explicit(&lib->state, memory_order_acquire);
  if (st)
    return st == 1 ? 0 : -1;
  pthread_mutex_lock(&lock);
  st = atomic_load_explicit(&lib->state, memory_order_relaxed);
  if (!st) {
    st = resolve(lib) == 0 ? 1 : -1;
    atomic_store_explicit(&lib->state, st, memory_order_release);
  }
  pthread_mutex_unlock(&lock);
  return st == 1 ? 0 : -1;
}
