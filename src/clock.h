/* The one clock of weft's records and measurements: CLOCK_MONOTONIC in
 * nanoseconds (cuda_trace.c converts CUPTI's timestamps to it). */
#ifndef WEFT__CLOCK_H
#define WEFT__CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t weft__clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
