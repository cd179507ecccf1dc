// SPDX-License-Identifier: GPL-2.0
/*
 * The C ABI of include/rkprobes.h, implemented in rust/kprobe/abi.rs. A
 * Rust module cannot export symbols from its own crate in 6.12, so the
 * exports are made here; include/rkprobes.h is this file's header.
 */
#include <linux/export.h>
#include <linux/module.h>

#include "../../include/rkprobes.h"

MODULE_VERSION(RKPROBES_VERSION);

EXPORT_SYMBOL_GPL(rkp_register_kprobe_abi);
EXPORT_SYMBOL_GPL(rkp_unregister_kprobe);
EXPORT_SYMBOL_GPL(rkp_register_kprobes_abi);
EXPORT_SYMBOL_GPL(rkp_unregister_kprobes);
EXPORT_SYMBOL_GPL(rkp_enable_kprobe);
EXPORT_SYMBOL_GPL(rkp_disable_kprobe);
EXPORT_SYMBOL_GPL(rkp_register_kretprobe_abi);
EXPORT_SYMBOL_GPL(rkp_unregister_kretprobe);
EXPORT_SYMBOL_GPL(rkp_register_kretprobes_abi);
EXPORT_SYMBOL_GPL(rkp_unregister_kretprobes);
EXPORT_SYMBOL_GPL(rkp_kretprobe_find_ret_addr);
EXPORT_SYMBOL_GPL(rkp_stack_trace_save);
