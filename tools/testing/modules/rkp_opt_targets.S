/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Probe targets of rkp_opt_test (rkp_opt_main.rs), written in assembly so
 * that the bytes after each probe are known whatever the compiler does.
 * Each is a plain C-callable function of six u64 arguments.
 */
#include <linux/linkage.h>
#include <asm/nospec-branch.h>

	.data
	.balign 8
SYM_DATA(rkp_opt_data, .quad 0x1000)

	.text
/*
 * (a ^ b) + (c ^ d) + (e ^ f). Probed at its entry (after ENDBR): the jump
 * replaces the first two instructions (6 bytes); a neighbour probe goes at
 * +3, inside that region.
 */
SYM_FUNC_START(rkp_opt_target)
	movq	%rdi, %rax
	xorq	%rsi, %rax
	xorq	%rcx, %rdx
	addq	%rdx, %rax
	xorq	%r9, %r8
	addq	%r8, %rax
	RET
SYM_FUNC_END(rkp_opt_target)

/* The same, for a second probe that is enabled and disabled under load. */
SYM_FUNC_START(rkp_opt_target2)
	movq	%rdi, %rax
	xorq	%rsi, %rax
	xorq	%rcx, %rdx
	addq	%rdx, %rax
	xorq	%r9, %r8
	subq	%r8, %rax
	RET
SYM_FUNC_END(rkp_opt_target2)

/*
 * rkp_opt_data + a: the region is one RIP-relative load (7 bytes), which
 * the detour runs relocated.
 */
SYM_FUNC_START(rkp_opt_target_rip)
	movq	rkp_opt_data(%rip), %rax
	addq	%rdi, %rax
	RET
SYM_FUNC_END(rkp_opt_target_rip)

/*
 * a < b (unsigned) ? 1 : 0, computed by a setb after the region: probed at
 * the movl after the cmp (ENDBR, then cmp: 3 bytes), whose region is that
 * mov alone (7 bytes). The flags of the cmp must survive the detour.
 */
SYM_FUNC_START(rkp_opt_target_flags)
	cmpq	%rsi, %rdi
	movq	$0, %rax
	setb	%al
	RET
SYM_FUNC_END(rkp_opt_target_flags)

/*
 * a != 0 ? a + 1 : 2. Probed at the first mov: the jmp at the end lands on
 * the add, the second instruction of the region a jump would replace, so
 * that probe must stay an int3 (the kernel's can_optimize()).
 */
SYM_FUNC_START(rkp_opt_target_jump)
	testq	%rdi, %rdi
	jz	1f
	movq	%rdi, %rax
.Lrkp_opt_into:
	addq	$1, %rax
	RET
1:	movq	$1, %rax
	jmp	.Lrkp_opt_into
SYM_FUNC_END(rkp_opt_target_jump)
