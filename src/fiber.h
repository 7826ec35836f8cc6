/* Fibers: a machine context plus its stack, switched with the sanitizers
 * told (ASan and TSan lose track of the stack otherwise). */
#ifndef WEFT__FIBER_H
#define WEFT__FIBER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/ctx.h"
#include "stack.h"

typedef struct weft__fiber {
  weft__ctx ctx;
  weft__stack *stack; /* NULL for a thread's own stack */
  const void *san_lo; /* stack bounds for ASan */
  size_t san_size;
  void *asan_fake; /* ASan fake-stack handle while suspended */
  void *tsan;      /* TSan fiber handle */
  /* C++'s exception state while suspended (fiber.c, weft__fiber_switch):
   * the Itanium ABI's caught exceptions and uncaught count. */
  void *eh_caught;
  unsigned eh_uncaught;
} weft__fiber;

/* A thread's own context, to switch fibers from. */
void weft__fiber_init_thread(weft__fiber *f);
/* Before the thread starts: what its context needs to be switched from
 * (weft__ctx_prepare). 0 or WEFT_ENOMEM; weft__fiber_fini_thread frees
 * it. weft__fiber_init_thread keeps it. */
int weft__fiber_prepare_thread(weft__fiber *f);
void weft__fiber_fini_thread(weft__fiber *f);
/* Prepares f to run entry(arg) on stack s. */
int weft__fiber_make(weft__fiber *f, weft__stack *s, weft__ctx_entry entry,
                     void *arg);
/* Releases sanitizer and context state; the stack is the caller's. */
void weft__fiber_release(weft__fiber *f);
/* Switches from the running fiber to another. exiting: from never runs
 * again (ASan then frees its fake stack). */
void weft__fiber_switch(weft__fiber *from, weft__fiber *to, int exiting);
/* First call in a new fiber's entry function. */
void weft__fiber_started(void);

/* Installs, once per process, a SIGSEGV handler on an alternate stack that
 * names a fiber stack overflow when a fault lands in a guard page (and
 * hands weft check's guarded pages of registered data to host_guard.h). Each
 * worker thread calls weft__fiber_thread_altstack once: it gives the thread
 * a signal stack (*mem, freed by _free) unless it has one (*mem NULL). A
 * plain thread about to run tasks calls weft__fiber_guest_altstack, which
 * does the same once per thread, freed when the thread exits. */
void weft__fiber_install_overflow_handler(void);
int weft__fiber_thread_altstack(void **mem);
void weft__fiber_thread_altstack_free(void *mem);
void weft__fiber_guest_altstack(void);
/* The stack whose guard page the handler checks for the calling thread. */
void weft__fiber_set_current_stack(const weft__stack *s, const char *name);

#endif
