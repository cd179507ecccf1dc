// SPDX-License-Identifier: GPL-2.0

//! The kernel's jump-label and static-call site tables, as rkprobes reads
//! them (`kprobe::sites`): vmlinux's tables found at run time, the
//! walks of a table's entries, `jump_label_lock`, and the kernel's own
//! checks (`jump_label_text_reserved()`, `static_call_text_reserved()`).

use super::{kc, Kallsyms, Runtime, SymbolBuf};
use kernel::{
    bindings,
    ffi::{c_int, c_void},
    str::CStr,
};

/// Calls `f(code, init)` for each of the `n` jump entries at `start`: the
/// address of the site (`jump_entry_code()`) and whether it is an init site
/// (`jump_entry_is_init()`), for x86-64's relative entries.
///
/// # Safety
///
/// `start` holds `n` live `struct jump_entry`s; the caller holds
/// `jump_label_lock`, under which the kernel writes them.
pub(crate) unsafe fn for_each_jump_entry(
    start: *const bindings::jump_entry,
    n: usize,
    mut f: impl FnMut(usize, bool),
) {
    for i in 0..n {
        // SAFETY: within the array (the caller's contract).
        let e = unsafe { start.add(i) };
        // SAFETY: a live entry, read under its lock; and its field's address.
        let (code, key, code_at) = unsafe { ((*e).code, (*e).key, core::ptr::addr_of!((*e).code)) };
        f(
            (code_at as usize).wrapping_add(code as isize as usize),
            key & 2 != 0,
        );
    }
}

/// Calls `f(addr, init)` for each of the `n` inline static call sites at
/// `start`: its call's address (`static_call_addr()`) and whether it is an
/// init site (`static_call_is_init()`, `STATIC_CALL_SITE_INIT`).
///
/// # Safety
///
/// `start` holds `n` live `struct static_call_site`s that nothing writes
/// meanwhile (vmlinux's after boot; a module's once it is live or coming).
pub(crate) unsafe fn for_each_static_call_site(
    start: *const bindings::static_call_site,
    n: usize,
    mut f: impl FnMut(usize, bool),
) {
    for i in 0..n {
        // SAFETY: within the array (the caller's contract).
        let s = unsafe { start.add(i) };
        // SAFETY: a live site; and its fields' addresses.
        let (addr, key, addr_at, key_at) = unsafe {
            (
                (*s).addr,
                (*s).key,
                core::ptr::addr_of!((*s).addr) as usize,
                core::ptr::addr_of!((*s).key) as usize,
            )
        };
        let key = key_at.wrapping_add(key as isize as usize);
        f(addr_at.wrapping_add(addr as isize as usize), key & 2 != 0);
    }
}

/// The bounds of the vmlinux array of `T` between the linker markers
/// `start` and `stop`, when both are found, in order, and hold whole,
/// aligned entries.
pub(super) fn table_bounds<T>(
    ksyms: &Kallsyms,
    buf: &mut SymbolBuf,
    start: &CStr,
    stop: &CStr,
) -> Option<(usize, usize)> {
    let a = ksyms.lookup_marker(buf, start)?;
    let b = ksyms.lookup_marker(buf, stop)?;
    let size = core::mem::size_of::<T>();
    let whole = b >= a && (b - a) % size == 0 && a % core::mem::align_of::<T>() == 0;
    whole.then_some((a, b))
}

impl Runtime {
    /// `jump_label_text_reserved()`; 0 without jump labels.
    ///
    /// # Safety
    ///
    /// Process context; the caller holds `jump_label_lock`
    /// ([`Runtime::jump_label_lock`]): the kernel's function decodes each
    /// site's current bytes, and a site being patched (an int3 in it)
    /// would hit a `BUG_ON()` in `arch_jump_entry_size()`.
    pub(crate) unsafe fn jump_label_text_reserved(
        &self,
        start: *mut c_void,
        end: *mut c_void,
    ) -> c_int {
        if !self.jump_label_text_reserved {
            return 0;
        }
        // SAFETY: see above.
        unsafe { kc::rkp_kc_jump_label_text_reserved(start, end) }
    }

