/* SPDX-License-Identifier: GPL-2.0 */
/*
 * struct pt_regs as rkprobes' trampolines (kretprobe_trampoline.S,
 * optprobe_trampoline.S) build it on the stack, as the kernel's
 * SAVE_REGS_STRING and RESTORE_REGS_STRING do for its own: the trampoline
 * pushes ss, sp, flags and makes room for cs, ip and orig_ax, then
 * RKP_SAVE_GPRS pushes the general registers below them in pt_regs order;
 * RKP_RESTORE_GPRS pops them back, leaving orig_ax on top.
 */
#ifndef RKPROBES_PT_REGS_ASM_H
#define RKPROBES_PT_REGS_ASM_H

/* struct pt_regs, in words. */
#define PT_ORIG_AX	15
#define PT_IP		16
#define PT_CS		17
#define PT_FLAGS	18
#define PT_SP		19
#define PT_SS		20
#define PT_WORDS	21

.macro RKP_SAVE_GPRS
	pushq	%rdi
	pushq	%rsi
	pushq	%rdx
	pushq	%rcx
	pushq	%rax
	pushq	%r8
	pushq	%r9
	pushq	%r10
	pushq	%r11
	pushq	%rbx
	pushq	%rbp
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
.endm

.macro RKP_RESTORE_GPRS
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbp
	popq	%rbx
	popq	%r11
	popq	%r10
	popq	%r9
	popq	%r8
	popq	%rax
	popq	%rcx
	popq	%rdx
	popq	%rsi
	popq	%rdi
.endm

#endif /* RKPROBES_PT_REGS_ASM_H */
