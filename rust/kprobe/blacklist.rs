// SPDX-License-Identifier: GPL-2.0

//! The blacklist: code that must never be probed.
//!
//! Probing code that runs while a probe hit is handled would recurse, and
//! some code cannot tolerate an int3 at all (entry code, `noinstr`). The
//! kernel keeps this knowledge in its `kprobe_blacklist` list, filled at boot
//! from `NOKPROBE_SYMBOL()` annotations (whose section is freed with the init
//! memory), from `.kprobes.text`, `.noinstr.text` and the entry text, and on
//! module load from each module's own annotations. rkprobes reads that list
//! live, under the kernel's `kprobe_mutex`, and adds its own module's text:
//! everything rkprobes runs during a hit lives there.
//!
//! To that rkprobes adds the functions of the kernel's int3 path that run
//! before its die notifier (and after it, until the trap returns): a
//! module's int3 handler runs only after `notify_die()`, RCU, lockdep and
//! the notifiers ahead of it, and a probe on any of those would trap again
//! before rkprobes could see the recursion. The kernel's list does not
//! name them (its kprobes run before all that); rkprobes traces the path
//! at load (`arch::trace_int3_path`) and refuses every function it ran.
//!
//! Text the kernel copies and runs the copy of (ftrace's trampolines, kexec's
//! control page) is refused too: a probe's int3 would be copied along.
//!
//! A kernel built without `CONFIG_KPROBES` has no such list, and its
//! `NOKPROBE_SYMBOL()` annotations are compiled out. rkprobes then builds the
//! equivalent at load: the same text areas (`.kprobes.text`, `.noinstr.text`,
//! the entry and irqentry text), and every function the kernel source
//! annotates (`pure::nokprobe`, generated from the 6.12 source) that the
//! running kernel has.
//!
//! The kernel's list is also how rkprobes keeps the kernel's kprobes out of
//! its optimized probes' jumps ([`Blacklist::reserve`]): while a probe is
//! optimized, its region is an entry of the kernel's list, which the
//! kernel's `register_kprobe()` refuses (and rkprobes' own walk skips).
//!
//! Lock order (the table in `rust/kprobe/mod.rs`): the kernel's
//! `kprobe_mutex` is taken in process context, under the core's `Core::reg`
//! when a probe is registered or (un)optimized, never with `text_mutex`
//! held, and nothing is taken under it.

use crate::{
    ffi::{
        kallsyms::{Kallsyms, SymbolBuf},
        runtime::Runtime,
    },
    kernel_ext::{
        debugfs::{SeqFile, Show},
        kprobe_blacklist::KprobeBlacklist,
        module::this_module_text,
    },
};
use core::fmt::Write;
use kernel::{
    c_str, fmt,
    prelude::*,
    str::{CStr, CString},
};

/// A region of the kernel's `kprobe_blacklist` that rkprobes added for one
/// of its optimized probes, so that the kernel's kprobes refuse it. Given
/// back with [`Blacklist::release`].
pub(crate) use crate::kernel_ext::kprobe_blacklist::Reservation;

/// A half-open address range `[start, end)`.
#[derive(Clone, Copy)]
pub(crate) struct Range {
    /// First address.
    pub(crate) start: usize,
    /// First address after the range.
    pub(crate) end: usize,
}

/// Everything rkprobes refuses to probe.
pub(crate) struct Blacklist {
    /// The kernel's list, when the kernel has kprobes.
    native: Option<KprobeBlacklist>,
    /// The ranges rkprobes found itself: without a native list the kernel's
    /// areas and annotated functions, then its hit paths' callees, the text
    /// the kernel copies, and the int3 path.
    synth: KVec<Range>,
    /// Where the int3 path's functions start in `synth` (they end it).
    int3_path: usize,
    own_text: Range,
}

/// The text areas the kernel blacklists whole, by their linker markers, and
/// whether every x86-64 kernel has them (`.kprobes.text` exists only with
/// `CONFIG_KPROBES`).
const AREAS: &[(&CStr, &CStr, bool)] = &[
    (
        c_str!("__kprobes_text_start"),
        c_str!("__kprobes_text_end"),
        false,
    ),
    (
        c_str!("__noinstr_text_start"),
        c_str!("__noinstr_text_end"),
        true,
    ),
    (
        c_str!("__entry_text_start"),
        c_str!("__entry_text_end"),
        true,
    ),
    (
        c_str!("__irqentry_text_start"),
        c_str!("__irqentry_text_end"),
        true,
    ),
];

