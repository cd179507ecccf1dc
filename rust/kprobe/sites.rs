// SPDX-License-Identifier: GPL-2.0

//! The text sites that the kernel's other patchers own: jump labels and
//! inline static calls.
//!
//! A probe may not be placed on such a site (the kernel's
//! `check_kprobe_address_safe()` asks `jump_label_text_reserved()` and
//! `static_call_text_reserved()`), nor an optimized probe's region overlap
//! one. Both kernel functions walk every vmlinux site on each call, and the
//! jump-label walk decodes every site's instruction (about 2,800 on the test
//! kernels): measured on the benchmark kernel, 70% of the time rkprobes
//! spent registering 1,000 probes. vmlinux's sites stop changing once it has
//! booted (init sites are skipped from then on, the tables are sorted and
//! flagged at boot), so [`TextSites`] reads them once, under
//! `jump_label_lock` as the kernel's kprobes read them, into a sorted index
//! (`crate::pure::sites`). An address outside vmlinux's text, and any address
//! while the kernel is still booting, is answered by the kernel's own
//! functions, under `jump_label_lock` too: a module's sites are few, and
//! they come and go with the module.
//!
//! Lock order (the table in `rust/kprobe/mod.rs`): `jump_label_lock` is
//! taken under `Core::reg`, never with `text_mutex` held (the kernel patches
//! jump labels with `text_mutex` under `jump_label_lock`), and nothing is
//! taken under it.

use crate::{
    ffi::runtime::Runtime,
    kernel_ext::{module::ModuleRef, text, text_sites::JumpLabelGuard},
    pure::{insn::Insn, sites},
};
use kernel::prelude::*;

/// x86's `CALL_INSN_SIZE`: an inline static call site's length.
const CALL_INSN_SIZE: u8 = 5;

/// The index of vmlinux's sites: packed entries of `crate::pure::sites`,
/// sorted, at offsets from `base`.
struct Index {
    base: usize,
    entries: KVVec<u64>,
}

/// What [`TextSites::check`] found.
#[derive(Clone, Copy, Default)]
pub(crate) struct CheckResult {
    /// Addresses (and ranges) rkprobes answered itself, asked of the
    /// kernel too.
    pub(crate) checked: usize,
    /// Answers that differed.
    pub(crate) differ: usize,
    /// Questions the kernel answered "reserved".
    pub(crate) reserved: usize,
}

/// The jump-label and static-call sites of the running kernel.
///
/// Process context throughout.
pub(crate) struct TextSites {
    rt: Runtime,
    /// `None` when vmlinux's tables could not be read whole: every question
    /// then goes to the kernel's functions.
    index: Option<Index>,
    /// vmlinux's jump-label and static-call sites in the index.
    counts: (usize, usize),
}

/// Whether the jump-label site at `code` is readable, and its length: the
/// kernel's `arch_jump_entry_size()`, which decodes the instruction there
/// and accepts only 2 (`jmp rel8` or a 2-byte nop) and 5 bytes.
fn jump_site_len(code: usize) -> Option<u8> {
    let mut buf = [0u8; CALL_INSN_SIZE as usize];
    // A 2-byte site may end a mapped page: read only what is there.
    let n = if text::read(code, &mut buf).is_ok() {
        buf.len()
    } else {
        text::read(code, buf.get_mut(..2)?).ok()?;
        2
    };
    let len = Insn::decode(buf.get(..n)?).ok()?.length();
    matches!(len, 2 | 5).then_some(len as u8)
}

impl TextSites {
    /// Reads vmlinux's sites. Fails only to allocate; tables it cannot read
    /// whole leave the kernel's functions in charge. Process context, may
    /// sleep; takes `jump_label_lock`.
    pub(crate) fn new(rt: Runtime) -> Result<Self> {
        let mut me = Self {
            rt,
            index: None,
            counts: (0, 0),
        };
        if !rt.site_tables_found() || !rt.system_running() {
            return Ok(me);
        }
        let lock = JumpLabelGuard::lock(&rt);
        // First pass: how many live sites, from which address.
        let (mut njump, mut nstatic, mut base, mut whole) = (0usize, 0usize, usize::MAX, true);
        lock.for_each_core_jump_entry(|code, init| {
            if !init {
                njump += 1;
                base = base.min(code);
            }
        });
        rt.for_each_core_static_call_site(|addr, init| {
            if !init {
                nstatic += 1;
                base = base.min(addr);
            }
        });
        let mut entries = KVVec::with_capacity(njump + nstatic, GFP_KERNEL)?;
        let mut push = |at: usize, len: Option<u8>| {
            let packed = len.and_then(|l| sites::pack(at.wrapping_sub(base) as u64, l));
            // Capacity was reserved above for every live site; a jump-label
            // site that does not decode as the kernel's would, a site that
            // does not pack (or a table that grew) makes `whole` false.
            whole &= packed.is_some_and(|p| entries.push(p, GFP_NOWAIT).is_ok());
        };
        lock.for_each_core_jump_entry(|code, init| {
            if !init {
                push(code, jump_site_len(code));
            }
        });
        rt.for_each_core_static_call_site(|addr, init| {
            if !init {
                push(addr, Some(CALL_INSN_SIZE));
            }
        });
        if !whole || entries.len() != njump + nstatic {
            pr_info!(
                "vmlinux's site tables could not be read whole; asking the kernel for each probe\n"
            );
            return Ok(me);
        }
        sites::sort(entries.as_mut_slice());
        me.index = Some(Index { base, entries });
        me.counts = (njump, nstatic);
        Ok(me)
    }

    /// The number of vmlinux's jump-label and static-call sites in the
    /// index, and whether there is one.
    pub(crate) fn counts(&self) -> (usize, usize, bool) {
        (self.counts.0, self.counts.1, self.index.is_some())
    }

