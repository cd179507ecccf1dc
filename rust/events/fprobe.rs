// SPDX-License-Identifier: GPL-2.0

//! Where an `f` event's probes go: its symbol is an ftrace filter
//! ([`FunctionFilter`]), as 6.12 hands it to `register_fprobe()`, and the
//! event probes the ftrace call site of every function ftrace can trace
//! whose name matches. Each site is a probe at an ftrace call site, which
//! the probe core runs through rkprobes' ftrace_ops: no trap.
//!
//! The functions are found as ftrace's filter finds them: every symbol of
//! vmlinux and of the loaded modules whose name matches, kept when
//! `ftrace_location()` gives it a call site at its start and the name that
//! kallsyms gives that site (the first of aliases, as ftrace prints the
//! record) matches too; a pattern leaves out the functions on rkprobes'
//! blacklist. Process context, may sleep.

use super::Events;
use crate::{
    ffi::kallsyms::SymbolBuf,
    kernel_ext::eopnotsupp,
    pure::{
        probe_events::{fprobe::FilterMatch, FunctionFilter},
        sites::sort,
    },
};
use kernel::{
    ffi::{c_char, c_int, c_ulong, c_void},
    prelude::*,
};

/// How far after a symbol's start its ftrace call site may be: after an
/// ENDBR (4 bytes), as x86's `ftrace_location()` finds it.
const SITE_WINDOW: usize = 16;

/// The symbols' walk: the filter and the addresses of the names that
/// match.
struct Walk<'a> {
    filter: FunctionFilter<'a>,
    found: KVec<usize>,
    nomem: bool,
}

/// Keeps `addr` if the symbol `name` matches the walk's filter.
///
/// # Safety
///
/// `data` is a `Walk`; `name` a NUL-terminated string.
unsafe extern "C" fn match_symbol(data: *mut c_void, name: *const c_char, addr: c_ulong) -> c_int {
    // SAFETY: the caller's contract.
    let (walk, name) = unsafe {
        (
            &mut *data.cast::<Walk<'_>>(),
            kernel::str::CStr::from_char_ptr(name),
        )
    };
    if walk.filter.matches(name.as_bytes()) && walk.found.push(addr, GFP_KERNEL).is_err() {
        walk.nomem = true;
        // Stops the walk.
        return 1;
    }
    0
}

impl Events {
    /// The ftrace call sites of the functions `symbol` names as an ftrace
    /// filter, sorted, each once. `EINVAL` when none matches, as 6.12's
    /// `ftrace_set_filter()`; a negated filter (every function but those)
    /// and a record index are refused with `EINVAL` too (see
    /// Documentation/kprobe-events.rst).
    pub(super) fn fprobe_sites(&self, symbol: &[u8]) -> Result<KVec<usize>> {
        let filter = FunctionFilter::new(symbol);
        if filter.negated() || filter.how() == FilterMatch::Index || symbol.contains(&b':') {
            return Err(EINVAL);
        }
        let rt = self.core().runtime();
        let mut walk = Walk {
            filter,
            found: KVec::new(),
            nomem: false,
        };
        let data = core::ptr::from_mut(&mut walk).cast::<c_void>();
        // SAFETY: the iterators call `match_symbol` with `data` during the
        // call only, in process context; `walk` outlives them.
        let walked = unsafe {
            rt.kallsyms_on_each_symbol(Some(match_symbol), data)
                .is_some()
                && rt
                    .module_kallsyms_on_each_symbol(core::ptr::null(), Some(match_symbol), data)
                    .is_some()
        };
        if !walked {
            // A kernel without the iterators: only a full name, looked up.
            if filter.how() != FilterMatch::Full {
                return Err(eopnotsupp());
            }
            let env = self.env();
            if let Ok(Some(a)) = env.lookup_parts(None, symbol) {
                walk.found.push(a, GFP_KERNEL)?;
            }
        }
        if walk.nomem {
            return Err(ENOMEM);
        }
        let mut buf = SymbolBuf::new()?;
        let core = self.core();
        let mut sites: KVec<u64> = KVec::with_capacity(walk.found.len(), GFP_KERNEL)?;
        for &addr in walk.found.iter() {
            // SAFETY: any address may be asked about, in process context.
            let Some(site) = (unsafe { rt.ftrace_location(addr as c_ulong) }) else {
                return Err(eopnotsupp());
            };
            if site.wrapping_sub(addr) >= SITE_WINDOW {
                continue;
            }
            // The name ftrace matches is the one kallsyms gives the site.
            let named = buf
                .symbolise(site)
                .is_some_and(|s| filter.matches(s.name.as_bytes()));
            // A pattern leaves out what rkprobes may not probe (its
            // blacklist, its own text); a name alone is refused at
            // registration.
            if named && (filter.how() == FilterMatch::Full || !core.refuses(site)?) {
                sites.push(site as u64, GFP_KERNEL)?;
            }
        }
        sort(&mut sites);
        // Aliases of one function give its site more than once.
        let mut unique: KVec<usize> = KVec::with_capacity(sites.len(), GFP_KERNEL)?;
        for &s in sites.iter() {
            if unique.last() != Some(&(s as usize)) {
                unique.push(s as usize, GFP_KERNEL)?;
            }
        }
        let sites = unique;
        if sites.is_empty() {
            return Err(EINVAL);
        }
        Ok(sites)
    }
}