/// An area larger than this is not one of the text areas above.
const MAX_AREA: usize = 64 << 20;

/// Where a piece of [`COPIED_TEXT`] ends.
enum CopyEnd {
    /// At this symbol.
    Marker(&'static CStr),
    /// This many bytes after the start.
    Bytes(usize),
}

/// Text the kernel copies at run time and runs the copy of, blacklisted on
/// every kernel: an int3 (or an optimized probe's jump) planted there is
/// copied along, into code where no probe is registered, and the copy traps
/// or jumps into a detour that is not its own. ftrace builds every dynamic
/// trampoline from `ftrace_caller` or `ftrace_regs_caller` up to its `_end`
/// label (`create_trampoline()`); kexec copies `KEXEC_CONTROL_CODE_MAX_SIZE`
/// bytes from `relocate_kernel` to its control page. The kernel's own
/// kprobes accept probes in all three (62-random-placement met one in
/// `ftrace_regs_caller`: the next trampoline oopsed on the copied int3).
const COPIED_TEXT: &[(&CStr, CopyEnd)] = &[
    (
        c_str!("ftrace_caller"),
        CopyEnd::Marker(c_str!("ftrace_caller_end")),
    ),
    (
        c_str!("ftrace_regs_caller"),
        CopyEnd::Marker(c_str!("ftrace_regs_caller_end")),
    ),
    (c_str!("relocate_kernel"), CopyEnd::Bytes(2048)),
];

/// The ranges of [`COPIED_TEXT`] the running kernel has. Process context,
/// may sleep.
fn copied_text(ksyms: &Kallsyms, out: &mut KVec<Range>) -> Result {
    let mut buf = SymbolBuf::new()?;
    for (name, end) in COPIED_TEXT {
        let Some(start) = ksyms.lookup_marker(&mut buf, name) else {
            continue;
        };
        let end = match end {
            CopyEnd::Marker(m) => ksyms.lookup_marker(&mut buf, m),
            CopyEnd::Bytes(n) => start.checked_add(*n),
        };
        match end {
            Some(end) if start < end && end - start <= MAX_COPIED => {
                out.push(Range { start, end }, GFP_KERNEL)?;
            }
            // Without its end the extent is unknown: the whole function,
            // as far as kallsyms knows it, at least.
            _ => functions(ksyms, &[name.to_str().unwrap_or("")], out)?,
        }
    }
    Ok(())
}

/// A piece of [`COPIED_TEXT`] larger than this is not what it names.
const MAX_COPIED: usize = 4096;

/// Functions that rkprobes' own hit paths call, blacklisted on every kernel:
/// the optimized callback's `preempt_enable_notrace()` calls
/// `preempt_schedule_notrace_thunk` and `preempt_schedule_notrace` when a
/// reschedule is due, and a probe there, itself optimized, would be hit
/// again from its own callback, without end (a stack overflow seen in
/// 82-kprobe-events-selftests on the kernel without kprobes, whose
/// `multiple` case probes the first text symbols). The kernel marks the
/// thunks `_ASM_NOKPROBE` (compiled out without `CONFIG_KPROBES`), but not
/// `preempt_schedule_notrace`, which its own kprobes never call. With
/// `PREEMPT_DYNAMIC` the call goes through the static call's trampoline
/// first (`rust/ffi/percpu.rs`).
const HIT_PATH_CALLEES: &[&str] = &[
    "__SCT__preempt_schedule_notrace",
    "preempt_schedule_notrace",
    "preempt_schedule_notrace_thunk",
    "preempt_schedule_thunk",
];

/// The ranges of the functions in `names` that the running kernel has.
/// Process context, may sleep.
fn functions(ksyms: &Kallsyms, names: &[&str], out: &mut KVec<Range>) -> Result {
    let mut buf = SymbolBuf::new()?;
    for name in names {
        let cname = CString::try_from_fmt(fmt!("{name}"))?;
        let Some(start) = ksyms.lookup(&mut buf, &cname) else {
            continue;
        };
        let size = buf.symbolise(start).map_or(0, |s| s.size as usize);
        if size > 0 {
            out.push(
                Range {
                    start,
                    end: start.saturating_add(size),
                },
                GFP_KERNEL,
            )?;
        }
    }
    Ok(())
}

/// Adds to `out` the functions of the kernel's int3 path
/// (`arch::trace_int3_path`) outside `own`: how many functions, and how
/// many distinct instructions of theirs ran. Process context, may sleep;
/// before rkprobes' die notifier is registered.
fn int3_path(rt: &Runtime, own: Range, out: &mut KVec<Range>) -> Result<(usize, usize)> {
    let ips = crate::arch::trace_int3_path(rt)?;
    let mut buf = SymbolBuf::new()?;
    let (mut functions, mut insns) = (0, 0);
    let mut last_end = 0;
    // Sorted: the instructions of one function are consecutive.
    for &ip in ips.iter() {
        if own.start <= ip && ip < own.end {
            continue;
        }
        insns += 1;
        if ip < last_end {
            continue;
        }
        let range = match buf.symbolise(ip) {
            Some(s) if s.size > 0 && s.offset < s.size => {
                let start = ip - s.offset as usize;
                Range {
                    start,
                    end: start.saturating_add(s.size as usize),
                }
            }
            // No symbol: the instruction alone.
            _ => Range {
                start: ip,
                end: ip.saturating_add(1),
            },
        };
        last_end = range.end;
        out.push(range, GFP_KERNEL)?;
        functions += 1;
    }
    Ok((functions, insns))
}

/// The blacklist of a kernel without kprobes: the areas and the annotated
/// functions the running kernel has. Process context, may sleep.
fn synthesize(ksyms: &Kallsyms) -> Result<KVec<Range>> {
    let mut out = KVec::new();
    let mut buf = SymbolBuf::new()?;
    for &(s, e, required) in AREAS {
        let found = match (
            ksyms.lookup_marker(&mut buf, s),
            ksyms.lookup_marker(&mut buf, e),
        ) {
            (Some(start), Some(end)) if start < end && end - start <= MAX_AREA => {
                out.push(Range { start, end }, GFP_KERNEL)?;
                true
            }
            // An empty area (start == end) has nothing to refuse.
            (Some(start), Some(end)) => start == end,
            _ => false,
        };
        if required && !found {
            // Probing that text could hang or crash the kernel: refuse to
            // run without knowing where it is.
            pr_err!(
                "kernel without kprobes and without {} or {}: refusing to load\n",
                s.to_str().unwrap_or("?"),
                e.to_str().unwrap_or("?")
            );
            return Err(ENOENT);
        }
    }
    functions(ksyms, crate::pure::nokprobe::NOKPROBE_SYMBOLS, &mut out)?;
    Ok(out)
}

impl Blacklist {
    /// Builds the blacklist. Process context, may sleep; before rkprobes'
    /// die notifier is registered.
    pub(crate) fn new(ksyms: &Kallsyms, rt: &Runtime) -> Result<Self> {
        let native = KprobeBlacklist::find(ksyms)?;
        let mut synth = if native.is_none() {
            let v = synthesize(ksyms)?;
            pr_info!(
                "kernel without kprobes: {} blacklist ranges from the kernel's annotations\n",
                v.len()
            );
            v
        } else {
            KVec::new()
        };
        functions(ksyms, HIT_PATH_CALLEES, &mut synth)?;
        copied_text(ksyms, &mut synth)?;
        let text = this_module_text().ok_or(EINVAL)?;
        let own_text = Range {
            start: text.start,
            end: text.end,
        };
        let int3_path_start = synth.len();
        let (nfn, ninsn) = int3_path(rt, own_text, &mut synth)?;
        pr_info!("int3 path: {nfn} functions ({ninsn} instructions) traced and refused\n");
        Ok(Self {
            native,
            synth,
            int3_path: int3_path_start,
            own_text,
        })
    }

