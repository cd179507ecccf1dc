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

#ifdef CONFIG_DYNAMIC_FTRACE_WITH_REGS
#include <linux/ftrace.h>
#include <linux/irqflags.h>

/*
 * Probes at ftrace call sites go through ftrace: one ftrace_ops, filtered
 * to the probed sites. The callback only adapts ftrace's calling convention
 * (registers, recursion protection, interrupts off for rkprobes' per-CPU
 * state) and calls rkp_ftrace_hit() in rust/arch/x86/ftrace.rs.
 */
static notrace void rkp_ftrace_func(unsigned long ip, unsigned long parent_ip,
				    struct ftrace_ops *op,
				    struct ftrace_regs *fregs)
{
	struct pt_regs *regs = ftrace_get_regs(fregs);
	unsigned long flags;
	int bit;

	bit = ftrace_test_recursion_trylock(ip, parent_ip);
	if (bit < 0)
		return;
	if (regs) {
		local_irq_save(flags);
		rkp_ftrace_hit(ip, regs);
		local_irq_restore(flags);
	}
	ftrace_test_recursion_unlock(bit);
}

static struct ftrace_ops rkp_ftrace_ops = {
	.func = rkp_ftrace_func,
	.flags = FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_IPMODIFY,
};

int rkp_ftrace_filter_ip(unsigned long ip, int remove)
{
	return ftrace_set_filter_ip(&rkp_ftrace_ops, ip, remove, 0);
}

int rkp_ftrace_register(void)
{
	return register_ftrace_function(&rkp_ftrace_ops);
}

int rkp_ftrace_unregister(void)
{
	return unregister_ftrace_function(&rkp_ftrace_ops);
}
#endif /* CONFIG_DYNAMIC_FTRACE_WITH_REGS */
