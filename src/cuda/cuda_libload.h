/* The toolkit's math libraries (cuBLAS, cuBLASLt, cuSPARSE, cuSOLVER,
 * cuRAND, cuFFT), opened with dlopen at their first use instead of linked:
 * linking them cost every program cuBLASLt's start-up before main (125 ms
 * on an H100's host, half a second and 270 MB on a small machine), whether
 * it used them or not (docs/decisions/libraries.md, "The math libraries
 * load at first use"). */
#ifndef WEFT__CUDA_LIBLOAD_H
#define WEFT__CUDA_LIBLOAD_H

#include <stdatomic.h>
#include <stddef.h>

/* One symbol: its name in the library and where its address goes. */
typedef struct weft__cuda_symbol {
  const char *name;
  void **to;
} weft__cuda_symbol;

/* A library to open: its soname (found as the dynamic linker finds it,
 * then in the toolkit's directory that weft was built against) and the
 * symbols weft calls. state: 0 not tried, 1 open, -1 failed (error says
 * why); written once, under the loader's lock. */
typedef struct weft__cuda_lib {
  const char *soname;
  const weft__cuda_symbol *syms;
  size_t nsyms;
  _Atomic int state;
  char error[384];
} weft__cuda_lib;

/* A library's soname from its header's major version, e.g.
 * WEFT__CUDA_SONAME("cublas", CUBLAS_VER_MAJOR) is "libcublas.so.13". */
#define WEFT__CUDA_STR2(x) #x
#define WEFT__CUDA_STR(x) WEFT__CUDA_STR2(x)
#define WEFT__CUDA_SONAME(base, major) "lib" base ".so." WEFT__CUDA_STR(major)

/* A symbol table's entry (fns.field, the symbol name) and a library over a
 * table, static data both. */
#define WEFT__CUDA_SYM(fns, field, name)                                       \
  { name, (void **)&fns.field }
#define WEFT__CUDA_LIB(base, major, table)                                     \
  {                                                                            \
    .soname = WEFT__CUDA_SONAME(base, major), .syms = table,                   \
    .nsyms = sizeof table / sizeof table[0]                                    \
  }

/* What a library description's create returns when its library would not
 * open: its describe gives the loader's words (weft__cuda_lib_missing). */
#define WEFT__CUDA_LIB_MISSING (-1)

/* The loader's words for status, when status says lib would not open (a
 * set_stream's -1 is another failure); else NULL. */
static inline const char *weft__cuda_lib_missing(const weft__cuda_lib *lib,
                                                 int status) {
  return status == WEFT__CUDA_LIB_MISSING && lib->error[0] ? lib->error : NULL;
}

/* Whether lib is open. */
static inline int weft__cuda_lib_ready(weft__cuda_lib *lib) {
  return atomic_load_explicit(&lib->state, memory_order_acquire) == 1;
}

/* Opens lib and resolves its symbols, once (a later call returns the
 * first's answer): 0, or -1 with lib->error saying what failed. Opening
 * runs the library's initialisers: call it on a thread's own stack
 * (weft__worker_call_on_stack), not a fiber's. */
int weft__cuda_lib_open(weft__cuda_lib *lib);

#endif
