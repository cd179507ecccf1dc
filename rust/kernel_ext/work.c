// SPDX-License-Identifier: GPL-2.0
/*
 * The probe core's deferred work (rust/kernel_ext/work.rs): the jump
 * optimizer's delayed work and the reclaim of kretprobe instances, static
 * work items that Rust cannot define in a 6.12 module. notrace where the
 * hit paths queue work.
 */
#include <linux/irq_work.h>
#include <linux/jiffies.h>
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
