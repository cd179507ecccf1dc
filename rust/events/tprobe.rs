// SPDX-License-Identifier: GPL-2.0

//! Where a `t` event's probe goes: 6.12's tracepoint probes are fprobes on
//! the tracepoint's stub function (`__probestub_TP`), which the tracepoint
//! calls with its arguments once the stub is one of its probes
//! (`tprobe.c`). The event probes the stub's ftrace call site, where the
//! stub's parameters, the tracepoint's data first, are the arguments.
//!
//! A tracepoint is vmlinux's or a module's. A loaded module's is found
//! through its `__tracepoint_TP` symbol and then among the module's own
//! tracepoints; a `t` event on a tracepoint that nothing has yet waits for
//! a module to bring it. As in 6.12, a module is held only while its
//! tracepoint is being attached: the tracepoint module chain tells when a
//! module with tracepoints comes (its waiting probes are registered) and
//! goes (its probes are unregistered and its stubs detached, before the
//! tracepoint code checks that nothing is left on them), and the event
//! stays, waiting for the next load.
//!
//! Process context, may sleep.

use super::{Events, Probe};
use crate::{
    ffi::{
        self, kallsyms::SymbolBuf, rkp_tp_attach, rkp_tp_detach, rkp_tp_find,
        rkp_tp_find_in_module, rkp_tp_stub, runtime::Runtime,
    },
    kernel_ext::{
        module::{Module, ModuleRef},
        notifier::{Handler, ModuleEvent, ModuleState, Notify, TracepointModuleChain},
        str::cstring,
    },
};
use core::ptr::NonNull;
use kernel::{ffi::c_void, prelude::*};

/// A tracepoint of vmlinux or of a module, on its way to being attached.
///
/// # Invariants
///
/// Points to a `struct tracepoint` of vmlinux (`module` null), which lives
/// as long as the kernel, or of `module`, which `hold` keeps loaded or the
/// caller keeps from being freed (a module notification).
pub(super) struct Tracepoint {
    tp: NonNull<c_void>,
    module: *mut ffi::module,
    /// Held, not read: a loaded module's tracepoint keeps its module until
    /// it is attached.
    _hold: Option<ModuleRef>,
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
            return Ok(Some(Tracepoint {
                tp,
                module: core::ptr::null_mut(),
                _hold: None,
            }));
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
            module: module.as_ptr(),
            _hold: Some(module),
        }))
    }

    /// The tracepoint `name` of `module`, which a notification of the
    /// tracepoint module chain is about.
    ///
    /// # Safety
    ///
    /// The returned value is dropped before the notification returns, or
    /// kept only in an [`Attached`] that the module's going notification
    /// drops.
    unsafe fn in_module(module: &Module, name: &[u8]) -> Option<Tracepoint> {
        let cname = cstring(&[name])?;
        // SAFETY: a module live during the notification (the caller's
        // contract); a NUL-terminated name; process context.
        let tp = unsafe { rkp_tp_find_in_module(module.as_ptr(), cname.as_char_ptr()) };
        // INVARIANT: one of the module's tracepoints; the caller keeps it
        // from being freed.
        NonNull::new(tp).map(|tp| Tracepoint {
            tp,
            module: module.as_ptr(),
            _hold: None,
        })
    }

    /// The address of the tracepoint's stub function.
    fn stub(&self) -> usize {
        // SAFETY: a live tracepoint (the type invariant).
        unsafe { rkp_tp_stub(self.tp.as_ptr()) }
    }

    /// Makes the tracepoint call its stub for as long as the returned
    /// attachment lives; the module is no longer held.
    pub(super) fn attach(self) -> Result<Attached> {
        // SAFETY: a live tracepoint; process context.
        kernel::error::to_result(unsafe { rkp_tp_attach(self.tp.as_ptr()) })?;
        // INVARIANT: attached just now; a module's attachment is dropped
        // by its going notification (`Events::tracepoints_going`), before
        // the module is freed.
        Ok(Attached {
            tp: self.tp,
            module: self.module,
        })
    }
}

/// One of rkprobes' attachments of a tracepoint's stub (`tprobe.c` counts
/// them), given back when dropped.
///
/// # Invariants
///
/// `rkp_tp_attach` succeeded for the tracepoint, and this value is the
/// only one to undo it; a module's (`module` not null) is dropped before
/// the module's going notification returns.
pub(super) struct Attached {
    tp: NonNull<c_void>,
    module: *mut ffi::module,
}

impl Attached {
    /// Whether the tracepoint is `module`'s.
    fn is_of(&self, module: &Module) -> bool {
        !self.module.is_null() && self.module == module.as_ptr()
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        // SAFETY: attached (the type invariant), once, while the tracepoint
        // lives; process context.
        unsafe { rkp_tp_detach(self.tp.as_ptr()) };
    }
}

