/* x86-64 System V context switch.
 * void weft__ctx_switch_asm(void **from_sp, void *to_sp)
 * Saves rbp, rbx, r12-r15, MXCSR and the x87 control word on the current
 * stack, stores rsp in *from_sp, loads to_sp and restores the same. */
        .text
        .globl  weft__ctx_switch_asm
        .hidden weft__ctx_switch_asm
        .type   weft__ctx_switch_asm, @function
        .p2align 4
weft__ctx_switch_asm:
        .cfi_startproc
        pushq   %rbp
        pushq   %rbx
        pushq   %r12
        pushq   %r13
        pushq   %r14
        pushq   %r15
        subq    $8, %rsp
        stmxcsr (%rsp)
        fnstcw  4(%rsp)
        movq    %rsp, (%rdi)
        movq    %rsi, %rsp
        ldmxcsr (%rsp)
        fldcw   4(%rsp)
        addq    $8, %rsp
        popq    %r15
        popq    %r14
        popq    %r13
        popq    %r12
        popq    %rbx
        popq    %rbp
        ret
        .cfi_endproc
        .size   weft__ctx_switch_asm, .-weft__ctx_switch_asm

/* First code a new fiber runs, reached by the ret above: r12 holds the
 * entry function and r13 its argument (see ctx_asm.c). */
        .globl  weft__ctx_trampoline
        .hidden weft__ctx_trampoline
        .type   weft__ctx_trampoline, @function
        .p2align 4
weft__ctx_trampoline:
        .cfi_startproc
        .cfi_undefined rip
        movq    %r13, %rdi
        callq   *%r12
        ud2
        .cfi_endproc
        .size   weft__ctx_trampoline, .-weft__ctx_trampoline

        .section .note.GNU-stack,"",@progbits
