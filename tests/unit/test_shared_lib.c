/* Links the shared libweft and uses only the public API, so a symbol
 * missing from the library's exports fails to link or run here (the other
 * tests link the static library, where every symbol is visible). */
#include <stdio.h>

#include <weft.h>

static void task(void *arg) {
  int *x = arg;
  *x = weft_sync() == 0 ? 42 : -1;
  weft_yield();
}

static int done(void *arg) { return arg ? 0 : WEFT_EAGAIN; }

int main(void) {
  weft_runtime *rt;
  weft_runtime_opts o;
  weft_runtime_opts_init(&o);
  o.backend = WEFT_BACKEND_HOST;
  if (weft_init(&rt, &o) != 0) {
    fprintf(stderr, "weft_init: %s\n", weft_last_error_message());
    return 1;
  }
  int x = 0;
  weft_task *t;
  void *p = NULL;
  weft_event *ev = NULL;
  int ok = weft_task_spawn(rt, &t, task, &x, NULL) == 0 &&
           weft_task_join(t) == 0 && x == 42 &&
           weft_pinned_alloc(64, &p) == 0 && weft_pinned_free(p) == 0 &&
           weft_event_create(&ev) == 0 && weft_event_record(ev) == 0 &&
           weft_event_sync(ev) == 0 && weft_event_destroy(&ev) == 0 &&
           weft_device_sync() == 0 && weft_sync() == 0 &&
           weft_stream_current() != NULL &&
           weft_wait_until_named(done, &x, "the MPI component's call") == 0;
  if (weft_shutdown(rt) != 0 || !ok) {
    fprintf(stderr, "failed: %s\n", weft_last_error_message());
    return 1;
  }
  puts("ok");
  return 0;
}
