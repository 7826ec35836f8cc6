/* The cores this process may run on: what sizes the worker and executor
 * pools by default, and whether waiting threads may spin. */
#include "cpus.h"

#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#endif

int weft__cpus_available(void) {
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0)
      return n;
  }
#endif
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}