    /// Calls `f` on every blacklisted range. Process context, may sleep;
    /// holds the kernel's `kprobe_mutex` while walking its list.
    pub(crate) fn for_each(&self, f: impl FnMut(Range) -> Result) -> Result {
        self.for_each_where(|_| true, f)
    }

    /// Calls `f` on every blacklisted range for which `relevant` holds.
    /// `relevant` is asked first, so that rkprobes' own reservations in the
    /// kernel's list (one for each optimized probe) are looked for only
    /// among the ranges that matter. As [`Blacklist::for_each`].
    fn for_each_where(
        &self,
        relevant: impl Fn(Range) -> bool,
        mut f: impl FnMut(Range) -> Result,
    ) -> Result {
        if let Some(native) = &self.native {
            // Process context; nothing is taken under `kprobe_mutex` (see
            // the lock table in `rust/kprobe/mod.rs`).
            native.walk(|e| {
                let core::ops::Range { start, end } = e.range();
                let r = Range { start, end };
                // rkprobes' own reservations keep the kernel's kprobes out,
                // not rkprobes'. There may be thousands: looked for only
                // among the ranges the caller wants.
                if relevant(r) && !e.is_reservation() {
                    f(r)?;
                }
                Ok(())
            })?;
        }
        for &r in self.synth.iter().filter(|&&r| relevant(r)) {
            f(r)?;
        }
        if relevant(self.own_text) {
            f(self.own_text)?;
        }
        Ok(())
    }

