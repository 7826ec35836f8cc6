/* The host backend's executor: run queues, settling of records and waits,
 * and the worker threads that execute copies, memsets and kernels. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "error_internal.h"
#include "host/host_internal.h"
#include "host_guard.h"

uint64_t weft__host_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void weft__host_rec_release(weft__host_rec *r) {
  if (r && --r->refs == 0)
    free(r);
}

static weft__host_backend *backend_of(weft__host_stream *s) {
  return weft__host_of(s->base.hdr.bk);
}

static void queue_push(host_queue *q, weft__host_stream *s) {
  s->link = NULL;
  if (q->tail)
    q->tail->link = s;
  else
    q->head = s;
  q->tail = s;
}

static weft__host_stream *queue_pop(host_queue *q) {
  weft__host_stream *s = q->head;
  if (s) {
    q->head = s->link;
    if (!q->head)
      q->tail = NULL;
    s->link = NULL;
  }
  return s;
}

static void op_done(weft__host_backend *hb, weft__host_stream *s,
                    weft__host_op *op) {
  int dev = s->base.hdr.dev;
  for (host_dev_sync *w = hb->dev_syncs[dev]; w; w = w->next)
    if (op->seq <= w->target && w->remaining)
      w->remaining--;
  if (op->kind == HOP_RECORD || op->kind == HOP_WAIT)
    weft__host_rec_release(op->u.rec);
  free(op);
  s->completed++;
  hb->completed++;
  hb->dev_completed[dev]++;
}

/* Moves an idle-or-just-run stream forward: settles records, satisfied
 * waits and frees at its head, then parks it as IDLE, BLOCKED (on the
 * record's waiter list) or READY. Returns 1 if it completed a record.
 * Lock held; the stream is not RUNNING, READY or BLOCKED on entry. */
static int advance(weft__host_backend *hb, weft__host_stream *s) {
  int recorded = 0;
  for (;;) {
    weft__host_op *op = s->head;
    if (!op) {
      s->state = HOST_IDLE;
      return recorded;
    }
    if (op->kind == HOP_RECORD) {
      weft__host_rec *r = op->u.rec;
      r->done = 1;
      r->t_ns = weft__host_now_ns();
      recorded = 1;
      /* Its waiters go to the released list; settle moves them on. */
      while (r->waiters) {
        weft__host_stream *w = r->waiters;
        r->waiters = w->link;
        w->link = hb->released;
        hb->released = w;
      }
    } else if (op->kind == HOP_WAIT) {
      weft__host_rec *r = op->u.rec;
      if (!r->done) {
        s->state = HOST_BLOCKED;
        s->link = r->waiters;
        r->waiters = s;
        return recorded;
      }
    } else if (op->kind == HOP_FREE) {
      weft__host_block_release(hb, op->u.ptr);
    } else {
      int dev = s->base.hdr.dev;
      s->state = HOST_READY;
      queue_push(&hb->ready[dev][s->level], s);
      pthread_cond_signal(&hb->work[dev]);
      return recorded;
    }
    s->head = op->next;
    if (!s->head)
      s->tail = NULL;
    op_done(hb, s, op);
  }
}

/* Moves on the streams released by completed records, and the streams
 * those release in turn, then tells waiters about the progress. */
static void settle(weft__host_backend *hb, int recorded) {
  while (hb->released) {
    weft__host_stream *s = hb->released;
    hb->released = s->link;
    s->state = HOST_IDLE;
    recorded |= advance(hb, s);
  }
  if (recorded && hb->hook)
    hb->hook(hb->hook_arg);
  pthread_cond_broadcast(&hb->progress);
}

void weft__host_enqueue(weft__host_stream *s, weft__host_op *op) {
  weft__host_backend *hb = backend_of(s);
  op->next = NULL;
  pthread_mutex_lock(&hb->mu);
  if (s->tail)
    s->tail->next = op;
  else
    s->head = op;
  s->tail = op;
  s->submitted++;
  hb->submitted++;
  op->seq = ++hb->dev_submitted[s->base.hdr.dev];
  if (s->state == HOST_IDLE)
    settle(hb, advance(hb, s));
  pthread_mutex_unlock(&hb->mu);
}

