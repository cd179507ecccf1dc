// SPDX-License-Identifier: GPL-2.0

//! The control file's commands: what a write to `kprobe_events` does (`p`
//! and `r` add a probe, to a new event or to an existing one; `-:` removes
//! probes and events; a truncating open removes them all), the error log of
//! rejected commands, and the registration of the probes that wait for a
//! module when it comes.
//!
//! Process context, may sleep; every entry point here takes
//! `Events::inner` and holds it to the end.

use super::{env::KernelEnv, output::VecWriter, Event, Events, Inner, LoggedError};
use crate::{
    ffi::rkp_tev_name_in_use,
    kernel_ext::{locked_down_kprobes, str::cstring, vec},
    pure::probe_events::{
        parse_command_in, parse_dyn_command_in, write_error_log, Command, DeleteCmd, Errno,
        ParseError, ProbeDef, ProbeKind, ProbeLocation, WriteLines, EXPANDED_ARGS_LEN,
    },
};
use kernel::{prelude::*, time::Ktime};

/// Entries the error log keeps, as the kernel's `TRACING_LOG_ERRS_MAX`.
const ERROR_LOG_MAX: usize = 8;

impl Events {
    /// Logs a rejected command, keeping the last `ERROR_LOG_MAX` entries:
    /// one, or two for the `f`/`t` errors the kernel logs twice.
    fn log_error(&self, inner: &mut Inner, line: &[u8], err: &ParseError) {
        let subsystem =
            ProbeKind::of_command(line).map_or(ProbeKind::Kprobe.subsystem(), |k| k.subsystem());
        let env = self.env();
        for e in err.entries() {
            let mut text = KVec::new();
            let mut w = VecWriter(&mut text);
            if write_error_log(&mut w, subsystem, line, &e, &env).is_err() {
                return;
            }
            if inner.errors.len() >= ERROR_LOG_MAX && !inner.errors.is_empty() {
                let _ = vec::take(&mut inner.errors, 0);
            }
            let ts_ns = Ktime::ktime_get().to_ns() as u64;
            let _ = inner.errors.push(LoggedError { ts_ns, text }, GFP_KERNEL);
        }
    }

    /// A module comes: registers the probes waiting for it, and registers
    /// again those of its earlier load ([GONE]), as the kernel's
    /// `trace_kprobe_module_callback()`. Process context, may sleep.
    pub(super) fn module_coming(&self, name: &[u8]) {
        let mut inner = self.inner.lock();
        for ev in inner.events.iter_mut() {
            // Held until the event's probes are registered and armed, as
            // the kernel's trace_kprobe_module_callback() holds it: an
            // enable or disable in between would otherwise be lost.
            let _em = self.event_mutex.lock();
            let enabled = ev.is_enabled();
            let ev_name = ev.name.as_char_ptr();
            // SAFETY: `probes` is not structurally pinned; the list itself
            // does not change here.
            let evm = unsafe { ev.as_mut().get_unchecked_mut() };
            for p in evm.probes.iter_mut() {
                if p.module.as_deref() != Some(name) {
                    continue;
                }
                let kp = p.client();
                if p.registered() {
                    if kp.flags() & crate::abi::flags::GONE == 0 {
                        continue;
                    }
                    self.unregister_probe(p);
                }
                // Its address in the module's old text is forgotten, and it
                // is registered disabled, as at creation.
                kp.set_addr(0);
                kp.update_flags(crate::abi::flags::DISABLED, u32::MAX);
                // As the kernel's `__register_trace_kprobe()`, called for
                // a coming module too.
                let r = if let Err(e) = locked_down_kprobes() {
                    Err(e)
                } else {
                    self.register_probe(p)
                };
                match r {
                    Ok(()) if enabled => {
                        let _ = self.core().set_enabled(kp, true);
                    }
                    Ok(()) => {}
                    Err(e) => pr_warn!(
                        "probe of {} not registered on module load: {}\n",
                        // SAFETY: the event's name, which lives as long as it.
                        unsafe { kernel::str::CStr::from_char_ptr(ev_name) }
                            .to_str()
                            .unwrap_or("?"),
                        e.to_errno()
                    ),
                }
            }
        }
    }

