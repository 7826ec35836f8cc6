/* A build without CUDA: the test kernels have no GPU versions. */
#include <stddef.h>

#include "kernels.h"

const void *const weft_test_cuda_axpb = NULL;
const void *const weft_test_cuda_spin_until = NULL;
const void *const weft_test_cuda_set_value = NULL;
const void *const weft_test_cuda_copy_int = NULL;
const void *const weft_test_cuda_args_probe = NULL;
const void *const weft_test_cuda_grid_probe = NULL;
const void *const weft_test_cuda_append_order = NULL;
