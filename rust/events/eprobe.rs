// SPDX-License-Identifier: GPL-2.0

//! Event probes (`e` events): an event made from the records of another
//! trace event, as 6.12's `trace_eprobe.c` makes them. The probe hooks a
//! trigger to its target (`eprobe.c`) while its event is enabled; the
//! tracing core hands the trigger every record the target builds, and the
//! probe's fetch programs read it ([`FetchInsn::TpArg`]).
//!
//! The trigger structures are private to the kernel's tracing code, so
//! [`supported`] checks `eprobe.c`'s mirrors of them against the running
//! kernel once, at load; without a match, `e` commands are refused as by a
//! kernel without `CONFIG_EPROBE_EVENTS`.
//!
//! [`FetchInsn::TpArg`]: crate::pure::probe_events::FetchInsn::TpArg

use super::{hit, Probe};
use crate::{
    ffi::{
        self, ep_str, kallsyms::Kallsyms, kallsyms::SymbolBuf, rkp_ep_attach, rkp_ep_detach,
        rkp_ep_field, rkp_ep_filter_check, rkp_ep_find, rkp_ep_layout_ok, rkp_ep_put,
        runtime::Runtime, RkpEpFieldInfo,
    },
    kernel_ext::str::cstring,
    pure::probe_events::{program::EventField, program::FieldString, Errno, EventFilter},
};
use core::{ptr::NonNull, sync::atomic::Ordering};
use kernel::{
    c_str,
    ffi::{c_uint, c_ulong, c_void},
    prelude::*,
};

/// The trace event an event probe is on: the top instance's file of it,
/// with a reference that keeps the event (and its module) while the probe
/// exists.
///
/// # Invariants
///
/// `file` came from `rkp_ep_find`, whose reference this value holds.
pub(super) struct Target {
    file: NonNull<c_void>,
}

// SAFETY: the file is the tracing core's, usable from any thread; the
// reference is given back once.
unsafe impl Send for Target {}
// SAFETY: as above; nothing is written through a shared reference.
unsafe impl Sync for Target {}

impl Target {
    /// The event `system.event`, if an event probe may attach to it.
    /// Process context.
    pub(super) fn find(system: &[u8], event: &[u8]) -> Option<Target> {
        let (s, e) = (cstring(&[system])?, cstring(&[event])?);
        // SAFETY: NUL-terminated names; process context, without
        // `event_mutex` (the parser runs without it).
        let file = NonNull::new(unsafe { rkp_ep_find(s.as_char_ptr(), e.as_char_ptr()) })?;
        // INVARIANT: from `rkp_ep_find`.
        Some(Target { file })
    }

    /// The field `name` of the event's records.
    pub(super) fn field(&self, name: &[u8]) -> Option<EventField> {
        let n = cstring(&[name])?;
        let mut info = RkpEpFieldInfo::default();
        // SAFETY: a file the reference keeps (the type invariant); a
        // NUL-terminated name; `info` is valid for writes.
        if unsafe { rkp_ep_field(self.file.as_ptr(), n.as_char_ptr(), &mut info) } != 0 {
            return None;
        }
        Some(EventField {
            offset: u32::try_from(info.offset).ok()?,
            size: u32::try_from(info.size).ok()?,
            signed: info.is_signed != 0,
            string: match info.string {
                ep_str::STATIC => FieldString::Static,
                ep_str::DYN => FieldString::Dynamic,
                ep_str::RDYN => FieldString::RelDynamic,
                ep_str::PTR => FieldString::Pointer,
                _ => FieldString::None,
            },
        })
    }
}

impl Target {
    /// Whether `filter` parses as a filter of the event's records, as
    /// `create_event_filter()` parses it (which logs its error in the
    /// tracing core's error_log). Process context.
    pub(super) fn check_filter(&self, filter: &EventFilter<'_>) -> core::result::Result<(), Errno> {
        let text = filter_text(filter).ok_or(Errno::ENOMEM)?;
        // SAFETY: a file the reference keeps; a NUL-terminated text.
        match unsafe { rkp_ep_filter_check(self.file.as_ptr(), text.as_ptr().cast()) } {
            0 => Ok(()),
            e => Err(Errno(-e)),
        }
    }
}

/// `filter`'s text as the kernel rebuilds it (its words joined by single
/// spaces), NUL-terminated.
fn filter_text(filter: &EventFilter<'_>) -> Option<KVec<u8>> {
    let mut v = KVec::with_capacity(filter.len() + 1, GFP_KERNEL).ok()?;
    filter
        .write_to(&mut super::output::VecWriter(&mut v))
        .ok()?;
    v.push(0, GFP_KERNEL).ok()?;
    Some(v)
}

