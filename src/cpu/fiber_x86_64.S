/*
 * fiber_x86_64.S - context switch for the CPU executor's fibers (x86-64 System V).
 *
 * Saves what the ABI says a callee preserves: rbx, rbp, r12-r15, the MXCSR control
 * bits and the x87 control word; no signal mask, so no system call (glibc's
 * swapcontext makes one on every switch). Layout of a suspended stack, from the saved
 * stack pointer up: MXCSR (4 bytes), x87 CW (2 bytes, padded to 8), r15, r14, r13,
 * r12, rbx, rbp, return address. gp__fiber_prepare (exec_fiber.c) builds the same
 * layout for a new fiber, returning into gp__fiber_trampoline with the entry function
 * in rbx and its argument in r12.
 */
#if defined(__x86_64__) && !defined(GP_CPU_FIBER_UCONTEXT)

        .text

/* void gp__fiber_swap(void **save_sp, void *load_sp) */
        .globl  gp__fiber_swap
        .hidden gp__fiber_swap
        .type   gp__fiber_swap, @function
        .p2align 4
gp__fiber_swap:
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
        .size   gp__fiber_swap, .-gp__fiber_swap

/* First code of a new fiber: entry(arg), which never returns. Unwinding stops here. */
        .globl  gp__fiber_trampoline
        .hidden gp__fiber_trampoline
        .type   gp__fiber_trampoline, @function
        .p2align 4
gp__fiber_trampoline:
        .cfi_startproc
        .cfi_undefined rip
        movq    %r12, %rdi
        callq   *%rbx
        ud2
        .cfi_endproc
        .size   gp__fiber_trampoline, .-gp__fiber_trampoline

#endif

#if defined(__linux__) && defined(__ELF__)
        .section .note.GNU-stack,"",%progbits
#endif
