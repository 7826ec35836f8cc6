/* A 2-D heat stencil (Jacobi) split over MPI ranks by rows: each rank's
 * interior is updated by a task while a task per halo row sends it from,
 * or receives it into, device memory (weft_mpi_send / weft_mpi_recv),
 * against the plain MPI version (rows staged through pinned memory by
 * hand, a blocking MPI_Sendrecv, then the whole update) in the same run.
 * Both must agree bit for bit with one rank computing the whole grid.
 *
 *   mpirun -np 4 ./mpi_stencil [N] [ITERATIONS]
 *
 * The grid is N x N (default 512, N divisible by the ranks), fixed at 1 on
 * the row above the top and 0 on the other edges. Prints, on rank 0, the
 * time per iteration of both versions and the share of the plain
 * version's communication time the tasks hid (medians of 3 rounds):
 *   hidden = (t_plain - t_weft) / t_comm, where t_comm is the plain
 *   version's time in its exchange. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <weft.h>
#include <weft/mpi.h>

/* The update of rows [r0, r1) of a rank's n x cols block `mid` into `out`,
 * which points at row r0 of the result, columns 1 .. cols-2 (0 and cols-1
 * are fixed): row -1 is `top` and row n is `bot` (NULL where the rows
 * updated do not need them). `out` starts at the rows written, so that
 * tasks updating different rows at once name different memory (weft check
 * takes a pointer argument for the element it points at). */
WEFT_CUDA_KERNEL_DECL(stencil_rows);

typedef struct rows_args {
  const float *top, *mid, *bot;
  float *out;
  unsigned cols, n, r0, r1;
} rows_args;

static void rows_host(const weft_kernel_ctx *k, void **args) {
  const float *top = *(const float **)args[0], *mid = *(const float **)args[1],
              *bot = *(const float **)args[2];
  float *out = *(float **)args[3];
  unsigned cols = *(unsigned *)args[4], n = *(unsigned *)args[5],
           r0 = *(unsigned *)args[6], r1 = *(unsigned *)args[7];
  for (unsigned t = 0; t < k->block_dim.x; t++) {
    unsigned long long i =
        (unsigned long long)k->block_idx.x * k->block_dim.x + t;
    unsigned r = r0 + (unsigned)(i / cols), c = (unsigned)(i % cols);
    if (r >= r1)
      return;
    if (c == 0 || c == cols - 1) {
      out[(size_t)(r - r0) * cols + c] = 0;
      continue;
    }
    const float *up = r == 0 ? top : mid + (size_t)(r - 1) * cols;
    const float *down = r == n - 1 ? bot : mid + (size_t)(r + 1) * cols;
    const float *me = mid + (size_t)r * cols;
    out[(size_t)(r - r0) * cols + c] =
        0.25f * (up[c] + down[c] + me[c - 1] + me[c + 1]);
  }
}

static const weft_kernel rows_kernel = {
    .cuda = WEFT_CUDA_KERNEL(stencil_rows),
    .host = rows_host,
    .name = "stencil_rows",
    WEFT_KERNEL_ARGS(const float *, const float *, const float *, float *,
                     unsigned, unsigned, unsigned, unsigned),
    .reads = 0x7};

static int rank, size;
static unsigned N, n; /* the grid's side; rows per rank */

static int launch_rows(const float *top, const float *mid, const float *bot,
                       float *out, unsigned r0, unsigned r1) {
  if (r1 <= r0)
    return 0;
  unsigned cols = N;
  out += (size_t)r0 * N;
  void *args[] = {&top, &mid, &bot, &out, &cols, &n, &r0, &r1};
  unsigned long long total = (unsigned long long)(r1 - r0) * N;
  return weft_launch(&rows_kernel, WEFT_DIM1((unsigned)((total + 255) / 256)),
                     WEFT_DIM1(256), 0, args);
}

/* A rank's state: its block twice (cur, next), the halo rows above and
 * below (device), pinned staging for the exchange. */
