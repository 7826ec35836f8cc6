/* MPI requests that a task waits for the way it waits for the GPU: the
 * weft::mpi component (built when CMake finds an MPI, WEFT_WITH_MPI; link
 * weft::mpi, or pkg-config weft-mpi). It needs the MPI compiler wrapper's
 * include path, and an MPI initialised by the program before any of these
 * calls (MPI_Init_thread; weft neither initialises nor finalises MPI).
 *
 *   MPI_Request r[2];
 *   MPI_Irecv(in, n, MPI_FLOAT, left, tag, MPI_COMM_WORLD, &r[0]);
 *   MPI_Isend(out, n, MPI_FLOAT, right, tag, MPI_COMM_WORLD, &r[1]);
 *   weft_mpi_waitall(2, r, MPI_STATUSES_IGNORE);   // the task suspends
 *
 * From a task the waits suspend it: the runtime tests the requests from
 * the poll loop that watches the GPU (weft_wait_until), in batches, and
 * the worker runs other tasks meanwhile. On a plain thread they test in a
 * loop with short sleeps.
 *
 * Thread levels (MPI_Query_thread): with MPI_THREAD_MULTIPLE every call is
 * free. With MPI_THREAD_SERIALIZED weft makes its own MPI calls under
 * weft_mpi_lock(), and a task must hold it around its own MPI calls too
 * (weft_mpi_lock / weft_mpi_unlock), since tasks on different workers
 * would otherwise call MPI at once; the poll skips a test while the lock
 * is taken. With MPI_THREAD_FUNNELED or SINGLE only the thread that
 * initialised MPI may call it, and tasks run on weft's workers: a wait
 * from a task is refused (WEFT_ENOTSUP), one from that thread works.
 *
 * Errors (every wait): WEFT_EINVAL (NULL requests with n > 0, n < 0, NULL
 * index), WEFT_ESTATE (MPI not initialised, or finalised; no runtime;
 * weft_shutdown began while a task waited: the request is still active,
 * to cancel or free),
 * WEFT_ENOTSUP (a task's wait below MPI_THREAD_SERIALIZED), WEFT_EIO (an
 * MPI call returned an error, which needs the communicator's error handler
 * set to MPI_ERRORS_RETURN: the message has MPI's words, and
 * weft_last_error_raw() its code). Context: a task or plain thread of a
 * runtime; may switch. */
#ifndef WEFT_MPI_H
#define WEFT_MPI_H

#include <mpi.h>

#include "weft/common.h"

WEFT_BEGIN_DECLS

/* Waits until *req completes (MPI_Test); status may be MPI_STATUS_IGNORE. */
WEFT_API int weft_mpi_wait(MPI_Request *req, MPI_Status *status);

/* Waits until all n requests complete (MPI_Testall); statuses may be
 * MPI_STATUSES_IGNORE. n == 0 returns at once. */
WEFT_API int weft_mpi_waitall(int n, MPI_Request reqs[], MPI_Status statuses[]);

/* Waits until one of the n requests completes (MPI_Testany): its index in
 * *index, or MPI_UNDEFINED when none is active. */
WEFT_API int weft_mpi_waitany(int n, MPI_Request reqs[], int *index,
                              MPI_Status *status);

/* A message from (to) weft device memory or any host memory, in the
 * caller's stream order: the send goes out once the GPU work the caller
 * queued before it has completed (it may have written buf), and the
 * receive lands before the GPU work queued after it (the data is copied
 * in on the caller's stream). Both return when the message is done, the
 * task suspended meanwhile (weft_mpi_wait). Where the data must move
 * through the host (the CUDA backend with an MPI that is not CUDA-aware,
 * MPIX_Query_cuda_support), it is staged through weft's pinned cache;
 * with a CUDA-aware MPI, or on the host backend (whose device memory is
 * host memory), MPI reads and writes buf itself. WEFT_MPI_STAGE=1 stages
 * always (to test that path anywhere).
 * Errors: those of the waits, WEFT_EINVAL (buf NULL with count > 0, count
 * < 0, MPI_DATATYPE_NULL or a datatype whose size MPI cannot give,
 * MPI_COMM_NULL, a rank outside the communicator (its remote group for an
 * intercommunicator) other than MPI_PROC_NULL and, for a receive,
 * MPI_ANY_SOURCE, a tag outside 0 to MPI_TAG_UB other than a receive's
 * MPI_ANY_TAG), WEFT_ENOMEM (no staging memory), device errors. These
 * arguments are checked before MPI sees the message, so WEFT_EINVAL comes
 * back under MPI's default error handler too, where MPI's own refusal
 * would abort the job; what MPI has no query for (a freed or uncommitted
 * datatype, a freed communicator) is left to MPI: WEFT_EIO under
 * MPI_ERRORS_RETURN, else MPI's handler. Below MPI_THREAD_SERIALIZED a
 * task's call is refused before anything is posted. The request is weft's: when
 * weft_shutdown ends a task's wait, a receive is cancelled (WEFT_ESTATE;
 * 0 if its message came meanwhile) and a send is waited for to its end,
 * so that MPI touches buf no more once the call returns. */
WEFT_API int weft_mpi_send(const void *buf, int count, MPI_Datatype type,
                           int dest, int tag, MPI_Comm comm);
WEFT_API int weft_mpi_recv(void *buf, int count, MPI_Datatype type, int source,
                           int tag, MPI_Comm comm, MPI_Status *status);

/* Whether weft_mpi_send and weft_mpi_recv stage through pinned memory on
 * this runtime (1) or hand buf to MPI (0), in *staged.
 * Errors: WEFT_EINVAL (NULL), WEFT_ESTATE (MPI not initialised, no
 * runtime). */
WEFT_API int weft_mpi_staged(int *staged);

/* The thread level weft found (MPI_Query_thread) in *provided.
 * Errors: WEFT_EINVAL (NULL), WEFT_ESTATE (MPI not initialised). */
WEFT_API int weft_mpi_thread_level(int *provided);

/* Serialises MPI calls below MPI_THREAD_MULTIPLE (a mutex; free to call at
 * any level). Blocks the thread, not only the task, while another holds
 * it: keep the critical section to the MPI call. */
WEFT_API void weft_mpi_lock(void);
WEFT_API void weft_mpi_unlock(void);

WEFT_END_DECLS

#endif