    /// Runs the commands of one write to `kprobe_events` (`p`, `r`, `-:`
    /// of kprobe events), or with `dynamic` to `dynamic_events` (`f` and
    /// `t` too, and `-:`/`!` of any event). Process context, may sleep.
    pub(super) fn write(&self, input: &[u8], dynamic: bool) -> Result<usize> {
        let mut inner = self.inner.lock();
        // The events of consecutive `-:` commands, taken out of the list
        // and destroyed together before the next `p`/`r` command and at the
        // end: a few grace periods for all of them, where one at a time
        // paid them per event.
        let mut pending = KVec::new();
        // Room for fetchargs that `$arg*`/`$argN` rewrite (with BTF).
        let mut expanded = if self.btf.is_some() {
            KVec::from_elem(0u8, EXPANDED_ARGS_LEN, GFP_KERNEL)?
        } else {
            KVec::new()
        };
        let mut lines = WriteLines::new(input);
        for line in lines.by_ref() {
            let line = match line {
                Ok(l) => l,
                Err(e) => {
                    self.flush_deleted(&mut inner, &mut pending)?;
                    return Err(Error::from_errno(-e.errno.0));
                }
            };
            // An environment for each command: it keeps the BTF of the
            // module the command probes, if any.
            let env = self.env();
            // On a kernel whose trigger structures rkprobes cannot hook
            // (`eprobe::supported`), event probes are refused before
            // parsing, as by a kernel without CONFIG_EPROBE_EVENTS (no
            // error_log entry).
            let parsed = if dynamic
                && !self.eprobes
                && ProbeKind::of_command(line) == Some(ProbeKind::Eprobe)
            {
                Err(ParseError::silent(Errno::EINVAL))
            } else if dynamic {
                parse_dyn_command_in(line, &env, &mut expanded)
            } else {
                parse_command_in(line, &env, &mut expanded)
            };
            let r = match parsed {
                Ok(Command::Empty) => Ok(()),
                Ok(Command::Probe(def)) => {
                    self.flush_deleted(&mut inner, &mut pending)?;
                    self.create(&mut inner, &env, &def)
                }
                Ok(Command::Delete(d)) => self.delete(&mut inner, &env, &d, &mut pending, dynamic),
                Err(e) => Err(e),
            };
            if let Err(e) = r {
                self.flush_deleted(&mut inner, &mut pending)?;
                self.log_error(&mut inner, line, &e);
                return Err(Error::from_errno(-e.errno.0));
            }
        }
        self.flush_deleted(&mut inner, &mut pending)?;
        Ok(lines.consumed())
    }

