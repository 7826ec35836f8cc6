/* The toolkit's math libraries load at first use (cuda/cuda_libload.h): a
 * program that links weft and none of them starts with none of them
 * mapped; the loader names what it could not open or find, says so again
 * on the next call, and gives those words for a create's status alone; with a
 * CUDA device, weft_cublas() in a task opens cuBLAS (and cuBLASLt, its
 * dependency) and leaves cuSPARSE and cuFFT unopened until asked for, and
 * weft_cusparse() then opens cuSPARSE. The device part is skipped without a
 * device; the rest runs anywhere. */
#define _GNU_SOURCE
#include <cuda_runtime.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "cuda/cuda_libload.h"
#include "expect.h"
#include "weft.h"
#include "weft/cuda.h"
#include "weft/cuda_libraries.h"

static int found_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  const char **want = arg;
  const char *slash = strrchr(info->dlpi_name, '/');
  const char *base = slash ? slash + 1 : info->dlpi_name;
  size_t n = strlen(*want);
  if (strncmp(base, *want, n) == 0 && base[n] == '.') {
    *want = NULL;
    return 1;
  }
  return 0;
}

/* Whether a library named base (e.g. "libcublas.so") is mapped. */
static int mapped(const char *base) {
  const char *want = base;
  dl_iterate_phdr(found_cb, &want);
  return want == NULL;
}

static const char *const math[] = {"libcublas.so",   "libcublasLt.so",
                                   "libcusolver.so", "libcusparse.so",
                                   "libcufft.so",    "libcurand.so"};

static void *sym_a, *sym_b;

static void loader_errors(void) {
  weft__cuda_symbol none[] = {{"cublasCreate_v2", &sym_a}};
  weft__cuda_lib missing = {
      .soname = "libweft-no-such-library.so.1", .syms = none, .nsyms = 1};
  EXPECT(weft__cuda_lib_open(&missing) == -1);
  EXPECT_MSG(strstr(missing.error, "cannot load libweft-no-such-library.so.1"),
             "the loader's words: %s", missing.error);
  EXPECT(!weft__cuda_lib_ready(&missing));
  EXPECT(weft__cuda_lib_open(&missing) == -1); /* the same answer again */
  /* A description's describe gives these words for the create's status
   * alone. */
  EXPECT(weft__cuda_lib_missing(&missing, WEFT__CUDA_LIB_MISSING) ==
         missing.error);
  EXPECT(weft__cuda_lib_missing(&missing, 3) == NULL);
  weft__cuda_symbol absent[] = {{"malloc", &sym_a},
                                {"weft_no_such_symbol", &sym_b}};
  weft__cuda_lib libc = {.soname = "libc.so.6", .syms = absent, .nsyms = 2};
  EXPECT(weft__cuda_lib_open(&libc) == -1);
  EXPECT_MSG(strstr(libc.error, "libc.so.6 has no weft_no_such_symbol"),
             "the loader's words: %s", libc.error);
  EXPECT_MSG(sym_a == NULL, "a failed open left a symbol resolved");
  weft__cuda_symbol present[] = {{"malloc", &sym_a}};
  weft__cuda_lib ok = {.soname = "libc.so.6", .syms = present, .nsyms = 1};
  EXPECT_OK(weft__cuda_lib_open(&ok));
  EXPECT(weft__cuda_lib_ready(&ok) && sym_a != NULL);
  /* An open library's -1 is another failure (a set_stream's): no words. */
  EXPECT(weft__cuda_lib_missing(&ok, WEFT__CUDA_LIB_MISSING) == NULL);
}

typedef struct job {
  int blas_after, sparse_before, sparse_after, fft_before;
  const void *blas, *sparse;
} job;

static void first_use(void *arg) {
  job *j = arg;
  j->blas = weft_cublas();
  j->blas_after = mapped("libcublas.so") && mapped("libcublasLt.so");
  j->sparse_before = mapped("libcusparse.so");
  j->fft_before = mapped("libcufft.so");
  j->sparse = weft_cusparse();
  j->sparse_after = mapped("libcusparse.so");
}

int main(void) {
  for (size_t i = 0; i < sizeof math / sizeof math[0]; i++)
    EXPECT_MSG(!mapped(math[i]), "%s is mapped before its first use", math[i]);
  loader_errors();

  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_CUDA;
  o.stack_size = (size_t)1 << 20;
  weft_runtime *rt;
  int rc = weft_init(&rt, &o);
  if (rc == WEFT_ENODEV) {
    printf("no CUDA device: the first-use part not run\n");
    return 0;
  }
  EXPECT_OK(rc);
  for (size_t i = 0; i < sizeof math / sizeof math[0]; i++)
    EXPECT_MSG(!mapped(math[i]), "%s is mapped by weft_init", math[i]);
  job j = {0};
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, first_use, &j, NULL));
  EXPECT_OK(weft_task_join(t));
  EXPECT_MSG(j.blas != NULL, "weft_cublas: %s", weft_last_error_message());
  EXPECT_MSG(j.blas_after, "cuBLAS is not mapped after weft_cublas()");
  EXPECT_MSG(!j.sparse_before && !j.fft_before,
             "cuSPARSE or cuFFT was opened with cuBLAS");
  EXPECT_MSG(j.sparse != NULL, "weft_cusparse: %s", weft_last_error_message());
  EXPECT_MSG(j.sparse_after, "cuSPARSE is not mapped after weft_cusparse()");
  EXPECT_OK(weft_shutdown(rt));
  printf("math libraries opened at first use: ok\n");
  return 0;
}
