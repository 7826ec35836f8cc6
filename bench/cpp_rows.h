/* The rows of weft.hpp (cpp_rows.cpp), called from the C scenarios beside
 * the C API's rows they are compared with. WEFT_BENCH_CXX is defined when
 * they are built. */
#ifndef WEFT_BENCH_CPP_ROWS_H
#define WEFT_BENCH_CPP_ROWS_H

#include "weft.h"

#ifdef __cplusplus
extern "C" {
#endif

/* n spawn + join pairs of a capturing lambda (weft::spawn, join), from
 * the calling task; each child adds 1 to *ran (one at a time: each is
 * joined before the next starts). 0 or the error. */
int bench_cpp_spawn_join(long n, long *ran);

/* One typed launch (weft::kernel<unsigned *>, weft::try_launch) of tick
 * over one thread, its argument counter. weft_launch's result. */
int bench_cpp_launch(const weft_kernel *tick, unsigned *counter);

#ifdef __cplusplus
}
#endif
#endif
