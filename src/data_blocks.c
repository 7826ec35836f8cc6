/* Data in blocks over devices (weft/data.h): one registration of many
 * handles, each homed on a device by a layout. Built on the handles' own
 * calls: a block is a handle like any other (docs/decisions/data.md,
 * "Blocks over devices are handles of their own"). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "data_internal.h"
#include "ptrvec.h"

struct weft_data_blocks {
  size_t n;
  int ndev;
  weft_data_layout layout;
  weft_data *block[]; /* NULL once unregistered */
};

/* The registered block sets: a call given one checks it here first, so
 * that a set already unregistered (freed) is refused, not read, as a
 * handle is (data_handles.c's registry). */
static pthread_mutex_t sets_lock = PTHREAD_MUTEX_INITIALIZER;
static weft__ptrvec sets;

static int set_has(const weft_data_blocks *b) {
  pthread_mutex_lock(&sets_lock);
  int has = weft__ptrset_has(&sets, b);
  pthread_mutex_unlock(&sets_lock);
  return has;
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
  pthread_mutex_lock(&sets_lock);
  int added = weft__ptrset_add(&sets, b);
  pthread_mutex_unlock(&sets_lock);
  if (added != 0) {
    for (size_t k = n; k-- > 0;)
      weft__data_forget(b->block[k]);
    free(b);
    return weft_error_set(WEFT_ENOMEM, 0, "%s: no memory", call);
  }
  *out = b;
  return 0;
}

size_t weft_data_blocks_count(const weft_data_blocks *b) {
  return set_has(b) ? b->n : 0;
}

weft_data *weft_data_blocks_at(const weft_data_blocks *b, size_t i) {
  return set_has(b) && i < b->n ? b->block[i] : NULL;
}

int weft_data_blocks_device(const weft_data_blocks *b, size_t i) {
  static const char call[] = "weft_data_blocks_device";
  if (!set_has(b))
    return not_a_set(b, call);
  if (i >= b->n)
    return weft_error_set(WEFT_EINVAL, 0, "%s: block %zu of %zu", call, i,
                          b->n);
  return home(b, i);
}

int weft_data_blocks_place(weft_data_blocks *b) {
  if (!set_has(b))
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
  if (!set_has(b))
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
    pthread_mutex_lock(&sets_lock);
    weft__ptrset_remove(&sets, b);
    pthread_mutex_unlock(&sets_lock);
    free(b);
    return 0;
  }
  /* Those whose unregister went through are gone: b keeps the rest. */
  for (size_t i = 0; i < b->n; i++)
    if (b->block[i] && !weft__data_is_live(b->block[i]))
      b->block[i] = NULL;
  return rc;
}
