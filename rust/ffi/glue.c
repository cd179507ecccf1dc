// SPDX-License-Identifier: GPL-2.0
/*
 * C glue of rkprobes.ko: one-line wrappers of kernel helpers that are inline
 * (so Rust cannot call them from a module), in the manner of the kernel's
 * rust/helpers/. No logic lives here. Everything is notrace: parts run in
 * rkprobes' int3 handler, and the whole module text is blacklisted.
 */
#include <linux/export.h>
#include <linux/irq_work.h>
#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/objtool.h>
#include <linux/rculist.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/security.h>
#include <linux/sched/task.h>
#include <linux/smp.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "glue.h"
#include "upcalls.h"

/*
 * rust/ffi/kallsyms.rs formats symbols into SYMBOL_BUF_LEN (1024) bytes, and
 * sprint_symbol() may write KSYM_SYMBOL_LEN; bindgen cannot give Rust that
 * constant (a sizeof expression), so the bound is checked here.
 */
static_assert(KSYM_SYMBOL_LEN <= 1024, "rust/ffi/kallsyms.rs: SYMBOL_BUF_LEN < KSYM_SYMBOL_LEN");

notrace unsigned int rkp_smp_processor_id(void)
{
	return raw_smp_processor_id();
}

/*
 * The interrupt level of the current context: its NMI and hardirq nesting
 * and whether it serves a softirq, as bits of the preempt count. Code
 * interrupted by an interrupt, an exception entered as an NMI (int3) or a
 * softirq sees a different value; an exception that does not change the
 * context (a #DE, #UD or #GP in the same code) sees the same.
 */
notrace unsigned int rkp_irq_level(void)
{
	return preempt_count() & (NMI_MASK | HARDIRQ_MASK | SOFTIRQ_OFFSET);
}

/*
 * security_locked_down(LOCKDOWN_KPROBES): an inline returning 0 without
 * CONFIG_SECURITY, an exported function with it.
 */
int rkp_locked_down_kprobes(void)
{
	return security_locked_down(LOCKDOWN_KPROBES);
}

/*
 * The int3 rkprobes traps on once at load to trace the kernel's int3 path
 * (rust/arch/x86/trap_path.rs), as the kernel's int3_selftest() traps on
 * its own. noinline: the label must be defined once.
 */
extern void rkp_trap_path_site(void);

noinline notrace void rkp_trap_path_int3(void)
{
	asm volatile("rkp_trap_path_site:\n\t"
		     ANNOTATE_NOENDBR
		     "int3\n\t" ::: "memory");
}

notrace unsigned long rkp_trap_path_site_addr(void)
{
	return (unsigned long)&rkp_trap_path_site;
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
 * Each CPU's probe state (rust/arch/x86/ctl.rs's Ctl), read on every
 * hit: a per-CPU variable, which the hit path finds with this_cpu_ptr()'s
 * two instructions (rust/ffi/percpu.rs). Raw storage here; its all-zero
 * bytes are an idle Ctl, which rkp_ctl_area_reset() gives every possible
 * CPU at load. The Rust side checks that a Ctl fits.
 */
struct rkp_ctl_area {
	unsigned long words[RKP_CTL_AREA_WORDS];
} __aligned(64);
DEFINE_PER_CPU(struct rkp_ctl_area, rkp_ctl_area);
const unsigned int rkp_ctl_area_size = sizeof(struct rkp_ctl_area);

/* this_cpu_ptr(&rkp_ctl_area), out of line: checks the inline one at load. */
notrace void *rkp_ctl_area_this_cpu(void)
{
	return this_cpu_ptr(&rkp_ctl_area);
}

void rkp_ctl_area_reset(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(&rkp_ctl_area, cpu), 0, sizeof(struct rkp_ctl_area));
}

notrace unsigned int rkp_num_possible_cpus(void)
{
	return num_possible_cpus();
}

/* The current task, without a reference: only ever compared. */
notrace void *rkp_current_task(void)
{
	return current;
}

/*
 * User strings for the events' ustring fetches, with the contracts of
 * strncpy_from_user_nofault() and strnlen_user_nofault(), which are not
 * exported: the exported word-at-a-time strncpy_from_user() and
 * strnlen_user() with page faults disabled, as mm/maccess.c builds them.
 * Any context: with page faults disabled a fault fails the copy instead of
 * being handled (might_fault() returns early then).
 */
