// SPDX-License-Identifier: GPL-2.0

//! The page-fault hook (`page_fault.c`): rkprobes' probe on x86's
//! `page_fault_kernel` tracepoint, through which a fault in a probed
//! instruction's copy reaches `rkp_page_fault()` (`kprobes.rs`) before the
//! kernel handles it, as the kernel's own kprobes have
//! `kprobe_page_fault()`. x86's because the tracepoint is.

use crate::ffi;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::prelude::*;

/// The owner of the page-fault hook: the one value through which the
/// probe is registered and unregistered.
///
/// # Invariants
///
/// At most one `PageFaultHook` exists, so `&mut self` serialises the calls
/// into `page_fault.c`, whose state is plain (not atomic) and which wants
/// its callers serialised.
pub(crate) struct PageFaultHook(());

/// Whether the one [`PageFaultHook`] exists.
static TAKEN: AtomicBool = AtomicBool::new(false);

impl PageFaultHook {
    /// The hook's owner, unhooked. `EBUSY` while another one exists.
    pub(crate) fn new() -> Result<Self> {
        if TAKEN.swap(true, Ordering::AcqRel) {
            return Err(EBUSY);
        }
        // INVARIANT: the flag was clear, and is set until this one drops.
        Ok(Self(()))
    }

    /// Registers the probe if it is not registered yet, so that faults
    /// reach rkprobes before the kernel handles them; it stays until
    /// [`PageFaultHook::unhook`]. `EOPNOTSUPP` without tracepoints or
    /// without the tracepoint. Process context, may sleep.
    pub(crate) fn hook(&mut self) -> Result {
        // SAFETY: process context (this function's documented context);
        // calls are serialised by `&mut self` (type invariant).
        kernel::error::to_result(unsafe { ffi::rkp_page_fault_hook() })
    }

    /// Unregisters the probe if it is registered; returns when no CPU runs
    /// it any more. Process context, may sleep.
    pub(crate) fn unhook(&mut self) {
        // SAFETY: as in `hook`.
        unsafe { ffi::rkp_page_fault_unhook() };
    }
}

impl Drop for PageFaultHook {
    fn drop(&mut self) {
        self.unhook();
        TAKEN.store(false, Ordering::Release);
    }
}
