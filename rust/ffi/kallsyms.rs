// SPDX-License-Identifier: GPL-2.0

//! Kernel symbols: symbolising addresses, and finding what is not exported.
//!
//! In 6.12 `kallsyms_lookup_name()` is not exported, but `sprint_symbol()` is.
//! [`Kallsyms::find`] walks the kernel's text symbol by symbol with
//! `sprint_symbol()`, starting at `sprint_symbol` itself (both live in
//! `kernel/kallsyms.c`, so the walk is short), until it meets
//! `kallsyms_lookup_name`; it then checks the function it found against a known
//! answer before using it, through a static call (`kcalls.c`: the function
//! is sealed under IBT). Every address obtained through it is validated again
//! with `sprint_symbol()` ([`Kallsyms::lookup`]): rkprobes never calls or
//! dereferences an address whose symbol it has not confirmed.

use super::kcalls as kc;
use crate::pure::ksym::{parse_sprint_symbol, SymbolAddr};
use kernel::{bindings, c_str, ffi::c_ulong, prelude::*, str::CStr};

/// Room for `sprint_symbol()`'s output: at least the kernel's
/// `KSYM_SYMBOL_LEN` (666 bytes on x86-64 in 6.12), which `glue.c`
/// checks at compile time against this value.
const SYMBOL_BUF_LEN: usize = 1024;

/// How many symbols the walk for `kallsyms_lookup_name` visits in each
/// direction before giving up (vmlinux has tens of thousands of functions).
const MAX_WALK: usize = 200_000;

/// A buffer for symbolising addresses.
pub(crate) struct SymbolBuf {
    buf: [u8; SYMBOL_BUF_LEN],
}

impl SymbolBuf {
    /// A buffer on the stack, for contexts that may not allocate.
    pub(crate) const fn zeroed() -> Self {
        Self {
            buf: [0; SYMBOL_BUF_LEN],
        }
    }

    /// Allocates a buffer. May sleep.
    pub(crate) fn new() -> Result<KBox<Self>> {
        Ok(KBox::new(
            Self {
                buf: [0; SYMBOL_BUF_LEN],
            },
            GFP_KERNEL,
        )?)
    }

    /// Symbolises `addr`: the symbol containing it, or `None` when no symbol
    /// does. Process context (module symbols are looked up under RCU).
    pub(crate) fn symbolise(&mut self, addr: usize) -> Option<SymbolAddr<'_>> {
        // SAFETY: the buffer is larger than KSYM_SYMBOL_LEN, the most that
        // `sprint_symbol` writes; any address may be symbolised.
        let len = unsafe { bindings::sprint_symbol(self.buf.as_mut_ptr().cast(), addr as c_ulong) };
        let text = self.buf.get(..usize::try_from(len).ok()?)?;
        parse_sprint_symbol(core::str::from_utf8(text).ok()?)
    }

    /// Whether `addr` is exactly the start of the vmlinux or module symbol
    /// `name`.
    pub(crate) fn is_symbol_start(&mut self, addr: usize, name: &str) -> bool {
        matches!(self.symbolise(addr), Some(s) if s.offset == 0 && s.name == name)
    }
}

/// Name lookup of kernel symbols, through the kernel's `kallsyms_lookup_name`.
///
/// # Invariants
///
/// The static call `kallsyms_lookup_name` of `kcalls.c` was set to the
/// kernel's `kallsyms_lookup_name`, confirmed by `sprint_symbol()` and by
/// looking up a symbol whose address is known.
pub(crate) struct Kallsyms {
    _private: (),
}

impl Kallsyms {
    /// Finds `kallsyms_lookup_name` and sets its static call. Process
    /// context, may sleep.
    ///
    /// Fails with `ENOENT` when it cannot be found or does not pass the checks.
    pub(crate) fn find() -> Result<Self> {
        let mut buf = SymbolBuf::new()?;
        let anchor = bindings::sprint_symbol as *const () as usize;
        let addr = walk_for(&mut buf, anchor, "kallsyms_lookup_name").ok_or(ENOENT)?;
        // SAFETY: `walk_for` returned the start of the vmlinux text symbol
        // `kallsyms_lookup_name`, a function with kcalls.c's prototype (6.12's
        // `include/linux/kallsyms.h`); process context, at load.
        unsafe { kc::rkp_kc_bind_kallsyms_lookup_name(addr as c_ulong) };
        // Check it on an answer known independently: `sprint_symbol` is
        // exported, so its address came from the module loader.
        // SAFETY: the name is NUL-terminated; the static call was just set
        // to the function found above, which takes no locks a caller here
        // could hold.
        let probe =
            unsafe { kc::rkp_kc_kallsyms_lookup_name(c_str!("sprint_symbol").as_char_ptr()) };
        if probe as usize != anchor {
            pr_err!("kallsyms_lookup_name candidate failed its check\n");
            return Err(ENOENT);
        }
        // INVARIANT: the candidate passed both checks.
        Ok(Self { _private: () })
    }