notrace long rkp_strncpy_user_nofault(char *dst, const void __user *src, long count)
{
	long n;

	if (unlikely(count <= 0))
		return 0;
	pagefault_disable();
	n = strncpy_from_user(dst, src, count);
	pagefault_enable();
	if (n >= count) {
		/* Cut: the last byte becomes the NUL. */
		dst[count - 1] = '\0';
		return count;
	}
	/* The length with its NUL, or -EFAULT. */
	return n >= 0 ? n + 1 : n;
}

notrace long rkp_strnlen_user_nofault(const void __user *src, long count)
{
	long n;

	pagefault_disable();
	n = strnlen_user(src, count);
	pagefault_enable();
	return n;
}

/* The current task's comm, for $comm. */
notrace const char *rkp_current_comm(void)
{
	return current->comm;
}

/* Takes a reference on the current task and returns it. Any context. */
notrace void *rkp_get_current_task(void)
{
	return get_task_struct(current);
}

/*
 * Drops a task reference. Any context when the task is current (its own
 * reference keeps it alive); process context otherwise.
 */
notrace void rkp_put_task(void *task)
{
	put_task_struct(task);
}

/*
 * Whether a task has run for the last time: it set TASK_DEAD before its
 * final schedule, and the CPU it ran on has switched away from it.
 */
notrace int rkp_task_is_dead(void *task)
{
	struct task_struct *t = task;

	return READ_ONCE(t->__state) == TASK_DEAD && !smp_load_acquire(&t->on_cpu);
}

/* A reference on rkprobes itself, held while a kretprobe frame is out. */
notrace void rkp_module_get_self(void)
{
	__module_get(THIS_MODULE);
}

notrace void rkp_module_put_self(void)
{
	module_put(THIS_MODULE);
}

/*
 * Reclaiming kretprobe instances (rust/kprobe/kretprobe.rs) is process
 * context work that the hit path asks for: an irq_work (NMI-safe to queue)
 * that schedules a work item, which calls rkp_kretprobe_gc().
 */
static void rkp_gc_workfn(struct work_struct *work)
{
	rkp_kretprobe_gc();
}
static DECLARE_WORK(rkp_gc_work, rkp_gc_workfn);

static DECLARE_DELAYED_WORK(rkp_gc_dwork, rkp_gc_workfn);

static void rkp_gc_irq_workfn(struct irq_work *work)
{
	schedule_work(&rkp_gc_work);
}
static struct irq_work rkp_gc_irq_work = IRQ_WORK_INIT(rkp_gc_irq_workfn);

notrace void rkp_kick_gc(void)
{
	irq_work_queue(&rkp_gc_irq_work);
}

/* Reclaims again in a second: zombie pools wait for frames to return. */
notrace void rkp_kick_gc_later(void)
{
	schedule_delayed_work(&rkp_gc_dwork, HZ);
}

/* Waits until no reclaim is queued or running. Process context. */
void rkp_gc_sync(void)
{
	irq_work_sync(&rkp_gc_irq_work);
	cancel_work_sync(&rkp_gc_work);
	cancel_delayed_work_sync(&rkp_gc_dwork);
}

/*
 * The kernel's kprobe_blacklist is an RCU list (readers walk it under
 * rcu_read_lock(), writers hold kprobe_mutex): rkprobes adds the regions of
 * its optimized probes to it (rust/kprobe/blacklist.rs), with the kernel's
 * list primitives.
 */
notrace void rkp_list_add_tail_rcu(struct list_head *new, struct list_head *head)
{
	list_add_tail_rcu(new, head);
}

notrace void rkp_list_del_rcu(struct list_head *entry)
{
	list_del_rcu(entry);
}

/*
 * The jump optimizer (rust/kprobe/optimize.rs) runs as a delayed work, as
 * the kernel's kprobe_optimizer: registrations close together are
 * optimized in one batch.
 */
static void rkp_opt_workfn(struct work_struct *work)
{
	rkp_optimizer_work();
}
static DECLARE_DELAYED_WORK(rkp_opt_dwork, rkp_opt_workfn);

