// SPDX-License-Identifier: GPL-2.0
/*
 * C glue of rkprobes.ko: one-line wrappers of kernel helpers that are inline
 * (so Rust cannot call them from a module), in the manner of the kernel's
 * rust/helpers/. No logic lives here. Everything is notrace: parts run in
 * rkprobes' int3/#DB handlers, and the whole module text is blacklisted.
 */
#include <linux/export.h>
#include <linux/preempt.h>
#include <linux/smp.h>

#include "glue.h"

notrace unsigned int rkp_smp_processor_id(void)
{
	return raw_smp_processor_id();
}

notrace void rkp_preempt_disable(void)
{
	preempt_disable();
}

notrace void rkp_preempt_enable(void)
{
	preempt_enable();
}

/*
 * The C ABI of include/rkprobes.h, implemented in rust/kprobe/abi.rs. A
 * Rust module cannot export symbols from its own crate in 6.12, so the
 * exports are made here.
 */
#include "../include/rkprobes.h"

EXPORT_SYMBOL_GPL(rkp_register_kprobe);
EXPORT_SYMBOL_GPL(rkp_unregister_kprobe);
EXPORT_SYMBOL_GPL(rkp_register_kprobes);
EXPORT_SYMBOL_GPL(rkp_unregister_kprobes);
EXPORT_SYMBOL_GPL(rkp_enable_kprobe);
EXPORT_SYMBOL_GPL(rkp_disable_kprobe);
