/* A build without CUDA: the demo kernels have no GPU versions. */
#include <stddef.h>

#include "demo_kernels.h"

const void *const weft_demo_cuda_partial_reduce = NULL;
const void *const weft_demo_cuda_single_thread_sum = NULL;
const void *const weft_demo_cuda_divide_by = NULL;
