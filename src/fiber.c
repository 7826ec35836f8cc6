/* Fiber switching with sanitizer announcements, and the overflow report.
 * The stacks come from stack.c. */
#include <errno.h>
#ifdef __GLIBC__
#include <execinfo.h>
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "fiber.h"
#include "host_guard.h"
#include "weft/error.h"

#if defined(__SANITIZE_ADDRESS__)
#define WEFT__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WEFT__ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define WEFT__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WEFT__TSAN 1
#endif
#endif

#ifdef WEFT__ASAN
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom,
                                    size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save,
                                     const void **bottom_old, size_t *size_old);
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
#endif
#ifdef WEFT__TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif

/* ---- switching ---- */

int weft__fiber_prepare_thread(weft__fiber *f) {
  memset(f, 0, sizeof *f);
  return weft__ctx_prepare(&f->ctx);
}

void weft__fiber_init_thread(weft__fiber *f) {
  void *impl = f->ctx.impl; /* weft__fiber_prepare_thread's */
  memset(f, 0, sizeof *f);
  f->ctx.impl = impl;
#ifdef WEFT__ASAN
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void *lo;
    size_t size;
    pthread_attr_getstack(&attr, &lo, &size);
    f->san_lo = lo;
    f->san_size = size;
    pthread_attr_destroy(&attr);
  }
#endif
#ifdef WEFT__TSAN
  f->tsan = __tsan_get_current_fiber();
#endif
}

void weft__fiber_fini_thread(weft__fiber *f) { weft__ctx_release(&f->ctx); }

int weft__fiber_make(weft__fiber *f, weft__stack *s, weft__ctx_entry entry,
                     void *arg) {
#ifdef WEFT__ASAN
  /* A fiber that ended by switching away never returned from its frames,
   * so their poison is still on this memory: the new one starts clean. */
  __asan_unpoison_memory_region(s->lo, s->size);
#endif
  int rc = weft__ctx_make(&f->ctx, s->lo, s->size, entry, arg);
  if (rc)
    return rc;
  f->stack = s;
  f->san_lo = s->lo;
  f->san_size = s->size;
  f->asan_fake = NULL;
  f->eh_caught = NULL; /* a task starts with no exception in flight */
  f->eh_uncaught = 0;
#ifdef WEFT__TSAN
  f->tsan = __tsan_create_fiber(0);
#endif
  return 0;
}

void weft__fiber_release(weft__fiber *f) {
#ifdef WEFT__TSAN
  if (f->tsan)
    __tsan_destroy_fiber(f->tsan);
  f->tsan = NULL;
#endif
  weft__ctx_release(&f->ctx);
  f->stack = NULL;
}

/* C++'s per-thread exception state (the Itanium C++ ABI's
 * __cxa_eh_globals, libstdc++'s and libc++abi's alike: the caught
 * exceptions' stack, then the uncaught count) is the fiber's: a task that
 * switches while an exception propagates (a weft::task handle's
 * destructor joining during unwinding) would leave its count to the
 * thread's next task and resume elsewhere without it. Weak: a C program
 * has no such state. */
typedef struct eh_globals {
  void *caught;
  unsigned uncaught;
} eh_globals;
extern eh_globals *__cxa_get_globals(void) __attribute__((weak));

void weft__fiber_switch(weft__fiber *from, weft__fiber *to, int exiting) {
  if (__cxa_get_globals) {
    eh_globals *g = __cxa_get_globals();
    from->eh_caught = g->caught;
    from->eh_uncaught = g->uncaught;
    g->caught = to->eh_caught;
    g->uncaught = to->eh_uncaught;
  }
#ifdef WEFT__ASAN
  __sanitizer_start_switch_fiber(exiting ? NULL : &from->asan_fake, to->san_lo,
                                 to->san_size);
#endif
#ifdef WEFT__TSAN
  __tsan_switch_to_fiber(to->tsan, 0);
#endif
  (void)exiting;
  weft__ctx_switch(&from->ctx, &to->ctx);
#ifdef WEFT__ASAN
  __sanitizer_finish_switch_fiber(from->asan_fake, NULL, NULL);
#endif
}

void weft__fiber_started(void) {
#ifdef WEFT__ASAN
  __sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
}

/* ---- stack overflow report ---- */

static _Thread_local const weft__stack *cur_stack;
static _Thread_local const char *cur_name;

void weft__fiber_set_current_stack(const weft__stack *s, const char *name) {
  cur_stack = s;
  cur_name = name;
}

static void put(const char *s) {
  ssize_t r = write(2, s, strlen(s));
  (void)r;
}

