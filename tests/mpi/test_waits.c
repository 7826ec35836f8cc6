/* weft/mpi.h under mpiexec, every rank on the host backend with one
 * worker thread, so that a wait that blocked its thread would stop every
 * other task of the rank:
 * - a ring: TASKS tasks per rank, each sending to its right neighbour and
 *   receiving from its left with its own tag, all waiting at once, every
 *   value checked;
 * - a late sender: rank 0 sends 100 ms after every other rank's receive
 *   is posted (each says so first, however slowly it got there); on
 *   those ranks the waiting task is suspended meanwhile and another task
 *   of the same worker counts its yields (more than zero when the message
 *   lands);
 * - collectives from tasks: each task an MPI_Iallreduce on a communicator
 *   of its own (duplicated beforehand, so their order cannot differ
 *   between ranks), waited for with weft_mpi_wait;
 * - weft_mpi_waitany over two receives, twice;
 * - an MPI error returned to the waiting task (MPI_ERRORS_RETURN, a
 *   receive truncated), with MPI's words in the message;
 * - device memory sent and received in stream order (weft_mpi_send after
 *   a queued memset, weft_mpi_recv before a queued copy out), directly
 *   and staged through pinned memory; receives shorter than their count
 *   leave the rest of the buffer as it was;
 * - the same waits from the plain thread, and bad arguments refused;
 * - weft_shutdown with a receive still waited for: the wait ends with
 *   WEFT_ESTATE and the task cancels the request; a weft_mpi_recv, whose
 *   request is weft's, is cancelled by weft;
 * - a send of a datatype never committed (which only MPI can refuse):
 *   WEFT_EIO with MPI's words (arguments weft checks first: test_args.c). */
#include <mpi.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "expect.h"
#include "weft.h"
#include "weft/mpi.h"

enum { TASKS = 64, COMMS = 8, LATE_MS = 100 };

static int rank, size;

/* ---- the ring ---- */

typedef struct ring_job {
  int tag;
  int out, in;
} ring_job;

static void ring_task(void *arg) {
  ring_job *j = arg;
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  j->out = rank * 1000 + j->tag;
  j->in = -1;
  MPI_Request r[2];
  MPI_Irecv(&j->in, 1, MPI_INT, left, j->tag, MPI_COMM_WORLD, &r[0]);
  MPI_Isend(&j->out, 1, MPI_INT, right, j->tag, MPI_COMM_WORLD, &r[1]);
  EXPECT_OK(weft_mpi_waitall(2, r, MPI_STATUSES_IGNORE));
  EXPECT_MSG(j->in == left * 1000 + j->tag, "rank %d tag %d: got %d", rank,
             j->tag, j->in);
}

static void ring(weft_runtime *rt) {
  static ring_job jobs[TASKS];
  weft_task *t[TASKS];
  for (int i = 0; i < TASKS; i++) {
    jobs[i].tag = i;
    EXPECT_OK(weft_task_spawn(rt, &t[i], ring_task, &jobs[i], NULL));
  }
  for (int i = 0; i < TASKS; i++)
    EXPECT_OK(weft_task_join(t[i]));
}

/* ---- a late sender ---- */

static atomic_int arrived, yields_meanwhile;

static void late_receiver(void *arg) {
  (void)arg;
  int v = 0;
  MPI_Request r;
  MPI_Irecv(&v, 1, MPI_INT, 0, 777, MPI_COMM_WORLD, &r);
  /* Posted: rank 0's delay starts now. */
  MPI_Send(NULL, 0, MPI_INT, 0, 778, MPI_COMM_WORLD);
  EXPECT_OK(weft_mpi_wait(&r, MPI_STATUS_IGNORE));
  EXPECT_EQ_INT(v, 4242);
  atomic_store(&arrived, 1);
}

static void counter(void *arg) {
  (void)arg;
  while (!atomic_load(&arrived)) {
    atomic_fetch_add(&yields_meanwhile, 1);
    weft_yield();
  }
}

static void late_sender(weft_runtime *rt) {
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    for (int r = 1; r < size; r++)
      MPI_Recv(NULL, 0, MPI_INT, MPI_ANY_SOURCE, 778, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
    struct timespec ts = {0, LATE_MS * 1000000L};
    nanosleep(&ts, NULL);
    int v = 4242;
    for (int r = 1; r < size; r++)
      MPI_Send(&v, 1, MPI_INT, r, 777, MPI_COMM_WORLD);
    return;
  }
  weft_task *w, *c;
  EXPECT_OK(weft_task_spawn(rt, &w, late_receiver, NULL, NULL));
  EXPECT_OK(weft_task_spawn(rt, &c, counter, NULL, NULL));
  EXPECT_OK(weft_task_join(w));
  EXPECT_OK(weft_task_join(c));
  EXPECT_MSG(atomic_load(&yields_meanwhile) > 0,
             "rank %d: nothing else ran while a task waited %d ms for a "
             "message",
             rank, LATE_MS);
}

