// SPDX-License-Identifier: GPL-2.0

//! Kernel modules: a module seen during a notification, a reference that
//! keeps one loaded, and rkprobes' own.

use crate::{
    ffi::{
        self,
        runtime::{self, Runtime},
    },
    kernel_ext::sync::PreemptGuard,
};
use core::ops::{Deref, Range};
use core::sync::atomic::{AtomicUsize, Ordering};
use kernel::{ffi::c_ulong, types::Opaque};

/// Which module something belongs to, or vmlinux: only ever compared, so
/// it holds no reference and may outlive the module (the address is then
/// only a number that no live module of the same time has).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ModuleId(usize);

impl ModuleId {
    /// vmlinux (no module).
    pub(crate) const VMLINUX: Self = Self(0);
}

/// A `struct module`, borrowed for as long as something keeps it alive (a
/// module notification, or a [`ModuleRef`]).
#[repr(transparent)]
pub(crate) struct Module(Opaque<ffi::module>);

impl Module {
    /// The module at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is a live `struct module` that stays alive for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut ffi::module) -> &'a Self {
        // SAFETY: `Module` is a transparent wrapper of `struct module`; the
        // caller keeps it alive for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The C structure, only to be compared or passed to C.
    pub(crate) fn as_ptr(&self) -> *mut ffi::module {
        self.0.get()
    }

    /// The module's identity, to compare with later.
    pub(crate) fn id(&self) -> ModuleId {
        ModuleId(self.as_ptr() as usize)
    }

    /// The module's name, without its NUL.
    pub(crate) fn name(&self) -> &[u8] {
        // SAFETY: a live module (invariant of the borrow); its name is a
        // fixed array written before the module is visible.
        let name = unsafe { &(*self.0.get()).name };
        // SAFETY: `c_char` and `u8` have the same layout.
        let bytes = unsafe { core::slice::from_raw_parts(name.as_ptr().cast::<u8>(), name.len()) };
        let len = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
        bytes.get(..len).unwrap_or(&[])
    }

    /// The address range of the module's core text.
    pub(crate) fn text(&self) -> Range<usize> {
        // SAFETY: a live module; its memory layout is read, not its text.
        let m = unsafe { &(*self.0.get()).mem[ffi::mod_mem_type_MOD_TEXT as usize] };
        let start = m.base as usize;
        start..start.saturating_add(m.size as usize)
    }

    /// The address range of the module's init text (only compared: it may
    /// be freed already).
    pub(crate) fn init_text(&self) -> Range<usize> {
        // SAFETY: a live module; its memory layout is read, not its text.
        let m = unsafe { &(*self.0.get()).mem[ffi::mod_mem_type_MOD_INIT_TEXT as usize] };
        let start = m.base as usize;
        start..start.saturating_add(m.size as usize)
    }

    /// The address range of the module's own `.noinstr.text`.
    pub(crate) fn noinstr_text(&self) -> Range<usize> {
        // SAFETY: as in `init_text`.
        let (start, size) = unsafe {
            let m = &*self.0.get();
            (m.noinstr_text_start as usize, m.noinstr_text_size as usize)
        };
        start..start.saturating_add(size)
    }

    /// Calls `f(code, init)` for each of the module's jump-label sites
    /// (`ffi::runtime::for_each_jump_entry`).
    ///
    /// # Safety
    ///
    /// The caller holds `jump_label_lock`.
    pub(crate) unsafe fn for_each_jump_entry(&self, f: impl FnMut(usize, bool)) {
        #[cfg(CONFIG_JUMP_LABEL)]
        // SAFETY: a live module's table of `num_jump_entries` entries,
        // which the kernel writes under `jump_label_lock` (the caller's).
        unsafe {
            let m = &*self.0.get();
            runtime::for_each_jump_entry(m.jump_entries, m.num_jump_entries as usize, f)
        };
        #[cfg(not(CONFIG_JUMP_LABEL))]
        let _ = f;
    }

    /// Calls `f(addr, init)` for each of the module's inline static call
    /// sites (`ffi::runtime::for_each_static_call_site`). Process context,
    /// on a module that is coming or live.
    pub(crate) fn for_each_static_call_site(&self, f: impl FnMut(usize, bool)) {
        #[cfg(CONFIG_HAVE_STATIC_CALL_INLINE)]
        // SAFETY: a live module's table of `num_static_call_sites` sites,
        // sorted and flagged by the COMING notification, before any probe
        // can be placed in the module's text.
        unsafe {
            let m = &*self.0.get();
            let n = usize::try_from(m.num_static_call_sites).unwrap_or(0);
            runtime::for_each_static_call_site(m.static_call_sites, n, f)
        };
        #[cfg(not(CONFIG_HAVE_STATIC_CALL_INLINE))]
        let _ = f;
    }

    /// Whether `addr` is in this module's text (core or init).
    pub(crate) fn has_text_address(&self, rt: &Runtime, addr: usize) -> bool {
        let _preempt = PreemptGuard::new();
        // SAFETY: preemption is disabled, as `__module_text_address` wants;
        // the result is only compared.
        let m = unsafe { rt.module_text_address(addr as c_ulong) };
        m == self.as_ptr()
    }

    /// Whether the module is still coming (`MODULE_STATE_COMING`: its init
    /// has not finished).
    pub(crate) fn is_coming(&self) -> bool {
        // SAFETY: as in `init_text`.
        unsafe { (*self.0.get()).state == ffi::module_state_MODULE_STATE_COMING }
    }
}

