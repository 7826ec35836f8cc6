/* A build without CUDA: the benchmark kernels have no GPU versions. */
#include <stddef.h>

#include "kernels.h"

const void *const bench_cuda_empty = NULL;
const void *const bench_cuda_tick = NULL;
const void *const bench_cuda_affine = NULL;