/* Queues the optimizer in delay jiffies, unless it is queued already. */
void rkp_kick_optimizer(unsigned long delay)
{
	schedule_delayed_work(&rkp_opt_dwork, delay);
}

/* Cancels a queued optimizer and waits for a running one. Process context. */
void rkp_optimizer_cancel(void)
{
	cancel_delayed_work_sync(&rkp_opt_dwork);
}

/*
 * The C ABI of include/rkprobes.h, implemented in rust/kprobe/abi.rs. A
 * Rust module cannot export symbols from its own crate in 6.12, so the
 * exports are made here.
 */
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

#ifdef CONFIG_DYNAMIC_FTRACE_WITH_REGS
#include <linux/ftrace.h>
#include <linux/irqflags.h>

/*
 * Probes at ftrace call sites go through ftrace: one ftrace_ops, filtered
 * to the probed sites, whose callback is rkp_ftrace_hit() in
 * rust/arch/x86/ftrace.rs, through rkp_ftrace_func() below on a kernel
 * with kCFI.
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
static_assert(offsetof(struct __arch_ftrace_regs, regs) == 0,
	      "rust/arch/x86/ftrace.rs: rkp_ftrace_hit reads ftrace_regs as pt_regs");

/*
 * The callback finds the probe core in the ops' private pointer, which
 * rkp_ftrace_register() sets: rust/kprobe/mod.rs reads it at this offset,
 * checked at load.
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

int rkp_ftrace_filter_ip(unsigned long ip, int remove, int reset)
{
	return ftrace_set_filter_ip(&rkp_ftrace_ops, ip, remove, reset);
}

/*
 * Registered at most once: registering again would fail with EBUSY. The
 * callback is handed @core (ops->private), set before ftrace can call it.
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
 * ftrace does not know, which this one then is not.
 */
void rkp_ftrace_unregister(void)
{
	if (rkp_ftrace_ops.flags & FTRACE_OPS_FL_ENABLED)
		unregister_ftrace_function(&rkp_ftrace_ops);
}
#endif /* CONFIG_DYNAMIC_FTRACE_WITH_REGS */

/*
 * Page faults in a probed instruction's copy (rust/arch/x86/kprobes.rs):
 * the x86 tracepoint page_fault_kernel is the one hook a module has in
 * exc_page_fault() ahead of the exception-table fixup, where the kernel's
 * own kprobes have kprobe_page_fault(). Its probe is registered the first
 * time a probe is placed on an instruction that has an exception-table
 * entry (the only instructions whose faults need the fixup), and stays
 * until rkprobes unloads: tracepoint_probe_unregister() can fail, which
 * the removal of a probe must not.
 */
#ifdef CONFIG_TRACEPOINTS
#include <linux/tracepoint.h>

static struct tracepoint *rkp_pf_tp;
static bool rkp_pf_on;

static void rkp_pf_find(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "page_fault_kernel"))
		rkp_pf_tp = tp;
}

/* Of the tracepoint's type: TP_PROTO(address, regs, error_code). */
static notrace void rkp_pf_probe(void *data, unsigned long address,
				 struct pt_regs *regs, unsigned long error_code)
{
	rkp_page_fault(regs);
}

/* Process context; the caller serialises calls (the probe core's mutex). */
int rkp_page_fault_hook(void)
{
	int ret;

	if (rkp_pf_on)
		return 0;
	if (!rkp_pf_tp)
		for_each_kernel_tracepoint(rkp_pf_find, NULL);
	if (!rkp_pf_tp)
		return -EOPNOTSUPP;
	ret = tracepoint_probe_register(rkp_pf_tp, (void *)rkp_pf_probe, NULL);
	if (!ret)
		rkp_pf_on = true;
	return ret;
}

/* At unload, once no probe is left: returns when no CPU runs the probe. */
void rkp_page_fault_unhook(void)
{
	if (!rkp_pf_on)
		return;
	tracepoint_probe_unregister(rkp_pf_tp, (void *)rkp_pf_probe, NULL);
	tracepoint_synchronize_unregister();
	rkp_pf_on = false;
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
