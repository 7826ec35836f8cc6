/* The rows of weft.hpp, the C++ face (cpp_rows.h): the same loops as the C
 * rows beside them, written as a C++ program writes them. Built when
 * WEFT_WITH_CXX is on; the scenarios skip these rows otherwise. */
#include "cpp_rows.h"

#include <weft.hpp>

extern "C" int bench_cpp_spawn_join(long n, long *ran) {
  /* A capturing lambda of 16 bytes (two pointers): stored in the task
   * without an allocation (weft.hpp's block cache). */
  long one = 1;
  const long *step = &one;
  try {
    for (long i = 0; i < n; i++)
      weft::spawn([ran, step] { *ran += *step; }).join();
  } catch (const weft::error &e) {
    return e.code();
  }
  return 0;
}

extern "C" int bench_cpp_launch(const weft_kernel *tick, unsigned *counter) {
  /* The typed kernel over the C one's two implementations; built once. */
  static const weft::kernel<unsigned *> k(
      reinterpret_cast<void (*)(unsigned *)>(const_cast<void *>(tick->cuda)),
      tick->host, tick->name);
  return weft::try_launch(k, weft::dim3(1), weft::dim3(1), 0, counter);
}
