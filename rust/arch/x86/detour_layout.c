// SPDX-License-Identifier: GPL-2.0
/*
 * The detour buffer's layout of detour.h, for the Rust side. Never linked:
 * Kbuild compiles it to assembly (as the kernel's asm-offsets.c) and turns
 * the DEFINE() markers into rust/arch/x86/detour_offsets.rs, which opt.rs
 * includes, so that the trampoline and the code that writes the detour
 * read one layout.
 */
#include <linux/kbuild.h>

#include "detour.h"

void rkp_detour_layout(void);

void rkp_detour_layout(void)
{
	DEFINE(DETOUR_POINT, RKP_DETOUR_POINT);
	DEFINE(DETOUR_IP, RKP_DETOUR_IP);
	DEFINE(DETOUR_CALL, RKP_DETOUR_CALL);
	DEFINE(DETOUR_COPY, RKP_DETOUR_COPY);
}
