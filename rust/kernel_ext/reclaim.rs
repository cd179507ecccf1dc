// SPDX-License-Identifier: GPL-2.0

//! The kretprobe reclaim work of `ffi/glue.c`: an irq_work that schedules a
//! work item, and a delayed work item, both calling `rkp_kretprobe_gc()` in
//! process context.

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
