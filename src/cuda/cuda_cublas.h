/* weft's cuBLAS handles (cuda_cublas.c), for weft/cuda.h (cuda_api.c). */
#ifndef WEFT__CUDA_CUBLAS_H
#define WEFT__CUDA_CUBLAS_H

#include <cublas_v2.h>
#include <stddef.h>

typedef struct weft_runtime weft_runtime;

/* Cached per thread: weft_cublas and weft_cublas_workspace (weft/cuda.h)
 * are these. */
cublasHandle_t weft__cuda_cublas(void);
int weft__cuda_cublas_warm(weft_runtime *rt);
int weft__cuda_cublas_workspace(void **ptr, size_t *bytes);

#endif