/* ---- collectives from tasks ---- */

typedef struct coll_job {
  MPI_Comm comm;
  int mine, sum;
} coll_job;

static void allreduce_task(void *arg) {
  coll_job *j = arg;
  MPI_Request r;
  MPI_Iallreduce(&j->mine, &j->sum, 1, MPI_INT, MPI_SUM, j->comm, &r);
  EXPECT_OK(weft_mpi_wait(&r, MPI_STATUS_IGNORE));
}

static void collectives(weft_runtime *rt) {
  coll_job jobs[COMMS];
  weft_task *t[COMMS];
  for (int i = 0; i < COMMS; i++) {
    MPI_Comm_dup(MPI_COMM_WORLD, &jobs[i].comm);
    jobs[i].mine = rank + i;
    jobs[i].sum = -1;
  }
  for (int i = 0; i < COMMS; i++)
    EXPECT_OK(weft_task_spawn(rt, &t[i], allreduce_task, &jobs[i], NULL));
  for (int i = 0; i < COMMS; i++) {
    EXPECT_OK(weft_task_join(t[i]));
    int want = size * (size - 1) / 2 + size * i;
    EXPECT_MSG(jobs[i].sum == want, "allreduce %d: %d, want %d", i, jobs[i].sum,
               want);
    MPI_Comm_free(&jobs[i].comm);
  }
}

/* ---- device memory in messages, in stream order ---- */

enum { DEV_INTS = 1 << 16 }; /* 256 KiB: past the eager limit */

static void device_sender(void *arg) {
  (void)arg;
  int *d;
  size_t bytes = DEV_INTS * sizeof(int);
  EXPECT_OK(weft_device_alloc(bytes, (void **)&d));
  /* Queued, not waited for: the send must go out after it. */
  EXPECT_OK(weft_memset(d, rank + 1, bytes));
  EXPECT_OK(weft_mpi_send(d, DEV_INTS, MPI_INT, (rank + 1) % size, 31,
                          MPI_COMM_WORLD));
  EXPECT_OK(weft_device_free(d));
}

static void device_receiver(void *arg) {
  (void)arg;
  int left = (rank + size - 1) % size;
  int *d, *host;
  size_t bytes = DEV_INTS * sizeof(int);
  EXPECT_OK(weft_device_alloc(bytes, (void **)&d));
  EXPECT_OK(weft_pinned_alloc(bytes, (void **)&host));
  MPI_Status st;
  EXPECT_OK(weft_mpi_recv(d, DEV_INTS, MPI_INT, left, 31, MPI_COMM_WORLD, &st));
  EXPECT_EQ_INT(st.MPI_SOURCE, left);
  /* Queued after the receive's copy in, on the same stream. */
  EXPECT_OK(weft_copy(host, d, bytes));
  EXPECT_OK(weft_sync());
  const unsigned char *b = (const unsigned char *)host;
  for (size_t i = 0; i < bytes; i += 4093)
    EXPECT_MSG(b[i] == (unsigned char)(left + 1), "byte %zu: %u, want %d", i,
               b[i], left + 1);
  EXPECT_OK(weft_pinned_free(host));
  EXPECT_OK(weft_device_free(d));
}

/* A receive of fewer elements than its count (a shorter message, none from
 * MPI_PROC_NULL) leaves the rest of the buffer as it was, as MPI does,
 * staged too: the stage's other bytes (here a pinned block's old contents,
 * reused from the cache) must not be copied in. */
enum { SHORT_INTS = 256 };

static void short_receives(void *arg) {
  (void)arg;
  int *d, h[SHORT_INTS], got = -1;
  size_t bytes = sizeof h;
  void *junk;
  EXPECT_OK(weft_pinned_alloc(bytes, &junk));
  memset(junk, 0x5a, bytes);
  EXPECT_OK(weft_pinned_free(junk));
  EXPECT_OK(weft_device_alloc(bytes, (void **)&d));
  for (int i = 0; i < SHORT_INTS; i++)
    h[i] = 7;
  EXPECT_OK(weft_copy(d, h, bytes));
  MPI_Status st;
  EXPECT_OK(weft_mpi_recv(d, SHORT_INTS, MPI_INT, MPI_PROC_NULL, 0,
                          MPI_COMM_WORLD, &st));
  MPI_Get_count(&st, MPI_INT, &got);
  EXPECT_EQ_INT(got, 0);
  int two[2] = {rank + 1, rank + 2}, left = (rank + size - 1) % size;
  EXPECT_OK(
      weft_mpi_send(two, 2, MPI_INT, (rank + 1) % size, 33, MPI_COMM_WORLD));
  EXPECT_OK(weft_mpi_recv(d, SHORT_INTS, MPI_INT, left, 33, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE));
  memset(h, 0, bytes);
  EXPECT_OK(weft_copy(h, d, bytes));
  EXPECT_OK(weft_sync());
  EXPECT_EQ_INT(h[0], left + 1);
  EXPECT_EQ_INT(h[1], left + 2);
  for (int i = 2; i < SHORT_INTS; i++)
    if (h[i] != 7) {
      EXPECT_MSG(0, "int %d past the message: %d, want 7 (untouched)", i, h[i]);
      break;
    }
  EXPECT_OK(weft_device_free(d));
}

