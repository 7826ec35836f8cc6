/* The CUDA toolkit's libraries, following the task: cuBLASLt, cuFFT,
 * cuRAND, cuSOLVER (dense) and cuSPARSE handles bound to the calling
 * task's (or thread's) stream, so their work lands in order with the
 * task's other work and weft_sync() waits for it. weft_cublas() (weft/
 * cuda.h) is the same for cuBLAS; weft/library.h does it for any other
 * library. Like weft/cuda.h this header needs the CUDA toolkit's include
 * directory, and a host-only install leaves it out.
 *
 * Handles are made on first use on the thread's own stack (the libraries'
 * set-up needs deep stacks), kept until weft_shutdown, and asked for
 * again after the task waited or yielded (it may resume on another
 * thread). Which handle a call gets, and why:
 *   cuBLASLt, cuSPARSE: one per thread and device, moved to the caller's
 *     stream when it changed (their work takes its scratch memory from the
 *     caller, per call).
 *   cuFFT, cuRAND, cuSOLVER: one per stream and device (cuFFT: and
 *     shape), because the handle carries device memory its kernels use (a
 *     plan's work area, a generator's state; cuSOLVER's handle holds state
 *     of its own, an internal cuBLAS handle among it): two tasks' streams
 *     sharing one would let their kernels share it at once. A stream runs
 *     one task's work at a time, in order. A cuSOLVER handle or a plan
 *     whose stream is idle (back in the pool, its work done) goes to the
 *     next stream that asks and has none, so a program makes as many as
 *     its streams use at once; one asked for inside a graph capture, and
 *     every cuRAND generator (its sequence), stays with its stream.
 *
 * Each library is optional when weft is built: one the build did not find
 * is refused with WEFT_ENOTSUP ("weft was built without cuFFT"). weft
 * links none of them: each is opened at its first handle (a program that
 * calls one links it, and weft uses that copy), and one that cannot be
 * opened fails that call with WEFT_EDEVICE, naming the file and why.
 * Errors (every call): NULL (WEFT_ENOTSUP for weft_cufft_plan), with
 * WEFT_ESTATE (no runtime), WEFT_ENOTSUP (not the CUDA backend, or the
 * library not built in), WEFT_EDEVICE (the library failed: the message
 * has its status and words), WEFT_ENOMEM, or a device error recorded, in
 * weft_last_error_message().
 * Context: any task or thread; may switch (a first call on a thread or
 * stream creates on the worker's own stack, and the task may resume on
 * another worker); blocks the worker for that creation. */
#ifndef WEFT_CUDA_LIBRARIES_H
#define WEFT_CUDA_LIBRARIES_H

#include <cublasLt.h>
#include <cufft.h>
#include <curand.h>
#include <cusolverDn.h>
#include <cusparse.h>

#include "common.h"

WEFT_BEGIN_DECLS

/* A cuBLASLt handle for this thread and device. cuBLASLt takes the stream
 * per call: pass weft_cuda_stream() to cublasLtMatmul. */
WEFT_API cublasLtHandle_t weft_cublaslt(void);

/* A cuSPARSE handle on the caller's stream. */
WEFT_API cusparseHandle_t weft_cusparse(void);

/* A cuSOLVER dense handle on the caller's stream (its own while the
 * stream works; see above). */
WEFT_API cusolverDnHandle_t weft_cusolver_dn(void);

/* The caller's stream's cuRAND generator (Philox4x32-10, one per stream),
 * set to seed and offset: what it generates next depends on those two
 * alone, not on which thread, stream or order, so a task that derives its
 * seed from its own inputs draws the same numbers every run. Pass the
 * offset on (in numbers drawn) to continue a sequence. Cost: the first
 * draw after a new seed or offset sets the generator up again inside
 * cuRAND, and that waits for the whole device (cudaDeviceSynchronize;
 * weft check reports it): call weft_curand once per
 * task and draw on from there, not before every draw. The stream's
 * generator's state is set up when it is made, not in a task. */
WEFT_API curandGenerator_t weft_curand(unsigned long long seed,
                                       unsigned long long offset);

/* The shape of a cuFFT plan: rank 1 to 3, n[0..rank-1] (the rest 0),
 * batch transforms of the given type, in the default packed layout
 * (cufftPlanMany with NULL embeddings). */
typedef struct weft_fft_shape {
  int rank;
  int n[3];
  cufftType type;
  int batch;
} weft_fft_shape;

/* *plan: a cuFFT plan for shape on the caller's stream, one per stream
 * and shape (made by the first call, its work area cuFFT's own).
 * Errors: WEFT_EINVAL (NULL argument, rank outside 1..3, a size or batch
 * below 1), and those above. */
WEFT_API int weft_cufft_plan(const weft_fft_shape *shape, cufftHandle *plan);

WEFT_END_DECLS

#endif
