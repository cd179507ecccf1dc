/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The layout of an optimized probe's detour buffer (rust/arch/x86/opt.rs),
 * which opt.rs writes and optprobe_trampoline.S reads. Offsets from the
 * start of the slot; detour_layout.c hands them to the Rust side.
 */
#ifndef RKP_ARCH_X86_DETOUR_H
#define RKP_ARCH_X86_DETOUR_H

/* The probe point (struct Point *), read by the trampoline. */
#define RKP_DETOUR_POINT	0
/*
 * regs->ip as an int3 hit presents it, the probed address + 1 (read by
 * rkp_optprobe_trampoline); in a detour that calls the post-handlers after
 * the copy of the first instruction, that call's return address instead
 * (read by the callbacks; its entry trampoline sets regs->ip itself).
 */
#define RKP_DETOUR_IP		8
/* call rkp_optprobe_trampoline (e8 rel32): where the probe's jump lands. */
#define RKP_DETOUR_CALL		16
/* The relocated copy: the call's return address, then a jmp back. */
#define RKP_DETOUR_COPY		(RKP_DETOUR_CALL + 5)

#endif