/* Twice: MPI on the buffers themselves (the host backend's device memory
 * is host memory), then staged through pinned memory (WEFT_MPI_STAGE=1,
 * the path of the CUDA backend without a CUDA-aware MPI). */
static void device_messages(weft_runtime *rt) {
  for (int staged = 0; staged < 2; staged++) {
    if (staged)
      setenv("WEFT_MPI_STAGE", "1", 1);
    int s = -1;
    EXPECT_OK(weft_mpi_staged(&s));
    EXPECT_EQ_INT(s, staged);
    weft_task *a, *b;
    EXPECT_OK(weft_task_spawn(rt, &a, device_sender, NULL, NULL));
    EXPECT_OK(weft_task_spawn(rt, &b, device_receiver, NULL, NULL));
    EXPECT_OK(weft_task_join(a));
    EXPECT_OK(weft_task_join(b));
    EXPECT_OK(weft_task_spawn(rt, &a, short_receives, NULL, NULL));
    EXPECT_OK(weft_task_join(a));
    MPI_Barrier(MPI_COMM_WORLD);
  }
  unsetenv("WEFT_MPI_STAGE");
  EXPECT_ERR(weft_mpi_send(NULL, 4, MPI_INT, 0, 0, MPI_COMM_WORLD),
             WEFT_EINVAL);
  EXPECT_ERR(weft_mpi_recv(NULL, -1, MPI_INT, 0, 0, MPI_COMM_WORLD, NULL),
             WEFT_EINVAL);
  EXPECT_ERR(weft_mpi_staged(NULL), WEFT_EINVAL);
}

/* ---- waitany, an error, the plain thread ---- */

static void any_task(void *arg) {
  (void)arg;
  int left = (rank + size - 1) % size, right = (rank + 1) % size;
  int in[2] = {-1, -1}, out[2] = {rank, rank + 100};
  MPI_Request r[2], s[2];
  MPI_Irecv(&in[0], 1, MPI_INT, left, 10, MPI_COMM_WORLD, &r[0]);
  MPI_Irecv(&in[1], 1, MPI_INT, left, 11, MPI_COMM_WORLD, &r[1]);
  MPI_Isend(&out[1], 1, MPI_INT, right, 11, MPI_COMM_WORLD, &s[1]);
  MPI_Isend(&out[0], 1, MPI_INT, right, 10, MPI_COMM_WORLD, &s[0]);
  int seen = 0;
  for (int k = 0; k < 2; k++) {
    int index = -1;
    EXPECT_OK(weft_mpi_waitany(2, r, &index, MPI_STATUS_IGNORE));
    EXPECT(index == 0 || index == 1);
    seen |= 1 << index;
  }
  EXPECT_EQ_INT(seen, 3);
  EXPECT(in[0] == left && in[1] == left + 100);
  int index = 0;
  EXPECT_OK(weft_mpi_waitany(2, r, &index, MPI_STATUS_IGNORE));
  EXPECT_EQ_INT(index, MPI_UNDEFINED); /* none active any more */
  EXPECT_OK(weft_mpi_waitall(2, s, MPI_STATUSES_IGNORE));
}

/* A receive of one int that gets two: truncation, returned to the task. */
static void error_task(void *arg) {
  MPI_Comm comm = *(MPI_Comm *)arg;
  int left = (rank + size - 1) % size, right = (rank + 1) % size;
  int in = 0, out[2] = {1, 2};
  MPI_Request r, s;
  MPI_Irecv(&in, 1, MPI_INT, left, 5, comm, &r);
  MPI_Isend(out, 2, MPI_INT, right, 5, comm, &s);
  EXPECT_ERR(weft_mpi_wait(&r, MPI_STATUS_IGNORE), WEFT_EIO);
  EXPECT_MSG(strstr(weft_last_error_message(), "weft_mpi_wait: MPI error") &&
                 weft_last_error_raw() != 0,
             "the message: %s", weft_last_error_message());
  EXPECT_OK(weft_mpi_wait(&s, MPI_STATUS_IGNORE));
}

/* A send of a datatype never committed, which weft cannot check (MPI has
 * no query for it): refused at the post, with MPI's own words for why. */
