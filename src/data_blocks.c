/* Data in blocks over devices (weft/data.h): one registration of many
 * handles, each homed on a device by a layout. Built on the handles' own
 * calls: a block is a handle like any other (docs/decisions/data.md,
 * "Blocks over devices are handles of their own"). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "data_internal.h"

struct weft_data_blocks {
  size_t n;
  int ndev;
  weft_data_layout layout;
  weft_data *block[]; /* NULL once unregistered */
};

static int home(const weft_data_blocks *b, size_t i) {
  return b->layout == WEFT_DATA_CYCLIC ? (int)(i % (size_t)b->ndev)
                                       : (int)(i * (size_t)b->ndev / b->n);
}

int weft_data_register_blocks(weft_runtime *rt, void *ptr, size_t bytes,
                              size_t block_bytes, weft_data_layout layout,
                              weft_data_blocks **out) {
  static const char call[] = "weft_data_register_blocks";
  if (!rt || !ptr || !out)
    return weft_error_set(WEFT_EINVAL, 0, "%s: rt, ptr and out are needed",
                          call);
  if (bytes == 0 || block_bytes == 0 ||
      (uintptr_t)ptr + bytes - 1 < (uintptr_t)ptr)
    return weft_error_set(WEFT_EINVAL, 0,
                          "%s: %zu bytes at %p in blocks of %zu: none, or "
                          "past the end of memory",
                          call, bytes, ptr, block_bytes);
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
  *out = b;
  return 0;
}

size_t weft_data_blocks_count(const weft_data_blocks *b) {
  return b ? b->n : 0;
}

weft_data *weft_data_blocks_at(const weft_data_blocks *b, size_t i) {
  return b && i < b->n ? b->block[i] : NULL;
}

int weft_data_blocks_device(const weft_data_blocks *b, size_t i) {
  if (!b || i >= b->n)
    return weft_error_set(WEFT_EINVAL, 0, "weft_data_blocks_device: %s",
                          b ? "no such block" : "b is NULL");
  return home(b, i);
}

int weft_data_blocks_place(weft_data_blocks *b) {
  if (!b)
    return weft_error_set(WEFT_EINVAL, 0, "weft_data_blocks_place: b is NULL");
  for (size_t i = 0; i < b->n; i++) {
    int rc = b->block[i] ? weft_data_prefetch(b->block[i], home(b, i)) : 0;
    if (rc)
      return rc;
  }
  return 0;
}

int weft_data_unregister_blocks(weft_data_blocks *b) {
  if (!b)
    return weft_error_set(WEFT_EINVAL, 0,
                          "weft_data_unregister_blocks: b is NULL");
  weft_data **left = malloc(b->n * sizeof *left);
  if (!left)
    return weft_error_set(WEFT_ENOMEM, 0,
                          "weft_data_unregister_blocks: no memory");
  size_t k = 0;
  for (size_t i = 0; i < b->n; i++)
    if (b->block[i])
      left[k++] = b->block[i];
  int rc = weft__data_unregister_n(left, k, 1);
  free(left);
  if (rc == 0) {
    free(b);
    return 0;
  }
  /* Those whose unregister went through are gone: b keeps the rest. */
  for (size_t i = 0; i < b->n; i++)
    if (b->block[i] && !weft__data_is_live(b->block[i]))
      b->block[i] = NULL;
  return rc;
}
