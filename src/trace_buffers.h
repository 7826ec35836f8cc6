/* The tracer's buffers, shared by the two halves of the tracer only: the
 * recording (trace_record.c), which fills them from every thread, and the
 * exporter (trace_write.c), which reads them once recording has stopped
 * and writes the JSON file. The rest of src/ uses trace.h. */
#ifndef WEFT__TRACE_BUFFERS_H
#define WEFT__TRACE_BUFFERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "trace.h"

#define CHUNK_RECS 4096

typedef struct chunk {
  struct chunk *next;
  atomic_uint n; /* records filled; written with release by the owner */
  weft__trace_rec r[CHUNK_RECS];
} chunk;

typedef struct str {
  struct str *next;
  uint64_t hash; /* of s, for the name table */
  char s[];
} str;

typedef struct id_name {
  uint64_t id;
  const char *name;
} id_name;

typedef struct pair {
  uint64_t key, val;
} pair;

/* The tracer's state: one trace at a time. */
struct weft__trace_buffers {
  pthread_mutex_t lock;
  char *path;
  char backend[16];
  int rank, world_size;   /* from the MPI launcher, else 0 and 1 */
  weft_device_info *devs; /* the traced runtime's devices */
  int ndev;
  atomic_uint_fast64_t epoch; /* a new trace invalidates thread buffers */
  chunk *chunks;              /* every chunk, for writing */
  chunk *shared;              /* the chunk batches go to (under lock) */
  str *strs;                  /* every interned string, for freeing */
  str **names; /* the same, found by content: open addressing, NULL free */
  size_t nnames, cap_names;
  id_name *tasks;
  size_t ntasks, cap_tasks;
  id_name *lanes;
  size_t nlanes, cap_lanes;
  pair *corrs;
  size_t ncorrs, cap_corrs;
  atomic_uint next_lane;
  atomic_uint_fast64_t next_corr;
  atomic_uint_fast64_t dropped;
};
extern struct weft__trace_buffers weft__trace_buf;

/* Makes room in *v, an array of *cap elements of elem bytes holding n, for
 * one more, doubling it when full. 0, or -1 when out of memory (*v is then
 * left as it was). */
static inline int weft__trace_grow(void **v, size_t *cap, size_t n,
                                   size_t elem) {
  if (n < *cap)
    return 0;
  size_t nc = *cap ? *cap * 2 : 64;
  void *nv = realloc(*v, nc * elem);
  if (!nv)
    return -1;
  *v = nv;
  *cap = nc;
  return 0;
}

/* Lock held, recording stopped. Writes the trace file at the path given to
 * weft__trace_open from the buffers; sorts the task and correlation maps
 * for its lookups. Returns 0, WEFT_EIO (not written) or WEFT_ENOMEM
 * (written, valid, with records dropped: the message and the file count
 * them). */
int weft__trace_write(void);

#endif
