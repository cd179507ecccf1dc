// SPDX-License-Identifier: GPL-2.0

//! The text sites that the kernel's other patchers own, jump labels and
//! inline static calls, under the lock that keeps them still.
//!
//! The kernel writes its jump-label tables, and patches jump-label sites,
//! under `jump_label_lock` (with `text_mutex` taken inside it); its own
//! kprobes read the sites under that lock. A [`JumpLabelGuard`] holds it,
//! and the walks of the tables and the kernel's checks that need it are its
//! methods, so that the type says the lock is held.
//!
//! Lock order: `jump_label_lock` is taken in process context, never with
//! `text_mutex` held, and nothing is taken under it here.

use crate::{ffi::runtime::Runtime, kernel_ext::module::Module};
use core::{ffi::c_void, marker::PhantomData};

/// `jump_label_lock`, held: no jump-label site is being patched, and the
/// kernel's jump-label tables may be read.
///
/// Process context.
///
/// # Invariants
///
/// `rt`'s `jump_label_lock` is held until the guard drops.
#[must_use = "jump_label_lock is released when the guard is dropped"]
pub(crate) struct JumpLabelGuard<'a> {
    rt: &'a Runtime,
    _not_send: PhantomData<*mut ()>,
}

impl<'a> JumpLabelGuard<'a> {
    /// Takes `jump_label_lock` (nothing without one). Process context, may
    /// sleep; the caller holds neither it nor `text_mutex`.
    pub(crate) fn lock(rt: &'a Runtime) -> Self {
        // SAFETY: process context; the lock order above keeps `text_mutex`
        // and the lock itself out of the caller's hands; the guard unlocks
        // once.
        unsafe { rt.jump_label_lock() };
        // INVARIANT: held from here until `drop`.
        Self {
            rt,
            _not_send: PhantomData,
        }
    }

    /// Calls `f(code, init)` for each entry of vmlinux's jump table: the
    /// site's address and whether it is an init site. Nothing without the
    /// table.
    pub(crate) fn for_each_core_jump_entry(&self, f: impl FnMut(usize, bool)) {
        // SAFETY: `jump_label_lock` is held (type invariant).
        unsafe { self.rt.for_each_core_jump_entry(f) };
    }

    /// Calls `f(code, init)` for each of `m`'s jump-label sites, as
    /// [`JumpLabelGuard::for_each_core_jump_entry`].
    pub(crate) fn for_each_module_jump_entry(&self, m: &Module, f: impl FnMut(usize, bool)) {
        // SAFETY: `jump_label_lock` is held (type invariant).
        unsafe { m.for_each_jump_entry(f) };
    }

    /// Whether a jump-label or static-call site overlaps `start..=end`, by
    /// the kernel's own walks: `jump_label_text_reserved() ||
    /// static_call_text_reserved()`.
    pub(crate) fn text_reserved(&self, start: usize, end: usize) -> bool {
        let (s, e) = (start as *mut c_void, end as *mut c_void);
        // SAFETY: `jump_label_lock` is held (type invariant), as the
        // kernel's kprobes hold it around these calls; process context.
        unsafe {
            self.rt.jump_label_text_reserved(s, e) != 0
                || self.rt.static_call_text_reserved(s, e) != 0
        }
    }
}

impl Drop for JumpLabelGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: taken in `lock` (type invariant).
        unsafe { self.rt.jump_label_unlock() };
    }
}
