/* weft_mpi_send and weft_mpi_recv refuse the arguments MPI would refuse
 * with WEFT_EINVAL, under MPI's default error handler
 * (MPI_ERRORS_ARE_FATAL, left as MPI_Init sets it): a null datatype or
 * communicator, a negative count, a rank outside the communicator, a tag
 * outside 0..MPI_TAG_UB, and a receive's as a send's. They once went to
 * MPI, whose refusal aborted the whole job. Each is tried from a task and
 * from the plain thread; the message names the argument. MPI_PROC_NULL,
 * which MPI allows, is a message that completes at once. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "expect.h"
#include "weft.h"
#include "weft/mpi.h"

static int rank, size;

#define EXPECT_REFUSED(call, words)                                            \
  do {                                                                         \
    EXPECT_ERR(call, WEFT_EINVAL);                                             \
    EXPECT_MSG(strstr(weft_last_error_message(), words) != NULL,               \
               "%s: the message '%s' does not say '%s'", #call,                \
               weft_last_error_message(), words);                              \
  } while (0)

static void refusals(void *arg) {
  (void)arg;
  int v = 1, right = (rank + 1) % size;
  int *ub = NULL, flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  EXPECT(flag && ub);
  MPI_Comm w = MPI_COMM_WORLD;
  MPI_Status st;
  EXPECT_REFUSED(weft_mpi_send(&v, 1, MPI_DATATYPE_NULL, right, 0, w),
                 "MPI_DATATYPE_NULL");
  EXPECT_REFUSED(weft_mpi_recv(&v, 1, MPI_DATATYPE_NULL, right, 0, w, &st),
                 "MPI_DATATYPE_NULL");
  EXPECT_REFUSED(weft_mpi_send(&v, 1, MPI_INT, right, 0, MPI_COMM_NULL),
                 "MPI_COMM_NULL");
  EXPECT_REFUSED(weft_mpi_recv(&v, 1, MPI_INT, right, 0, MPI_COMM_NULL, &st),
                 "MPI_COMM_NULL");
  EXPECT_REFUSED(weft_mpi_send(&v, -1, MPI_INT, right, 0, w), "-1 elements");
  EXPECT_REFUSED(weft_mpi_send(&v, 1, MPI_INT, size, 0, w), "rank");
  EXPECT_REFUSED(weft_mpi_send(&v, 1, MPI_INT, -7, 0, w), "rank -7");
  EXPECT_REFUSED(weft_mpi_send(&v, 1, MPI_INT, MPI_ANY_SOURCE, 0, w), "rank");
  EXPECT_REFUSED(weft_mpi_recv(&v, 1, MPI_INT, size, 0, w, &st), "rank");
  EXPECT_REFUSED(weft_mpi_send(&v, 1, MPI_INT, right, -1, w), "tag -1");
  EXPECT_REFUSED(weft_mpi_send(&v, 1, MPI_INT, right, MPI_ANY_TAG, w), "tag");
  EXPECT_REFUSED(weft_mpi_recv(&v, 1, MPI_INT, right, -5, w, &st), "tag -5");
  if (*ub < INT_MAX)
    EXPECT_REFUSED(weft_mpi_send(&v, 1, MPI_INT, right, *ub + 1, w),
                   "MPI_TAG_UB");
  /* Allowed: a peer that is no process, at the largest tag. */
  EXPECT_OK(weft_mpi_send(&v, 1, MPI_INT, MPI_PROC_NULL, *ub, w));
  EXPECT_OK(weft_mpi_recv(&v, 1, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, w, &st));
}

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0)
      printf("this MPI gives thread level %d, not MULTIPLE: skipped\n",
             provided);
    MPI_Finalize();
    return 77;
  }
  MPI_Errhandler h;
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &h);
  EXPECT(h == MPI_ERRORS_ARE_FATAL); /* the default: a refusal aborts */
  MPI_Errhandler_free(&h);
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_HOST;
  o.workers = 1;
  weft_runtime *rt;
  EXPECT_OK(weft_init(&rt, &o));
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, refusals, NULL, NULL));
  EXPECT_OK(weft_task_join(t));
  refusals(NULL);
  EXPECT_OK(weft_shutdown(rt));
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    printf("ok: %d ranks, bad arguments refused before MPI saw them\n", size);
  MPI_Finalize();
  return 0;
}
