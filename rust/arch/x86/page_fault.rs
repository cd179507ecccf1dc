// SPDX-License-Identifier: GPL-2.0

//! The page-fault hook (`page_fault.c`): rkprobes' probe on x86's
//! `page_fault_kernel` tracepoint, through which a fault in a probed
//! instruction's copy reaches rkprobes before the kernel handles it, as
//! the kernel's own kprobes have `kprobe_page_fault()`. x86's because the
//! tracepoint is.

use super::{
    ctl::{this_cpu, Status},
    kprobes::{in_copy, leave_copy},
};
use crate::ffi;
use kernel::prelude::*;

/// Registers the probe if it is not registered yet, so that faults reach
/// rkprobes before the kernel handles them; it stays until
/// [`unhook_page_faults`]. `EOPNOTSUPP` without tracepoints or without the
/// tracepoint. Process context, may sleep (`page_fault.c` serialises the
/// calls with its own mutex).
pub(crate) fn hook_page_faults() -> Result {
    // SAFETY: process context (this function's documented context); the
    // C side serialises calls.
    kernel::error::to_result(unsafe { ffi::rkp_page_fault_hook() })
}

/// Unregisters the probe if it is registered; returns when no CPU runs it
/// any more. Process context, may sleep.
pub(crate) fn unhook_page_faults() {
    // SAFETY: as in `hook_page_faults`.
    unsafe { ffi::rkp_page_fault_unhook() };
}

/// The tracepoint probe's call (`rkp_pf_probe()` in `page_fault.c`): a page
/// fault, before the kernel handles it, with preemption disabled by the
/// tracepoint. Exception context.
///
/// # Safety
///
/// Called only by that probe, with the fault's registers, valid and
/// writable (the exception's own) for the duration of the call.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_page_fault(regs: *mut ffi::pt_regs) {
    // SAFETY: the caller's contract.
    if let Some(regs) = unsafe { regs.as_mut() } {
        page_fault(regs);
    }
}

/// A page fault, from the `page_fault_kernel` tracepoint (`page_fault.c`),
/// before the kernel handles it: the kernel's `kprobe_page_fault()`. When
/// it is this CPU's copy that faulted, the copy is left ([`leave_copy`]),
/// so that the fault is handled, and fixed up if it must be, at the
/// original instruction, with the probed code's interrupt flag (the copy
/// runs with interrupts off, under which a fault on a user address could
/// not sleep). Only instructions with an exception-table entry need it;
/// the hook is registered for them. Exception context, may not sleep or
/// lock.
fn page_fault(regs: &mut ffi::pt_regs) {
    let ctl = this_cpu();
    if ctl.depth() == 0 {
        return;
    }
    let Some(frame) = ctl.top() else {
        return;
    };
    if let (Status::HitSs | Status::Reenter, Some(point)) = (frame.status(), frame.point()) {
        if in_copy(point, regs) {
            leave_copy(point, regs, ctl, frame);
        }
    }
}
