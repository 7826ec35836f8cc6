/* The host backend's graphs: a capture keeps the operations its stream
 * would have queued; a replay queues copies of them, after a wait for the
 * graph's previous replay and before a record that the next one waits for,
 * so replays of one graph run in launch order on any streams, as CUDA
 * orders launches of one executable graph. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "error_internal.h"
#include "host/host_internal.h"

static void free_ops(weft__host_op *op) {
  while (op) {
    weft__host_op *next = op->next;
    free(op);
    op = next;
  }
}

int weft__host_capture_op(weft__host_stream *s, weft__host_op *op) {
  if (!s->capturing)
    return 0;
  op->next = NULL;
  if (s->cap_tail)
    s->cap_tail->next = op;
  else
    s->cap_head = op;
  s->cap_tail = op;
  return 1;
}

int weft__host_capture_begin(weft__stream *s) {
  weft__host_stream *hs = (weft__host_stream *)s;
  hs->capturing = 1;
  hs->cap_head = hs->cap_tail = NULL;
  return 0;
}

/* 0 if the two lists have the same shape: kinds, kernels and sizes of
 * their argument blocks, in order (what cudaGraphExecUpdate requires). */
static int same_shape(const weft__host_op *a, const weft__host_op *b,
                      size_t *where) {
  size_t i = 0;
  for (; a && b; a = a->next, b = b->next, i++) {
    int same = a->kind == b->kind && a->size == b->size &&
               (a->kind != HOP_LAUNCH || a->u.launch.fn == b->u.launch.fn);
    if (!same) {
      *where = i;
      return -1;
    }
  }
  *where = i;
  return a || b ? -1 : 0;
}

static uint32_t next_graph_id(void) {
  static atomic_uint ids;
  return atomic_fetch_add(&ids, 1) + 1;
}

int weft__host_capture_end(weft__stream *s, void **out) {
  weft__host_stream *hs = (weft__host_stream *)s;
  weft__host_op *ops = hs->cap_head;
  hs->capturing = 0;
  hs->cap_head = hs->cap_tail = NULL;
  weft__host_graph *g = *out;
  if (g) { /* an update: same shape, then the new operations */
    size_t where;
    if (same_shape(g->ops, ops, &where) != 0) {
      free_ops(ops);
      return weft__err(WEFT_EINVAL,
                       "weft_graph_update: the capture differs from the graph "
                       "at operation %zu (another kind, kernel or count of "
                       "operations); the graph is unchanged",
                       where);
    }
    free_ops(g->ops);
    g->ops = ops;
    return 0;
  }
  g = calloc(1, sizeof *g);
  if (!g) {
    free_ops(ops);
    return weft__err(WEFT_ENOMEM, "weft_graph_end: out of host memory");
  }
  g->ops = ops;
  g->id = next_graph_id();
  for (const weft__host_op *op = ops; op; op = op->next) {
    g->nops++;
    g->nkernels += op->kind == HOP_LAUNCH;
    g->ncopies += op->kind != HOP_LAUNCH;
  }
  *out = g;
  return 0;
}

/* A copy of a recorded operation, its pointers into its own extras
 * (argument values, shared scratch) moved with it. */
static weft__host_op *op_clone(const weft__host_op *t) {
  weft__host_op *op = malloc(t->size);
  if (!op)
    return NULL;
  memcpy(op, t, t->size);
  op->next = NULL;
  if (t->kind == HOP_LAUNCH) {
    const char *from = (const char *)t;
    for (unsigned i = 0; i < WEFT_KERNEL_MAX_ARGS; i++)
      if (t->u.launch.argv[i])
        op->u.launch.argv[i] =
            (char *)op + ((const char *)t->u.launch.argv[i] - from);
    if (t->u.launch.shared)
      op->u.launch.shared =
          (char *)op + ((const char *)t->u.launch.shared - from);
  }
  return op;
}

int weft__host_graph_launch(weft__stream *s, void *gp) {
  weft__host_graph *g = gp;
  weft__host_backend *hb = weft__host_of(s->hdr.bk);
  uint64_t corr = 0, task = 0;
  uint64_t t0 = weft__host_trace_issue(s->hdr.bk, &corr, &task);
  /* Everything is built before anything is queued, so that running out
   * of memory queues nothing. */
  weft__host_op *wait = calloc(1, sizeof *wait);
  weft__host_op *rec = calloc(1, sizeof *rec);
  weft__host_rec *end = calloc(1, sizeof *end);
  weft__host_op *head = NULL, **tail = &head;
  int ok = wait && rec && end;
  for (const weft__host_op *t = g->ops; ok && t; t = t->next) {
    weft__host_op *op = op_clone(t);
    if (!op) {
      ok = 0;
      break;
    }
    op->graph = g->id;
    op->corr = corr;
    op->task = task;
    /* The clone's name is the graph's copy (op_clone leaves it out): the
     * trace gets its own, since the graph may be destroyed first. */
    op->name = t0 && t->name ? weft__host_trace_name(t->name) : NULL;
    *tail = op;
    tail = &op->next;
  }
  if (!ok) {
    free(wait);
    free(rec);
    free(end);
    free_ops(head);
    return weft__err(WEFT_ENOMEM, "weft_graph_launch: out of host memory");
  }
  wait->kind = HOP_WAIT;
  wait->size = sizeof *wait;
  rec->kind = HOP_RECORD;
  rec->size = sizeof *rec;
  end->refs = 2; /* the graph's (as its last replay) and the record's */
  rec->u.rec = end;
  pthread_mutex_lock(&hb->mu);
  weft__host_rec *prev = g->last; /* its reference passes to the wait */
  g->last = end;
  pthread_mutex_unlock(&hb->mu);
  if (prev) {
    wait->u.rec = prev;
    weft__host_enqueue((weft__host_stream *)s, wait);
  } else {
    free(wait);
  }
  while (head) {
    weft__host_op *next = head->next;
    weft__host_enqueue((weft__host_stream *)s, head);
    head = next;
  }
  weft__host_enqueue((weft__host_stream *)s, rec);
  if (t0)
    weft__host_trace_api(t0, corr, task, "cudaGraphLaunch");
  return 0;
}

void weft__host_graph_counts(void *gp, size_t *ops, size_t *kernels,
                             size_t *copies) {
  const weft__host_graph *g = gp;
  *ops = g->nops;
  *kernels = g->nkernels;
  *copies = g->ncopies;
}

void weft__host_graph_destroy(weft__backend *b, void *gp) {
  weft__host_graph *g = gp;
  weft__host_backend *hb = weft__host_of(b);
  pthread_mutex_lock(&hb->mu);
  weft__host_rec_release(g->last);
  pthread_mutex_unlock(&hb->mu);
  free_ops(g->ops);
  free(g);
}
