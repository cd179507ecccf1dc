// SPDX-License-Identifier: GPL-2.0
/*
 * The layout of the C ABI as the C compiler sees include/rkprobes.h, for the
 * Rust side to check against at compile time. Never linked: Kbuild compiles
 * it to assembly (as the kernel's asm-offsets.c) and turns the DEFINE()
 * markers into rust/ffi/abi_offsets.rs, which rust/kprobe/abi.rs includes and
 * compares, with static_assert!, to the sizes and offsets of rust/ffi/abi.rs.
 * The header is the contract; a field added, moved or resized on one side
 * only fails the build.
 */
#include <linux/kbuild.h>
#include <linux/stddef.h>

#include "../../include/rkprobes.h"

#define RKP_OFFSET(sym, str, mem) DEFINE(sym, offsetof(struct str, mem))

void rkp_abi_layout(void);

void rkp_abi_layout(void)
{
	DEFINE(ABI_VERSION, RKP_ABI_VERSION);
	DEFINE(KPROBE_SIZE, sizeof(struct rkp_kprobe));
	RKP_OFFSET(KPROBE_ADDR, rkp_kprobe, addr);
	RKP_OFFSET(KPROBE_SYMBOL_NAME, rkp_kprobe, symbol_name);
	RKP_OFFSET(KPROBE_OFFSET, rkp_kprobe, offset);
	RKP_OFFSET(KPROBE_PRE_HANDLER, rkp_kprobe, pre_handler);
	RKP_OFFSET(KPROBE_POST_HANDLER, rkp_kprobe, post_handler);
	RKP_OFFSET(KPROBE_FAULT_HANDLER, rkp_kprobe, fault_handler);
	RKP_OFFSET(KPROBE_FLAGS, rkp_kprobe, flags);
	RKP_OFFSET(KPROBE_NMISSED, rkp_kprobe, nmissed);
	RKP_OFFSET(KPROBE_RKP_PRIVATE, rkp_kprobe, rkp_private);
	RKP_OFFSET(KPROBE_RKP_NEXT, rkp_kprobe, rkp_next);

	DEFINE(KRETPROBE_SIZE, sizeof(struct rkp_kretprobe));
	RKP_OFFSET(KRETPROBE_KP, rkp_kretprobe, kp);
	RKP_OFFSET(KRETPROBE_HANDLER, rkp_kretprobe, handler);
	RKP_OFFSET(KRETPROBE_ENTRY_HANDLER, rkp_kretprobe, entry_handler);
	RKP_OFFSET(KRETPROBE_MAXACTIVE, rkp_kretprobe, maxactive);
	RKP_OFFSET(KRETPROBE_NMISSED, rkp_kretprobe, nmissed);
	RKP_OFFSET(KRETPROBE_DATA_SIZE, rkp_kretprobe, data_size);
	RKP_OFFSET(KRETPROBE_RKP_PRIVATE, rkp_kretprobe, rkp_private);

	DEFINE(KRETPROBE_INSTANCE_SIZE, sizeof(struct rkp_kretprobe_instance));
	DEFINE(KRETPROBE_INSTANCE_ALIGN, __alignof__(struct rkp_kretprobe_instance));
	RKP_OFFSET(KRETPROBE_INSTANCE_RP, rkp_kretprobe_instance, rp);
	RKP_OFFSET(KRETPROBE_INSTANCE_RET_ADDR, rkp_kretprobe_instance, ret_addr);
	RKP_OFFSET(KRETPROBE_INSTANCE_FP, rkp_kretprobe_instance, fp);
	RKP_OFFSET(KRETPROBE_INSTANCE_RKP_TASK, rkp_kretprobe_instance, rkp_task);
	RKP_OFFSET(KRETPROBE_INSTANCE_RKP_NEXT, rkp_kretprobe_instance, rkp_next);
	RKP_OFFSET(KRETPROBE_INSTANCE_RKP_INDEX, rkp_kretprobe_instance, rkp_index);
	RKP_OFFSET(KRETPROBE_INSTANCE_RKP_RESERVED, rkp_kretprobe_instance, rkp_reserved);
	RKP_OFFSET(KRETPROBE_INSTANCE_DATA, rkp_kretprobe_instance, data);

	DEFINE(FLAG_GONE, RKP_FLAG_GONE);
	DEFINE(FLAG_DISABLED, RKP_FLAG_DISABLED);
	DEFINE(FLAG_OPTIMIZED, RKP_FLAG_OPTIMIZED);
	DEFINE(FLAG_FTRACE, RKP_FLAG_FTRACE);
	DEFINE(KRETPROBE_MAXACTIVE_MAX, RKP_KRETPROBE_MAXACTIVE_MAX);
	DEFINE(KRETPROBE_MAX_DATA_SIZE, RKP_KRETPROBE_MAX_DATA_SIZE);
}