    /// Whether vmlinux's site tables were found for every kind of site the
    /// kernel checks (jump labels with their lock, inline static calls):
    /// only then can rkprobes answer for vmlinux's sites itself.
    pub(crate) fn site_tables_found(&self) -> bool {
        let jump = if self.jump_label_text_reserved {
            self.jump_table.is_some() && self.jump_label_lock
        } else {
            self.jump_table.is_none()
        };
        let calls = self.static_call_text_reserved == self.static_call_sites.is_some();
        jump && calls
    }

    /// `jump_label_lock()`; does nothing without it.
    ///
    /// # Safety
    ///
    /// Process context; the caller does not hold it, holds no lock that a
    /// jump-label update takes inside it (`text_mutex`), and calls
    /// [`Runtime::jump_label_unlock`] once.
    pub(crate) unsafe fn jump_label_lock(&self) {
        if self.jump_label_lock {
            // SAFETY: the caller's contract.
            unsafe { kc::rkp_kc_jump_label_lock() };
        }
    }

    /// `jump_label_unlock()`; does nothing without it.
    ///
    /// # Safety
    ///
    /// The caller took it with [`Runtime::jump_label_lock`].
    pub(crate) unsafe fn jump_label_unlock(&self) {
        if self.jump_label_lock {
            // SAFETY: the caller's contract.
            unsafe { kc::rkp_kc_jump_label_unlock() };
        }
    }

    /// Whether the kernel has finished booting (`system_state >=
    /// SYSTEM_RUNNING`): its init text is gone, and the site tables'
    /// checks skip the init sites.
    pub(crate) fn system_running(&self) -> bool {
        // SAFETY: `system_state` is an exported kernel variable, read once
        // (the kernel's own readers read it plainly).
        let state = unsafe { core::ptr::addr_of!(bindings::system_state).read_volatile() };
        state >= bindings::system_states_SYSTEM_RUNNING
    }

    /// Calls `f(code, init)` for each entry of vmlinux's jump table (see
    /// [`for_each_jump_entry`]). Nothing without the table.
    ///
    /// # Safety
    ///
    /// The caller holds `jump_label_lock` ([`Runtime::jump_label_lock`]).
    pub(crate) unsafe fn for_each_core_jump_entry(&self, f: impl FnMut(usize, bool)) {
        let Some((start, stop)) = self.jump_table else {
            return;
        };
        let n = (stop - start) / core::mem::size_of::<bindings::jump_entry>();
        // SAFETY: the bounds hold whole, aligned entries (`table_bounds`),
        // which vmlinux keeps for its lifetime; the caller holds the lock.
        unsafe { for_each_jump_entry(start as *const bindings::jump_entry, n, f) };
    }

    /// Calls `f(addr, init)` for each of vmlinux's inline static call
    /// sites (see [`for_each_static_call_site`]). Nothing without the
    /// table.
    pub(crate) fn for_each_core_static_call_site(&self, f: impl FnMut(usize, bool)) {
        let Some((start, stop)) = self.static_call_sites else {
            return;
        };
        let n = (stop - start) / core::mem::size_of::<bindings::static_call_site>();
        // SAFETY: as in `for_each_core_jump_entry`; vmlinux sorts and flags
        // its sites while booting and never writes them again.
        unsafe { for_each_static_call_site(start as *const bindings::static_call_site, n, f) };
    }

    /// `static_call_text_reserved()`; 0 without inline static calls.
    ///
    /// # Safety
    ///
    /// As for [`Runtime::jump_label_text_reserved`].
    pub(crate) unsafe fn static_call_text_reserved(
        &self,
        start: *mut c_void,
        end: *mut c_void,
    ) -> c_int {
        if !self.static_call_text_reserved {
            return 0;
        }
        // SAFETY: see above.
        unsafe { kc::rkp_kc_static_call_text_reserved(start, end) }
    }
}