    /// The address of the kernel symbol `name` (`MOD:SYM` for a module's),
    /// confirmed with `sprint_symbol()` to be the start of a symbol of that
    /// name. Process context, may sleep.
    pub(crate) fn lookup(&self, buf: &mut SymbolBuf, name: &CStr) -> Option<usize> {
        let addr = self.lookup_name(name);
        if addr == 0 {
            return None;
        }
        let name = name.to_str().ok()?;
        let sym = name.rsplit_once(':').map_or(name, |(_, sym)| sym);
        buf.is_symbol_start(addr, sym).then_some(addr)
    }

    /// The address of the kernel symbol `name`, which may share it with
    /// the symbol `sprint_symbol()` names there (`_sdata` and the first
    /// object of `.data`): as the kernel's `@SYM` fetch arguments take any
    /// symbol `kallsyms_lookup_name()` finds. Confirmed only to be where a
    /// symbol starts. Process context, may sleep.
    pub(crate) fn lookup_alias(&self, buf: &mut SymbolBuf, name: &CStr) -> Option<usize> {
        let addr = self.lookup_name(name);
        if addr == 0 {
            return None;
        }
        matches!(buf.symbolise(addr), Some(s) if s.offset == 0).then_some(addr)
    }

    /// `kallsyms_lookup_name(name)`, unconfirmed.
    fn lookup_name(&self, name: &CStr) -> usize {
        // SAFETY: by the type invariant the static call is set to
        // `kallsyms_lookup_name`; `name` is NUL-terminated and outlives the
        // call. Process context.
        unsafe { kc::rkp_kc_kallsyms_lookup_name(name.as_char_ptr()) as usize }
    }
}

impl Kallsyms {
    /// The "address" of the per-CPU variable `name`: on x86-64 its offset
    /// in the per-CPU area, between `__per_cpu_start` and `__per_cpu_end`,
    /// which `sprint_symbol()` does not name, so it is confirmed by that
    /// range alone (0, the first variable's, is also what an unknown name
    /// gives, and is refused). Process context, may sleep.
    pub(crate) fn lookup_percpu(&self, name: &CStr) -> Option<usize> {
        let addr = self.lookup_name(name);
        if addr == 0 {
            return None;
        }
        let start = self.lookup_name(kernel::c_str!("__per_cpu_start"));
        let end = self.lookup_name(kernel::c_str!("__per_cpu_end"));
        (start < end && (start..end).contains(&addr)).then_some(addr)
    }

    /// The address of the vmlinux linker marker `name` (such as
    /// `__entry_text_start`), which may share its address with the symbol
    /// that `sprint_symbol()` names there: confirmed only to be vmlinux
    /// text. Process context, may sleep.
    pub(crate) fn lookup_marker(&self, buf: &mut SymbolBuf, name: &CStr) -> Option<usize> {
        let addr = self.lookup_name(name);
        if addr == 0 {
            return None;
        }
        let sym = buf.symbolise(addr)?;
        sym.module.is_none().then_some(addr)
    }
}

/// Walks vmlinux symbols outwards from `anchor`, in both directions, until it
/// meets the symbol `name`; returns its start address.
fn walk_for(buf: &mut SymbolBuf, anchor: usize, name: &str) -> Option<usize> {
    let first = buf.symbolise(anchor)?;
    if first.module.is_some() {
        return None;
    }
    let start = first.start(anchor as u64)? as usize;
    let mut forward = Some(start);
    let mut backward = Some(start);
    for _ in 0..MAX_WALK {
        if forward.is_none() && backward.is_none() {
            break;
        }
        if let Some(addr) = forward {
            forward = match buf.symbolise(addr) {
                Some(s) if s.module.is_none() && s.offset == 0 && s.size > 0 => {
                    if s.name == name {
                        return Some(addr);
                    }
                    addr.checked_add(s.size as usize)
                }
                _ => None,
            };
        }
        if let Some(addr) = backward {
            backward = addr
                .checked_sub(1)
                .and_then(|prev| match buf.symbolise(prev) {
                    Some(s) if s.module.is_none() => s.start(prev as u64).map(|a| a as usize),
                    _ => None,
                });
            if let Some(prev) = backward {
                if buf.is_symbol_start(prev, name) {
                    return Some(prev);
                }
            }
        }
    }
    None
}
