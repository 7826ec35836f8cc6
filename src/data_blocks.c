/* Data in blocks over devices (weft/data.h): one registration of many
 * handles, each homed on a device by a layout. Built on the handles' own
 * calls: a block is a handle like any other (docs/decisions/data.md,
 * "Blocks over devices are handles of their own"). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_internal.h"

struct weft_data_blocks {
  size_t n;
  int ndev;
  weft_data_layout layout;
  weft_data *block[]; /* NULL once unregistered */
};

/* The registered block sets, by address: a call given one checks it here
 * first, so that a set already unregistered (freed) is refused, not read,
 * as a handle is (data_handles.c's registry). */
static struct {
  pthread_mutex_t lock;
  weft_data_blocks **set;
  size_t n, cap;
} sets = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Where b is or would go in sets. Its lock held. */
static size_t set_at(const weft_data_blocks *b) {
  size_t lo = 0, hi = sets.n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if ((uintptr_t)sets.set[mid] < (uintptr_t)b)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Whether b is registered. Its lock held. */
static int set_has(const weft_data_blocks *b) {
  size_t i = set_at(b);
  return b && i < sets.n && sets.set[i] == b;
}

static int set_enter(weft_data_blocks *b) {
  pthread_mutex_lock(&sets.lock);
  if (sets.n == sets.cap) {
    size_t cap = sets.cap ? 2 * sets.cap : 8;
    weft_data_blocks **grown = realloc(sets.set, cap * sizeof *grown);
    if (!grown) {
      pthread_mutex_unlock(&sets.lock);
      return WEFT_ENOMEM;
    }
    sets.set = grown;
    sets.cap = cap;
  }
  size_t i = set_at(b);
  memmove(&sets.set[i + 1], &sets.set[i], (sets.n - i) * sizeof *sets.set);
  sets.set[i] = b;
  sets.n++;
  pthread_mutex_unlock(&sets.lock);
  return 0;
}

/* WEFT_EINVAL, for call, reported: b is NULL or not registered. */
static int not_a_set(const weft_data_blocks *b, const char *call) {
  return weft_error_set(WEFT_EINVAL, 0, "%s: %s", call,
                        b ? "not a registered block set (never registered, "
                            "or unregistered)"
                          : "b is NULL");
}

static int home(const weft_data_blocks *b, size_t i) {
  return b->layout == WEFT_DATA_CYCLIC ? (int)(i % (size_t)b->ndev)
                                       : (int)(i * (size_t)b->ndev / b->n);
}

int weft_data_register_blocks(weft_runtime *rt, void *ptr, size_t bytes,
                              size_t block_bytes, weft_data_layout layout,
                              weft_data_blocks **out) {
  static const char call[] = "weft_data_register_blocks";
  if (!rt || !ptr || !out)
    return weft_error_set(WEFT_EINVAL, 0, "%s: %s is NULL", call,
                          !rt    ? "rt"
                          : !ptr ? "ptr"
                                 : "out");
  if (bytes == 0 || block_bytes == 0)
    return weft_error_set(WEFT_EINVAL, 0, "%s: %s is 0", call,
                          bytes == 0 ? "bytes" : "block_bytes");
  if ((uintptr_t)ptr + bytes - 1 < (uintptr_t)ptr)
    return weft_error_set(WEFT_EINVAL, 0,
                          "%s: %zu bytes at %p run past the end of memory",
                          call, bytes, ptr);
  if (layout != WEFT_DATA_BLOCKED && layout != WEFT_DATA_CYCLIC)
    return weft_error_set(WEFT_EINVAL, 0,
                          "%s: layout %d is not one of weft_data_layout's "
                          "(WEFT_DATA_BLOCKED, WEFT_DATA_CYCLIC)",
                          call, (int)layout);
  size_t n = bytes / block_bytes + (bytes % block_bytes != 0);
  if (n > WEFT_DATA_BLOCKS_MAX)
    return weft_error_set(WEFT_EINVAL, 0,
                          "%s: %zu blocks, more than WEFT_DATA_BLOCKS_MAX "
                          "(%d)",
                          call, n, WEFT_DATA_BLOCKS_MAX);
  int ndev;
  int rc = weft_device_count(rt, &ndev);
  if (rc)
    return weft_error_set(rc, 0, "%s: rt is not an open runtime", call);
  weft_data_blocks *b = calloc(1, sizeof *b + n * sizeof b->block[0]);
  if (!b)
    return weft_error_set(WEFT_ENOMEM, 0, "%s: no memory", call);
  b->n = n;
  b->ndev = ndev;
  b->layout = layout;
  for (size_t i = 0; i < n; i++) {
    size_t off = i * block_bytes;
    size_t len = bytes - off < block_bytes ? bytes - off : block_bytes;
    if ((rc = weft_data_register(rt, (char *)ptr + off, len, &b->block[i])) ==
        0) {
      b->block[i]->block = 1;
      continue;
    }
    /* Undone: no one else holds the blocks made, so they have no
     * instance, task or copy yet and leave without allocating, which
     * cannot fail as weft_data_unregister_n could. */
    char why[256];
    snprintf(why, sizeof why, "%s", weft_last_error_message());
    for (size_t k = i; k-- > 0;) /* the last first, as unregister_n does */
      weft__data_forget(b->block[k]);
    free(b);
    return weft_error_set(rc, 0, "%s: block %zu: %s", call, i, why);
  }
  if (set_enter(b)) {
    for (size_t k = n; k-- > 0;)
      weft__data_forget(b->block[k]);
    free(b);
    return weft_error_set(WEFT_ENOMEM, 0, "%s: no memory", call);
  }
  *out = b;
  return 0;
}

size_t weft_data_blocks_count(const weft_data_blocks *b) {
  pthread_mutex_lock(&sets.lock);
  size_t n = set_has(b) ? b->n : 0;
  pthread_mutex_unlock(&sets.lock);
  return n;
}

weft_data *weft_data_blocks_at(const weft_data_blocks *b, size_t i) {
  pthread_mutex_lock(&sets.lock);
  weft_data *d = set_has(b) && i < b->n ? b->block[i] : NULL;
  pthread_mutex_unlock(&sets.lock);
  return d;
}

int weft_data_blocks_device(const weft_data_blocks *b, size_t i) {
  static const char call[] = "weft_data_blocks_device";
  pthread_mutex_lock(&sets.lock);
  int ok = set_has(b);
  size_t n = ok ? b->n : 0;
  pthread_mutex_unlock(&sets.lock);
  if (!ok)
    return not_a_set(b, call);
  if (i >= n)
    return weft_error_set(WEFT_EINVAL, 0, "%s: block %zu of %zu", call, i, n);
  return home(b, i);
}

int weft_data_blocks_place(weft_data_blocks *b) {
  pthread_mutex_lock(&sets.lock);
  int ok = set_has(b);
  pthread_mutex_unlock(&sets.lock);
  if (!ok)
    return not_a_set(b, "weft_data_blocks_place");
  for (size_t i = 0; i < b->n; i++) {
    int rc = b->block[i] ? weft_data_prefetch(b->block[i], home(b, i)) : 0;
    if (rc)
      return rc;
  }
  return 0;
}

int weft_data_unregister_blocks(weft_data_blocks *b) {
  static const char call[] = "weft_data_unregister_blocks";
  pthread_mutex_lock(&sets.lock);
  int ok = set_has(b);
  pthread_mutex_unlock(&sets.lock);
  if (!ok)
    return not_a_set(b, call);
  weft_data **left = malloc(b->n * sizeof *left);
  if (!left)
    return weft_error_set(WEFT_ENOMEM, 0, "%s: no memory", call);
  size_t k = 0;
  for (size_t i = 0; i < b->n; i++)
    if (b->block[i])
      left[k++] = b->block[i];
  int rc = weft__data_unregister_n(left, k, 1);
  free(left);
  if (rc == 0) {
    pthread_mutex_lock(&sets.lock);
    size_t at = set_at(b);
    if (at < sets.n && sets.set[at] == b) {
      memmove(&sets.set[at], &sets.set[at + 1],
              (sets.n - at - 1) * sizeof *sets.set);
      sets.n--;
    }
    pthread_mutex_unlock(&sets.lock);
    free(b);
    return 0;
  }
  /* Those whose unregister went through are gone: b keeps the rest. */
  for (size_t i = 0; i < b->n; i++)
    if (b->block[i] && !weft__data_is_live(b->block[i]))
      b->block[i] = NULL;
  return rc;
}
