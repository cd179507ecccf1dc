// SPDX-License-Identifier: GPL-2.0
/*
 * Probes at ftrace call sites go through ftrace: one ftrace_ops, filtered
 * to the probed sites, whose callback is rkp_ftrace_hit() in
 * rust/arch/x86/ftrace.rs, through rkp_ftrace_func() below on a kernel
 * with kCFI. Built only with CONFIG_DYNAMIC_FTRACE_WITH_REGS (rust/Kbuild).
 *
 * Interrupts stay as they were, as in the kernel's kprobe_ftrace_handler():
 * rkprobes' per-CPU state is safe against interrupts and NMIs nesting on
 * the same CPU (arch/x86/ctl.rs's Ctl), and is also the callback's
 * recursion guard, instead of ftrace's recursion lock (see there).
 *
 * The callback reads the saved registers as the struct pt_regs at the
 * start of x86's ftrace_regs (struct __arch_ftrace_regs), without
 * ftrace_get_regs()'s test of regs.cs: ftrace calls a SAVE_REGS ops only
 * with all of them (its list function skips such an ops when they are not,
 * ftrace_ops_test()), which the kernel's kprobe_ftrace_handler() relies on
 * too.
 */
#include <linux/ftrace.h>
#include <linux/stddef.h>

#include "ftrace.h"
#include "../../ffi/upcalls.h"

static_assert(offsetof(struct __arch_ftrace_regs, regs) == 0,
	      "rust/arch/x86/ftrace.rs: rkp_ftrace_hit reads ftrace_regs as pt_regs");

/*
 * The callback finds the probe core in the ops' private pointer, which
 * rkp_ftrace_register() sets: rust/arch/x86/ftrace.rs reads it at this
 * offset, checked at load.
 */
const unsigned int rkp_ftrace_ops_private_off = offsetof(struct ftrace_ops, private);

#ifdef CONFIG_CFI_CLANG
/*
 * The ops' callback as ftrace sees it on a kernel with kCFI: an adapter of
 * the exact ftrace_func_t type, whose type hash ftrace's indirect call
 * checks (through its list function, when another ftrace user traces the
 * same function). It compiles to a jump to rkp_ftrace_hit(). Without kCFI,
 * ftrace calls rkp_ftrace_hit(), whose prototype is ftrace_func_t's,
 * directly: two instructions a hit fewer.
 */
static notrace void rkp_ftrace_func(unsigned long ip, unsigned long parent_ip,
				    struct ftrace_ops *op,
				    struct ftrace_regs *fregs)
{
	rkp_ftrace_hit(ip, parent_ip, op, fregs);
}
#else
#define rkp_ftrace_func rkp_ftrace_hit
#endif

static struct ftrace_ops rkp_ftrace_ops = {
	.func = rkp_ftrace_func,
	.flags = FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_IPMODIFY,
};

/* Process context. */
int rkp_ftrace_filter_ip(unsigned long ip, int remove, int reset)
{
	return ftrace_set_filter_ip(&rkp_ftrace_ops, ip, remove, reset);
}

/*
 * Many sites in one filter change: ftrace updates the call sites once for
 * all of them. Process context.
 */
int rkp_ftrace_filter_ips(unsigned long *ips, unsigned int cnt, int remove,
			  int reset)
{
	return ftrace_set_filter_ips(&rkp_ftrace_ops, ips, cnt, remove, reset);
}

/*
 * Registered at most once: registering again would fail with EBUSY. The
 * callback is handed @core (ops->private), set before ftrace can call it.
 * Process context.
 */
int rkp_ftrace_register(void *core)
{
	if (rkp_ftrace_ops.flags & FTRACE_OPS_FL_ENABLED)
		return 0;
	rkp_ftrace_ops.private = core;
	return register_ftrace_function(&rkp_ftrace_ops);
}

/*
 * Unregistering an ops that is not registered WARNs in ftrace: it is
 * skipped. Otherwise unregister_ftrace_function() can only fail for an ops
 * ftrace does not know, which this one then is not. Process context.
 */
void rkp_ftrace_unregister(void)
{
	if (rkp_ftrace_ops.flags & FTRACE_OPS_FL_ENABLED)
		unregister_ftrace_function(&rkp_ftrace_ops);
}
