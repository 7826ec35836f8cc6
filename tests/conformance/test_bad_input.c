/* Bad input: every misuse gets its documented code, changes nothing, and
 * leaves the backend working.
 *
 * EXPECT_REFUSED checks the code, that the failure left a message for
 * weft_last_error_message(), and that a device round trip still succeeds. */
#include <stdlib.h>
#include <string.h>

#include "common.h"

static weft__stream *works_s; /* the stream the round trips run on */

#define EXPECT_REFUSED(expr, code)                                             \
  do {                                                                         \
    EXPECT_ERR(expr, code);                                                    \
    EXPECT_MSG(weft_last_error_message()[0] != '\0',                           \
               "%s failed without a message", #expr);                          \
    conf_check_works(works_s);                                                 \
  } while (0)

static void bad_handles(weft__backend *b, weft__stream *s) {
  weft__stream *dead, *stale_s;
  weft__event *e, *dead_e, *stale_e;
  EXPECT_OK(weft__stream_create(b, 0, 0, &dead));
  EXPECT_OK(weft__event_create(b, 0, 0, &dead_e));
  EXPECT_OK(weft__event_create(b, 0, 0, &e));
  stale_s = dead;
  stale_e = dead_e;
  EXPECT_OK(weft__stream_destroy(&dead));
  EXPECT_OK(weft__event_destroy(&dead_e));
  EXPECT(dead == NULL && dead_e == NULL);

  /* NULL handles and NULL outputs. */
  EXPECT_REFUSED(weft__stream_sync(NULL), WEFT_EINVAL);
  EXPECT_REFUSED(weft__stream_query(NULL), WEFT_EINVAL);
  EXPECT_REFUSED(weft__stream_wait_event(NULL, e), WEFT_EINVAL);
  EXPECT_REFUSED(weft__stream_wait_event(s, NULL), WEFT_EINVAL);
  EXPECT_REFUSED(weft__event_record(NULL, s), WEFT_EINVAL);
  EXPECT_REFUSED(weft__event_record(e, NULL), WEFT_EINVAL);
  EXPECT_REFUSED(weft__event_query(NULL), WEFT_EINVAL);
  EXPECT_REFUSED(weft__event_sync(NULL), WEFT_EINVAL);
  EXPECT_REFUSED(weft__event_elapsed(NULL, e, &(float){0}), WEFT_EINVAL);
  EXPECT_REFUSED(weft__copy(NULL, &(int){0}, &(int){0}, 4, WEFT__COPY_H2H),
                 WEFT_EINVAL);
  EXPECT_REFUSED(weft__stream_create(NULL, 0, 0, &dead), WEFT_EINVAL);
  EXPECT_REFUSED(weft__stream_create(b, 0, 0, NULL), WEFT_EINVAL);
  EXPECT_REFUSED(weft__event_create(NULL, 0, 0, &dead_e), WEFT_EINVAL);
  EXPECT_REFUSED(weft__event_create(b, 0, 0, NULL), WEFT_EINVAL);
  EXPECT_REFUSED(weft__event_create(b, 0, 0x100, &dead_e), WEFT_EINVAL);
  EXPECT_REFUSED(weft__stream_create(b, -1, 0, &dead), WEFT_ENODEV);
  EXPECT_REFUSED(weft__stream_create(b, b->ndev, 0, &dead), WEFT_ENODEV);
  EXPECT_REFUSED(weft__event_create(b, b->ndev, 0, &dead_e), WEFT_ENODEV);
  EXPECT_REFUSED(weft__device_sync(b, b->ndev), WEFT_ENODEV);
  EXPECT_REFUSED(weft__device_sync(NULL, 0), WEFT_EINVAL);
  EXPECT(dead == NULL && dead_e == NULL); /* failed calls left outputs alone */

  /* Destroyed handles. */
  EXPECT_REFUSED(weft__stream_sync(stale_s), WEFT_EHANDLE);
  EXPECT_REFUSED(weft__stream_query(stale_s), WEFT_EHANDLE);
  EXPECT_REFUSED(weft__stream_wait_event(stale_s, e), WEFT_EHANDLE);
  EXPECT_REFUSED(weft__stream_wait_event(s, stale_e), WEFT_EHANDLE);
  EXPECT_REFUSED(weft__event_record(e, stale_s), WEFT_EHANDLE);
  EXPECT_REFUSED(weft__event_record(stale_e, s), WEFT_EHANDLE);
  EXPECT_REFUSED(weft__event_query(stale_e), WEFT_EHANDLE);
  EXPECT_REFUSED(weft__event_sync(stale_e), WEFT_EHANDLE);
  EXPECT_REFUSED(weft__event_elapsed(stale_e, e, &(float){0}), WEFT_EHANDLE);
  EXPECT_REFUSED(weft__copy(stale_s, &(int){0}, &(int){0}, 4, WEFT__COPY_H2H),
                 WEFT_EHANDLE);
  EXPECT_REFUSED(weft__memset(stale_s, &(int){0}, 0, 4), WEFT_EHANDLE);
  int v = 1;
  void *args[] = {&v, &v};
  EXPECT_REFUSED(
      weft__launch(stale_s, &tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args),
      WEFT_EHANDLE);
  void *p = NULL;
  EXPECT_REFUSED(weft__device_alloc(stale_s, 16, &p), WEFT_EHANDLE);
  EXPECT(p == NULL);

  /* Destroy twice: through a stale copy (EHANDLE), through the pointer the
   * first destroy set to NULL (EINVAL), through a NULL pointer (EINVAL). */
  EXPECT_REFUSED(weft__stream_destroy(&stale_s), WEFT_EHANDLE);
  EXPECT_REFUSED(weft__event_destroy(&stale_e), WEFT_EHANDLE);
  EXPECT_REFUSED(weft__stream_destroy(&dead), WEFT_EINVAL);
  EXPECT_REFUSED(weft__event_destroy(&dead_e), WEFT_EINVAL);
  EXPECT_REFUSED(weft__stream_destroy(NULL), WEFT_EINVAL);
  EXPECT_REFUSED(weft__event_destroy(NULL), WEFT_EINVAL);
  EXPECT_OK(weft__event_destroy(&e));
}

static void bad_work(weft__stream *s) {
  int src = 1, dst = 0;
  EXPECT_REFUSED(weft__copy(s, NULL, &src, 4, WEFT__COPY_H2H), WEFT_EINVAL);
  EXPECT_REFUSED(weft__copy(s, &dst, NULL, 4, WEFT__COPY_H2H), WEFT_EINVAL);
  EXPECT_REFUSED(weft__copy(s, &dst, &src, 4, (weft__copy_kind)99),
                 WEFT_EINVAL);
  EXPECT_REFUSED(weft__copy(s, &dst, &src, 4, (weft__copy_kind)-1),
                 WEFT_EINVAL);
  EXPECT_REFUSED(weft__memset(s, NULL, 0, 4), WEFT_EINVAL);
  EXPECT_OK(weft__stream_sync(s));
  EXPECT_EQ_INT(dst, 0);

  int *d;
  EXPECT_OK(weft__device_alloc(s, sizeof(int), (void **)&d));
  int v = 3;
  void *args[] = {&d, &v};
  weft_dim3 one = WEFT_DIM1(1);
  /* The one launch here that is valid and runs. */
  EXPECT_OK(weft__launch(s, &tk.set_value, one, one, 0, args));
  EXPECT_REFUSED(weft__launch(s, NULL, one, one, 0, args), WEFT_EINVAL);
  EXPECT_REFUSED(weft__launch(s, &tk.set_value, one, one, 0, NULL),
                 WEFT_EINVAL);
  /* A descriptor without WEFT_KERNEL_ARGS given arguments: refused on
   * every backend (the host backend once read what it was never given). */
  weft_kernel undeclared = tk.set_value;
  undeclared.nargs = 0;
  EXPECT_REFUSED(weft__launch(s, &undeclared, one, one, 0, args), WEFT_EINVAL);
  EXPECT(strstr(weft_last_error_message(), "WEFT_KERNEL_ARGS") != NULL);
  EXPECT_REFUSED(
      weft__launch(s, &tk.set_value, WEFT_DIM3(0, 1, 1), one, 0, args),
      WEFT_EINVAL);
  EXPECT_REFUSED(
      weft__launch(s, &tk.set_value, WEFT_DIM3(1, 1, 0), one, 0, args),
      WEFT_EINVAL);
  EXPECT_REFUSED(
      weft__launch(s, &tk.set_value, one, WEFT_DIM3(1, 0, 1), 0, args),
      WEFT_EINVAL);
  EXPECT(conf_info(s->hdr.bk)->max_threads_per_block < 2048);
  EXPECT_REFUSED(
      weft__launch(s, &tk.set_value, one, WEFT_DIM3(32, 32, 2), 0, args),
      WEFT_EINVAL);
  EXPECT_REFUSED(
      weft__launch(s, &tk.set_value, WEFT_DIM3(1, 65536, 1), one, 0, args),
      WEFT_EINVAL);
  weft_kernel k = tk.set_value; /* lacking this backend's function */
  if (conf_kind(s->hdr.bk) == WEFT_BACKEND_HOST) {
    k.host = NULL;
    k.cuda = (const void *)&k; /* any non-NULL address: never launched */
  } else {
    k.cuda = NULL;
  }
  EXPECT_REFUSED(weft__launch(s, &k, one, one, 0, args), WEFT_ENOTSUP);
  k = tk.set_value;
  k.arg_size[1] = 0;
  EXPECT_REFUSED(weft__launch(s, &k, one, one, 0, args), WEFT_EINVAL);
  k = tk.set_value;
  k.nargs = WEFT_KERNEL_MAX_ARGS + 1;
  EXPECT_REFUSED(weft__launch(s, &k, one, one, 0, args), WEFT_EINVAL);

  /* None of the refused launches ran: the value is the valid one's. */
  int h = 0;
  EXPECT_OK(weft__copy(s, &h, d, sizeof h, WEFT__COPY_D2H));
  EXPECT_OK(weft__device_free(s, d));
  EXPECT_OK(weft__stream_sync(s));
  EXPECT_EQ_INT(h, 3);
}

static void bad_memory(weft__backend *b, weft__stream *s) {
  void *p = NULL, *d, *pin;
  EXPECT_REFUSED(weft__device_alloc(s, 0, &p), WEFT_EINVAL);
  EXPECT_REFUSED(weft__device_alloc(s, 16, NULL), WEFT_EINVAL);
  EXPECT_REFUSED(weft__pinned_alloc(b, 0, &p), WEFT_EINVAL);
  EXPECT_REFUSED(weft__pinned_alloc(b, 16, NULL), WEFT_EINVAL);
  EXPECT_REFUSED(weft__pinned_alloc(NULL, 16, &p), WEFT_EINVAL);
  EXPECT_REFUSED(weft__device_alloc(s, (size_t)1 << 50, &p), WEFT_ENOMEM);
  EXPECT_REFUSED(weft__pinned_alloc(b, (size_t)1 << 50, &p), WEFT_ENOMEM);
  EXPECT(p == NULL);

  EXPECT_OK(weft__device_alloc(s, 64, &d));
  EXPECT_OK(weft__pinned_alloc(b, 64, &pin));
  int local;
  void *heap = malloc(64);
  EXPECT(heap != NULL);
  EXPECT_REFUSED(weft__device_free(s, &local), WEFT_EINVAL);
  EXPECT_REFUSED(weft__device_free(s, heap), WEFT_EINVAL);
  EXPECT_REFUSED(weft__device_free(s, (char *)d + 1), WEFT_EINVAL);
  EXPECT_REFUSED(weft__device_free(s, pin), WEFT_EINVAL); /* wrong kind */
  EXPECT_REFUSED(weft__pinned_free(b, heap), WEFT_EINVAL);
  EXPECT_REFUSED(weft__pinned_free(b, d), WEFT_EINVAL);
  EXPECT_REFUSED(weft__pinned_free(NULL, pin), WEFT_EINVAL);
  free(heap);
  EXPECT_OK(weft__device_free(s, NULL)); /* like free(NULL) */
  EXPECT_OK(weft__pinned_free(b, NULL));
  EXPECT_OK(weft__device_free(s, d));
  EXPECT_REFUSED(weft__device_free(s, d), WEFT_EINVAL); /* double free */
  EXPECT_OK(weft__pinned_free(b, pin));
  EXPECT_REFUSED(weft__pinned_free(b, pin), WEFT_EINVAL);
  EXPECT_OK(weft__stream_sync(s));
}

/* Refused with code and a message that says what p lies in. No round
 * trip after it: that would allocate, and could be handed the memory
 * freed below. */
#define EXPECT_REFUSED_SAYING(expr, code, words)                               \
  do {                                                                         \
    EXPECT_ERR(expr, code);                                                    \
    EXPECT_MSG(strstr(weft_last_error_message(), words) != NULL,               \
               "%s: message '%s' does not say '%s'", #expr,                    \
               weft_last_error_message(), words);                              \
  } while (0)

/* Pointers are looked up by any address inside: a slice past its
 * allocation's end, memory freed before, a memset of memory weft did not
 * allocate, and another device's memory in a launch's arguments. */
static void bad_pointers(weft__backend *b, weft__stream *s) {
  char *d, *pin;
  EXPECT_OK(weft__device_alloc(s, 256, (void **)&d));
  EXPECT_OK(weft__pinned_alloc(b, 256, (void **)&pin));
  EXPECT_OK(weft__copy(s, d + 64, pin, 192, WEFT__COPY_DEFAULT));
  EXPECT_REFUSED_SAYING(weft__copy(s, d + 64, pin, 193, WEFT__COPY_DEFAULT),
                        WEFT_EINVAL, "past the end of its device allocation");
  EXPECT_REFUSED_SAYING(weft__copy(s, d, pin + 128, 129, WEFT__COPY_DEFAULT),
                        WEFT_EINVAL, "past the end of its pinned allocation");
  EXPECT_REFUSED_SAYING(weft__memset(s, d + 255, 0, 2), WEFT_EINVAL,
                        "past the end");
  char stack[64];
  EXPECT_REFUSED(weft__memset(s, stack, 0, (size_t)1 << 50), WEFT_EINVAL);

  /* Freed, and the free seen through: every use is refused, by any
   * address inside, until the memory is handed out again. A launch
   * remembers the allocations its pointers lay in (backend.c): another
   * pointer into d passes without a lookup, one into x, freed before,
   * is still looked up and refused, and d's own free forgets d. */
  int v = 5;
  char *x;
  EXPECT_OK(weft__device_alloc(s, 256, (void **)&x));
  EXPECT_OK(weft__stream_sync(s));
  EXPECT_OK(weft__device_free(s, x));
  EXPECT_OK(weft__stream_sync(s));
  char *inner = d + 16;
  void *args[] = {&inner, &v};
  EXPECT_OK(
      weft__launch(s, &tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  inner = d + 128;
  EXPECT_OK(
      weft__launch(s, &tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args));
  inner = x + 16;
  EXPECT_REFUSED_SAYING(
      weft__launch(s, &tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args),
      WEFT_EINVAL, "freed before");
  inner = d + 16;
  EXPECT_OK(weft__stream_sync(s));
  EXPECT_OK(weft__device_free(s, d));
  EXPECT_OK(weft__stream_sync(s));
  EXPECT_REFUSED_SAYING(weft__copy(s, pin, d + 8, 16, WEFT__COPY_DEFAULT),
                        WEFT_EINVAL, "freed before");
  EXPECT_REFUSED_SAYING(weft__copy(s, d, pin, 16, WEFT__COPY_DEFAULT),
                        WEFT_EINVAL, "freed before");
  EXPECT_REFUSED_SAYING(weft__memset(s, d + 200, 0, 8), WEFT_EINVAL,
                        "freed before");
  EXPECT_REFUSED_SAYING(
      weft__launch(s, &tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args),
      WEFT_EINVAL, "freed before");
  EXPECT_REFUSED_SAYING(weft__device_free(s, d), WEFT_EINVAL, "double free");
  EXPECT_OK(weft__pinned_free(b, pin));
  conf_check_works(works_s);

  /* A pointer inside another device's allocation. */
  if (b->ndev > 1) {
    weft__stream *s1;
    char *d1;
    EXPECT_OK(weft__stream_create(b, 1, 0, &s1));
    EXPECT_OK(weft__device_alloc(s1, 256, (void **)&d1));
    inner = d1 + 32;
    EXPECT_REFUSED_SAYING(
        weft__launch(s, &tk.set_value, WEFT_DIM1(1), WEFT_DIM1(1), 0, args),
        WEFT_EINVAL, "memory of device 1");
    EXPECT_OK(weft__device_free(s1, d1));
    EXPECT_OK(weft__stream_sync(s1));
    EXPECT_OK(weft__stream_destroy(&s1));
  }
}

/* Objects of two backends do not mix; closing with live objects is EBUSY. */
static void bad_backends(weft__backend *b, weft__stream *s) {
  weft__backend *other = NULL;
  EXPECT_REFUSED(weft__backend_open(conf_kind(b), 0, NULL, NULL), WEFT_EINVAL);
  EXPECT_REFUSED(weft__backend_open((weft_backend_kind)99, 0, NULL, &other),
                 WEFT_ENODEV);
  EXPECT_REFUSED(weft__backend_close(NULL), WEFT_EINVAL);
  EXPECT(other == NULL);

  EXPECT_OK(weft__backend_open(conf_kind(b), 0, NULL, &other));
  weft__event *foreign;
  weft__stream *live;
  void *mem;
  EXPECT_OK(weft__event_create(other, 0, 0, &foreign));
  EXPECT_REFUSED(weft__stream_wait_event(s, foreign), WEFT_EINVAL);
  EXPECT_REFUSED(weft__event_record(foreign, s), WEFT_EINVAL);
  EXPECT_REFUSED(weft__backend_close(other), WEFT_EBUSY);
  EXPECT_OK(weft__event_destroy(&foreign));

  EXPECT_OK(weft__stream_create(other, 0, 0, &live));
  EXPECT_REFUSED(weft__backend_close(other), WEFT_EBUSY);
  EXPECT_OK(weft__device_alloc(live, 8, &mem));
  EXPECT_OK(weft__stream_destroy(&live));
  EXPECT_REFUSED(weft__backend_close(other), WEFT_EBUSY); /* the allocation */
  EXPECT_OK(weft__stream_create(other, 0, 0, &live));
  EXPECT_OK(weft__device_free(live, mem));
  EXPECT_OK(weft__stream_sync(live));
  EXPECT_OK(weft__stream_destroy(&live));
  EXPECT_OK(weft__pinned_alloc(other, 8, &mem));
  EXPECT_REFUSED(weft__backend_close(other), WEFT_EBUSY);
  EXPECT_OK(weft__pinned_free(other, mem));
  conf_close(other);
}

int main(void) {
  weft__backend *b = conf_open(0);
  weft__stream *s;
  EXPECT_OK(weft__stream_create(b, 0, 0, &s));
  works_s = s;
  bad_handles(b, s);
  bad_work(s);
  bad_memory(b, s);
  bad_pointers(b, s);
  bad_backends(b, s);
  EXPECT_REFUSED(weft__backend_close(b), WEFT_EBUSY); /* s is still live */
  EXPECT_OK(weft__stream_destroy(&s));
  conf_close(b);
  return 0;
}
