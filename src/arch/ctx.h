/* Machine context switch between fibers.
 *
 * A context is a saved stack pointer: everything else a switch must keep
 * (callee-saved registers, FP control words, the return address) is pushed
 * on the stack being left. One implementation is built per target: hand
 * written for x86-64 and aarch64, ucontext elsewhere or on request. */
#ifndef WEFT__ARCH_CTX_H
#define WEFT__ARCH_CTX_H

#include <stddef.h>

typedef struct weft__ctx {
  void *sp;
  void *impl; /* ucontext fallback: its ucontext_t */
} weft__ctx;

typedef void (*weft__ctx_entry)(void *arg);

/* Prepares ctx to run entry(arg) on [stack, stack + size) at its first
 * switch. entry must never return. Returns 0 or WEFT_ENOMEM. */
int weft__ctx_make(weft__ctx *ctx, void *stack, size_t size,
                   weft__ctx_entry entry, void *arg);
/* Gets a thread's own context ready to be switched from, so that the
 * switch itself cannot fail: the ucontext fallback allocates its
 * ucontext_t here (it aborted when that allocation failed at the first
 * switch). 0 or WEFT_ENOMEM. */
int weft__ctx_prepare(weft__ctx *ctx);
/* Releases what ctx_make or ctx_prepare allocated (ucontext only). */
void weft__ctx_release(weft__ctx *ctx);
/* Saves the running context into from and resumes to. */
void weft__ctx_switch(weft__ctx *from, weft__ctx *to);

#endif
