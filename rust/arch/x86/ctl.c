// SPDX-License-Identifier: GPL-2.0
/*
 * Each CPU's probe state (rust/arch/x86/ctl.rs's Ctl), read on every hit:
 * a per-CPU variable, which the hit paths reach through %gs
 * (rust/ffi/percpu.rs). Raw storage here, since Rust cannot define a
 * per-CPU variable in a 6.12 module; its all-zero bytes are an idle Ctl,
 * which rkp_ctl_area_reset() gives every possible CPU at load. The Rust
 * side checks that a Ctl fits. notrace: parts run on the hit paths.
 */
#include <linux/irqflags.h>
#include <linux/percpu.h>
#include <linux/string.h>

#include "ctl.h"

DEFINE_PER_CPU(struct rkp_ctl_area, rkp_ctl_area);
const unsigned int rkp_ctl_area_size = sizeof(struct rkp_ctl_area);

/* this_cpu_ptr(&rkp_ctl_area), out of line: checks the inline one at load. */
notrace void *rkp_ctl_area_this_cpu(void)
{
	return this_cpu_ptr(&rkp_ctl_area);
}

/* Process context, before any probe exists. */
void rkp_ctl_area_reset(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(&rkp_ctl_area, cpu), 0, sizeof(struct rkp_ctl_area));
}

/*
 * An optimized probe with post-handlers runs its first instruction with
 * interrupts off, as an int3 hit runs its copy (rust/arch/x86/kprobes.rs):
 * turned off, as lockdep sees it, at the end of the pre-handlers' callback,
 * and announced on again before the post-handlers' trampoline restores the
 * probed code's flags. Both run on the hit path (notrace; the kernel's
 * trace_hardirqs_on/off are NOKPROBE_SYMBOL).
 */
notrace void rkp_local_irq_disable(void)
{
	local_irq_disable();
}

notrace void rkp_trace_hardirqs_on(void)
{
	trace_hardirqs_on();
}
