// SPDX-License-Identifier: GPL-2.0

//! The jump optimizer's delayed work in `ffi/glue.c`, which calls
//! `rkp_optimizer_work()` (`rust/kprobe/optimize.rs`) in process context, as
//! the kernel's `optimizing_work` calls `kprobe_optimizer()`.

use crate::ffi;
use kernel::ffi::c_ulong;

/// Queues the optimizer in `delay` jiffies, unless it is queued already (so
/// that requests close together make one batch). Any context but NMI.
pub(crate) fn kick(delay: u32) {
    // SAFETY: no preconditions; the work item is static in glue.c.
    unsafe { ffi::rkp_kick_optimizer(delay as c_ulong) }
}

/// Cancels a queued optimizer and waits for a running one to finish.
/// Process context, may sleep; not from the optimizer itself, nor with a
/// lock it takes held.
pub(crate) fn cancel() {
    // SAFETY: process context (this function's contract).
    unsafe { ffi::rkp_optimizer_cancel() }
}