    /// Destroys the events `-:` commands took out of the list, in their
    /// order. At the first whose trace event is in use (`EBUSY`) it stops,
    /// as a write stops at the command that fails: that event and the ones
    /// after it go back to the list.
    fn flush_deleted(&self, inner: &mut Inner, pending: &mut KVec<Pin<KBox<Event>>>) -> Result {
        let (busy, err) = self.destroy_many(core::mem::replace(pending, KVec::new()), true);
        for ev in busy {
            // Back in the list (at its end); room was kept when they left.
            let _ = inner.events.push(ev, GFP_KERNEL);
        }
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Removes every kprobe event (a truncating open of `kprobe_events`),
    /// or with `dynamic` every event (of `dynamic_events`); `EBUSY`, and
    /// nothing removed, when one is enabled. An event whose tracefs file is
    /// open also fails with `EBUSY`, after the events before it went (as
    /// with the kernel's).
    pub(super) fn clear(&self, dynamic: bool) -> Result {
        let mut inner = self.inner.lock();
        let mine = |e: &Pin<KBox<Event>>| dynamic || e.layout.get().kind == ProbeKind::Kprobe;
        if inner.events.iter().any(|e| mine(e) && e.is_enabled()) {
            return Err(EBUSY);
        }
        let n = inner.events.len();
        let (mut all, mut kept) = (
            KVec::with_capacity(n, GFP_KERNEL)?,
            KVec::with_capacity(n, GFP_KERNEL)?,
        );
        for ev in core::mem::replace(&mut inner.events, KVec::new()) {
            // Cannot fail: capacity reserved.
            let _ = if mine(&ev) {
                all.push(ev, GFP_KERNEL)
            } else {
                kept.push(ev, GFP_KERNEL)
            };
        }
        let (busy, err) = self.destroy_many(all, true);
        for ev in busy {
            // Cannot fail: capacity reserved.
            let _ = kept.push(ev, GFP_KERNEL);
        }
        inner.events = kept;
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// A `p`/`r` command: a new event, or a probe appended to one.
    fn create(
        &self,
        inner: &mut Inner,
        env: &KernelEnv<'_>,
        def: &ProbeDef<'_>,
    ) -> core::result::Result<(), ParseError> {
        let nomem = ParseError::silent(Errno::ENOMEM);
        let existing = inner.events.iter().position(|e| {
            e.group.as_bytes() == def.group && e.name.as_bytes() == def.event.as_bytes()
        });
        if let Some(i) = existing {
            let ev = inner.events.get(i).ok_or(nomem)?;
            ev.layout.get().check_append(def)?;
            if ev.probes.iter().any(|p| p.spec.get().same_probe(def)) {
                return Err(ParseError::same_probe());
            }
        }
        // Where the kernel's `__register_trace_kprobe()` asks: after the
        // checks against an existing event (and, for a new one, after its
        // name was found free), before anything is resolved or registered,
        // and also for a probe whose module is not loaded yet.
        if let Err(e) = locked_down_kprobes() {
            if existing.is_none() && self.name_in_use(def)? {
                return Err(ParseError::event_exists());
            }
            return Err(ParseError::registration(Errno(-e.to_errno())));
        }
        // An `f` probe's functions: its symbol is an ftrace filter; a `t`
        // probe's, its tracepoint's stub.
        let mut tracepoint = None;
        let sites = match (def.kind, def.location) {
            (ProbeKind::Kprobe, _) => KVec::new(),
            (ProbeKind::Fprobe, ProbeLocation::Symbol { symbol, .. }) => {
                self.fprobe_sites(symbol).map_err(|e| match e {
                    e if e == ENOMEM => nomem,
                    e => ParseError::registration(Errno(-e.to_errno())),
                })?
            }
            (ProbeKind::Tprobe, ProbeLocation::Symbol { symbol, .. }) => {
                let found = self.tprobe_site(symbol).map_err(|e| match e {
                    e if e == ENOMEM => nomem,
                    e => ParseError::registration(Errno(-e.to_errno())),
                })?;
                let mut v = KVec::new();
                // None: a module's, perhaps, that is not loaded yet; the
                // probe waits for it (`tprobe`), as 6.12's does.
                if let Some((site, tp)) = found {
                    tracepoint = Some(tp);
                    v.push(site, GFP_KERNEL).map_err(|_| nomem)?;
                }
                v
            }
            (ProbeKind::Eprobe, _) => KVec::new(),
            _ => return Err(ParseError::registration(Errno::ENOENT)),
        };
        // An event probe's target, found by the parser and kept while the
        // probe exists.
        let target = match def.location {
            ProbeLocation::Event(e) if def.kind == ProbeKind::Eprobe => Some(
                env.take_target(e.system(), e.event())
                    .ok_or_else(|| ParseError::registration(Errno::ENODEV))?,
            ),
            _ => None,
        };
        // Room first: nothing registered may be lost to a failed push.
        inner.events.reserve(1, GFP_KERNEL).map_err(|_| nomem)?;
        if let Some(i) = existing {
            let ev = inner.events.get_mut(i).ok_or(nomem)?;
            // The tracing core reads `probes` under `event_mutex`.
            let _em = self.event_mutex.lock();
            // SAFETY: `probes` is not structurally pinned.
            unsafe { ev.as_mut().get_unchecked_mut() }
                .probes
                .reserve(1, GFP_KERNEL)
                .map_err(|_| nomem)?;
        }
        let mut probe = self.new_probe(def, &sites)?;
        // The event a new probe joins, or a new one.
        let (ev_ptr, new_event) = match existing {
            Some(i) => {
                let ev = inner.events.get(i).ok_or(nomem)?;
                (core::ptr::from_ref::<Event>(ev), None)
            }
            None => {
                let ev = self.new_event(def)?;
                (core::ptr::from_ref::<Event>(&ev), Some(ev))
            }
        };
        // SAFETY: the probe is pinned in its box; only this field changes.
        unsafe { probe.as_mut().get_unchecked_mut() }.event = ev_ptr;
        // Registered disabled; enabling the event arms it.
        let waiting = match def.location.module() {
            Some(m) if def.kind == ProbeKind::Kprobe => !env
                .module_loaded(m)
                .map_err(|_| ParseError::silent(Errno::ENOMEM))?,
            _ => def.kind == ProbeKind::Tprobe && sites.is_empty(),
        };
        // SAFETY: `eprobe` is not structurally pinned.
        unsafe { probe.as_mut().get_unchecked_mut() }.eprobe = target;
        let reg = if waiting || def.kind == ProbeKind::Eprobe {
            // Registered when the module comes (`module_coming`, for a `t`
            // probe `tracepoints_coming`).
            Ok(())
        } else {
            self.register_probe(&probe)
        };
        if let Err(e) = reg {
            return Err(ParseError::registration(Errno(-e.to_errno())));
        }
        if let Some(tp) = tracepoint {
            match tp.attach() {
                // SAFETY: `tracepoint` is not structurally pinned.
                Ok(a) => unsafe { probe.as_mut().get_unchecked_mut() }.tracepoint = Some(a),
                Err(e) => {
                    self.unregister_probe(&probe);
                    return Err(ParseError::registration(Errno(-e.to_errno())));
                }
            }
        }
        match new_event {
            Some(mut ev) => {
                // Not yet known to the tracing core: nothing else reads it.
                // SAFETY: `probes` is not structurally pinned.
                let evm = unsafe { ev.as_mut().get_unchecked_mut() };
                // Cannot fail: `new_event` made room.
                let _ = evm.probes.push(probe, GFP_KERNEL);
                if let Err(e) = self.register_event(&mut ev) {
                    self.unregister_probes(&mut ev);
                    return Err(e);
                }
                // Cannot fail: reserved above.
                let _ = inner.events.push(ev, GFP_KERNEL);
            }
            None => {
                let i = existing.ok_or(nomem)?;
                let ev = inner.events.get_mut(i).ok_or(nomem)?;
                // Joining and the enabled state are decided together, under
                // the mutex the tracing core enables and disables under.
                let _em = self.event_mutex.lock();
                if ev.is_enabled() && !waiting {
                    let _ = probe.set_enabled(self.core(), true);
                }
                // SAFETY: `probes` is not structurally pinned.
                let evm = unsafe { ev.as_mut().get_unchecked_mut() };
                // Cannot fail: reserved above.
                let _ = evm.probes.push(probe, GFP_KERNEL);
            }
        }
        Ok(())
    }

    /// Whether the event name of `def` is taken (by an event of the kernel's
    /// or of rkprobes'). Process context.
    fn name_in_use(&self, def: &ProbeDef<'_>) -> core::result::Result<bool, ParseError> {
        let nomem = ParseError::silent(Errno::ENOMEM);
        let group = cstring(&[def.group]).ok_or(nomem)?;
        let name = cstring(&[def.event.as_bytes()]).ok_or(nomem)?;
        // SAFETY: `event_mutex` and `ftrace_events` are the kernel's (found
        // at load); the names are NUL-terminated and outlive the call.
        Ok(unsafe {
            rkp_tev_name_in_use(
                self.event_mutex.as_ptr(),
                self.ftrace_events,
                group.as_char_ptr(),
                name.as_char_ptr(),
            )
        } != 0)
    }

    /// A `-:` command.
    fn delete(
        &self,
        inner: &mut Inner,
        env: &KernelEnv<'_>,
        d: &DeleteCmd<'_>,
        gone: &mut KVec<Pin<KBox<Event>>>,
        dynamic: bool,
    ) -> core::result::Result<(), ParseError> {
        let deletes = |e: &Event, p: &super::Probe| {
            (dynamic || e.layout.get().kind == ProbeKind::Kprobe)
                && d.matches(
                    (e.group.as_bytes(), e.name.as_bytes()),
                    &e.layout.get(),
                    &p.spec.get(),
                    env,
                )
        };
        let matching = |e: &Pin<KBox<Event>>| e.probes.iter().any(|p| deletes(e, p));
        // Some probes of a multiprobe event go at once, not in the batch:
        // the removals of earlier lines must be done first, so that if one
        // of them fails, this line has changed nothing.
        let partial = |e: &Pin<KBox<Event>>| matching(e) && !e.probes.iter().all(|p| deletes(e, p));
        if !gone.is_empty() && inner.events.iter().any(partial) {
            self.flush_deleted(inner, gone)
                .map_err(|e| ParseError::silent(Errno(-e.to_errno())))?;
        }
        if !inner.events.iter().any(matching) {
            return Err(ParseError::silent(Errno::ENOENT));
        }
        if inner
            .events
            .iter()
            .filter(|e| matching(e))
            .any(|e| e.is_enabled())
        {
            return Err(ParseError::silent(Errno::EBUSY));
        }
        // Room for every event to leave, and to come back to the list if its
        // removal fails.
        gone.reserve(inner.events.len(), GFP_KERNEL)
            .map_err(|_| ParseError::silent(Errno::ENOMEM))?;
        let mut i = 0;
        while i < inner.events.len() {
            let Some(ev) = inner.events.get_mut(i) else {
                break;
            };
            if !matching(ev) {
                i += 1;
                continue;
            }
            let all = ev.probes.iter().all(|p| deletes(ev, p));
            if !all {
                // Some probes of a multiprobe event: those go, the event
                // stays.
                // SAFETY: `probes` is not structurally pinned.
                let evm = unsafe { ev.as_mut().get_unchecked_mut() };
                let mut j = 0;
                while j < evm.probes.len() {
                    let hit = evm.probes.get(j).is_some_and(|p| deletes(evm, p));
                    if !hit {
                        j += 1;
                        continue;
                    }
                    let taken = {
                        // The tracing core reads `probes` under this mutex.
                        let _em = self.event_mutex.lock();
                        vec::take(&mut evm.probes, j)
                    };
                    if let Some(p) = taken {
                        self.unregister_probe(&p);
                    }
                }
                i += 1;
                continue;
            }
            let Some(ev) = vec::take(&mut inner.events, i) else {
                break;
            };
            if let Err(e) = gone.push(ev, GFP_KERNEL) {
                // The event was dropped with the failed push: cannot happen
                // with the room reserved below.
                let _ = e;
                return Err(ParseError::silent(Errno::ENOMEM));
            }
        }
        Ok(())
    }
}