// SAFETY: the attachment is given back from whichever thread drops it;
// the pointers are compared or passed to C, which locks.
unsafe impl Send for Attached {}
// SAFETY: as above; nothing is read through a shared reference.
unsafe impl Sync for Attached {}

impl Events {
    /// The tracepoint `name` of vmlinux or of a loaded module, and the
    /// ftrace call site of its stub: `None` when neither has such a
    /// tracepoint (the probe waits for a module to bring it), `EINVAL`
    /// when ftrace cannot trace its stub.
    pub(super) fn tprobe_site(&self, name: &[u8]) -> Result<Option<(usize, Tracepoint)>> {
        let env = self.env();
        let rt = self.core().runtime();
        let Some(tp) = Tracepoint::find(rt, |s| env.lookup_parts(None, s), name)? else {
            return Ok(None);
        };
        Ok(Some((self.stub_site(&tp)?, tp)))
    }

    /// The ftrace call site at the start of `tp`'s stub (after an ENDBR).
    fn stub_site(&self, tp: &Tracepoint) -> Result<usize> {
        let stub = tp.stub();
        // SAFETY: any address may be asked about, in process context.
        let site = unsafe { self.core().runtime().ftrace_location(stub) }.ok_or(EINVAL)?;
        if site.wrapping_sub(stub) >= 16 {
            return Err(EINVAL);
        }
        Ok(site)
    }

    /// A module with tracepoints comes: each `t` probe waiting for one of
    /// them is registered at its stub, the stub attached, and the probe
    /// armed if its event is enabled (6.12's
    /// `__tracepoint_probe_module_cb()`). Process context.
    fn tracepoints_coming(&self, module: &Module) {
        let mut inner = self.inner.lock();
        for ev in inner.events.iter_mut() {
            // As in `module_coming`: an enable or disable in between would
            // be lost.
            let _em = self.event_mutex.lock();
            let enabled = ev.is_enabled();
            // SAFETY: `probes` is not structurally pinned; the list itself
            // does not change here.
            let evm = unsafe { ev.as_mut().get_unchecked_mut() };
            for p in evm.probes.iter_mut() {
                let Some(name) = p.tracepoint_name.as_deref() else {
                    continue;
                };
                if p.tracepoint.is_some() {
                    continue;
                }
                // SAFETY: attached below or dropped before returning; the
                // going notification drops the attachment.
                let Some(tp) = (unsafe { Tracepoint::in_module(module, name) }) else {
                    continue;
                };
                if let Err(e) = self.attach_waiting(p, tp, enabled) {
                    pr_warn!(
                        "t probe on a tracepoint of {} not registered on module load: {}\n",
                        core::str::from_utf8(module.name()).unwrap_or("?"),
                        e.to_errno()
                    );
                }
            }
        }
    }

    /// Registers the waiting `t` probe `p` at `tp`'s stub and attaches the
    /// stub; arms it when `enabled`.
    fn attach_waiting(&self, p: &mut Pin<KBox<Probe>>, tp: Tracepoint, enabled: bool) -> Result {
        let site = self.stub_site(&tp)?;
        let kp = p.client();
        kp.set_addr(site);
        kp.update_flags(crate::abi::flags::DISABLED, u32::MAX);
        self.register_probe(p)?;
        match tp.attach() {
            // SAFETY: `tracepoint` is not structurally pinned.
            Ok(a) => unsafe { p.as_mut().get_unchecked_mut() }.tracepoint = Some(a),
            Err(e) => {
                self.unregister_probe(p);
                kp.set_addr(0);
                return Err(e);
            }
        }
        if enabled {
            p.set_enabled(self.core(), true)?;
        }
        Ok(())
    }

    /// A module with tracepoints goes: the `t` probes on them are
    /// unregistered and the stubs detached, and the probes wait for the
    /// module's next load. Process context.
    fn tracepoints_going(&self, module: &Module) {
        let mut inner = self.inner.lock();
        for ev in inner.events.iter_mut() {
            let _em = self.event_mutex.lock();
            // SAFETY: as in `tracepoints_coming`.
            let evm = unsafe { ev.as_mut().get_unchecked_mut() };
            for p in evm.probes.iter_mut() {
                if !p.tracepoint.as_ref().is_some_and(|a| a.is_of(module)) {
                    continue;
                }
                self.unregister_probe(p);
                // SAFETY: `tracepoint` is not structurally pinned. Dropping
                // the attachment detaches the stub, while the module's
                // tracepoint still exists.
                unsafe { p.as_mut().get_unchecked_mut() }.tracepoint = None;
                p.client().set_addr(0);
            }
        }
    }
}

impl Handler<TracepointModuleChain> for Events {
    /// A module with tracepoints comes or goes. Process context.
    fn notify(&self, event: ModuleEvent<'_>) -> Notify {
        match event.state {
            ModuleState::Coming => self.tracepoints_coming(event.module),
            ModuleState::Going => self.tracepoints_going(event.module),
            ModuleState::Live => {}
        }
        Notify::Done
    }
}
