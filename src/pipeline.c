/* weft_map_chunks: depth tasks, each taking every depth-th chunk through
 * copy-in, fn and copy-out on its own stream. One stream serialises its own
 * chunks (so its device buffers are reused safely), while the streams of
 * different tasks overlap one chunk's copy-in with another's kernels and a
 * third's copy-out. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "door.h"
#include "weft/memory.h"
#include "weft/pipeline.h"
#include "weft/stream.h"

typedef struct map_job {
  const char *in;
  char *out;
  size_t in_chunk, out_chunk, nchunks;
  weft_chunk_fn fn;
  void *user;
  int depth;
  int first;        /* this task's first chunk */
  atomic_int *stop; /* set by the first task that fails */
  int rc;
  char msg[512]; /* rc's detail, for the caller's weft_last_error_message */
} map_job;

static void map_task(void *arg) {
  map_job *j = arg;
  size_t out_bytes = j->out_chunk ? j->out_chunk : j->in_chunk;
  void *din = NULL, *dout = NULL;
  int rc = weft_device_alloc(j->in_chunk, &din);
  if (!rc && j->out_chunk)
    rc = weft_device_alloc(j->out_chunk, &dout);
  else if (!rc)
    dout = din;
  /* The message names the call the user made; the other tasks stop. */
  if (rc) {
    atomic_store(j->stop, 1);
    weft__err(rc,
              "weft_map_chunks: a chunk's device buffers (%zu and %zu "
              "bytes): %s",
              j->in_chunk, j->out_chunk, weft_last_error_message());
  }
  for (size_t i = (size_t)j->first; !rc && i < j->nchunks;
       i += (size_t)j->depth) {
    if (atomic_load(j->stop))
      break; /* another chunk failed: stop the whole map */
    rc = weft_copy(din, j->in + i * j->in_chunk, j->in_chunk);
    if (!rc) {
      unsigned seen = weft__err_slot()->seq;
      rc = j->fn(din, dout, i, j->user);
      /* weft's codes are negative: another return is the function's own
       * failure, without a code of weft's. */
      if (rc > 0)
        rc = weft__err(WEFT_EINVAL,
                       "weft_map_chunks: the function returned %d for chunk "
                       "%zu, not 0 or a weft error code",
                       rc, i);
      /* Stop the other streams first, before the message is written: each
       * moment they do not see it they may start another chunk. */
      if (rc)
        atomic_store(j->stop, 1);
      /* A function that failed without a weft call of its own saying why:
       * say it, or the message would be whatever failed last, elsewhere
       * (an earlier chunk's failure the function handled, say). */
      if (rc && (weft__err_slot()->seq == seen || weft__err_slot()->code != rc))
        weft__err(rc,
                  "weft_map_chunks: the function returned %s for chunk "
                  "%zu",
                  weft_err_name(rc), i);
    }
    if (!rc)
      rc = weft_copy(j->out + i * out_bytes, dout, out_bytes);
    if (rc)
      atomic_store(j->stop, 1);
  }
  /* Failed frees are reported too: what they leave allocated would keep
   * weft_shutdown refusing. */
  int frc = dout && dout != din ? weft_device_free(dout) : 0;
  int frc2 = din ? weft_device_free(din) : 0;
  int src = weft_sync();
  j->rc = rc ? rc : frc ? frc : frc2 ? frc2 : src;
  if (j->rc)
    snprintf(j->msg, sizeof j->msg, "%s", weft_last_error_message());
}

void weft_map_opts_init(weft_map_opts *opts) {
  if (!opts)
    return;
  memset(opts, 0, sizeof *opts);
  opts->struct_size = sizeof *opts;
  opts->depth = 3;
}

int weft_map_chunks(const void *in, size_t in_chunk, void *out,
                    size_t out_chunk, size_t nchunks, weft_chunk_fn fn,
                    void *user, const weft_map_opts *user_opts) {
  weft_map_opts opts;
  weft_map_opts_init(&opts);
  if (user_opts) {
    if (user_opts->struct_size != sizeof opts)
      return weft__err(WEFT_EINVAL, "weft_map_chunks: opts->struct_size is "
                                    "not valid (call weft_map_opts_init)");
    opts = *user_opts;
  }
  if (!in || !out || !fn || in_chunk == 0)
    return weft__err(WEFT_EINVAL,
                     "weft_map_chunks: in, out, fn and in_chunk are needed");
  if (opts.depth < 1 || opts.depth > 64)
    return weft__err(WEFT_EINVAL, "weft_map_chunks: depth %d outside 1..64",
                     opts.depth);
  if (nchunks == 0)
    return 0;
  weft__caller c;
  int rc0 = weft__door("weft_map_chunks", WEFT__DOOR_NO_CAPTURE,
                       "its pipeline waits for the GPU", &c);
  if (rc0)
    return rc0;
  weft__exec *x = c.x;
  int depth = (size_t)opts.depth < nchunks ? opts.depth : (int)nchunks;
  /* On the heap: 64 jobs with their messages took 38 KiB of the caller's
   * stack, most of a task's 64 KiB fiber stack. */
  map_job *jobs = calloc((size_t)depth, sizeof *jobs);
  weft_task **tasks = calloc((size_t)depth, sizeof *tasks);
  if (!jobs || !tasks) {
    free(jobs);
    free(tasks);
    return weft__err(WEFT_ENOMEM, "weft_map_chunks: no memory");
  }
  weft_task_opts to;
  weft_task_opts_init(&to);
  to.name = "weft-map";
  to.device = x->dev;
  to.priority = x->high ? WEFT_PRIORITY_HIGH : WEFT_PRIORITY_NORMAL;
  int rc = 0, started = 0;
  atomic_int stop = 0;
  for (; started < depth; started++) {
    jobs[started] = (map_job){in,   out,   in_chunk, out_chunk, nchunks, fn,
                              user, depth, started,  &stop,     0,       ""};
    rc = weft_task_spawn(x->rt, &tasks[started], map_task, &jobs[started], &to);
    if (rc == WEFT_ESTATE) /* named as the call the program made */
      rc = weft__err(rc, "weft_map_chunks: %s", weft_last_error_message());
    if (rc)
      break;
  }
  int from = -1; /* the job whose failure is returned */
  for (int i = 0; i < started; i++) {
    int jr = weft_task_join(tasks[i]);
    if (!rc && jr)
      rc = jr; /* join's message describes it */
    else if (!rc && jobs[i].rc) {
      rc = jobs[i].rc;
      from = i;
    }
  }
  if (from >= 0) /* the failing task's detail, not the caller's last */
    weft__err(rc, "%s", jobs[from].msg);
  free(jobs);
  free(tasks);
  return rc;
}
