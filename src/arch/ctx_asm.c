/* Builds the first frame of a fiber for the assembly switch, laid out
 * exactly as ctx_<arch>.S pops it. */
#include <stdint.h>
#include <string.h>

#include "arch/ctx.h"

void weft__ctx_switch_asm(void **from_sp, void *to_sp);
void weft__ctx_trampoline(void);

int weft__ctx_make(weft__ctx *ctx, void *stack, size_t size,
                   weft__ctx_entry entry, void *arg) {
  uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
#if defined(__x86_64__)
  /* From the saved sp upwards: FP control words, r15, r14, r13, r12, rbx,
   * rbp, return address. The return address sits at 8 mod 16 so that the
   * trampoline's call sees a 16-byte aligned stack, as the ABI wants. */
  uint64_t *ret = (uint64_t *)(top - 8);
  uint64_t *sp = ret - 7;
  memset(sp, 0, 8 * sizeof *sp);
  uint32_t fp = 0x1F80u; /* MXCSR: all exceptions masked, round nearest */
  uint16_t cw = 0x037Fu; /* x87: all masked, extended precision */
  memcpy((char *)sp, &fp, 4);
  memcpy((char *)sp + 4, &cw, 2);
  sp[4] = (uint64_t)(uintptr_t)entry; /* r12 */
  sp[3] = (uint64_t)(uintptr_t)arg;   /* r13 */
  *ret = (uint64_t)(uintptr_t)weft__ctx_trampoline;
  ctx->sp = sp;
#elif defined(__aarch64__)
  uint64_t *sp = (uint64_t *)(top - 176);
  memset(sp, 0, 176);
  sp[0] = (uint64_t)(uintptr_t)entry;                 /* x19 */
  sp[1] = (uint64_t)(uintptr_t)arg;                   /* x20 */
  sp[11] = (uint64_t)(uintptr_t)weft__ctx_trampoline; /* x30 */
  ctx->sp = sp;
#else
#error "ctx_asm.c needs x86-64 or aarch64; build with the ucontext fallback"
#endif
  ctx->impl = NULL;
  return 0;
}

int weft__ctx_prepare(weft__ctx *ctx) {
  (void)ctx;
  return 0;
}

void weft__ctx_release(weft__ctx *ctx) { (void)ctx; }

void weft__ctx_switch(weft__ctx *from, weft__ctx *to) {
  weft__ctx_switch_asm(&from->sp, to->sp);
}