static void run_launch(weft__host_op *op) {
  weft_kernel_ctx ctx = {.grid_dim = op->u.launch.grid,
                         .block_dim = op->u.launch.block,
                         .shared = op->u.launch.shared};
  weft_dim3 g = op->u.launch.grid;
  for (unsigned z = 0; z < g.z; z++)
    for (unsigned y = 0; y < g.y; y++)
      for (unsigned x = 0; x < g.x; x++) {
        ctx.block_idx = (weft_dim3){x, y, z};
        op->u.launch.fn(&ctx, op->u.launch.argv);
      }
}

static void execute(weft__host_op *op) {
  switch (op->kind) {
  case HOP_COPY:
    /* memmove: like cudaMemcpy, overlap is the caller's problem, but a
     * CPU copy costs nothing extra to make it harmless. */
    memmove(op->u.copy.dst, op->u.copy.src, op->u.copy.n);
    break;
  case HOP_MEMSET:
    memset(op->u.set.dst, op->u.set.value, op->u.set.n);
    break;
  case HOP_LAUNCH:
    run_launch(op);
    break;
  default: /* records, waits and frees are settled in advance() */
    break;
  }
}

/* Highest priority level first; FIFO within a level, and a stream goes to
 * the back of its level after each operation, so equal streams share. */
static weft__host_stream *pick(weft__host_backend *hb, int dev) {
  for (int l = WEFT__HOST_LEVELS - 1; l >= 0; l--) {
    weft__host_stream *s = queue_pop(&hb->ready[dev][l]);
    if (s)
      return s;
  }
  return NULL;
}

/* What an executor thread is given: its backend and device. */
typedef struct host_executor {
  weft__host_backend *hb;
  int dev;
} host_executor;

static void *executor(void *arg) {
  const host_executor *me = arg;
  weft__host_backend *hb = me->hb;
  int dev = me->dev;
  weft__host_trace_executor(&hb->base);
  weft__guard_quiet = 1; /* its operations are checked as they are issued */
  pthread_mutex_lock(&hb->mu);
  for (;;) {
    weft__host_stream *s = pick(hb, dev);
    if (!s) {
      if (hb->stopping)
        break;
      pthread_cond_wait(&hb->work[dev], &hb->mu);
      continue;
    }
    weft__host_op *op = s->head;
    s->head = op->next;
    if (!s->head)
      s->tail = NULL;
    s->state = HOST_RUNNING;
    pthread_mutex_unlock(&hb->mu);

    uint64_t t0 = op->corr ? weft__clock_ns() : 0;
    execute(op);
    if (t0)
      weft__host_trace_ran(s, op, t0);

    pthread_mutex_lock(&hb->mu);
    op_done(hb, s, op);
    /* also wakes syncs waiting for this completion */
    settle(hb, advance(hb, s));
  }
  pthread_mutex_unlock(&hb->mu);
  return NULL;
}

int weft__host_exec_start(weft__host_backend *hb, int nthreads) {
  int total = nthreads * hb->ndev;
  hb->threads = calloc((size_t)total, sizeof *hb->threads);
  hb->exec = calloc((size_t)hb->ndev, sizeof *hb->exec);
  if (!hb->threads || !hb->exec) {
    free(hb->threads);
    free(hb->exec);
    hb->threads = NULL;
    hb->exec = NULL;
    return weft__err(WEFT_ENOMEM, "host backend: out of memory");
  }
  hb->nthreads = nthreads;
  hb->nstarted = 0;
  for (int d = 0; d < hb->ndev; d++)
    hb->exec[d] = (host_executor){hb, d};
  for (int i = 0; i < total; i++) {
    if (pthread_create(&hb->threads[i], NULL, executor,
                       &hb->exec[i / nthreads]) != 0) {
      weft__host_exec_stop(hb);
      return weft__err(WEFT_ENOMEM,
                       "host backend: cannot start executor thread %d", i);
    }
    hb->nstarted = i + 1;
  }
  return 0;
}

void weft__host_exec_stop(weft__host_backend *hb) {
  pthread_mutex_lock(&hb->mu);
  hb->stopping = 1;
  for (int d = 0; d < hb->ndev; d++)
    pthread_cond_broadcast(&hb->work[d]);
  pthread_mutex_unlock(&hb->mu);
  for (int i = 0; i < hb->nstarted; i++)
    pthread_join(hb->threads[i], NULL);
  free(hb->threads);
  free(hb->exec);
  hb->threads = NULL;
  hb->exec = NULL;
  hb->nstarted = 0;
}
