/* A build without CUDA: the seeds' kernels have no GPU versions. */
#include <stddef.h>

#include "seed_kernels.h"

const void *const seed_cuda_cube = NULL;
const void *const seed_cuda_sine = NULL;
const void *const seed_cuda_layer = NULL;