/// A reference on a module (`try_module_get()`), which keeps it from
/// unloading until dropped (`module_put()`). Process context.
///
/// # Invariants
///
/// `module` is a live module on which this value holds one reference.
pub(crate) struct ModuleRef {
    module: *mut ffi::module,
}

impl ModuleRef {
    /// A reference on the module whose text contains `addr`; `None` when no
    /// module's does, or the module is going. Process context.
    pub(crate) fn of_text_address(rt: &Runtime, addr: usize) -> Option<Self> {
        let _preempt = PreemptGuard::new();
        // SAFETY: `__module_text_address` wants preemption disabled, which
        // the guard provides; the module found is pinned with a reference
        // before preemption is enabled again.
        let module = unsafe { rt.module_text_address(addr as c_ulong) };
        // SAFETY: a live module (preemption holds off its freeing).
        if module.is_null() || !unsafe { ffi::try_module_get(module) } {
            return None;
        }
        // INVARIANT: the reference was taken just above.
        Some(Self { module })
    }
}

impl ModuleRef {
    /// A reference on the loaded module named `name`; `None` when there is
    /// none, it is going, or the kernel's `find_module` was not found.
    /// Process context.
    pub(crate) fn by_name(rt: &Runtime, name: &kernel::str::CStr) -> Option<Self> {
        let _preempt = PreemptGuard::new();
        // SAFETY: `find_module` with preemption disabled, which the guard
        // provides; the module is pinned with a reference before preemption
        // is enabled again.
        let module = unsafe { rt.find_module(name.as_char_ptr()) }?;
        // SAFETY: a live module (preemption holds off its freeing).
        if module.is_null() || !unsafe { ffi::try_module_get(module) } {
            return None;
        }
        // INVARIANT: the reference was taken just above.
        Some(Self { module })
    }
}

impl Deref for ModuleRef {
    type Target = Module;

    fn deref(&self) -> &Module {
        // SAFETY: the reference keeps the module alive (type invariant).
        unsafe { Module::from_raw(self.module) }
    }
}

impl Drop for ModuleRef {
    fn drop(&mut self) {
        // SAFETY: the reference taken in `of_text_address` (type invariant).
        unsafe { ffi::module_put(self.module) };
    }
}

/// The address range of rkprobes' own text; `None` if it wraps around.
pub(crate) fn this_module_text() -> Option<Range<usize>> {
    // SAFETY: `__this_module` is this module's `struct module`, live while
    // the module is; its text memory does not move.
    let text = unsafe {
        (*core::ptr::addr_of!(ffi::__this_module)).mem[ffi::mod_mem_type_MOD_TEXT as usize]
    };
    let start = text.base as usize;
    Some(start..start.checked_add(text.size as usize)?)
}

/// Takes a reference on rkprobes itself (`__module_get(THIS_MODULE)`),
/// which keeps it loaded until [`put_self`] gives it back. Any context.
pub(crate) fn get_self() {
    // SAFETY: rkprobes is running, so it is live; no other precondition.
    unsafe { ffi::rkp_module_get_self() };
}

/// Gives back a reference that [`get_self`] took. Any context, NMI
/// included.
///
/// # Safety
///
/// The caller owns a reference from [`get_self`] and gives it up.
pub(crate) unsafe fn put_self() {
    // SAFETY: the caller's contract.
    unsafe { ffi::rkp_module_put_self() };
}

/// A reference on rkprobes itself, which keeps it loaded: taken by
/// [`SelfRef::get`], given back when dropped. Any context, NMI included.
///
/// # Invariants
///
/// The value owns one reference on rkprobes, taken by [`get_self`].
pub(crate) struct SelfRef(());

impl SelfRef {
    /// Takes a reference on rkprobes. Any context.
    pub(crate) fn get() -> Self {
        get_self();
        // INVARIANT: the reference just taken.
        SelfRef(())
    }
}

impl Drop for SelfRef {
    fn drop(&mut self) {
        // SAFETY: the value owns a reference from `get_self` (the type
        // invariant), which it gives up here.
        unsafe { put_self() };
    }
}

/// References on rkprobes kept on behalf of objects that wait for
/// something to return into rkprobes' code, counted, so that whoever sees
/// the wait end can give one back without reading the object, which may be
/// gone by then. Any context, NMI included, lock-free.
///
/// # Invariants
///
/// `held` is the number of references on rkprobes that the value owns,
/// each given up by a [`SelfRef`].
pub(crate) struct SelfRefs {
    held: AtomicUsize,
}

impl SelfRefs {
    /// No references.
    pub(crate) const fn new() -> Self {
        SelfRefs {
            held: AtomicUsize::new(0),
        }
    }

    /// Keeps `r`. Any context.
    pub(crate) fn add(&self, r: SelfRef) {
        self.held.fetch_add(1, Ordering::Relaxed);
        // INVARIANT: counted just now.
        core::mem::forget(r);
    }

    /// Takes one of the references back, if there is one. Any context.
    pub(crate) fn take(&self) -> Option<SelfRef> {
        self.held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .ok()?;
        // INVARIANT: the decrement hands one reference to the returned
        // value.
        Some(SelfRef(()))
    }
}

impl Drop for SelfRefs {
    fn drop(&mut self) {
        while let Some(r) = self.take() {
            drop(r);
        }
    }
}