    /// Adds `[start, end)` to the kernel's blacklist, so that the kernel's
    /// `register_kprobe()` refuses it (rkprobes' own checks skip it);
    /// `None` on a kernel without kprobes (no kernel kprobe to keep out),
    /// or without memory. Process context, may sleep; takes `kprobe_mutex`.
    pub(crate) fn reserve(&self, start: usize, end: usize) -> Option<Reservation> {
        self.native.as_ref()?.reserve(start, end)
    }

    /// Takes `rs` off the kernel's blacklist and frees them once no reader
    /// can stand on them (one `synchronize_rcu()` for all). Process context,
    /// may sleep; takes `kprobe_mutex`.
    pub(crate) fn release(&self, rs: impl Iterator<Item = Reservation>) {
        if let Some(native) = self.native.as_ref() {
            native.release(rs);
        }
    }

    /// Whether `addr` lies in a blacklisted range. Process context, may sleep.
    pub(crate) fn contains(&self, addr: usize) -> bool {
        let mut found = false;
        let ret = self.for_each_where(
            |r| r.start <= addr && addr < r.end,
            |_| {
                found = true;
                Ok(())
            },
        );
        // A list that could not be walked blacklists everything.
        found || ret.is_err()
    }
}

/// Writes `r` as a line of the kernel's `kprobes/blacklist`:
/// `0xSTART-0xEND<TAB>SYMBOL`, the range 0-0 unless `show_addr`.
fn write_range(out: &mut SeqFile, buf: &mut SymbolBuf, r: Range, show_addr: bool) {
    let (start, end) = if show_addr { (r.start, r.end) } else { (0, 0) };
    let _ = write!(out, "0x{start:016x}-0x{end:016x}\t");
    let _ = match buf.symbolise(r.start) {
        Some(s) if s.offset == 0 => match s.module {
            Some(m) => writeln!(out, "{} [{}]", s.name, m),
            None => writeln!(out, "{}", s.name),
        },
        _ => writeln!(out, "0x{:x}", r.start),
    };
}

/// `/sys/kernel/debug/rkprobes/blacklist`.
pub(crate) struct BlacklistFile;

impl Show for BlacklistFile {
    type Data = super::Core;

    /// One line per range, as the kernel's `kprobes/blacklist`:
    /// `0xSTART-0xEND<TAB>SYMBOL`, the range 0-0 for an opener that may
    /// not see kernel addresses (`kallsyms_show_value()`), as the kernel's.
    fn show(core: &super::Core, out: &mut SeqFile) -> Result {
        let mut buf = SymbolBuf::new()?;
        let show_addr = out.opener_sees_addresses(core.runtime());
        core.blacklist().for_each(|r| {
            write_range(out, &mut buf, r, show_addr);
            Ok(())
        })
    }
}

/// `/sys/kernel/debug/rkprobes/int3_path`: the functions of the kernel's
/// int3 path that rkprobes traced at load and refuses (they are in
/// `blacklist` too), in its format.
pub(crate) struct Int3PathFile;

impl Show for Int3PathFile {
    type Data = super::Core;

    fn show(core: &super::Core, out: &mut SeqFile) -> Result {
        let mut buf = SymbolBuf::new()?;
        let show_addr = out.opener_sees_addresses(core.runtime());
        let bl = core.blacklist();
        for &r in bl.synth.get(bl.int3_path..).unwrap_or(&[]) {
            write_range(out, &mut buf, r, show_addr);
        }
        Ok(())
    }
}
