/* AArch64 (AAPCS64) context switch.
 * void weft__ctx_switch_asm(void **from_sp, void *to_sp)
 * Saves x19-x30 and d8-d15 in a 176-byte frame on the current stack,
 * stores sp in *from_sp, loads to_sp and restores the same. */
        .text
        .globl  weft__ctx_switch_asm
        .hidden weft__ctx_switch_asm
        .type   weft__ctx_switch_asm, %function
        .p2align 4
weft__ctx_switch_asm:
        sub     sp, sp, #176
        stp     x19, x20, [sp, #0]
        stp     x21, x22, [sp, #16]
        stp     x23, x24, [sp, #32]
        stp     x25, x26, [sp, #48]
        stp     x27, x28, [sp, #64]
        stp     x29, x30, [sp, #80]
        stp     d8, d9, [sp, #96]
        stp     d10, d11, [sp, #112]
        stp     d12, d13, [sp, #128]
        stp     d14, d15, [sp, #144]
        mov     x9, sp
        str     x9, [x0]
        mov     sp, x1
        ldp     x19, x20, [sp, #0]
        ldp     x21, x22, [sp, #16]
        ldp     x23, x24, [sp, #32]
        ldp     x25, x26, [sp, #48]
        ldp     x27, x28, [sp, #64]
        ldp     x29, x30, [sp, #80]
        ldp     d8, d9, [sp, #96]
        ldp     d10, d11, [sp, #112]
        ldp     d12, d13, [sp, #128]
        ldp     d14, d15, [sp, #144]
        add     sp, sp, #176
        ret
        .size   weft__ctx_switch_asm, .-weft__ctx_switch_asm

/* First code a new fiber runs, reached by the ret above: x19 holds the
 * entry function and x20 its argument (see ctx_asm.c). */
        .globl  weft__ctx_trampoline
        .hidden weft__ctx_trampoline
        .type   weft__ctx_trampoline, %function
        .p2align 4
weft__ctx_trampoline:
        mov     x0, x20
        blr     x19
        brk     #0
        .size   weft__ctx_trampoline, .-weft__ctx_trampoline

        .section .note.GNU-stack,"",%progbits
