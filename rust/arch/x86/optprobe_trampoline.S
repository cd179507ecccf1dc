/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The register-saving half of rkprobes' optimized probes (see
 * rust/arch/x86/opt.rs).
 *
 * An optimized probe's text holds a jmp into its detour buffer, whose code
 * is a call of this trampoline, the relocated copy of the instructions the
 * jump replaced, and a jmp back after them. The detour starts with a small
 * header: the probe point, and regs->ip as an int3 hit presents it (the
 * probed address + 1). The call pushes the address of the copy, right after
 * it in the detour, which is how the trampoline finds that header.
 *
 * The trampoline saves the registers as the struct pt_regs an int3 hit
 * would have (flags, sp, cs, ip, orig_ax as the exception entry sets them),
 * marks the frame for the ORC unwinder as a pt_regs frame, so that a stack
 * trace taken in a handler goes on at regs->ip, in the probed function,
 * exactly as from an int3 hit, and calls rkp_optprobe_callback(point,
 * regs). It then restores every register from regs (the handlers may have
 * changed them; ip and sp changes are ignored, as the kernel's optimized
 * probes ignore them) and returns into the detour with RET, the return
 * thunk: the detour itself holds no return.
 *
 * The detour of a point with post-handlers is entered through a trampoline
 * of its own (its header's second word is the return address of the call
 * below, and its callback sets regs->ip), and calls a third one after the
 * copy of its first instruction, which builds the same frame and calls
 * rkp_optprobe_post_callback(return address, regs); the return address
 * tells the callback which detour called it (Documentation/kprobes-design.rst,
 * "Post-handlers in the detour").
 *
 * Unlike the kernel's optprobe template, this code is not copied: it lives
 * in rkprobes' text, where objtool validates it and gives it ORC data, and
 * the detour buffers are 48-byte slots of the out-of-line slot cache.
 */
#include <linux/linkage.h>
#include <linux/objtool.h>
#include <asm/segment.h>
#include <asm/smap.h>
#include <asm/unwind_hints.h>

#include "detour.h"
#include "pt_regs_asm.h"

/* The detour's header, below the copy whose address the call pushed. */
#define DETOUR_HDR_POINT	(RKP_DETOUR_POINT - RKP_DETOUR_COPY)
#define DETOUR_HDR_IP		(RKP_DETOUR_IP - RKP_DETOUR_COPY)

/*
 * The frame both trampolines build: pt_regs as an int3 hit's, below the
 * return address of the detour's call, with regs->ip left to the caller.
 */
.macro OPTPROBE_SAVE
	/* Only reached by the detours' direct calls. */
	ANNOTATE_NOENDBR
	/* The return address is in the detour, which is not kernel text. */
	UNWIND_HINT_FUNC
	pushq	$__KERNEL_DS
	/*
	 * regs->sp, written below. Nothing before the pushfq may change the
	 * flags: they are the probed code's, which popfq gives back to it
	 * (a sub here once handed the copied instructions, and the handlers,
	 * the flags of the sub; 58-optprobes-sweep.sh compares them).
	 */
	leaq	-8(%rsp), %rsp
	pushfq
	/*
	 * As the kernel's template: the handlers must not run with user
	 * access open; popfq restores AC (and DF) of the probed code.
	 */
	ASM_CLAC
	cld
	/* Skip cs, ip, orig_ax. */
	subq	$24, %rsp
	RKP_SAVE_GPRS
	/* The stack pointer of the probed code: above the call's return address. */
	leaq	(PT_WORDS + 1) * 8(%rsp), %rax
	movq	%rax, PT_SP * 8(%rsp)
	movq	$__KERNEL_CS, PT_CS * 8(%rsp)
	movq	$-1, PT_ORIG_AX * 8(%rsp)
.endm

/*
 * Restores every register from regs but ip and sp (the handlers may have
 * changed them; ip and sp changes are ignored, as the kernel's optimized
 * probes ignore them) and returns into the detour with RET, the return
 * thunk: the detour itself holds no return.
 */
.macro OPTPROBE_RESTORE
	/* The flags are restored last, from the ss slot (as the kernel's). */
	movq	PT_FLAGS * 8(%rsp), %rdx
	movq	%rdx, PT_SS * 8(%rsp)
	RKP_RESTORE_GPRS
	UNWIND_HINT_IRET_REGS offset=8
	/* Skip orig_ax, ip, cs, flags and sp; lea leaves the flags alone. */
	leaq	5 * 8(%rsp), %rsp
	UNWIND_HINT type=UNWIND_HINT_TYPE_CALL sp_reg=ORC_REG_SP sp_offset=16
	popfq
	RET
.endm

	.text
/*
 * Where the probe's jump lands (through the detour's call): the
 * pre-handlers, through rkp_optprobe_callback(point, regs).
 */
SYM_CODE_START(rkp_optprobe_trampoline)
	OPTPROBE_SAVE
	movq	PT_WORDS * 8(%rsp), %rdi
	movq	DETOUR_HDR_IP(%rdi), %rax
	movq	%rax, PT_IP * 8(%rsp)
	movq	DETOUR_HDR_POINT(%rdi), %rdi
	movq	%rsp, %rsi
	/* From here the unwinder goes on from regs->ip, as from an int3. */
	UNWIND_HINT_REGS
	call	rkp_optprobe_callback
	OPTPROBE_RESTORE
SYM_CODE_END(rkp_optprobe_trampoline)

/*
 * Where the jump of a point with post-handlers lands: the pre-handlers,
 * through rkp_optprobe_entry_post_callback(point, regs), which sets
 * regs->ip (the header's second word is the post call's return address).
 */
SYM_CODE_START(rkp_optprobe_entry_post_trampoline)
	OPTPROBE_SAVE
	movq	PT_WORDS * 8(%rsp), %rdi
	movq	%rdi, PT_IP * 8(%rsp)
	movq	DETOUR_HDR_POINT(%rdi), %rdi
	movq	%rsp, %rsi
	UNWIND_HINT_REGS
	call	rkp_optprobe_entry_post_callback
	OPTPROBE_RESTORE
SYM_CODE_END(rkp_optprobe_entry_post_trampoline)

/*
 * Called by the detour of a point with post-handlers, after the copy of
 * the first instruction: rkp_optprobe_post_callback(ret, regs), where ret
 * (the call's return address) says which detour; the callback sets
 * regs->ip to the original instruction's end before the handlers run.
 */
SYM_CODE_START(rkp_optprobe_post_trampoline)
	OPTPROBE_SAVE
	movq	PT_WORDS * 8(%rsp), %rdi
	movq	%rdi, PT_IP * 8(%rsp)
	movq	%rsp, %rsi
	UNWIND_HINT_REGS
	call	rkp_optprobe_post_callback
	OPTPROBE_RESTORE
SYM_CODE_END(rkp_optprobe_post_trampoline)
