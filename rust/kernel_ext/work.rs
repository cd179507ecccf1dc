// SPDX-License-Identifier: GPL-2.0

//! The core's deferred work, in `work.c`: the jump optimizer's delayed
//! work, which calls `rkp_optimizer_work()` (`rust/kprobe/optimize.rs`) as
//! the kernel's `optimizing_work` calls `kprobe_optimizer()`, and the
//! kretprobe reclaim (an irq_work that schedules a work item, and a delayed
//! work item), which calls `rkp_kretprobe_gc()`. Both run in process
//! context.

/// The jump optimizer's work.
pub(crate) mod optimizer {
    use crate::ffi;
    use kernel::ffi::c_ulong;

    /// Queues the optimizer in `delay` jiffies, unless it is queued already (so
    /// that requests close together make one batch). Any context but NMI.
    pub(crate) fn kick(delay: u32) {
        // SAFETY: no preconditions; the work item is static in work.c.
        unsafe { ffi::rkp_kick_optimizer(delay as c_ulong) }
    }

    /// Cancels a queued optimizer and waits for a running one to finish.
    /// Process context, may sleep; not from the optimizer itself, nor with a
    /// lock it takes held.
    pub(crate) fn cancel() {
        // SAFETY: process context (this function's contract).
        unsafe { ffi::rkp_optimizer_cancel() }
    }
}

/// The kretprobe reclaim work.
pub(crate) mod reclaim {
    use crate::ffi;

    /// Queues a reclaim soon. Any context, NMI included (an irq_work).
    pub(crate) fn kick() {
        // SAFETY: no preconditions; irq_work_queue() is NMI-safe.
        unsafe { ffi::rkp_kick_gc() }
    }

    /// Queues a reclaim in a second. Any context but NMI.
    pub(crate) fn kick_later() {
        // SAFETY: no preconditions.
        unsafe { ffi::rkp_kick_gc_later() }
    }

    /// Waits until no reclaim is queued or running, and cancels queued ones.
    /// Process context, may sleep; not from the reclaim itself.
    pub(crate) fn sync() {
        // SAFETY: process context (this function's contract).
        unsafe { ffi::rkp_gc_sync() }
    }

    /// Queues a reclaim once `budget` more tasks were created (a probe on
    /// the `sched_process_fork` tracepoint). Process context.
    pub(crate) fn after_forks(budget: usize) -> kernel::error::Result {
        let budget = i32::try_from(budget).unwrap_or(i32::MAX);
        // SAFETY: process context; the probe is static in work.c.
        kernel::error::to_result(unsafe { ffi::rkp_fork_watch(budget) })
    }

    /// Stops watching forks. Process context.
    pub(crate) fn stop_fork_watch() {
        // SAFETY: process context.
        unsafe { ffi::rkp_fork_unwatch() }
    }

    /// How many tasks there are. Process context.
    pub(crate) fn nr_tasks() -> usize {
        // SAFETY: process context; it walks the task list under RCU.
        usize::try_from(unsafe { ffi::rkp_nr_tasks() }).unwrap_or(0)
    }
}