/* 1 for a store, 0 for a load, -1 where the fault does not say. */
static int fault_stores(const void *uc) {
#if defined(__x86_64__) && defined(REG_ERR)
  return (((const ucontext_t *)uc)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
  (void)uc;
  return -1;
#endif
}

static void on_segv(int sig, siginfo_t *si, void *uc) {
  /* Registered data's guarded pages (weft check): reported and opened,
   * the access runs again. */
  if (weft__guard_fault(si->si_addr, fault_stores(uc), cur_name))
    return;
  /* The report must not change how the process dies: with stderr a pipe
   * nobody reads any more, a write would end it by SIGPIPE instead. */
  signal(SIGPIPE, SIG_IGN);
  const weft__stack *s = cur_stack;
  char *addr = si->si_addr, *lo = s ? (char *)s->lo : NULL;
  size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  if (s && s->guarded && addr >= lo - ps && addr < lo) {
    /* The guard page lies just below the stack. */
    put("weft: task '");
    put(cur_name ? cur_name : "(unnamed)");
    put("' overflowed its fiber stack; raise weft_runtime_opts.stack_size\n");
  } else if (s && !s->guarded &&
             (weft__stack_check(s) != 0 ||
              (addr < lo && (size_t)(lo - addr) <= s->size + ps))) {
    /* No guard page (more stacks live than the kernel's map budget
     * guards, stack.c), but the canary at the stack's low end is gone or
     * the fault lies within a stack's length below it: most likely the
     * overflow running on below the stack. */
    put("weft: task '");
    put(cur_name ? cur_name : "(unnamed)");
    put("' overflowed its fiber stack (an unguarded one: more stacks live "
        "than the kernel's map budget guards); raise "
        "weft_runtime_opts.stack_size\n");
  }
#ifdef __GLIBC__
  /* Where it happened, for machines without a debugger: module and
   * offset per frame (addr2line -e MODULE OFFSET names the line). */
  put("weft: SIGSEGV");
  if (s) {
    put(" in task '");
    put(cur_name ? cur_name : "(unnamed)");
    put("'");
  }
  put("; backtrace:\n");
  void *frames[48];
  int n = backtrace(frames, 48);
  backtrace_symbols_fd(frames, n, 2);
#endif
  /* Fall through to the default action: a core dump at the faulting
   * instruction, for the debugger. */
  signal(sig, SIG_DFL);
  raise(sig);
  (void)uc;
}

static void install(void) {
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sigaction(SIGSEGV, NULL, &old);
  /* Leave a handler the program (or a sanitizer) installed alone. */
  if (old.sa_handler != SIG_DFL)
    return;
#ifdef __GLIBC__
  /* backtrace loads its unwinder on first use, which a signal handler
   * must not be the one to do. */
  void *frame;
  backtrace(&frame, 1);
#endif
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSEGV, &sa, NULL) == 0)
    weft__guard_enable(on_segv);
}

void weft__fiber_install_overflow_handler(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, install);
}

#define ALTSTACK_BYTES (64 * 1024)

/* A thread that has a signal stack already (a sanitizer's, the program's)
 * keeps it: replacing it without putting it back broke ASan's own thread
 * teardown now and then. */
static int has_altstack(void) {
  stack_t cur;
  return sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE);
}

int weft__fiber_thread_altstack(void **mem) {
  *mem = NULL;
  if (has_altstack())
    return 0;
  void *m = malloc(ALTSTACK_BYTES);
  if (!m)
    return WEFT_ENOMEM;
  stack_t st = {.ss_sp = m, .ss_size = ALTSTACK_BYTES, .ss_flags = 0};
  if (sigaltstack(&st, NULL) != 0) {
    free(m);
    return WEFT_ENOMEM;
  }
  *mem = m;
  return 0;
}

void weft__fiber_thread_altstack_free(void *mem) {
  if (!mem)
    return;
  stack_t st = {.ss_flags = SS_DISABLE};
  sigaltstack(&st, NULL);
  free(mem);
}

/* A plain thread's, installed the first time it runs tasks and kept until
 * it exits: the runtime that installed it may be gone by then. */
static pthread_key_t guest_key;
static int guest_key_ok;

static void guest_key_make(void) {
  guest_key_ok =
      pthread_key_create(&guest_key, weft__fiber_thread_altstack_free) == 0;
}

void weft__fiber_guest_altstack(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  static _Thread_local int tried;
  if (tried)
    return;
  tried = 1;
  pthread_once(&once, guest_key_make);
  void *mem;
  if (!guest_key_ok || weft__fiber_thread_altstack(&mem) != 0 || !mem)
    return;
  if (pthread_setspecific(guest_key, mem) != 0)
    weft__fiber_thread_altstack_free(mem);
}
