// SPDX-License-Identifier: GPL-2.0
/*
 * The layout of the records, struct rkp_tev_rec, rkp_tev_store and
 * rkp_tev_plain as C sees
 * trace_event.h, for the Rust side. Never linked: Kbuild compiles it to
 * assembly (as the kernel's asm-offsets.c) and turns the DEFINE() markers
 * into rust/events/tev_offsets.rs, which rust/events/mod.rs includes for
 * the record heads' sizes and to check RkpTevRec (rust/ffi/trace_event.rs) at
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
	DEFINE(EPROBE_HEAD_SIZE, RKP_TEV_HEAD_SIZE(RKP_TEV_EPROBE));
	DEFINE(TEV_KPROBE, RKP_TEV_KPROBE);
	DEFINE(TEV_KRETPROBE, RKP_TEV_KRETPROBE);
	DEFINE(TEV_EPROBE, RKP_TEV_EPROBE);

	DEFINE(TEV_REC_SIZE, sizeof(struct rkp_tev_rec));
	RKP_OFFSET(TEV_REC_A0, rkp_tev_rec, a0);
	RKP_OFFSET(TEV_REC_A1, rkp_tev_rec, a1);
	RKP_OFFSET(TEV_REC_REGS, rkp_tev_rec, regs);
	RKP_OFFSET(TEV_REC_LINK, rkp_tev_rec, link);
	RKP_OFFSET(TEV_REC_SIZE_FIELD, rkp_tev_rec, size);
	RKP_OFFSET(TEV_REC_PERF, rkp_tev_rec, perf);
	RKP_OFFSET(TEV_REC_FB, rkp_tev_rec, fb);

	DEFINE(TEV_MAX_STRING, RKP_TEV_MAX_STRING);
	DEFINE(TEV_STORE_SIZE, sizeof(struct rkp_tev_store));
	RKP_OFFSET(TEV_STORE_REG, rkp_tev_store, reg);
	RKP_OFFSET(TEV_STORE_AT, rkp_tev_store, at);
	RKP_OFFSET(TEV_STORE_SIZE_FIELD, rkp_tev_store, size);
	RKP_OFFSET(TEV_STORE_KIND, rkp_tev_store, kind);
	DEFINE(TEV_STR_USER, RKP_TEV_STR_USER);
	DEFINE(TEV_STR_KERNEL, RKP_TEV_STR_KERNEL);
	RKP_OFFSET(TEV_STORE_OFFSET, rkp_tev_store, offset);

	DEFINE(TEV_PLAIN_SIZE, sizeof(struct rkp_tev_plain));
	RKP_OFFSET(TEV_PLAIN_ST, rkp_tev_plain, st);
	RKP_OFFSET(TEV_PLAIN_NREGS, rkp_tev_plain, nregs);
	RKP_OFFSET(TEV_PLAIN_NMEMS, rkp_tev_plain, nmems);
	RKP_OFFSET(TEV_PLAIN_NSTRS, rkp_tev_plain, nstrs);
	RKP_OFFSET(TEV_PLAIN_FIXED, rkp_tev_plain, fixed);
}
