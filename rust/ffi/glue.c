// SPDX-License-Identifier: GPL-2.0
/*
 * C glue of rkprobes.ko: one-line wrappers of kernel helpers that are inline
 * (so Rust cannot call them from a module), in the manner of the kernel's
 * rust/helpers/. No logic lives here. Everything is notrace: parts run in
 * rkprobes' int3 handler, and the whole module text is blacklisted.
 */
#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/preempt.h>
#include <linux/rculist.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/security.h>
#include <linux/smp.h>

#include "glue.h"

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

notrace void rkp_preempt_disable(void)
{
	preempt_disable();
}

notrace void rkp_preempt_enable(void)
{
	preempt_enable();
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
 * Drops a task reference: put_task_struct(), which frees the task when the
 * reference is the last. Process context, or any context when the task is
 * current (its own reference keeps it alive, so the put is never the
 * last). The kretprobe trampoline does not call it for the task that
 * entered __switch_to (it returns as the next task, with interrupts off
 * and rq->lock held): TaskRef::put_on_return() (rust/kernel_ext/task.rs)
 * decrements that count inline, and hands a last reference to the reclaim
 * work, which puts it here in process context.
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
