// SPDX-License-Identifier: GPL-2.0

//! Where a `t` event's probe goes: 6.12's tracepoint probes are fprobes on
//! the tracepoint's stub function (`__probestub_TP`), which the tracepoint
//! calls with its arguments once the stub is one of its probes
//! (`tprobe.c`). The event probes the stub's ftrace call site, where the
//! stub's parameters, the tracepoint's data first, are the arguments.
//!
//! Process context, may sleep.

use super::Events;
use crate::{
    ffi::{rkp_tp_attach, rkp_tp_detach, rkp_tp_find, rkp_tp_stub},
    kernel_ext::str::cstring,
};
use core::ptr::NonNull;
use kernel::{ffi::c_void, prelude::*};

/// A tracepoint of vmlinux.
///
/// # Invariants
///
/// Points to a `struct tracepoint` of vmlinux, which lives as long as the
/// kernel.
#[derive(Clone, Copy)]
pub(super) struct Tracepoint(NonNull<c_void>);

impl Tracepoint {
    /// The tracepoint `name` of vmlinux, if there is one.
    pub(super) fn find(name: &[u8]) -> Result<Option<Tracepoint>> {
        let cname = cstring(&[name]).ok_or(ENOMEM)?;
        // SAFETY: a NUL-terminated name, valid for the call; process
        // context.
        let tp = unsafe { rkp_tp_find(cname.as_char_ptr()) };
        // INVARIANT: `rkp_tp_find` walks vmlinux's tracepoints.
        Ok(NonNull::new(tp).map(Tracepoint))
    }

    /// The address of the tracepoint's stub function.
    pub(super) fn stub(self) -> usize {
        // SAFETY: a tracepoint of vmlinux (the type invariant).
        unsafe { rkp_tp_stub(self.0.as_ptr()) }
    }

    /// Makes the tracepoint call its stub for as long as the returned
    /// attachment lives.
    pub(super) fn attach(self) -> Result<Attached> {
        // SAFETY: a tracepoint of vmlinux; process context.
        kernel::error::to_result(unsafe { rkp_tp_attach(self.0.as_ptr()) })?;
        // INVARIANT: attached just now.
        Ok(Attached(self))
    }
}

/// One of rkprobes' attachments of a tracepoint's stub (`tprobe.c` counts
/// them), given back when dropped.
///
/// # Invariants
///
/// `rkp_tp_attach` succeeded for the tracepoint, and this value is the
/// only one to undo it.
pub(super) struct Attached(Tracepoint);

impl Drop for Attached {
    fn drop(&mut self) {
        // SAFETY: attached (the type invariant), once; process context.
        unsafe { rkp_tp_detach(self.0 .0.as_ptr()) };
    }
}

impl Events {
    /// The ftrace call site of the stub of the tracepoint `name`, and the
    /// tracepoint: `ENOENT` when vmlinux has no such tracepoint (6.12 takes
    /// it for a module's, registered when the module comes: see
    /// Documentation/kprobe-events.rst), `EINVAL` when ftrace cannot trace
    /// its stub.
    pub(super) fn tprobe_site(&self, name: &[u8]) -> Result<(usize, Tracepoint)> {
        let tp = Tracepoint::find(name)?.ok_or(ENOENT)?;
        let stub = tp.stub();
        // SAFETY: any address may be asked about, in process context.
        let site = unsafe { self.core().runtime().ftrace_location(stub) }.ok_or(EINVAL)?;
        if site < stub || site >= stub + 16 {
            return Err(EINVAL);
        }
        Ok((site, tp))
    }
}
