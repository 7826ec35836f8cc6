/* The example's two kernels, each with a CUDA and a CPU implementation. */
#ifndef OVERLAP_KERNELS_H
#define OVERLAP_KERNELS_H

#include <weft.h>

/* c = a x b for n x n row-major matrices; 16 x 16 blocks. */
extern const weft_kernel matmul_kernel;
/* x[i] = sin(x[i]) for i < n. */
extern const weft_kernel sine_kernel;

#endif
