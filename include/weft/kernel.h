/* Kernels: one description that runs on either backend.
 *
 * A kernel carries the address of a __global__ function for the CUDA backend
 * (compiled by nvcc in the user's .cu file) and/or a plain C function for the
 * host backend. The host function is called once per block, with the block's
 * index and a scratch buffer standing in for shared memory; it does the work
 * of all the block's threads itself. Both receive the same argument array,
 * laid out as cudaLaunchKernel's kernelParams: args[i] points at the value of
 * parameter i. The host function runs on one of the backend's executor
 * threads, as device code does on the GPU: it must not call weft (a
 * weft_sync there would wait for the very stream it runs on). */
#ifndef WEFT_KERNEL_H
#define WEFT_KERNEL_H

#include "common.h"

WEFT_BEGIN_DECLS

typedef struct weft_dim3 {
  unsigned int x, y, z;
} weft_dim3;

/* A grid or block shape; missing dimensions are 1. */
#define WEFT_DIM3(x, y, z) ((weft_dim3){(x), (y), (z)})
#define WEFT_DIM1(x) ((weft_dim3){(x), 1, 1})

/* What a host kernel function sees of its launch. */
typedef struct weft_kernel_ctx {
  weft_dim3 grid_dim;  /* gridDim */
  weft_dim3 block_dim; /* blockDim */
  weft_dim3 block_idx; /* blockIdx of this call */
  void *shared;        /* shared-memory bytes asked for at launch, or NULL */
} weft_kernel_ctx;

typedef void (*weft_host_fn)(const weft_kernel_ctx *ctx, void **args);

#define WEFT_KERNEL_MAX_ARGS 16

typedef struct weft_kernel {
  const void *cuda;  /* __global__ function address, or NULL */
  weft_host_fn host; /* host-backend implementation, or NULL */
  const char *name;  /* shown in traces and errors; may be NULL */
  /* Parameter sizes. The host backend runs kernels later, on its own
   * threads, so like CUDA it copies the parameter values at launch; it needs
   * their sizes for that. Fill with WEFT_KERNEL_ARGS(type, ...). */
  unsigned nargs;
  unsigned short arg_size[WEFT_KERNEL_MAX_ARGS];
  /* Parameters the kernel only reads, e.g. .reads = WEFT_ARG_READ(0) |
   * WEFT_ARG_READ(1) for parameters 0 and 1 (counted from 0): weft
   * check (WEFT_CHECK=1) counts a pointer parameter into weft's memory as
   * a write unless its bit is set here, so two tasks' kernels that only
   * read one buffer are not a race. 0 (the default): every pointer may be
   * written. */
  unsigned reads;
} weft_kernel;

/* Names a __global__ function, defined with extern "C" in a .cu file, for
 * use in a weft_kernel initialiser from C:
 *   WEFT_CUDA_KERNEL_DECL(scale);          (at file scope)
 *   weft_kernel k = {.cuda = WEFT_CUDA_KERNEL(scale), ...};
 * The reference is weak: a build that does not compile the .cu (no CUDA)
 * still links, and the kernel's .cuda is then NULL. The address is that of
 * the host-side stub nvcc generates, which is what cudaLaunchKernel takes. */
#define WEFT_CUDA_KERNEL_DECL(fn) extern void fn(void) __attribute__((weak))
#define WEFT_CUDA_KERNEL(fn) ((const void *)(fn))

/* Designated initialisers for a kernel's parameter list, e.g.
 *   weft_kernel k = {.cuda = (const void *)scale, .host = scale_host,
 *                    .name = "scale", WEFT_KERNEL_ARGS(float *, float, int)};
 * A kernel without parameters leaves it out (nargs 0) and is launched with
 * args NULL; WEFT_KERNEL_ARGS() with nothing in it does not compile. */
#define WEFT_KERNEL_ARGS(...)                                                  \
  .nargs = WEFT__NARGS(__VA_ARGS__), .arg_size = {WEFT__SIZES(__VA_ARGS__)}

/* The bit of parameter i in weft_kernel.reads. */
#define WEFT_ARG_READ(i) (1u << (i))

