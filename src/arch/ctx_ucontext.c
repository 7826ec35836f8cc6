/* Portable fallback: swapcontext. Slower (it saves the signal mask with a
 * system call) but runs anywhere POSIX ucontext exists. */
#include <stdint.h>
#include <stdlib.h>
#include <ucontext.h>

#include "arch/ctx.h"
#include "weft/error.h"

typedef struct uctx {
  ucontext_t uc;
  weft__ctx_entry entry;
  void *arg;
} uctx;

/* makecontext passes int arguments only: split the pointer in two. */
static void start(unsigned hi, unsigned lo) {
  uctx *u = (uctx *)(uintptr_t)(((uint64_t)hi << 32) | lo);
  u->entry(u->arg);
  abort(); /* entry must never return */
}

static uctx *get(weft__ctx *ctx) {
  if (!ctx->impl)
    ctx->impl = calloc(1, sizeof(uctx));
  return ctx->impl;
}

int weft__ctx_make(weft__ctx *ctx, void *stack, size_t size,
                   weft__ctx_entry entry, void *arg) {
  ctx->impl = NULL;
  uctx *u = get(ctx);
  if (!u || getcontext(&u->uc) != 0) {
    free(u);
    ctx->impl = NULL;
    return WEFT_ENOMEM;
  }
  u->uc.uc_stack.ss_sp = stack;
  u->uc.uc_stack.ss_size = size;
  u->uc.uc_link = NULL;
  u->entry = entry;
  u->arg = arg;
  uint64_t p = (uint64_t)(uintptr_t)u;
  makecontext(&u->uc, (void (*)(void))start, 2, (unsigned)(p >> 32),
              (unsigned)p);
  return 0;
}

int weft__ctx_prepare(weft__ctx *ctx) { return get(ctx) ? 0 : WEFT_ENOMEM; }

void weft__ctx_release(weft__ctx *ctx) {
  free(ctx->impl);
  ctx->impl = NULL;
}

void weft__ctx_switch(weft__ctx *from, weft__ctx *to) {
  /* A thread's own context is never made: weft__ctx_prepare allocated its
   * slot. */
  uctx *f = get(from);
  if (!f)
    abort(); /* not prepared: a bug, not a shortage */
  swapcontext(&f->uc, &((uctx *)to->impl)->uc);
}