typedef struct block {
  float *cur, *next, *top, *bot;
  float *send_up, *send_down, *recv_up, *recv_down; /* pinned */
} block;

static size_t row_bytes(void) { return (size_t)N * sizeof(float); }

/* The plain version's halo exchange: my first and last rows out through
 * pinned staging, the neighbours' in, into top and bot, with blocking
 * MPI_Sendrecv. */
static int exchange(block *b) {
  size_t rb = row_bytes();
  int up = rank - 1, down = rank + 1, rc;
  if ((rc = weft_copy(b->send_up, b->cur, rb)) ||
      (rc = weft_copy(b->send_down, b->cur + (size_t)(n - 1) * N, rb)) ||
      (rc = weft_sync()))
    return rc;
  int cnt = (int)N;
  MPI_Sendrecv(b->send_up, cnt, MPI_FLOAT, up >= 0 ? up : MPI_PROC_NULL, 0,
               b->recv_down, cnt, MPI_FLOAT, down < size ? down : MPI_PROC_NULL,
               0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Sendrecv(b->send_down, cnt, MPI_FLOAT, down < size ? down : MPI_PROC_NULL,
               1, b->recv_up, cnt, MPI_FLOAT, up >= 0 ? up : MPI_PROC_NULL, 1,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (up >= 0 && (rc = weft_copy(b->top, b->recv_up, rb)))
    return rc;
  if (down < size && (rc = weft_copy(b->bot, b->recv_down, rb)))
    return rc;
  return weft_sync();
}

static void swap(block *b) {
  float *t = b->cur;
  b->cur = b->next;
  b->next = t;
}

/* ---- the two versions of one iteration ---- */

static double comm_s; /* the plain version's time in exchange() */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int plain_step(block *b) {
  double t0 = now();
  int rc = exchange(b);
  comm_s += now() - t0;
  if (!rc)
    rc = launch_rows(b->top, b->cur, b->bot, b->next, 0, n);
  if (!rc)
    rc = weft_sync();
  swap(b);
  return rc;
}

typedef struct job {
  block *b;
  float *row; /* a message's device memory: the row sent or received */
  int peer, tag;
  int send;      /* 1: send row; 0: receive into row, then update edge */
  unsigned edge; /* the row of mine that a received halo row completes */
  int rc;
} job;

/* The rows that need no halo row from a neighbour: all but the first (if
 * there is a rank above) and the last (if there is one below). */
static void interior_task(void *arg) {
  job *j = arg;
  unsigned lo = rank > 0 ? 1 : 0, hi = rank + 1 < size ? n - 1 : n;
  j->rc = launch_rows(j->b->top, j->b->cur, j->b->bot, j->b->next, lo, hi);
}

/* One halo row, straight from or into device memory: weft_mpi_send and
 * weft_mpi_recv order it with the task's stream (staging it through
 * pinned memory where MPI cannot reach the device), and the task suspends
 * while the message is in flight. A received row's edge row is updated
 * next on the same stream, so nothing waits for the other messages. */
static void message_task(void *arg) {
  job *j = arg;
  block *b = j->b;
  if (j->send) {
    j->rc = weft_mpi_send(j->row, (int)N, MPI_FLOAT, j->peer, j->tag,
                          MPI_COMM_WORLD);
    return;
  }
  j->rc = weft_mpi_recv(j->row, (int)N, MPI_FLOAT, j->peer, j->tag,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (!j->rc)
    j->rc = launch_rows(b->top, b->cur, b->bot, b->next, j->edge, j->edge + 1);
}

static int weft_step(weft_runtime *rt, block *b) {
  job jobs[5];
  int nj = 0;
  jobs[nj++] = (job){.b = b};
  if (rank > 0) { /* my first row up (tag 0); the row above mine down (1) */
    jobs[nj++] = (job){b, b->cur, rank - 1, 0, 1, 0, 0};
    jobs[nj++] = (job){b, b->top, rank - 1, 1, 0, 0, 0};
  }
  if (rank + 1 < size) {
    jobs[nj++] = (job){b, b->cur + (size_t)(n - 1) * N, rank + 1, 1, 1, 0, 0};
    jobs[nj++] = (job){b, b->bot, rank + 1, 0, 0, n - 1, 0};
  }
  weft_task *t[5];
  int spawned = 0, rc = 0;
  for (int i = 0; i < nj && !rc; i++)
    if ((rc = weft_task_spawn(rt, &t[i], i ? message_task : interior_task,
                              &jobs[i], NULL)) == 0)
      spawned++;
  /* A join waits for the task's GPU work too: every row of next is done. */
  for (int i = 0; i < spawned; i++) {
    int r = weft_task_join(t[i]);
    if (!rc)
      rc = r ? r : jobs[i].rc;
  }
  swap(b);
  return rc;
}

/* ---- set-up, the whole grid on one rank, the check ---- */

static int block_open(block *b) {
  size_t rb = row_bytes(), all = rb * n;
  int rc = weft_device_alloc(all, (void **)&b->cur);
  if (!rc)
    rc = weft_device_alloc(all, (void **)&b->next);
  if (!rc)
    rc = weft_device_alloc(rb, (void **)&b->top);
  if (!rc)
    rc = weft_device_alloc(rb, (void **)&b->bot);
  float **pin[] = {&b->send_up, &b->send_down, &b->recv_up, &b->recv_down};
  for (int i = 0; i < 4 && !rc; i++)
    rc = weft_pinned_alloc(rb, (void **)pin[i]);
  if (!rc)
    rc = weft_memset(b->cur, 0, all);
  if (!rc)
    rc = weft_memset(b->next, 0, all);
  if (!rc)
    rc = weft_memset(b->bot, 0, rb);
  /* Row -1 of rank 0 is the hot edge: 1 but at the fixed columns. */
  for (unsigned c = 0; c < N && !rc; c++)
    b->send_up[c] = c == 0 || c == N - 1 ? 0.0f : (rank == 0 ? 1.0f : 0.0f);
  if (!rc)
    rc = weft_copy(b->top, b->send_up, rb);
  if (!rc)
    rc = weft_sync();
  return rc;
}

static void block_close(block *b) {
  weft_device_free(b->cur);
  weft_device_free(b->next);
  weft_device_free(b->top);
  weft_device_free(b->bot);
  weft_pinned_free(b->send_up);
  weft_pinned_free(b->send_down);
  weft_pinned_free(b->recv_up);
  weft_pinned_free(b->recv_down);
}

/* The same iterations over the whole grid on the CPU, with the kernel's
 * own arithmetic: what every version must give, bit for bit. */
static float *whole_grid(unsigned iters) {
  size_t cells = (size_t)N * N;
  float *cur = calloc(cells, sizeof *cur), *next = calloc(cells, sizeof *next);
  float *top = calloc(N, sizeof *top), *bot = calloc(N, sizeof *bot);
  if (!cur || !next || !top || !bot) {
    free(cur), free(next), free(top), free(bot);
    return NULL;
  }
  for (unsigned c = 1; c + 1 < N; c++)
    top[c] = 1.0f;
  for (unsigned it = 0; it < iters; it++) {
    for (unsigned r = 0; r < N; r++)
      for (unsigned c = 0; c < N; c++) {
        if (c == 0 || c == N - 1) {
          next[(size_t)r * N + c] = 0;
          continue;
        }
        const float *up = r == 0 ? top : cur + (size_t)(r - 1) * N;
        const float *down = r == N - 1 ? bot : cur + (size_t)(r + 1) * N;
        const float *me = cur + (size_t)r * N;
        next[(size_t)r * N + c] =
            0.25f * (up[c] + down[c] + me[c - 1] + me[c + 1]);
      }
    float *t = cur;
    cur = next;
    next = t;
  }
  free(next), free(top), free(bot);
  return cur;
}

/* Gathers every rank's block on rank 0 and compares it with want. */
static int matches(block *b, const float *want, const char *who) {
  size_t cells = (size_t)n * N;
  float *mine = malloc(cells * sizeof *mine);
  float *all = rank == 0 ? malloc((size_t)N * N * sizeof *all) : NULL;
  int ok = mine && (rank != 0 || all);
  if (ok && (weft_copy(mine, b->cur, cells * sizeof *mine) || weft_sync()))
    ok = 0;
  MPI_Gather(mine, (int)cells, MPI_FLOAT, all, (int)cells, MPI_FLOAT, 0,
             MPI_COMM_WORLD);
  if (rank == 0 && ok && memcmp(all, want, (size_t)N * N * sizeof *all)) {
    fprintf(stderr, "mpi_stencil: %s differs from one rank's grid\n", who);
    ok = 0;
  }
  free(mine);
  free(all);
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok;
}

/* Rounds of both versions; the figures printed are their medians. */
#define ROUNDS 3

/* The middle of three. */
_Static_assert(ROUNDS == 3, "median() takes three rounds");
static double median(const double *x) {
  double a = x[0], b = x[1], c = x[2];
  return a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
}

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  N = argc > 1 ? (unsigned)atoi(argv[1]) : 512;
  unsigned iters = argc > 2 ? (unsigned)atoi(argv[2]) : 50;
  if (provided < MPI_THREAD_MULTIPLE || N < 3 || N % (unsigned)size ||
      N / (unsigned)size < 2 || iters < 1) {
    if (rank == 0)
      fprintf(stderr,
              "mpi_stencil: needs MPI_THREAD_MULTIPLE (got %d), N >= 3 "
              "divisible by the %d ranks with 2 rows each, iterations >= 1\n",
              provided, size);
    MPI_Finalize();
    return 2;
  }
  n = N / (unsigned)size;
  weft_runtime *rt;
  if (weft_init(&rt, NULL) != 0) {
    fprintf(stderr, "mpi_stencil: weft_init: %s\n", weft_last_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  float *want = rank == 0 ? whole_grid(iters) : NULL;
  int status = 0;
  /* ROUNDS rounds, each running both versions from a fresh grid, the
   * order alternating (plain first in even rounds): the medians are
   * reported, so neither version pays the first pass's warm-up alone. */
  double t[2][ROUNDS], comm[ROUNDS];
  for (int r = 0; r < ROUNDS && !status; r++)
    for (int k = 0; k < 2 && !status; k++) {
      int v = (r + k) % 2; /* 0: plain MPI, 1: weft tasks */
      block b;
      memset(&b, 0, sizeof b);
      int rc = block_open(&b);
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now();
      comm_s = 0;
      for (unsigned it = 0; it < iters && !rc; it++)
        rc = v ? weft_step(rt, &b) : plain_step(&b);
      MPI_Barrier(MPI_COMM_WORLD);
      t[v][r] = (now() - t0) / iters;
      if (rc) {
        fprintf(stderr, "mpi_stencil: rank %d: %s\n", rank,
                weft_last_error_message());
        status = 1;
      } else if (!matches(&b, want,
                          v ? "the tasks' grid" : "plain MPI's grid")) {
        status = 1;
      }
      block_close(&b);
      if (v == 0) { /* the slowest rank's communication time */
        double c = comm_s / iters;
        MPI_Allreduce(&c, &comm[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      }
    }
  if (rank == 0 && !status) {
    double tp = median(t[0]), tw = median(t[1]), tc = median(comm);
    double hidden = tc > 0 ? (tp - tw) / tc : 0;
    printf("mpi_stencil: %d ranks, %u x %u grid, %u iterations, median of "
           "%d rounds: plain MPI %.3f ms/iteration (%.3f in the exchange), "
           "weft tasks %.3f ms/iteration: %.0f %% of the communication "
           "hidden; both equal to one rank's grid\n",
           size, N, N, iters, ROUNDS, 1e3 * tp, 1e3 * tc, 1e3 * tw,
           100 * (hidden < 0   ? 0
                  : hidden > 1 ? 1
                               : hidden));
  }
  free(want);
  weft_shutdown(rt);
  MPI_Finalize();
  return status;
}
