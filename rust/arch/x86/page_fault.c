// SPDX-License-Identifier: GPL-2.0
/*
 * Page faults in a probed instruction's copy (rust/arch/x86/kprobes.rs):
 * the x86 tracepoint page_fault_kernel is the one hook a module has in
 * exc_page_fault() ahead of the exception-table fixup, where the kernel's
 * own kprobes have kprobe_page_fault(). Its probe is registered the first
 * time a probe is placed on an instruction that has an exception-table
 * entry (the only instructions whose faults need the fixup), and stays
 * until rkprobes unloads: tracepoint_probe_unregister() can fail, which
 * the removal of a probe must not.
 *
 * page_fault.rs registers and unregisters the probe for the probe core,
 * and receives its calls (rkp_page_fault()).
 * The C is x86's because the tracepoint is: page_fault_kernel is declared
 * by x86's asm/trace/exceptions.h and fired by arch/x86/mm/fault.c, as the
 * kernel calls its generic kprobe_page_fault() from there.
 */
#include <linux/errno.h>
#include <linux/mutex.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

#include "page_fault.h"
#include "../../ffi/upcalls.h"

#ifdef CONFIG_TRACEPOINTS
/* Serialises hooking and unhooking; guards rkp_pf_tp and rkp_pf_on. */
static DEFINE_MUTEX(rkp_pf_mutex);
static struct tracepoint *rkp_pf_tp;
static bool rkp_pf_on;

static void rkp_pf_find(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "page_fault_kernel"))
		rkp_pf_tp = tp;
}

/*
 * Of the tracepoint's type: TP_PROTO(address, regs, error_code). Exception
 * context.
 */
static notrace void rkp_pf_probe(void *data, unsigned long address,
				 struct pt_regs *regs, unsigned long error_code)
{
	rkp_page_fault(regs);
}

/* Process context. */
int rkp_page_fault_hook(void)
{
	int ret = 0;

	mutex_lock(&rkp_pf_mutex);
	if (rkp_pf_on)
		goto out;
	if (!rkp_pf_tp)
		for_each_kernel_tracepoint(rkp_pf_find, NULL);
	ret = -EOPNOTSUPP;
	if (!rkp_pf_tp)
		goto out;
	ret = tracepoint_probe_register(rkp_pf_tp, (void *)rkp_pf_probe, NULL);
	if (!ret)
		rkp_pf_on = true;
out:
	mutex_unlock(&rkp_pf_mutex);
	return ret;
}

/* At unload, once no probe is left: returns when no CPU runs the probe. */
void rkp_page_fault_unhook(void)
{
	mutex_lock(&rkp_pf_mutex);
	if (rkp_pf_on) {
		tracepoint_probe_unregister(rkp_pf_tp, (void *)rkp_pf_probe, NULL);
		tracepoint_synchronize_unregister();
		rkp_pf_on = false;
	}
	mutex_unlock(&rkp_pf_mutex);
}
#else
int rkp_page_fault_hook(void)
{
	return -EOPNOTSUPP;
}

void rkp_page_fault_unhook(void)
{
}
#endif
