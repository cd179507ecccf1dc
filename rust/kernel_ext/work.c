// SPDX-License-Identifier: GPL-2.0
/*
 * The probe core's deferred work (rust/kernel_ext/work.rs): the jump
 * optimizer's delayed work and the reclaim of kretprobe instances, static
 * work items that Rust cannot define in a 6.12 module. notrace where the
 * hit paths queue work.
 */
#include <linux/atomic.h>
#include <linux/irq_work.h>
#include <linux/jiffies.h>
#include <linux/sched/signal.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <linux/workqueue.h>

#include "work.h"
#include "../ffi/upcalls.h"

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
 * Kretprobes whose instances grow (rust/kprobe/kretprobe/pool.rs) keep at
 * least one instance per task: the reclaim work counts the tasks and
 * grows them. Between two counts, each new task spends one of
 * rkp_fork_budget (a probe on the sched_process_fork tracepoint); the
 * last one asks for the work.
 */
static atomic_t rkp_fork_budget;
static struct tracepoint *rkp_fork_tp;

static notrace void rkp_fork_probe(void *data, struct task_struct *parent,
				   struct task_struct *child)
{
	if (atomic_dec_return(&rkp_fork_budget) == 0)
		rkp_kick_gc();
}

static void rkp_fork_tp_match(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sched_process_fork"))
		*(struct tracepoint **)priv = tp;
}

/*
 * Asks for the reclaim work after @budget more tasks, watching forks from
 * now on. Process context, under the kretprobes' mutex.
 */
int rkp_fork_watch(int budget)
{
	struct tracepoint *tp = NULL;
	int ret;

	atomic_set(&rkp_fork_budget, budget > 0 ? budget : 1);
	if (rkp_fork_tp)
		return 0;
	for_each_kernel_tracepoint(rkp_fork_tp_match, &tp);
	if (!tp)
		return -ENOENT;
	ret = tracepoint_probe_register(tp, (void *)rkp_fork_probe, NULL);
	if (!ret)
		rkp_fork_tp = tp;
	return ret;
}

/* Stops watching forks. Process context, under the kretprobes' mutex. */
void rkp_fork_unwatch(void)
{
	if (!rkp_fork_tp)
		return;
	tracepoint_probe_unregister(rkp_fork_tp, (void *)rkp_fork_probe, NULL);
	rkp_fork_tp = NULL;
	/* No probe runs after this: its text may go with the module. */
	tracepoint_synchronize_unregister();
}

/* The number of tasks (threads), counted. Process context. */
int rkp_nr_tasks(void)
{
	struct task_struct *g, *t;
	int n = 0;

	rcu_read_lock();
	for_each_process_thread(g, t)
		n++;
	rcu_read_unlock();
	return n;
}
