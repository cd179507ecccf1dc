// SPDX-License-Identifier: GPL-2.0

//! The debugfs files of the interface: `kprobe_events` (the control file of
//! kprobe events: its writes are the commands, its listing every probe),
//! `dynamic_events` (the same for every kind of event: `p`, `r`, `f`, `t`),
//! `error_log` (the last rejected commands) and `kprobe_profile` (hits and
//! misses per kprobe event's probe).
//!
//! Process context, may sleep: the reads take `Events::inner`, the writes
//! go to the control file's commands.

use super::Events;
use crate::{
    kernel_ext::debugfs::{SeqFile, Show, StoreLarge},
    pure::probe_events::{error_log::write_error_timestamp, write_listing, ProbeKind},
};
use core::{fmt::Write as _, sync::atomic::Ordering};
use kernel::prelude::*;

/// `/sys/kernel/debug/rkprobes/kprobe_events`.
pub(crate) struct KprobeEventsFile;

/// `/sys/kernel/debug/rkprobes/dynamic_events`.
pub(crate) struct DynamicEventsFile;

/// Lists the probes of kprobe events, or with `dynamic` of every event, in
/// the kernel's listing form.
fn show_events(events: &Events, out: &mut SeqFile, dynamic: bool) -> Result {
    let inner = events.inner.lock();
    let env = events.env();
    for ev in inner.events.iter() {
        let names = (ev.group.as_bytes(), ev.name.as_bytes());
        let layout = ev.layout.get();
        if !dynamic && layout.kind != ProbeKind::Kprobe {
            continue;
        }
        for p in ev.probes.iter() {
            let spec = p.spec.get();
            // A registered kretprobe event lists its instances, as the
            // kernel's; an `f` exit lists what was asked.
            let maxactive = if p.is_return() && p.registered() && layout.kind == ProbeKind::Kprobe {
                p.ret_client().maxactive()
            } else {
                spec.maxactive
            };
            let _ = write_listing(&mut *out, names, &layout, &spec, maxactive, &env);
        }
    }
    Ok(())
}

impl Show for DynamicEventsFile {
    type Data = Events;

    /// Every probe of every event.
    fn show(events: &Events, out: &mut SeqFile) -> Result {
        show_events(events, out, true)
    }
}

impl StoreLarge for DynamicEventsFile {
    fn store(events: &Events, input: &[u8]) -> Result<usize> {
        events.write(input, true)
    }

    fn truncate(events: &Events) -> Result {
        events.clear(true)
    }
}

impl Show for KprobeEventsFile {
    type Data = Events;

    /// Every probe of the kprobe events.
    fn show(events: &Events, out: &mut SeqFile) -> Result {
        show_events(events, out, false)
    }
}

impl StoreLarge for KprobeEventsFile {
    fn store(events: &Events, input: &[u8]) -> Result<usize> {
        events.write(input, false)
    }

    fn truncate(events: &Events) -> Result {
        events.clear(false)
    }
}

/// `/sys/kernel/debug/rkprobes/error_log`: the errors of the last
/// `kprobe_events` writes; opening it for writing with `O_TRUNC`
/// (`echo > error_log`) empties it, and what is written is ignored, as
/// with the kernel's `tracing/error_log`.
pub(crate) struct ErrorLogFile;

impl StoreLarge for ErrorLogFile {
    const MAX_WRITE: usize = 4096;
    // Read-only by its mode, so that it stays readable under lockdown.
    const MODE: u16 = 0o400;

    fn store(_events: &Events, input: &[u8]) -> Result<usize> {
        Ok(input.len())
    }

    fn truncate(events: &Events) -> Result {
        drop(core::mem::take(&mut events.inner.lock().errors));
        Ok(())
    }
}

impl Show for ErrorLogFile {
    type Data = Events;

    fn show(events: &Events, out: &mut SeqFile) -> Result {
        let inner = events.inner.lock();
        for e in inner.errors.iter() {
            let _ = write_error_timestamp(&mut *out, e.ts_ns);
            out.write_raw(&e.text);
        }
        Ok(())
    }
}

/// `/sys/kernel/debug/rkprobes/kprobe_profile`: hits and misses per event.
pub(crate) struct ProfileFile;

impl Show for ProfileFile {
    type Data = Events;

    fn show(events: &Events, out: &mut SeqFile) -> Result {
        let inner = events.inner.lock();
        // One line per probe, as the kernel's (probes of one event share
        // its name).
        for ev in inner.events.iter() {
            // The kernel's lists its kprobe events alone.
            if ev.layout.get().kind != ProbeKind::Kprobe {
                continue;
            }
            for p in ev.probes.iter() {
                let missed = p.nmissed();
                // `seq_printf("  %-44s %15lu %15lu\n")`, with the name's
                // bytes as they are.
                let name = ev.name.as_bytes();
                out.write_raw(b"  ");
                out.write_raw(name);
                for _ in name.len()..44 {
                    out.write_raw(b" ");
                }
                let _ = writeln!(
                    out,
                    " {:>15} {:>15}",
                    p.nhit.load(Ordering::Relaxed),
                    missed
                );
            }
        }
        Ok(())
    }
}