impl Drop for Target {
    fn drop(&mut self) {
        // SAFETY: the reference `rkp_ep_find` took (the type invariant),
        // given back once; process context, without `event_mutex`.
        unsafe { rkp_ep_put(self.file.as_ptr()) };
    }
}

/// Whether event probes can be hooked on the running kernel: the two
/// trigger calls are bound and `eprobe.c`'s mirrors of the tracing core's
/// private structures match it (the "traceon" command and the common
/// fields). Process context, at load.
pub(super) fn supported(rt: &Runtime, ksyms: &Kallsyms) -> bool {
    if !rt.has_trigger_calls() {
        return false;
    }
    let Ok(mut buf) = SymbolBuf::new() else {
        return false;
    };
    let mut find = |name: &kernel::str::CStr| ksyms.lookup(&mut buf, name);
    let (Some(traceon), Some(common)) = (
        find(c_str!("trigger_traceon_cmd")),
        find(c_str!("ftrace_common_fields")),
    ) else {
        return false;
    };
    // In the order of `struct rkp_ep_command`'s function members.
    let names = [
        c_str!("event_trigger_parse"),
        c_str!("register_trigger"),
        c_str!("unregister_trigger"),
        c_str!("set_trigger_filter"),
        c_str!("traceon_trigger"),
        c_str!("traceon_count_func"),
        c_str!("event_trigger_init"),
        c_str!("event_trigger_free"),
        c_str!("traceon_trigger_print"),
    ];
    let mut expect = [0 as c_ulong; 9];
    for (e, n) in expect.iter_mut().zip(names) {
        match find(n) {
            Some(a) => *e = a as c_ulong,
            None => return false,
        }
    }
    // SAFETY: the kernel's `trigger_traceon_cmd` and `ftrace_common_fields`
    // (found by name), read as the C side's mirrors; the addresses are
    // only compared.
    unsafe {
        rkp_ep_layout_ok(
            traceon as *const c_void,
            expect.as_ptr(),
            expect.len() as c_uint,
            common as *const ffi::list_head,
        ) != 0
    }
}

impl Probe {
    /// Hooks the event probe to its target, if it is not hooked. Process
    /// context, with `event_mutex` held (the tracing core's enable
    /// callback, or a writer holding it).
    pub(super) fn ep_attach(&self) -> Result {
        let Some(t) = &self.eprobe else {
            return Ok(());
        };
        if !self.ep_trigger.load(Ordering::Relaxed).is_null() {
            return Ok(());
        }
        let owner = core::ptr::from_ref(self).cast_mut().cast::<c_void>();
        let filter = match self.spec.get().filter() {
            Some(f) => Some(filter_text(&EventFilter::new(f)).ok_or(ENOMEM)?),
            None => None,
        };
        let filter_ptr = filter
            .as_ref()
            .map_or(core::ptr::null(), |f| f.as_ptr().cast());
        // SAFETY: a file the target's reference keeps; `owner` is the
        // pinned probe, which detaches before it is freed (`ep_detach` in
        // its event's disabling, which its removal waits for); the filter
        // is NUL-terminated or null; process context with `event_mutex`
        // held (the caller's).
        let trig = unsafe { rkp_ep_attach(t.file.as_ptr(), owner, filter_ptr) };
        let trig = kernel::error::from_err_ptr(trig)?;
        self.ep_trigger.store(trig, Ordering::Relaxed);
        Ok(())
    }

    /// Unhooks the event probe; returns once no CPU runs its trigger.
    /// Process context, with `event_mutex` held.
    pub(super) fn ep_detach(&self) {
        let Some(t) = &self.eprobe else {
            return;
        };
        let trig = self
            .ep_trigger
            .swap(core::ptr::null_mut(), Ordering::Relaxed);
        if !trig.is_null() {
            // SAFETY: the trigger `rkp_ep_attach` gave for this file,
            // detached once; `event_mutex` held (the caller's).
            unsafe { rkp_ep_detach(t.file.as_ptr(), trig) };
        }
    }
}

/// Called by an event probe's trigger with a record of its target, `len`
/// bytes from its common header on. In the target's tracepoint, with
/// preemption off: no sleeping, allocation or locks.
///
/// # Safety
///
/// `owner` is the `Probe` the trigger was hooked for, which outlives the
/// trigger; `rec` is valid for reads of `len` bytes during the call.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_eprobe_hit(owner: *mut c_void, rec: *mut c_void, len: c_uint) {
    // SAFETY: the caller's contract.
    let probe = unsafe { &*owner.cast::<Probe>() };
    if rec.is_null() || len == 0 {
        return;
    }
    // SAFETY: the caller's contract.
    let rec = unsafe { core::slice::from_raw_parts(rec.cast::<u8>(), len as usize) };
    hit::record_event(probe, rec);
}
