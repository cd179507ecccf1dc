// SPDX-License-Identifier: GPL-2.0

//! Where a probe goes, and whether it may go there.
//!
//! Resolving a probe's `addr` or `symbol_name` plus `offset` (the kernel's
//! `_kprobe_addr()`), the checks of the kernel's `kprobe_on_func_entry()`,
//! `within_kprobe_blacklist()` and `check_kprobe_address_safe()`, and
//! reading the text at an address as it was before rkprobes patched it.
//!
//! Context: process context, may sleep (the blacklist takes the kernel's
//! `kprobe_mutex`). [`Core::target`] runs at registration with `Core::reg`
//! held; [`Core::check_func_entry`] also runs without it (kretprobe and
//! kprobe_events checks); [`Core::native_kprobe_before`],
//! [`Core::read_original`] and [`Core::is_ftrace_site`] also run under
//! `text_mutex`, when a point is armed, and take no lock.

use super::{
    client::Client,
    point::{OptState, Registry},
    Core,
};
use crate::{
    arch,
    ffi::kallsyms::SymbolBuf,
    kernel_ext::{module::ModuleRef, sync::PreemptGuard, text},
};
use core::sync::atomic::Ordering;
use kernel::{prelude::*, str::CStr};

/// Where a probe goes, before it is registered.
pub(super) struct Target {
    pub(super) addr: usize,
    pub(super) func: usize,
    /// The module whose text it is, held while its text is read.
    pub(super) module: Option<ModuleRef>,
    /// An ftrace call site, probed through ftrace.
    pub(super) ftrace: bool,
}

impl Core {
    /// Resolves where `kp` goes: `addr` or `symbol_name`, plus `offset`,
    /// adjusted by the architecture (past ENDBR at a function entry), as the
    /// kernel's `_kprobe_addr()`. Returns the address, and the start and
    /// size of its function. Process context.
    fn resolve(&self, kp: Client) -> Result<(usize, usize, usize)> {
        let addr = kp.addr();
        let (sym, offset) = kp.symbol();
        if (addr != 0) == sym.is_some() {
            return Err(EINVAL);
        }
        let mut buf = SymbolBuf::new()?;
        let base = match sym {
            None => addr,
            Some(name) => self.ksyms.lookup(&mut buf, name).ok_or(ENOENT)?,
        };
        let addr = base.checked_add(offset as usize).ok_or(EINVAL)?;
        let sym = buf.symbolise(addr).ok_or(ENOENT)?;
        if crate::pure::ksym::is_preamble_symbol(sym.name) {
            return Err(EINVAL);
        }
        let func = sym.start(addr as u64).ok_or(ENOENT)? as usize;
        let size = sym.size as usize;
        let addr = arch::adjust_addr(func, addr - func)?;
        Ok((addr, func, size))
    }

