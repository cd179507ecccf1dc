/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's kprobes API on rkprobes: a module written for
 * <linux/kprobes.h> builds against rkprobes unchanged when this directory
 * (include/compat, installed as PREFIX/include/rkprobes-compat) comes
 * before the kernel's headers, through Kbuild's NOSTDINC_FLAGS:
 *
 *	NOSTDINC_FLAGS += -I/usr/local/include/rkprobes-compat
 *	KBUILD_EXTRA_SYMBOLS := /usr/local/share/rkprobes/Module.symvers
 *
 * This <linux/kprobes.h> includes the kernel's (whatever CONFIG_KPROBES
 * says), then names the kernel's types and functions after rkprobes'
 * (<rkprobes.h>): struct kprobe, struct kretprobe and struct
 * kretprobe_instance are rkprobes' structures, with the fields a client of
 * the kernel's uses (addr, symbol_name, offset, pre_handler, post_handler,
 * flags, nmissed; handler, entry_handler, maxactive, nmissed, data_size;
 * ri->data), and the registration functions are rkprobes'.
 * stack_trace_save() becomes rkp_stack_trace_save(), which unwinds through
 * kretprobes' return stubs as the kernel's unwinder does through its
 * rethook trampoline.
 *
 * Not covered: what reaches into the kernel's kprobe internals
 * (kprobe_running(), get_kprobe(), the kprobe control block,
 * kretprobe_find_ret_addr()'s task walk, struct kprobe's list heads and
 * instruction fields), which a module cannot rely on with the kernel's
 * kprobes either. Everything the rename covers is listed below.
 */
#ifndef _RKPROBES_COMPAT_LINUX_KPROBES_H
#define _RKPROBES_COMPAT_LINUX_KPROBES_H

#include_next <linux/kprobes.h>
#include <linux/stacktrace.h>

#include "../../rkprobes.h"

/* Types. */
#define kprobe			rkp_kprobe
#define kretprobe		rkp_kretprobe
#define kretprobe_instance	rkp_kretprobe_instance
#define kprobe_pre_handler_t	rkp_pre_handler_t
#define kprobe_post_handler_t	rkp_post_handler_t
#define kretprobe_handler_t	rkp_kretprobe_handler_t

/* Registration. */
#define register_kprobe		rkp_register_kprobe
#define register_kprobes	rkp_register_kprobes
#define unregister_kprobe	rkp_unregister_kprobe
#define unregister_kprobes	rkp_unregister_kprobes
#define enable_kprobe		rkp_enable_kprobe
#define disable_kprobe		rkp_disable_kprobe
#define register_kretprobe	rkp_register_kretprobe
#define register_kretprobes	rkp_register_kretprobes
#define unregister_kretprobe	rkp_unregister_kretprobe
#define unregister_kretprobes	rkp_unregister_kretprobes
#define enable_kretprobe	rkp_enable_kretprobe
#define disable_kretprobe	rkp_disable_kretprobe

/* The kprobe's flags have the kernel's values. */
_Static_assert(KPROBE_FLAG_GONE == RKP_FLAG_GONE, "KPROBE_FLAG_GONE");
_Static_assert(KPROBE_FLAG_DISABLED == RKP_FLAG_DISABLED, "KPROBE_FLAG_DISABLED");
_Static_assert(KPROBE_FLAG_OPTIMIZED == RKP_FLAG_OPTIMIZED, "KPROBE_FLAG_OPTIMIZED");
_Static_assert(KPROBE_FLAG_FTRACE == RKP_FLAG_FTRACE, "KPROBE_FLAG_FTRACE");

/* An instance's kretprobe. */
#define get_kretprobe(ri)	((ri)->rp)

/* Stack traces that go on through kretprobes' return stubs. */
#define stack_trace_save	rkp_stack_trace_save

#endif /* _RKPROBES_COMPAT_LINUX_KPROBES_H */
