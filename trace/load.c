/* Loading a Chrome Trace Event file into a trace_model (model.h): the
 * document around the events, one pass of the pull parser over them
 * (load_event.c reads each), then finishing the model (finish.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "intern.h"
#include "loader.h"
#include "trace_format.h"

static int read_events(trace_loader *L) {
  trace_json_token t;
  for (;;) {
    trace_json_type type = trace_json_next(&L->j, &t);
    if (type == TRACE_JSON_END_ARRAY)
      return 0;
    if (type == TRACE_JSON_ERROR)
      return -1;
    if (type != TRACE_JSON_OBJECT)
      return trace_json_fail(&L->j, t.offset,
                             "an event must be an object, not %s",
                             trace_json_type_name(type));
    if (trace_load_event(L, t.offset))
      return -1;
  }
}

/* The members of a header object: the whole numbers under keys[0..n), if
 * given, into out[] ("distributedInfo"'s "rank", "weft"'s
 * "dropped_records", a device's properties), and, when is_key is given,
 * whether the string under it is is_value, into *is ("weft"'s "backend" is
 * "host"). */
static int read_header(trace_loader *L, const char *const *keys, int64_t *out,
                       int n, const char *is_key, const char *is_value,
                       int *is) {
  trace_json_token t;
  for (;;) {
    trace_json_type type = trace_json_next(&L->j, &t);
    if (type == TRACE_JSON_END_OBJECT)
      return 0;
    if (type != TRACE_JSON_KEY)
      return -1;
    int k = 0;
    while (k < n && !trace_json_is(&t, keys[k]))
      k++;
    int string = is_key && trace_json_is(&t, is_key);
    if (trace_json_next(&L->j, &t) == TRACE_JSON_ERROR)
      return -1;
    /* The exact integer: near 2^63 the double rounds past int64. */
    if (k < n && t.type == TRACE_JSON_NUMBER && t.is_integer && t.integer >= 0)
      out[k] = t.integer;
    else if (string && t.type == TRACE_JSON_STRING)
      *is = trace_json_is(&t, is_value);
    else if (trace_json_skip(&L->j, &t))
      return -1;
  }
}

/* "deviceProperties": the first device's "numSms" (the host backend's
 * executor threads per device) into m->executors, and its warp slots per
 * SM into m->warps_per_sm. */
static int read_device_props(trace_loader *L) {
  static const char *const keys[] = {
      WEFT_TRF_NUM_SMS, WEFT_TRF_MAX_THREADS_PER_SM, WEFT_TRF_WARP_SIZE};
  trace_json_token t;
  for (;;) {
    trace_json_type type = trace_json_next(&L->j, &t);
    if (type == TRACE_JSON_END_ARRAY)
      return 0;
    if (type != TRACE_JSON_OBJECT) {
      if (type == TRACE_JSON_ERROR || trace_json_skip(&L->j, &t))
        return -1;
      continue;
    }
    int64_t v[3] = {-1, -1, -1};
    if (read_header(L, keys, v, 3, NULL, NULL, NULL))
      return -1;
    if (L->m->executors <= 0 && v[0] > 0)
      L->m->executors = v[0];
    if (L->m->warps_per_sm <= 0 && v[1] > 0 && v[2] > 0)
      L->m->warps_per_sm = v[1] / v[2];
  }
}

static int read_document(trace_loader *L) {
  trace_json_token t;
  trace_json_type type = trace_json_next(&L->j, &t);
  if (type == TRACE_JSON_ARRAY) {
    L->m->bare_array = 1;
    if (read_events(L))
      return -1;
  } else if (type == TRACE_JSON_OBJECT) {
    int seen = 0;
    for (;;) {
      type = trace_json_next(&L->j, &t);
      if (type == TRACE_JSON_END_OBJECT)
        break;
      if (type != TRACE_JSON_KEY)
        return -1;
      int events = trace_json_is(&t, WEFT_TRF_TRACE_EVENTS);
      int dist = trace_json_is(&t, WEFT_TRF_DISTRIBUTED_INFO);
      int weft = trace_json_is(&t, WEFT_TRF_WEFT);
      int props = trace_json_is(&t, WEFT_TRF_DEVICE_PROPERTIES);
      type = trace_json_next(&L->j, &t);
      if (type == TRACE_JSON_ERROR)
        return -1;
      if (dist && type == TRACE_JSON_OBJECT) {
        static const char *const rank[] = {WEFT_TRF_RANK};
        if (read_header(L, rank, &L->m->rank, 1, NULL, NULL, NULL))
          return -1;
        continue;
      }
      if (weft && type == TRACE_JSON_OBJECT) {
        L->m->weft_header = 1;
        static const char *const dropped[] = {WEFT_TRF_DROPPED_RECORDS};
        if (read_header(L, dropped, &L->m->dropped, 1, WEFT_TRF_BACKEND,
                        WEFT_TRF_BACKEND_HOST, &L->m->host_backend))
          return -1;
        continue;
      }
      if (props && type == TRACE_JSON_ARRAY) {
        if (read_device_props(L))
          return -1;
        continue;
      }
      if (!events) {
        if (trace_json_skip(&L->j, &t))
          return -1;
        continue;
      }
      if (seen)
        return trace_json_fail(&L->j, t.offset,
                               "\"" WEFT_TRF_TRACE_EVENTS "\" given twice");
      if (type != TRACE_JSON_ARRAY)
        return trace_load_fail_type(L, &t, WEFT_TRF_TRACE_EVENTS, "an array");
      seen = 1;
      if (read_events(L))
        return -1;
    }
    if (!seen)
      return trace_json_fail(&L->j, 0,
                             "no \"" WEFT_TRF_TRACE_EVENTS
                             "\" array in the top-level object");
  } else if (type != TRACE_JSON_ERROR) {
    return trace_json_fail(&L->j, t.offset,
                           "a trace is an object with a "
                           "\"" WEFT_TRF_TRACE_EVENTS "\" array, or an array "
                           "of events, not %s",
                           trace_json_type_name(type));
  } else {
    return -1;
  }
  return trace_json_next(&L->j, &t) == TRACE_JSON_EOF ? 0 : -1;
}

