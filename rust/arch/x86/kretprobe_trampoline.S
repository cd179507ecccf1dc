/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kretprobe return trampoline of rkprobes (see rust/arch/x86/rethook.rs).
 *
 * A hijacked function returns into its instance's stub, whose call lands
 * here: the word on top of the stack is then where the function's return
 * address was, holding the stub's address. The trampoline saves the
 * registers as a struct pt_regs below it and calls
 * rkp_kretprobe_trampoline_callback(), which writes the real return address
 * into that word and copies the flags into regs->ss; the trampoline then
 * restores everything and returns to the real caller. The frame layout is
 * that of the kernel's arch_rethook_trampoline, so that the ORC unwinder
 * sees through it once the real address is back.
 */
#include <linux/linkage.h>
#include <linux/objtool.h>
#include <asm/frame.h>
#include <asm/segment.h>
#include <asm/unwind_hints.h>

#include "pt_regs_asm.h"

	.text
SYM_CODE_START(rkp_kretprobe_trampoline)
	/* Only reached by the stubs' direct calls. */
	ANNOTATE_NOENDBR
	/* The stub's call pushed what the unwinder takes for a return address. */
	UNWIND_HINT_FUNC
	pushq	$__KERNEL_DS
	/* regs->sp, fixed up by the callback. */
	pushq	%rsp
	pushfq
	/* Skip cs, ip, orig_ax. */
	subq	$24, %rsp
	RKP_SAVE_GPRS
	ENCODE_FRAME_POINTER
	movq	%rsp, %rdi
	call	rkp_kretprobe_trampoline_callback
	RKP_RESTORE_GPRS
	/* Skip orig_ax, ip, cs, flags and sp: the flags are in the ss slot. */
	addq	$40, %rsp
	popfq
	RET
SYM_CODE_END(rkp_kretprobe_trampoline)
