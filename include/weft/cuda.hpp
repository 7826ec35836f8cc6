/* weft.hpp's CUDA side: the caller's stream and the CUDA toolkit's
 * library handles that follow the task (weft/cuda.h,
 * weft/cuda_libraries.h), throwing weft::error where the C calls return
 * NULL, with the C call's error code (weft_last_error) and message. The
 * non-throwing form of each is its C call (weft_cublas() and the rest),
 * usable as is from C++.
 * Needs the CUDA toolkit's include directory, from g++, clang++ or nvcc
 * (weft.hpp includes it under nvcc, for <<<..., weft::stream()>>>).
 * Errors: each call's C counterpart's, thrown. Context: theirs. */
#ifndef WEFT_CUDA_HPP
#define WEFT_CUDA_HPP

#include "../weft.hpp"
#include "cuda.h"
#include "cuda_libraries.h"

namespace weft {

namespace detail {
/* h, or the failure that made it NULL, thrown. */
template <class H> H or_fail(H h) {
  if (!h) {
    int rc = weft_last_error();
    fail(rc < 0 ? rc : WEFT_EDEVICE);
  }
  return h;
}
} // namespace detail

/* The caller's CUDA stream (weft_cuda_stream), for
 * <<<grid, block, 0, weft::stream()>>> and for libraries; never the
 * legacy default stream. */
inline cudaStream_t stream() { return detail::or_fail(weft_cuda_stream()); }

/* Library handles bound to the caller's stream (weft_cublas(),
 * weft_cusparse(), weft_cusolver_dn()); cuBLASLt's takes the stream per
 * call (pass weft::stream()). */
inline cublasHandle_t cublas() { return detail::or_fail(weft_cublas()); }
inline cublasLtHandle_t cublaslt() { return detail::or_fail(weft_cublaslt()); }
inline cusparseHandle_t cusparse() { return detail::or_fail(weft_cusparse()); }
inline cusolverDnHandle_t cusolver_dn() {
  return detail::or_fail(weft_cusolver_dn());
}
/* The caller's stream's generator set to seed and offset (weft_curand). */
inline curandGenerator_t curand(unsigned long long seed,
                                unsigned long long offset = 0) {
  return detail::or_fail(weft_curand(seed, offset));
}
/* The caller's stream's cuFFT plan for shape (weft_cufft_plan). */
inline cufftHandle cufft_plan(const weft_fft_shape &shape) {
  cufftHandle plan;
  detail::check(weft_cufft_plan(&shape, &plan));
  return plan;
}
/* Makes every worker's cuBLAS handles now (weft_cublas_warm). */
inline void cublas_warm(runtime &rt) {
  detail::check(weft_cublas_warm(rt.get()));
}

} // namespace weft

#endif