static void loader_free(trace_loader *L) {
  trace_keymap_free(&L->lanes);
  trace_keymap_free(&L->threads);
  trace_keymap_free(&L->tracks);
  free(L->lanes_v);
  free(L->threads_v);
  free(L->metas);
  trace_json_free(&L->j);
}

static int load(trace_model *m, const void *buf, size_t len, trace_error *err,
                void *to_free) {
  memset(m, 0, sizeof *m);
  m->rank = -1;
  m->dropped = -1;
  trace_loader L;
  memset(&L, 0, sizeof L);
  L.m = m;
  if (trace_intern_init(m)) {
    snprintf(err->message, sizeof err->message, "out of memory");
    free(to_free);
    return -1;
  }

  /* Events take 100 bytes or more, so this capacity is rarely outgrown;
   * pages of it that are never written cost no memory. */
  size_t guess = len / 100 + 16;
  if (trace_grow((void **)&m->ops, &L.ops_cap, guess, sizeof *m->ops))
    L.ops_cap = 0;
  trace_json_init(&L.j, buf, len);
  int rc = read_document(&L);
  if (rc)
    snprintf(err->message, sizeof err->message, "%s", trace_json_error(&L.j));
  /* The input is no longer needed: free it before sorting, which briefly
   * needs a second copy of the operations. */
  trace_json_free(&L.j);
  free(to_free);
  if (rc == 0 && trace_load_finish(&L) != 0) {
    snprintf(err->message, sizeof err->message,
             "out of memory sorting %zu operations", m->nops);
    rc = -1;
  }
  loader_free(&L);
  return rc;
}

int trace_model_load(trace_model *m, const void *buf, size_t len,
                     trace_error *err) {
  return load(m, buf, len, err, NULL);
}

/* The most a trace may hold: 4 GiB (a million GPU operations take about
 * 300 MB), or WEFT_TRACE_MAX_MIB mebibytes; 0, with err's message, for a
 * value that is not a whole number from 1 to 2^40 - 1 (docs/ENV.md: a bad
 * value is an error, never a silent fallback). */
static size_t max_input(trace_error *err) {
  const char *e = getenv("WEFT_TRACE_MAX_MIB");
  if (!e || !*e)
    return (size_t)4 << 30;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(e, &end, 10);
  if (*e == '-' || errno || *end != '\0' || v == 0 ||
      v >= ((unsigned long long)1 << 40)) {
    snprintf(err->message, sizeof err->message,
             "WEFT_TRACE_MAX_MIB=%.40s: expected a whole number of MiB from 1 "
             "to 1099511627775",
             e);
    return 0;
  }
  return (size_t)v << 20;
}

int trace_model_load_file(trace_model *m, const char *path, trace_error *err) {
  memset(m, 0, sizeof *m);
  size_t limit = max_input(err);
  if (limit == 0)
    return -1;
  int is_stdin = strcmp(path, "-") == 0;
  FILE *f = is_stdin ? stdin : fopen(path, "rb");
  if (!f) {
    snprintf(err->message, sizeof err->message, "cannot open: %s",
             strerror(errno));
    return -1;
  }
  /* A regular file is read in one piece of its size; a pipe in doubling
   * pieces, up to the limit: an endless input (a device, a pipe that
   * never closes) is refused with a message instead of growing until
   * memory runs out. */
  size_t cap = 1 << 16, len = 0;
  int too_big = 0;
  if (!is_stdin && fseek(f, 0, SEEK_END) == 0) {
    long size = ftell(f);
    if (size > 0 && (unsigned long)size < SIZE_MAX - 1)
      cap = (size_t)size + 1;
    too_big = size > 0 && (unsigned long)size > limit;
    rewind(f);
  }
  if (cap > limit + 1)
    cap = limit + 1; /* reads past the limit, and says so below */
  /* A file whose size is known to be past the limit is not read at all. */
  char *buf = too_big ? NULL : malloc(cap);
  if (too_big)
    snprintf(err->message, sizeof err->message,
             "input larger than %llu MiB: not read (WEFT_TRACE_MAX_MIB "
             "raises the limit)",
             (unsigned long long)(limit >> 20));
  for (; !too_big;) {
    if (!buf) {
      snprintf(err->message, sizeof err->message, "out of memory reading");
      break;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (len < cap) {
      if (ferror(f)) {
        snprintf(err->message, sizeof err->message, "read error: %s",
                 strerror(errno));
        free(buf);
        buf = NULL;
      }
      break;
    }
    if (len > limit) {
      snprintf(err->message, sizeof err->message,
               "input larger than %llu MiB: not read (WEFT_TRACE_MAX_MIB "
               "raises the limit)",
               (unsigned long long)(limit >> 20));
      free(buf);
      buf = NULL;
      break;
    }
    size_t next = cap <= limit / 2 ? cap * 2 : limit + 1;
    char *bigger = next > cap ? realloc(buf, next) : NULL;
    if (!bigger)
      free(buf);
    buf = bigger;
    cap = next;
  }
  if (!is_stdin)
    fclose(f);
  if (!buf)
    return -1;
  return load(m, buf, len, err, buf);
}
