/* weft/mpi.h: MPI waits through weft_wait_until. Built as its own library
 * (weft::mpi) on weft's public API alone, so that weft itself never needs
 * MPI. The test the poll calls is MPI_Test/Testall/Testany, which never
 * block; below MPI_THREAD_MULTIPLE it runs only when the lock is free. */
#include "weft/mpi.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"
#if defined(OPEN_MPI) && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* MPIX_Query_cuda_support */
#endif
#endif

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

/* 0 when the caller may call MPI at this thread level: a task runs on
 * weft's workers, so below MPI_THREAD_SERIALIZED it may not. */
static int level_ok(int level, const char *call) {
  if (weft_task_self() && level < MPI_THREAD_SERIALIZED)
    return weft_error_set(
        WEFT_ENOTSUP, 0,
        "%s from a task: MPI gave %s, so only the thread that initialised "
        "it may call MPI, and tasks run on weft's workers; initialise with "
        "MPI_Init_thread(MPI_THREAD_MULTIPLE) (or SERIALIZED)",
        call,
        level == MPI_THREAD_FUNNELED ? "MPI_THREAD_FUNNELED"
                                     : "MPI_THREAD_SINGLE");
  return 0;
}

/* MPI's words for error code e. */
static const char *mpi_words(int e, char words[MPI_MAX_ERROR_STRING]) {
  int len = 0;
  words[0] = '\0';
  if (MPI_Error_string(e, words, &len) != MPI_SUCCESS)
    words[0] = '\0';
  return words;
}