    /// The kernel's `kprobe_on_func_entry()`: `EINVAL` unless `kp` resolves
    /// to a function's entry (past its ENDBR), `ENOENT` when it does not
    /// resolve. Process context.
    pub(crate) fn check_func_entry(&self, kp: Client) -> Result {
        let (addr, func, _) = self.resolve(kp)?;
        if addr != arch::adjust_addr(func, 0)? {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Resolves where `kp` goes and checks that the address may be probed.
    /// Process context.
    pub(super) fn target(&self, kp: Client) -> Result<Target> {
        let (addr, func, size) = self.resolve(kp)?;
        let ftrace = self.is_ftrace_site(addr);
        // An int3 on an ftrace call site would break ftrace's own patching.
        if ftrace && !arch::FTRACE_PROBES {
            return Err(EINVAL);
        }
        if self.blacklisted_origin(addr)? {
            return Err(EINVAL);
        }
        let module = self.check_address_safe(addr, func, size)?;
        Ok(Target {
            addr,
            func,
            module,
            ftrace,
        })
    }

    /// Whether rkprobes refuses any probe at `addr` whatever its kind: the
    /// blacklist (and its origin rule, below), or a site another text
    /// patcher owns. For callers that choose among many addresses (an `f`
    /// event's pattern) what registration would refuse. Fails only without
    /// memory for the symbol lookups. Process context.
    pub(crate) fn refuses(&self, addr: usize) -> Result<bool> {
        Ok(self.blacklist.contains(addr)
            || self.blacklisted_origin(addr)?
            || self.sites.reserved(addr, addr))
    }

    /// The second half of the kernel's `within_kprobe_blacklist()`: a
    /// suffixed copy of a function (`.cold`, `.part.N`, `.isra.N`,
    /// `.constprop.N`, ...) is blacklisted when the function it was split or
    /// cloned from is. Process context.
    fn blacklisted_origin(&self, addr: usize) -> Result<bool> {
        let mut buf = SymbolBuf::new()?;
        let base = match buf.symbolise(addr) {
            Some(sym) => match sym.name.split_once('.') {
                Some((base, _)) if !base.is_empty() => {
                    let mut name = KVec::with_capacity(base.len() + 1, GFP_KERNEL)?;
                    name.extend_from_slice(base.as_bytes(), GFP_KERNEL)?;
                    name.push(0, GFP_KERNEL)?;
                    name
                }
                _ => return Ok(false),
            },
            None => return Ok(false),
        };
        let Ok(name) = CStr::from_bytes_with_nul(&base) else {
            return Ok(false);
        };
        Ok(self
            .ksyms
            .lookup(&mut buf, name)
            .is_some_and(|a| self.blacklist.contains(a)))
    }

    /// The kernel's `check_kprobe_address_safe()`: kernel or module text,
    /// not blacklisted, not a site another text patcher owns. Takes a
    /// reference on the probed module, which it returns (null for vmlinux).
    /// Process context.
    fn check_address_safe(
        &self,
        addr: usize,
        func: usize,
        size: usize,
    ) -> Result<Option<ModuleRef>> {
        let core_text = text::is_core_kernel_text(&self.rt, addr);
        // Every error return below drops the reference again.
        let module = if core_text {
            None
        } else {
            Some(ModuleRef::of_text_address(&self.rt, addr).ok_or(EINVAL)?)
        };
        if let Some(m) = &module {
            // Init text is freed once the module is live, and the LIVE
            // notification that kills its probes may already have run: as
            // the kernel, only a coming module's init text may be probed.
            if m.init_text().contains(&addr) && !m.is_coming() {
                return Err(ENOENT);
            }
            // The module's own noinstr text, which the kernel blacklists when
            // the module loads (and not at all without CONFIG_KPROBES).
            if m.noinstr_text().contains(&addr) {
                return Err(EINVAL);
            }
        }
        if self.sites.reserved(addr, addr)
            || addr >= func.saturating_add(size)
            || self.blacklist.contains(addr)
        {
            return Err(EINVAL);
        }
        // Checked again, under `text_mutex`, each time the probe is armed.
        if self.native_kprobe_before(func, addr) {
            return Err(EBUSY);
        }
        Ok(module)
    }

    /// Whether a kernel kprobe sits in the function starting at `func`, at
    /// or before `addr`: its int3, or the jump of an optimized probe (which
    /// covers up to `MAX_OPTIMIZED_LENGTH` bytes and never leaves its
    /// function), changes the bytes rkprobes decodes from the function's
    /// start to find instruction boundaries, and two patchers of one
    /// instruction would each restore what they saw. Process context.
    pub(super) fn native_kprobe_before(&self, func: usize, addr: usize) -> bool {
        self.rt.has_get_kprobe() && (func..=addr).any(|a| text::is_native_kprobe(&self.rt, a))
    }

    /// Reads the first `buf.len()` original bytes at `addr`, as they were
    /// before any int3 or jump of rkprobes replaced them (the kernel's
    /// `recover_probed_instruction()`). Process context; `reg`, the
    /// registration mutex's guard, keeps the jumps as they are.
    pub(crate) fn read_original(&self, reg: &Registry, addr: usize, buf: &mut [u8]) -> Result {
        text::read(addr, buf)?;
        let jumps = self.nr_optimized.load(Ordering::Relaxed) > 0;
        // The points are read in a read section: none is freed meanwhile.
        let rcu = PreemptGuard::new();
        for (i, b) in buf.iter_mut().enumerate() {
            let Some(a) = addr.checked_add(i) else {
                continue;
            };
            if let Some(p) = self.table.lookup(&rcu, a) {
                // An ftrace site is not patched by rkprobes: its bytes are
                // ftrace's (see `is_ftrace_site`).
                if !p.arch().is_ftrace() {
                    *b = p.arch().orig_byte();
                }
                continue;
            }
            // A byte that an optimized probe's jump displacement replaced,
            // up to four bytes after the probe.
            if !jumps {
                continue;
            }
            let replaced = (1..5usize).find_map(|k| {
                let p = self.table.lookup(&rcu, a.checked_sub(k)?)?;
                if p.opt_state() != OptState::Optimized {
                    return None;
                }
                p.opt_w(reg).replaced_byte(k)
            });
            if let Some(orig) = replaced {
                *b = orig;
            }
        }
        Ok(())
    }

    /// Whether `addr` is an ftrace call site. Its bytes change whenever
    /// ftrace patches it (a NOP, a call, an int3 in the middle of an update),
    /// so decoders treat it as the 5-byte NOP it is at rest, as the kernel's
    /// `recover_probed_instruction()` does. Process context.
    pub(crate) fn is_ftrace_site(&self, addr: usize) -> bool {
        text::is_ftrace_site(&self.rt, addr)
    }
}
