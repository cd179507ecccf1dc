// SPDX-License-Identifier: GPL-2.0

//! Where a `t` event's probe goes: 6.12's tracepoint probes are fprobes on
//! the tracepoint's stub function (`__probestub_TP`), which the tracepoint
//! calls with its arguments once the stub is one of its probes
//! (`tprobe.c`). The event probes the stub's ftrace call site, where the
//! stub's parameters, the tracepoint's data first, are the arguments.
//!
//! A tracepoint is vmlinux's, or a loaded module's: that one is found
//! through its `__tracepoint_TP` symbol and then among the module's own
//! tracepoints, and the module is held loaded while a `t` event uses it,
//! as 6.12 holds it.
//!
//! Process context, may sleep.

use super::Events;
use crate::{
    ffi::{
        kallsyms::SymbolBuf, rkp_tp_attach, rkp_tp_detach, rkp_tp_find, rkp_tp_find_in_module,
        rkp_tp_stub, runtime::Runtime,
    },
    kernel_ext::{module::ModuleRef, str::cstring},
};
use core::ptr::NonNull;
use kernel::{ffi::c_void, prelude::*};

/// A tracepoint of vmlinux or of a loaded module.
///
/// # Invariants
///
/// Points to a `struct tracepoint` of vmlinux, which lives as long as the
/// kernel, or of the module `_module` holds a reference on.
pub(super) struct Tracepoint {
    tp: NonNull<c_void>,
    /// Held, not read: a module's tracepoint keeps its module loaded.
    _module: Option<ModuleRef>,
}

impl Tracepoint {
    /// The tracepoint `name` of vmlinux or of a loaded module, if there is
    /// one; `lookup` finds a symbol's address.
    pub(super) fn find(
        rt: &Runtime,
        lookup: impl Fn(&[u8]) -> Result<Option<usize>>,
        name: &[u8],
    ) -> Result<Option<Tracepoint>> {
        let cname = cstring(&[name]).ok_or(ENOMEM)?;
        // SAFETY: a NUL-terminated name, valid for the call; process
        // context.
        if let Some(tp) = NonNull::new(unsafe { rkp_tp_find(cname.as_char_ptr()) }) {
            // INVARIANT: `rkp_tp_find` walks vmlinux's tracepoints.
            return Ok(Some(Tracepoint { tp, _module: None }));
        }
        // A module's: its symbol names the module, whose own tracepoints
        // are then searched, with the module held.
        let mut sym = KVec::new();
        sym.extend_from_slice(b"__tracepoint_", GFP_KERNEL)?;
        sym.extend_from_slice(name, GFP_KERNEL)?;
        let Some(addr) = lookup(&sym)? else {
            return Ok(None);
        };
        let mut buf = SymbolBuf::new()?;
        let Some(modname) = buf
            .symbolise(addr)
            .and_then(|s| s.module)
            .and_then(|m| cstring(&[m.as_bytes()]))
        else {
            return Ok(None);
        };
        let Some(module) = ModuleRef::by_name(rt, &modname) else {
            return Ok(None);
        };
        // SAFETY: a module the reference keeps loaded; a NUL-terminated
        // name; process context.
        let tp = unsafe { rkp_tp_find_in_module(module.as_ptr(), cname.as_char_ptr()) };
        // INVARIANT: one of the module's tracepoints, and the reference.
        Ok(NonNull::new(tp).map(|tp| Tracepoint {
            tp,
            _module: Some(module),
        }))
    }

    /// The address of the tracepoint's stub function.
    pub(super) fn stub(&self) -> usize {
        // SAFETY: a live tracepoint (the type invariant).
        unsafe { rkp_tp_stub(self.tp.as_ptr()) }
    }

    /// Makes the tracepoint call its stub for as long as the returned
    /// attachment lives.
    pub(super) fn attach(self) -> Result<Attached> {
        // SAFETY: a live tracepoint; process context.
        kernel::error::to_result(unsafe { rkp_tp_attach(self.tp.as_ptr()) })?;
        // INVARIANT: attached just now.
        Ok(Attached(self))
    }
}

/// One of rkprobes' attachments of a tracepoint's stub (`tprobe.c` counts
/// them), given back when dropped; a module's tracepoint keeps its module
/// loaded until then.
///
/// # Invariants
///
/// `rkp_tp_attach` succeeded for the tracepoint, and this value is the
/// only one to undo it.
pub(super) struct Attached(Tracepoint);

impl Drop for Attached {
    fn drop(&mut self) {
        // SAFETY: attached (the type invariant), once, while the tracepoint
        // lives (its module's reference is dropped after this); process
        // context.
        unsafe { rkp_tp_detach(self.0.tp.as_ptr()) };
    }
}

impl Events {
    /// The ftrace call site of the stub of the tracepoint `name`, and the
    /// tracepoint: `ENOENT` when neither vmlinux nor a loaded module has
    /// such a tracepoint (6.12 waits for a module to bring it: see
    /// Documentation/kprobe-events.rst), `EINVAL` when ftrace cannot trace
    /// its stub.
    pub(super) fn tprobe_site(&self, name: &[u8]) -> Result<(usize, Tracepoint)> {
        let env = self.env();
        let rt = self.core().runtime();
        let tp = Tracepoint::find(rt, |s| env.lookup_parts(None, s), name)?.ok_or(ENOENT)?;
        let stub = tp.stub();
        // SAFETY: any address may be asked about, in process context.
        let site = unsafe { self.core().runtime().ftrace_location(stub) }.ok_or(EINVAL)?;
        // An ftrace call site at the stub's start, after an ENDBR.
        if site.wrapping_sub(stub) >= 16 {
            return Err(EINVAL);
        }
        Ok((site, tp))
    }
}
