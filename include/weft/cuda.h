/* The CUDA side of weft: the only public header that names CUDA types.
 * Include it from code that also calls CUDA itself; it needs the CUDA
 * toolkit's include directory and is usable from C and from nvcc.
 *
 * The current device: the CUDA runtime's current device is per OS thread,
 * and a kernel launch works only on a stream of the current device, so weft
 * calls that enqueue work make their device current on the calling thread
 * (cudaSetDevice) and leave it so; event records are such work, and so is
 * weft_pinned_free, which records an event on every stream that used its
 * block. Making streams and events, weft_init and device queries put back
 * the device they found. Code that calls cudaSetDevice itself may do so
 * freely; weft notices and switches back. */
#ifndef WEFT_CUDA_H
#define WEFT_CUDA_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "common.h"
#include "runtime.h"

WEFT_BEGIN_DECLS

/* The cudaError_t behind the most recent weft failure on the calling thread
 * (or, inside a task, the calling task), when that failure came from a CUDA
 * call; cudaSuccess when it did not or when nothing failed. The same failure
 * as weft_last_error_message() describes. Unlike cudaGetLastError() it
 * clears nothing.
 * Errors: none. Context: any thread; never blocks. */
WEFT_API cudaError_t weft_cuda_last_error(void);

/* The calling task's (or thread's) stream as a cudaStream_t, leased on
 * first use like every weft stream, for launches written as
 *   kernel<<<grid, block, 0, weft_cuda_stream()>>>(...);
 * and for libraries that take a stream. weft_sync() waits for such work too.
 * Returns NULL on failure (no runtime, or the runtime is not on the CUDA
 * backend), with the reason in weft_last_error_message(); since NULL is
 * also CUDA's legacy default stream, which synchronises with every other
 * stream, check it before launching.
 * Errors: NULL, with WEFT_ESTATE (no runtime), WEFT_ENOTSUP (not the CUDA
 * backend), WEFT_ENOMEM or a device error recorded.
 * Context: any thread; never blocks. */
WEFT_API cudaStream_t weft_cuda_stream(void);

/* A cuBLAS handle whose stream is the calling task's (or thread's) stream,
 * so cuBLAS work lands in order with the task's other work and weft_sync()
 * waits for it (a description on weft/library.h's cache; weft/
 * cuda_libraries.h has the toolkit's other libraries). Handles are cached
 * per thread and device (creation is expensive) and moved to the caller's
 * stream only when it changed; they
 * are destroyed at weft_shutdown. A task that waits or yields may resume
 * on another thread: call weft_cublas() again afterwards rather than keep
 * the handle. cuBLAS's first calls load the library and its kernels on
 * deep stacks: tasks that call cuBLAS need weft_runtime_opts.stack_size of
 * 1 MiB or so (the default 64 KiB is not enough). Returns NULL on failure (no
 * runtime, not the CUDA backend, cuBLAS failed), with the reason in
 * weft_last_error_message().
 *
 * Each stream that runs cuBLAS work gets its own workspace on its first
 * weft_cublas() call, kept until weft_shutdown: a stream runs one task's
 * work in order, so no two kernels share scratch memory, whichever
 * thread's handle queued them. Its size is NVIDIA's recommendation for
 * cublasSetWorkspace, 32 MiB on compute capability 9.0 and later and 4 MiB
 * before, or the environment variable WEFT_CUBLAS_WORKSPACE_KIB (KiB; 0
 * leaves cuBLAS its default workspace). That size goes to a device's
 * first 32 such streams; later streams (a data-flow program keeps
 * thousands of tasks in flight, each on its own stream) get 256 KiB
 * slices, 64 to a cudaMalloc. Memory: up to 32 x that size plus 256 KiB
 * per further stream, held until weft_shutdown. If an allocation fails,
 * that stream uses cuBLAS's default.
 * Errors: NULL, with WEFT_ESTATE (no runtime), WEFT_ENOTSUP (not the CUDA
 * backend), WEFT_EINVAL (WEFT_CUBLAS_WORKSPACE_KIB not a number of KiB up
 * to 2^30), WEFT_EDEVICE (cuBLAS failed: its status in the message; or
 * libcublas could not be opened: weft opens it at the first handle, and
 * the message names the file and why), WEFT_ENOMEM, or a device error
 * recorded. weft does not link cuBLAS: a program calling it links it
 * (CUDA::cublas, -lcublas) and weft uses that same copy.
 * Context: any thread; may switch (a thread's first call for a device runs
 * cublasCreate on the worker's own stack, and the task may resume on
 * another worker); blocks the worker for that cublasCreate and for the
 * cudaMalloc of a stream's workspace (or of a slab of slices) on its
 * first call. */
WEFT_API cublasHandle_t weft_cublas(void);

/* Makes weft_cublas()'s handle on every worker thread of rt, and on the
 * calling plain thread (it runs tasks it joins), for every device, now
 * (weft_library_warm), so that no task's first weft_cublas()
 * pays cublasCreate (costly on every thread, most of all the process's
 * first, which loads cuBLAS). The streams' workspaces are still made on each
 * stream's first call. Errors: WEFT_EINVAL (NULL), WEFT_ENOTSUP (not the
 * CUDA backend), WEFT_EDEVICE (cuBLAS failed), WEFT_ENOMEM. Context: a
 * plain thread or a task; blocks until every worker has made its
 * handles. */
WEFT_API int weft_cublas_warm(weft_runtime *rt);

/* The workspace weft_cublas() set up for the calling task's stream: *ptr
 * and *bytes, or NULL and 0 when the stream has none of its own (no
 * weft_cublas() call on it yet, WEFT_CUBLAS_WORKSPACE_KIB=0, or the
 * allocation failed). On failure too, but for a NULL argument, *ptr and
 * *bytes are set to NULL and 0.
 * Errors: WEFT_EINVAL (NULL argument), WEFT_ESTATE (no runtime),
 * WEFT_ENOTSUP (not the CUDA backend), WEFT_ENOMEM, device errors.
 * Context: any thread; never blocks. */
WEFT_API int weft_cublas_workspace(void **ptr, size_t *bytes);

WEFT_END_DECLS

#endif
