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
//! A kernel built without `CONFIG_KPROBES` has no such list, and its
//! `NOKPROBE_SYMBOL()` annotations are compiled out. rkprobes then builds the
//! equivalent at load: the same text areas (`.kprobes.text`, `.noinstr.text`,
//! the entry and irqentry text), and every function the kernel source
//! annotates (`pure::nokprobe`, generated from the 6.12 source) that the
//! running kernel has.
//!
//! Lock order (the table in `rust/kprobe/mod.rs`): the kernel's
//! `kprobe_mutex` is taken in process context, under the core's `Core::reg`
//! when a probe is registered, and nothing is taken under it.

use crate::{
    ffi::{
        self,
        kallsyms::{Kallsyms, SymbolBuf},
    },
    kernel_ext::{
        debugfs::{SeqFile, Show},
        module::this_module_text,
        mutex::KernelMutex,
    },
};
use core::fmt::Write;
use kernel::{
    c_str, fmt,
    prelude::*,
    str::{CStr, CString},
};

/// `struct kprobe_blacklist_entry` of 6.12's `include/linux/kprobes.h`.
#[repr(C)]
struct NativeEntry {
    list: ffi::list_head,
    start_addr: usize,
    end_addr: usize,
}

/// Bound on the native list's length, against walking a corrupted list forever.
const MAX_NATIVE_ENTRIES: usize = 1 << 20;

/// The kernel's own kprobe blacklist, when the kernel has kprobes.
///
/// # Invariants
///
/// `head` is the kernel's `kprobe_blacklist` list head and `mutex` its
/// `kprobe_mutex`, both confirmed by `sprint_symbol()`; the list is only
/// changed with `mutex` held and entries are freed only after removal.
struct NativeList {
    head: *mut ffi::list_head,
    mutex: KernelMutex,
}

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
    native: Option<NativeList>,
    /// Without a native list: the ranges rkprobes found itself.
    synth: KVec<Range>,
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
    for name in crate::pure::nokprobe::NOKPROBE_SYMBOLS {
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
    Ok(out)
}

// SAFETY: the raw pointers refer to kernel data that lives as long as the
// kernel and is only read with the kernel's `kprobe_mutex` held.
unsafe impl Send for Blacklist {}
// SAFETY: as for `Send`; `&self` methods serialise on `kprobe_mutex`.
unsafe impl Sync for Blacklist {}

impl Blacklist {
    /// Builds the blacklist. Process context, may sleep.
    pub(crate) fn new(ksyms: &Kallsyms) -> Result<Self> {
        let mut buf = SymbolBuf::new()?;
        let head = ksyms.lookup(&mut buf, c_str!("kprobe_blacklist"));
        let mutex = ksyms.lookup(&mut buf, c_str!("kprobe_mutex"));
        let native = match (head, mutex) {
            // INVARIANT: both were confirmed by `Kallsyms::lookup`.
            (Some(head), Some(mutex)) => Some(NativeList {
                head: head as *mut _,
                // SAFETY: `kprobe_mutex` is a static mutex of vmlinux.
                mutex: unsafe { KernelMutex::from_raw(mutex as *mut _) },
            }),
            _ => None,
        };
        let synth = if native.is_none() {
            let v = synthesize(ksyms)?;
            pr_info!(
                "kernel without kprobes: {} blacklist ranges from the kernel's annotations\n",
                v.len()
            );
            v
        } else {
            KVec::new()
        };
        let text = this_module_text().ok_or(EINVAL)?;
        let own_text = Range {
            start: text.start,
            end: text.end,
        };
        Ok(Self {
            native,
            synth,
            own_text,
        })
    }

    /// Calls `f` on every blacklisted range. Process context, may sleep;
    /// holds the kernel's `kprobe_mutex` while walking its list.
    pub(crate) fn for_each(&self, mut f: impl FnMut(Range) -> Result) -> Result {
        if let Some(native) = &self.native {
            // Process context; nothing is taken under it (see the lock
            // table in `rust/kprobe/mod.rs`).
            let held = native.mutex.lock();
            let ret = native.walk(&mut f);
            drop(held);
            ret?;
        }
        for &r in self.synth.iter() {
            f(r)?;
        }
        f(self.own_text)
    }

    /// Whether `addr` lies in a blacklisted range. Process context, may sleep.
    pub(crate) fn contains(&self, addr: usize) -> bool {
        let mut found = false;
        let ret = self.for_each(|r| {
            found |= r.start <= addr && addr < r.end;
            Ok(())
        });
        // A list that could not be walked blacklists everything.
        found || ret.is_err()
    }
}

impl NativeList {
    /// Walks the kernel's list. The caller holds `kprobe_mutex`.
    fn walk(&self, f: &mut impl FnMut(Range) -> Result) -> Result {
        // SAFETY: by the type invariant `head` is the list head and the list is
        // stable while the caller holds `kprobe_mutex`.
        let mut pos = unsafe { (*self.head).next };
        for _ in 0..MAX_NATIVE_ENTRIES {
            if pos == self.head {
                return Ok(());
            }
            // SAFETY: `pos` is a live entry of the list (see above); `list` is
            // the first member of `struct kprobe_blacklist_entry`.
            let entry = unsafe { &*pos.cast::<NativeEntry>() };
            f(Range {
                start: entry.start_addr,
                end: entry.end_addr,
            })?;
            pos = entry.list.next;
        }
        pr_err!("kprobe_blacklist longer than {MAX_NATIVE_ENTRIES}, giving up\n");
        Err(EINVAL)
    }
}

/// `/sys/kernel/debug/rkprobes/blacklist`.
pub(crate) struct BlacklistFile;

impl Show for BlacklistFile {
    type Data = Blacklist;

    /// One line per range, as the kernel's `kprobes/blacklist`:
    /// `0xSTART-0xEND<TAB>SYMBOL`. The file is root-only, so addresses are
    /// always shown.
    fn show(bl: &Blacklist, out: &mut SeqFile) -> Result {
        let mut buf = SymbolBuf::new()?;
        bl.for_each(|r| {
            let _ = write!(out, "0x{:016x}-0x{:016x}\t", r.start, r.end);
            let _ = match buf.symbolise(r.start) {
                Some(s) if s.offset == 0 => match s.module {
                    Some(m) => writeln!(out, "{} [{}]", s.name, m),
                    None => writeln!(out, "{}", s.name),
                },
                _ => writeln!(out, "0x{:x}", r.start),
            };
            Ok(())
        })
    }
}