static int wait_for(mpi_wait *w, const char *call) {
  int level = 0;
  int rc = mpi_state(call, &level);
  if (rc == 0)
    rc = level_ok(level, call);
  if (rc)
    return rc;
  w->serial = level < MPI_THREAD_MULTIPLE;
  /* What the watchdog names, should the request never complete. */
  static const char *const what[] = {
      [ONE] = "an MPI request (weft_mpi_wait)",
      [ALL] = "MPI requests, all of them (weft_mpi_waitall)",
      [ANY] = "MPI requests, any of them (weft_mpi_waitany)"};
  rc = weft_wait_until_named(test, w, what[w->kind]);
  if (rc == WEFT_EIO) {
    char words[MPI_MAX_ERROR_STRING];
    return weft_error_set(WEFT_EIO, w->err, "%s: MPI error %d: %s", call,
                          w->err, mpi_words(w->err, words));
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

/* ---- messages in stream order ---- */

/* Whether MPI itself can read and write CUDA device memory. */
static int cuda_aware(void) {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return 0;
#endif
}

/* 1 when messages go through pinned staging: the CUDA backend without a
 * CUDA-aware MPI, or WEFT_MPI_STAGE=1. */
static int staging(void) {
  const char *force = getenv("WEFT_MPI_STAGE");
  if (force && strcmp(force, "1") == 0)
    return 1;
  /* The caller's runtime decides: its backend is what buf belongs to. */
  weft_runtime *rt = weft_runtime_current();
  return rt && weft_runtime_backend(rt) == WEFT_BACKEND_CUDA && !cuda_aware();
}

int weft_mpi_staged(int *staged) {
  if (!staged)
    return weft_error_set(WEFT_EINVAL, 0, "weft_mpi_staged: NULL");
  int level;
  int rc = mpi_state("weft_mpi_staged", &level);
  if (rc == 0 && !weft_runtime_current())
    rc = weft_error_set(WEFT_ESTATE, 0, "weft_mpi_staged: no runtime");
  if (rc == 0)
    *staged = staging();
  return rc;
}

/* The bound of tags: MPI_TAG_UB, cached on MPI_COMM_WORLD. */
static int tag_ub(void) {
  int *ub = NULL, flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  return flag && ub ? *ub : 32767; /* the least MPI allows */
}

/* The message's bytes in *bytes, or WEFT_EINVAL, reported. Everything
 * MPI can be asked about without an error is checked here, before MPI
 * sees the message: under MPI's default error handler
 * (MPI_ERRORS_ARE_FATAL) its refusal aborts the whole job, so the caller
 * would never get WEFT_EINVAL. What MPI gives no query for (a freed or
 * uncommitted datatype, a freed communicator) is still MPI's to refuse.
 * MPI must be initialised, and below MPI_THREAD_MULTIPLE the lock held. */
static int message_bytes(const void *buf, int count, MPI_Datatype type,
                         int peer, int tag, MPI_Comm comm, int recv,
                         const char *call, long long *bytes) {
  if (count < 0 || (count > 0 && !buf))
    return weft_error_set(WEFT_EINVAL, 0, "%s: %d elements at %p", call, count,
                          buf);
  if (type == MPI_DATATYPE_NULL || comm == MPI_COMM_NULL)
    return weft_error_set(WEFT_EINVAL, 0, "%s: the %s is %s", call,
                          comm == MPI_COMM_NULL ? "communicator" : "datatype",
                          comm == MPI_COMM_NULL ? "MPI_COMM_NULL"
                                                : "MPI_DATATYPE_NULL");
  /* Peers of an intercommunicator are ranks of its remote group. */
  int inter = 0, ranks = 0;
  MPI_Comm_test_inter(comm, &inter);
  if (inter)
    MPI_Comm_remote_size(comm, &ranks);
  else
    MPI_Comm_size(comm, &ranks);
  if (!(peer >= 0 && peer < ranks) && peer != MPI_PROC_NULL &&
      !(recv && peer == MPI_ANY_SOURCE))
    return weft_error_set(
        WEFT_EINVAL, 0,
        "%s: rank %d is not in the communicator's %s (0 to %d%s)", call, peer,
        inter ? "remote group" : "group", ranks - 1,
        recv ? ", MPI_ANY_SOURCE or MPI_PROC_NULL" : " or MPI_PROC_NULL");
  int ub = tag_ub();
  if (!(tag >= 0 && tag <= ub) && !(recv && tag == MPI_ANY_TAG))
    return weft_error_set(WEFT_EINVAL, 0,
                          "%s: tag %d is not in 0 to %d (MPI_TAG_UB%s)", call,
                          tag, ub, recv ? "; or MPI_ANY_TAG" : "");
  int size = 0;
  int e = MPI_Type_size(type, &size);
  if (e != MPI_SUCCESS || size == MPI_UNDEFINED || size < 0) {
    char words[MPI_MAX_ERROR_STRING];
    return weft_error_set(WEFT_EINVAL, e, "%s: the datatype's size is %s", call,
                          e != MPI_SUCCESS ? mpi_words(e, words)
                                           : "more than an int holds");
  }
  *bytes = (long long)count * size;
  return 0;
}

/* message_bytes after the thread-level check (a task below
 * MPI_THREAD_SERIALIZED may not call MPI at all), under the lock below
 * MPI_THREAD_MULTIPLE. Called before anything is staged or posted: a
 * request posted and then not waited for would go on using buf. */
static int checked_bytes(int level, const void *buf, int count,
                         MPI_Datatype type, int peer, int tag, MPI_Comm comm,
                         int recv, long long *bytes) {
  const char *call = recv ? "weft_mpi_recv" : "weft_mpi_send";
  int rc = level_ok(level, call);
  if (rc)
    return rc;
  if (level < MPI_THREAD_MULTIPLE)
    weft_mpi_lock();
  rc = message_bytes(buf, count, type, peer, tag, comm, recv, call, bytes);
  if (level < MPI_THREAD_MULTIPLE)
    weft_mpi_unlock();
  return rc;
}

/* Posts the send (recv 0) or receive of buf, under the lock below
 * MPI_THREAD_MULTIPLE, and waits for it (weft_mpi_wait). */
static int post_and_wait(int level, int recv, void *buf, int count,
                         MPI_Datatype type, int peer, int tag, MPI_Comm comm,
                         MPI_Status *status) {
  const char *call = recv ? "weft_mpi_recv" : "weft_mpi_send";
  MPI_Request r;
  if (level < MPI_THREAD_MULTIPLE)
    weft_mpi_lock();
  int e = recv ? MPI_Irecv(buf, count, type, peer, tag, comm, &r)
               : MPI_Isend(buf, count, type, peer, tag, comm, &r);
  if (level < MPI_THREAD_MULTIPLE)
    weft_mpi_unlock();
  if (e != MPI_SUCCESS) {
    char words[MPI_MAX_ERROR_STRING];
    return weft_error_set(WEFT_EIO, e, "%s: %s: MPI error %d: %s", call,
                          recv ? "MPI_Irecv" : "MPI_Isend", e,
                          mpi_words(e, words));
  }
  MPI_Status st;
  /* MPI_STATUS_IGNORE is NULL in Open MPI but not in every MPI (MPICH's
   * is (MPI_Status *)1): compare with it, never with NULL. */
  int ignore = status == MPI_STATUS_IGNORE;
  int rc = weft_mpi_wait(&r, ignore ? &st : status);
  if (rc == WEFT_ESTATE && r != MPI_REQUEST_NULL) {
    /* weft_shutdown ended the wait with the request active, and the
     * caller has no request to cancel: a receive is cancelled (or, if
     * its message came meanwhile, completed), a send waited for, so
     * that MPI touches buf no more once this returns. */
    if (level < MPI_THREAD_MULTIPLE)
      weft_mpi_lock();
    if (recv)
      MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    int cancelled = 0;
    if (recv)
      MPI_Test_cancelled(&st, &cancelled);
    if (level < MPI_THREAD_MULTIPLE)
      weft_mpi_unlock();
    if (!cancelled) {
      if (!ignore)
        *status = st;
      return 0;
    }
    return weft_error_set(WEFT_ESTATE, 0,
                          "%s: weft_shutdown began while the message was "
                          "awaited; the receive was cancelled",
                          call);
  }
  return rc;
}

int weft_mpi_send(const void *buf, int count, MPI_Datatype type, int dest,
                  int tag, MPI_Comm comm) {
  int level, rc = mpi_state("weft_mpi_send", &level);
  if (rc)
    return rc;
  long long bytes = 0;
  rc = checked_bytes(level, buf, count, type, dest, tag, comm, 0, &bytes);
  if (rc)
    return rc;
  void *stage = NULL;
  const void *from = buf;
  if (bytes > 0 && staging()) {
    if ((rc = weft_pinned_alloc((size_t)bytes, &stage)) != 0)
      return rc;
    rc = weft_copy(stage, buf, (size_t)bytes);
    from = stage;
  }
  /* What the caller queued before (buf's writers, the staging copy) is
   * done before MPI reads: the task suspends, its worker runs others. */
  if (rc == 0)
    rc = weft_sync();
  if (rc == 0) /* MPI only reads it */
    rc = post_and_wait(level, 0, (void *)from, count, type, dest, tag, comm,
                       MPI_STATUS_IGNORE);
  if (stage)
    weft_pinned_free(stage);
  return rc;
}

int weft_mpi_recv(void *buf, int count, MPI_Datatype type, int source, int tag,
                  MPI_Comm comm, MPI_Status *status) {
  int level, rc = mpi_state("weft_mpi_recv", &level);
  if (rc)
    return rc;
  long long bytes = 0;
  rc = checked_bytes(level, buf, count, type, source, tag, comm, 1, &bytes);
  if (rc)
    return rc;
  void *stage = NULL, *into = buf;
  if (bytes > 0 && staging()) {
    if ((rc = weft_pinned_alloc((size_t)bytes, &stage)) != 0)
      return rc;
    into = stage;
  } else {
    /* MPI writes buf itself: after the GPU work queued before, which
     * may still read it. */
    rc = weft_sync();
  }
  /* Staged, the bytes received are copied in, and only they: MPI leaves
   * the rest of buf (a shorter message, MPI_PROC_NULL's none) as it was,
   * which the stage's own bytes must not overwrite. */
  MPI_Status st;
  MPI_Status *sp = stage && status == MPI_STATUS_IGNORE ? &st : status;
  if (rc == 0)
    rc = post_and_wait(level, 1, into, count, type, source, tag, comm, sp);
  /* In stream order: the copy in is queued before the caller's next GPU
   * work; the pinned cache keeps the block until that copy has run. */
  if (rc == 0 && stage) {
    int got = 0;
    if (level < MPI_THREAD_MULTIPLE)
      weft_mpi_lock();
    int e = MPI_Get_count(sp, type, &got); /* whole elements received */
    if (level < MPI_THREAD_MULTIPLE)
      weft_mpi_unlock();
    size_t n =
        e == MPI_SUCCESS && got != MPI_UNDEFINED && got >= 0 && got < count
            ? (size_t)got * (size_t)(bytes / count)
            : (size_t)bytes;
    if (n > 0)
      rc = weft_copy(buf, stage, n);
  }
  if (stage)
    weft_pinned_free(stage);
  return rc;
}