/* Argument counting and sizeof mapping for up to 16 parameters. */
#define WEFT__NARGS(...)                                                       \
  WEFT__NARGS_(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3,   \
               2, 1)
#define WEFT__NARGS_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13,   \
                     a14, a15, a16, n, ...)                                    \
  n
#define WEFT__CAT(a, b) WEFT__CAT_(a, b)
#define WEFT__CAT_(a, b) a##b
#define WEFT__SIZES(...)                                                       \
  WEFT__CAT(WEFT__SZ_, WEFT__NARGS(__VA_ARGS__))(__VA_ARGS__)
#define WEFT__SZ_1(a) sizeof(a)
#define WEFT__SZ_2(a, ...) sizeof(a), WEFT__SZ_1(__VA_ARGS__)
#define WEFT__SZ_3(a, ...) sizeof(a), WEFT__SZ_2(__VA_ARGS__)
#define WEFT__SZ_4(a, ...) sizeof(a), WEFT__SZ_3(__VA_ARGS__)
#define WEFT__SZ_5(a, ...) sizeof(a), WEFT__SZ_4(__VA_ARGS__)
#define WEFT__SZ_6(a, ...) sizeof(a), WEFT__SZ_5(__VA_ARGS__)
#define WEFT__SZ_7(a, ...) sizeof(a), WEFT__SZ_6(__VA_ARGS__)
#define WEFT__SZ_8(a, ...) sizeof(a), WEFT__SZ_7(__VA_ARGS__)
#define WEFT__SZ_9(a, ...) sizeof(a), WEFT__SZ_8(__VA_ARGS__)
#define WEFT__SZ_10(a, ...) sizeof(a), WEFT__SZ_9(__VA_ARGS__)
#define WEFT__SZ_11(a, ...) sizeof(a), WEFT__SZ_10(__VA_ARGS__)
#define WEFT__SZ_12(a, ...) sizeof(a), WEFT__SZ_11(__VA_ARGS__)
#define WEFT__SZ_13(a, ...) sizeof(a), WEFT__SZ_12(__VA_ARGS__)
#define WEFT__SZ_14(a, ...) sizeof(a), WEFT__SZ_13(__VA_ARGS__)
#define WEFT__SZ_15(a, ...) sizeof(a), WEFT__SZ_14(__VA_ARGS__)
#define WEFT__SZ_16(a, ...) sizeof(a), WEFT__SZ_15(__VA_ARGS__)

/* Launches k over grid x block on the current task's (or thread's)
 * stream. args holds k->nargs pointers to parameter values; they are
 * copied before the call returns.
 * Errors: WEFT_EINVAL (k NULL; more than WEFT_KERNEL_MAX_ARGS parameters, or
 * one without value or size; args given to a kernel that declares no
 * parameters, on every backend; a zero dimension, more threads per block than
 * the device allows, grid y or z above 65535; on the host backend, more
 * than 1 GiB of shared memory), WEFT_ENOTSUP (no implementation for this
 * backend), WEFT_ESTATE (no runtime), WEFT_ENOMEM, device errors.
 * Context: any thread; never blocks, except a CUDA kernel's first launch,
 * which loads it and can wait for kernels running on other streams (see
 * weft_kernel_preload): that one blocks the worker. */
WEFT_API int weft_launch(const weft_kernel *k, weft_dim3 grid, weft_dim3 block,
                         size_t shared_bytes, void **args);

/* Loads k's code on the current task's device now. CUDA loads kernels
 * lazily, at their first launch (CUDA_MODULE_LOADING=LAZY, the default),
 * and that loading can wait for kernels already running on other streams:
 * a first launch may not overlap, and a kernel that waits for another
 * task's kernel to be loaded deadlocks. Preload such kernels once, or run
 * with CUDA_MODULE_LOADING=EAGER. On the host backend it only checks k.
 * Errors: WEFT_ESTATE (no runtime), WEFT_EINVAL (k NULL), WEFT_ENOTSUP (no
 * implementation for this backend, on the host backend too), device errors.
 * Context: any thread; blocks the worker while CUDA loads the code. */
WEFT_API int weft_kernel_preload(const weft_kernel *k);

WEFT_END_DECLS

#endif
