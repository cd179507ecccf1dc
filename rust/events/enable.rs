// SPDX-License-Identifier: GPL-2.0

//! Enabling and disabling an event: the tracing core's callback, through
//! `trace_event.c`, when the first trace instance enables an event or the
//! last one disables it. It arms or disarms the event's registered probes
//! in the probe core, all or nothing.
//!
//! Process context, may sleep; called with the kernel's `event_mutex` held,
//! which is why the control file changes an event's probe list only with
//! that mutex held too. It takes only the probe core's locks: never
//! `Events::inner`, which the control file holds when it takes
//! `event_mutex`.

use super::{Event, Probe};
use crate::kprobe::Core;
use core::sync::atomic::Ordering;
use kernel::{
    ffi::{c_int, c_void},
    prelude::*,
};

/// Called by `trace_event.c`, with the kernel's `event_mutex` held, when the
/// first trace instance enables the event or the last one disables it.
/// Process context.
///
/// # Safety
///
/// `owner` is a registered `Event`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_event_set_enabled(owner: *mut c_void, on: c_int) -> c_int {
    // SAFETY: the caller's contract.
    let ev = unsafe { &*owner.cast::<Event>() };
    let Ok(core) = Core::get() else {
        return ENODEV.to_errno();
    };
    let on = on != 0;
    if on {
        ev.ever_enabled.store(true, Ordering::Release);
        ev.enabled.store(true, Ordering::Release);
    }
    let mut ret = Ok(());
    for p in ev.probes.iter() {
        let kp = p.client();
        // A probe waiting for its module, or of unloaded code, stays as it
        // is, as the kernel's do.
        if p.eprobe.is_none() && (!p.registered() || kp.flags() & crate::abi::flags::GONE != 0) {
            continue;
        }
        let r = p.set_enabled(core, on);
        if r.is_err() && on {
            ret = r;
        }
    }
    if !on {
        ev.enabled.store(false, Ordering::Release);
    }
    match ret {
        Ok(()) => 0,
        Err(e) => {
            // All or nothing.
            for p in ev.probes.iter() {
                let _ = p.set_enabled(core, false);
            }
            ev.enabled.store(false, Ordering::Release);
            e.to_errno()
        }
    }
}

impl Probe {
    /// Arms (`on`) or disarms every site of the probe in the probe core,
    /// all or none: a probe on many functions as one batch (one text
    /// synchronisation, one ftrace filter change). Process context.
    pub(super) fn set_enabled(&self, core: &Core, on: bool) -> Result {
        // An event probe hooks or unhooks its trigger (`event_mutex` is
        // held: the tracing core's callback, or a writer holding it).
        if self.eprobe.is_some() {
            if on {
                return self.ep_attach();
            }
            self.ep_detach();
            return Ok(());
        }
        core.set_enabled_each(self.clients(), on)
    }
}
