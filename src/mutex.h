/* The runtime's hot locks: held for a few dozen instructions, so a thread
 * that finds one taken spins a little before it sleeps (glibc's adaptive
 * mutex), rather than paying a futex sleep and its wake-up
 * (docs/decisions/scheduler.md, "The hot locks spin before they sleep"). */
#ifndef WEFT__MUTEX_H
#define WEFT__MUTEX_H

#include <pthread.h>

static inline int weft__mutex_init(pthread_mutex_t *m) {
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
  pthread_mutexattr_t a;
  if (pthread_mutexattr_init(&a) != 0)
    return -1;
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
  int rc = pthread_mutex_init(m, &a);
  pthread_mutexattr_destroy(&a);
  return rc;
#else
  return pthread_mutex_init(m, NULL);
#endif
}

#endif