    /// Calls `f(start, end)` for each indexed site's bytes (`end`
    /// exclusive), in address order.
    pub(crate) fn for_each(&self, mut f: impl FnMut(usize, usize)) {
        if let Some(idx) = &self.index {
            for &e in idx.entries.iter() {
                let (off, len) = sites::unpack(e);
                let start = idx.base.wrapping_add(off as usize);
                f(start, start + usize::from(len));
            }
        }
    }

    /// Whether a jump-label or static-call site overlaps `start..=end`: the
    /// kernel's `jump_label_text_reserved() || static_call_text_reserved()`.
    /// Process context, may sleep; the caller holds neither
    /// `jump_label_lock` nor `text_mutex`.
    pub(crate) fn reserved(&self, start: usize, end: usize) -> bool {
        if let Some(r) = self.indexed(start, end) {
            return r;
        }
        let lock = JumpLabelGuard::lock(&self.rt);
        self.module_reserved(&lock, start, end)
            .unwrap_or_else(|| lock.text_reserved(start, end))
    }

    /// The answer for `start..=end` in one module's text, from that
    /// module's own sites, as the kernel's `__jump_label_mod_text_reserved()`
    /// and `__static_call_mod_text_reserved()` give it (vmlinux's sites,
    /// which the kernel's functions walk first, are never in module text);
    /// `None` when the range is not in one module's text, or a site does
    /// not decode.
    fn module_reserved(&self, lock: &JumpLabelGuard<'_>, start: usize, end: usize) -> Option<bool> {
        self.index.as_ref()?;
        let m = ModuleRef::of_text_address(&self.rt, start)?;
        if !m.has_text_address(&self.rt, end) {
            return None;
        }
        // The kernel checks a coming module's init sites too.
        let coming = m.is_coming();
        let overlaps = |code: usize, len: usize| code <= end && code.wrapping_add(len) > start;
        let (mut hit, mut whole) = (false, true);
        lock.for_each_module_jump_entry(&m, |code, init| {
            if init && !coming {
                return;
            }
            match jump_site_len(code) {
                Some(len) => hit |= overlaps(code, usize::from(len)),
                None => whole = false,
            }
        });
        m.for_each_static_call_site(|addr, init| {
            if !init || coming {
                hit |= overlaps(addr, usize::from(CALL_INSN_SIZE));
            }
        });
        whole.then_some(hit)
    }

    /// The index's answer, when it has one for `start..=end`: both ends in
    /// vmlinux's text, after boot.
    fn indexed(&self, start: usize, end: usize) -> Option<bool> {
        let idx = self.index.as_ref()?;
        let core =
            text::is_core_kernel_text(&self.rt, start) && text::is_core_kernel_text(&self.rt, end);
        (core && self.rt.system_running())
            .then(|| sites::overlaps(&idx.entries, idx.base as u64, start as u64, end as u64))
    }

    /// Counts in `res` rkprobes' own answer `ours` for `s..=e` against the
    /// kernel's. A question rkprobes leaves to the kernel (`None`) is not
    /// counted: comparing the kernel with itself would prove nothing.
    fn compare(
        lock: &JumpLabelGuard<'_>,
        s: usize,
        e: usize,
        ours: Option<bool>,
        res: &mut CheckResult,
    ) {
        let Some(ours) = ours else {
            return;
        };
        let theirs = lock.text_reserved(s, e);
        res.checked += 1;
        res.reserved += usize::from(theirs);
        if ours != theirs {
            res.differ += 1;
            pr_err!("text sites: rkprobes' answer differs from the kernel's at {s:#x}..={e:#x}\n");
        }
    }

    /// Asks rkprobes' walk of one module's sites and the kernel's functions
    /// the same questions: every byte of the module's core text (up to 64
    /// KiB), alone and as the first of five. Process context, may sleep;
    /// takes `jump_label_lock`. `None` when no such module is loaded.
    pub(crate) fn check_module(&self, name: &kernel::str::CStr) -> Option<CheckResult> {
        let m = ModuleRef::by_name(&self.rt, name)?;
        let text = m.text();
        let mut res = CheckResult::default();
        let lock = JumpLabelGuard::lock(&self.rt);
        for a in text.start..text.end.min(text.start + (64 << 10)) {
            for (s, e) in [(a, a), (a, (a + 4).min(text.end - 1))] {
                let ours = self.module_reserved(&lock, s, e);
                Self::compare(&lock, s, e, ours, &mut res);
            }
        }
        Some(res)
    }

    /// Asks the index and the kernel's functions the same questions, about
    /// every `stride`-th site of vmlinux in address order (the kernel's
    /// jump-label walk decodes every site, about a millisecond a question
    /// under TCG), at the byte before it, its first
    /// and last bytes, the byte after it, and the range from two bytes
    /// before to two after. Process context, may sleep; takes
    /// `jump_label_lock`.
    pub(crate) fn check(&self, stride: usize) -> CheckResult {
        let mut res = CheckResult::default();
        let Some(idx) = &self.index else {
            return res;
        };
        let lock = JumpLabelGuard::lock(&self.rt);
        let stride = stride.max(1);
        for (i, &e) in idx.entries.iter().enumerate() {
            let (off, len) = sites::unpack(e);
            let code = idx.base.wrapping_add(off as usize);
            let len = usize::from(len);
            if i % stride == 0 {
                let last = code + len - 1;
                for (s, e) in [
                    (code - 1, code - 1),
                    (code, code),
                    (last, last),
                    (code + len, code + len),
                    (code - 2, last + 2),
                ] {
                    let ours = self.indexed(s, e);
                    Self::compare(&lock, s, e, ours, &mut res);
                }
            }
        }
        res
    }
}
