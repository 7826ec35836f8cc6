/* weft/mpi.h: MPI waits through weft_wait_until. Built as its own library
 * (weft::mpi) on weft's public API alone, so that weft itself never needs
 * MPI. The test the poll calls is MPI_Test/Testall/Testany, which never
 * block; below MPI_THREAD_MULTIPLE it runs only when the lock is free. */
#include "weft/mpi.h"

#include <pthread.h>

#include "weft.h"

static pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;

void weft_mpi_lock(void) { pthread_mutex_lock(&mpi_lock); }
void weft_mpi_unlock(void) { pthread_mutex_unlock(&mpi_lock); }

/* MPI's state for call: 0 and *level, or the error, reported. */
static int mpi_state(const char *call, int *level) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin)
    return weft_error_set(WEFT_ESTATE, 0,
                          "%s: MPI is %s (call MPI_Init_thread first, and "
                          "wait before MPI_Finalize)",
                          call, fin ? "finalised" : "not initialised");
  MPI_Query_thread(level);
  return 0;
}

int weft_mpi_thread_level(int *provided) {
  if (!provided)
    return weft_error_set(WEFT_EINVAL, 0, "weft_mpi_thread_level: NULL");
  return mpi_state("weft_mpi_thread_level", provided);
}

enum { ONE, ALL, ANY };

typedef struct mpi_wait {
  int kind, n, serial;
  MPI_Request *reqs;
  MPI_Status *statuses; /* ALL: an array or MPI_STATUSES_IGNORE */
  MPI_Status *status;   /* ONE, ANY */
  int *index;
  int err; /* MPI's error code when a test failed */
} mpi_wait;

static int test(void *arg) {
  mpi_wait *w = arg;
  if (w->serial && pthread_mutex_trylock(&mpi_lock) != 0)
    return WEFT_EAGAIN; /* a task is in MPI: test next poll */
  int flag = 0, rc;
  if (w->kind == ONE)
    rc = MPI_Test(w->reqs, &flag, w->status);
  else if (w->kind == ALL)
    rc = MPI_Testall(w->n, w->reqs, &flag, w->statuses);
  else
    rc = MPI_Testany(w->n, w->reqs, w->index, &flag, w->status);
  if (w->serial)
    pthread_mutex_unlock(&mpi_lock);
  if (rc != MPI_SUCCESS) {
    w->err = rc;
    return WEFT_EIO;
  }
  return flag ? 0 : WEFT_EAGAIN;
}

static int wait_for(mpi_wait *w, const char *call) {
  int level = 0;
  int rc = mpi_state(call, &level);
  if (rc)
    return rc;
  int in_task = weft_task_self() != NULL;
  if (in_task && level < MPI_THREAD_SERIALIZED)
    return weft_error_set(
        WEFT_ENOTSUP, 0,
        "%s from a task: MPI gave %s, so only the thread that initialised "
        "it may call MPI, and tasks run on weft's workers; initialise with "
        "MPI_Init_thread(MPI_THREAD_MULTIPLE) (or SERIALIZED)",
        call,
        level == MPI_THREAD_FUNNELED ? "MPI_THREAD_FUNNELED"
                                     : "MPI_THREAD_SINGLE");
  w->serial = level < MPI_THREAD_MULTIPLE;
  rc = weft_wait_until(test, w);
  if (rc == WEFT_EIO) {
    char words[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(w->err, words, &len);
    return weft_error_set(WEFT_EIO, w->err, "%s: MPI error %d: %s", call,
                          w->err, words);
  }
  return rc;
}

int weft_mpi_wait(MPI_Request *req, MPI_Status *status) {
  if (!req)
    return weft_error_set(WEFT_EINVAL, 0, "weft_mpi_wait: req is NULL");
  mpi_wait w = {.kind = ONE, .n = 1, .reqs = req, .status = status};
  return wait_for(&w, "weft_mpi_wait");
}

int weft_mpi_waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
  if (n < 0 || (n > 0 && !reqs))
    return weft_error_set(WEFT_EINVAL, 0, "weft_mpi_waitall: %d requests at %p",
                          n, (void *)reqs);
  if (n == 0)
    return 0;
  mpi_wait w = {.kind = ALL, .n = n, .reqs = reqs, .statuses = statuses};
  return wait_for(&w, "weft_mpi_waitall");
}

int weft_mpi_waitany(int n, MPI_Request reqs[], int *index,
                     MPI_Status *status) {
  if (n < 0 || (n > 0 && !reqs) || !index)
    return weft_error_set(WEFT_EINVAL, 0,
                          "weft_mpi_waitany: %d requests at %p, index %p", n,
                          (void *)reqs, (void *)index);
  mpi_wait w = {
      .kind = ANY, .n = n, .reqs = reqs, .status = status, .index = index};
  return wait_for(&w, "weft_mpi_waitany");
}
