// SPDX-License-Identifier: GPL-2.0
/*
 * The layout of the records and of struct rkp_tev_rec as C sees
 * trace_event.h, for the Rust side. Never linked: Kbuild compiles it to
 * assembly (as the kernel's asm-offsets.c) and turns the DEFINE() markers
 * into rust/events/tev_offsets.rs, which rust/events/mod.rs includes for
 * the record heads' sizes and to check RkpTevRec (rust/ffi/glue.rs) at
 * compile time.
 */
#include <linux/kbuild.h>
#include <linux/stddef.h>

#include "trace_event.h"

#define RKP_OFFSET(sym, str, mem) DEFINE(sym, offsetof(struct str, mem))

void rkp_tev_layout(void);

void rkp_tev_layout(void)
{
	DEFINE(KPROBE_HEAD_SIZE, sizeof(struct rkp_kprobe_head));
	DEFINE(KRETPROBE_HEAD_SIZE, sizeof(struct rkp_kretprobe_head));

	DEFINE(TEV_REC_SIZE, sizeof(struct rkp_tev_rec));
	RKP_OFFSET(TEV_REC_A0, rkp_tev_rec, a0);
	RKP_OFFSET(TEV_REC_A1, rkp_tev_rec, a1);
	RKP_OFFSET(TEV_REC_REGS, rkp_tev_rec, regs);
	RKP_OFFSET(TEV_REC_LINK, rkp_tev_rec, link);
	RKP_OFFSET(TEV_REC_SIZE_FIELD, rkp_tev_rec, size);
	RKP_OFFSET(TEV_REC_PERF, rkp_tev_rec, perf);
	RKP_OFFSET(TEV_REC_FB, rkp_tev_rec, fb);
}