static void uncommitted_task(void *arg) {
  MPI_Comm comm = *(MPI_Comm *)arg;
  int v[2] = {1, 2};
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  EXPECT_ERR(weft_mpi_send(v, 1, pair, (rank + 1) % size, 0, comm), WEFT_EIO);
  char words[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(weft_last_error_raw(), words, &len);
  EXPECT_MSG(len > 0 && strstr(weft_last_error_message(), words) != NULL,
             "the message: %s", weft_last_error_message());
  MPI_Type_free(&pair);
}

static void errors(weft_runtime *rt) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, error_task, &comm, NULL));
  EXPECT_OK(weft_task_join(t)); /* the task's own error, not its failure */
  EXPECT_OK(weft_task_spawn(rt, &t, uncommitted_task, &comm, NULL));
  EXPECT_OK(weft_task_join(t));
  MPI_Comm_free(&comm);
}

static void plain_thread(void) {
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int in = -1, out = rank;
  MPI_Request r[2];
  MPI_Irecv(&in, 1, MPI_INT, left, 99, MPI_COMM_WORLD, &r[0]);
  MPI_Isend(&out, 1, MPI_INT, right, 99, MPI_COMM_WORLD, &r[1]);
  EXPECT_OK(weft_mpi_waitall(2, r, MPI_STATUSES_IGNORE));
  EXPECT_EQ_INT(in, left);
  EXPECT_OK(weft_mpi_waitall(0, NULL, MPI_STATUSES_IGNORE));
  EXPECT_ERR(weft_mpi_wait(NULL, MPI_STATUS_IGNORE), WEFT_EINVAL);
  EXPECT_ERR(weft_mpi_waitall(-1, r, MPI_STATUSES_IGNORE), WEFT_EINVAL);
  EXPECT_ERR(weft_mpi_waitall(2, NULL, MPI_STATUSES_IGNORE), WEFT_EINVAL);
  EXPECT_ERR(weft_mpi_waitany(2, r, NULL, MPI_STATUS_IGNORE), WEFT_EINVAL);
  EXPECT_ERR(weft_mpi_thread_level(NULL), WEFT_EINVAL);
  int level = -1;
  EXPECT_OK(weft_mpi_thread_level(&level));
  EXPECT_EQ_INT(level, MPI_THREAD_MULTIPLE);
}

/* A receive nobody sends: weft_shutdown ends the wait (WEFT_ESTATE), and
 * the task cancels the request, so nothing is left active. */
static atomic_int orphan_rc, orphan_cancelled;

static void orphan_task(void *arg) {
  (void)arg;
  static int v;
  MPI_Request r;
  MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &r);
  int rc = weft_mpi_wait(&r, MPI_STATUS_IGNORE);
  atomic_store(&orphan_rc, rc);
  if (rc == WEFT_ESTATE) {
    MPI_Status st;
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    int cancelled = 0;
    MPI_Test_cancelled(&st, &cancelled);
    atomic_store(&orphan_cancelled, cancelled);
  }
}

/* The same through weft_mpi_recv, which holds the request itself: the
 * shutdown's wait ends with it cancelled, so MPI writes nothing later. */
static atomic_int orphan_recv_rc;

static void orphan_recv_task(void *arg) {
  (void)arg;
  static int v;
  int rc = weft_mpi_recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 998, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
  if (rc == WEFT_ESTATE && !strstr(weft_last_error_message(), "cancelled"))
    rc = -1000; /* the message does not say what became of the receive */
  atomic_store(&orphan_recv_rc, rc);
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
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_HOST;
  o.workers = 1;
  weft_runtime *rt;
  EXPECT_OK(weft_init(&rt, &o));
  ring(rt);
  late_sender(rt);
  collectives(rt);
  weft_task *t;
  EXPECT_OK(weft_task_spawn(rt, &t, any_task, NULL, NULL));
  EXPECT_OK(weft_task_join(t));
  errors(rt);
  device_messages(rt);
  plain_thread();
  weft_task *orphan;
  EXPECT_OK(weft_task_spawn(rt, &orphan, orphan_task, NULL, NULL));
  EXPECT_OK(weft_task_detach(orphan));
  EXPECT_OK(weft_task_spawn(rt, &orphan, orphan_recv_task, NULL, NULL));
  EXPECT_OK(weft_task_detach(orphan));
  EXPECT_OK(weft_shutdown(rt));
  EXPECT_EQ_INT(atomic_load(&orphan_rc), WEFT_ESTATE);
  EXPECT_EQ_INT(atomic_load(&orphan_recv_rc), WEFT_ESTATE);
  EXPECT_EQ_INT(atomic_load(&orphan_cancelled), 1);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    printf("ok: %d ranks\n", size);
  MPI_Finalize();
  return 0;
}
