// SPDX-License-Identifier: GPL-2.0

//! Kernel symbols exported to modules that `kernel::bindings` does not
//! carry, and the C types and values that go with them.
//!
//! Everything declared here is exported (modpost checks that at build time);
//! symbols that are not exported are found at run time by `super::runtime`,
//! never declared here.

use core::marker::{PhantomData, PhantomPinned};
use kernel::{
    bindings,
    ffi::{c_char, c_int, c_long, c_uint, c_ulong, c_void},
};

/// `struct die_args` of `include/linux/kdebug.h`: what a die notifier gets.
#[repr(C)]
pub(crate) struct DieArgs {
    /// Registers at the exception.
    pub(crate) regs: *mut bindings::pt_regs,
    /// Name of the event ("int3", "debug", ...).
    pub(crate) str_: *const c_char,
    /// Event-specific error code; for `DIE_DEBUG`, the address of DR6's value.
    pub(crate) err: c_long,
    /// Trap number.
    pub(crate) trapnr: c_int,
    /// Signal that would be sent for a user-mode exception.
    pub(crate) signr: c_int,
}

/// `enum die_val` of `arch/x86/include/asm/kdebug.h` (the values rkprobes uses).
pub(crate) mod die_val {
    /// An oops is being reported (`__die_body()`), the task about to die.
    pub(crate) const DIE_OOPS: u64 = 1;
    /// Breakpoint (`int3`).
    pub(crate) const DIE_INT3: u64 = 2;
    /// Debug exception (#DB); the event's `err` points to the DR6 value.
    pub(crate) const DIE_DEBUG: u64 = 3;
    /// A trap (#DE, #OF, #BR, #UD, #TS, #NP, #SS, #AC) about to be handled.
    pub(crate) const DIE_TRAP: u64 = 8;
    /// General protection fault that the exception table did not fix.
    pub(crate) const DIE_GPF: u64 = 9;
}

/// `struct tp_module` of `include/linux/tracepoint.h`: what the tracepoint
/// module chain passes its notifiers.
#[repr(C)]
pub(crate) struct TpModule {
    /// Its place in the tracepoint code's list of modules.
    pub(crate) list: bindings::list_head,
    /// The module whose tracepoints come or go.
    pub(crate) module: *mut bindings::module,
}

/// `NOTIFY_DONE`: not ours, let the next notifier look.
pub(crate) const NOTIFY_DONE: c_int = 0;
/// `NOTIFY_STOP`: handled; the exception is consumed.
pub(crate) const NOTIFY_STOP: c_int = 0x8001;

/// `struct dentry`, only ever handled by pointer.
///
/// The generated binding for `struct dentry` contains members that rustc
/// judges not FFI-safe; an opaque type is all rkprobes needs.
#[repr(C)]
pub(crate) struct Dentry {
    _data: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

// Without lock debugging (the kernels users run) `struct lockdep_map`, inside
// `struct module` and `struct file_operations`, is empty, which rustc calls
// not FFI-safe; only addresses of these types cross the boundary.
#[allow(improper_ctypes)]
extern "C" {
    /// `int register_die_notifier(struct notifier_block *nb)`.
    pub(crate) fn register_die_notifier(nb: *mut bindings::notifier_block) -> c_int;

    /// `int unregister_die_notifier(struct notifier_block *nb)`: returns once
    /// no CPU runs the notifier any more (it synchronises RCU).
    pub(crate) fn unregister_die_notifier(nb: *mut bindings::notifier_block) -> c_int;

    /// `int register_tracepoint_module_notifier(struct notifier_block *nb)`:
    /// adds `nb` to the chain of modules whose tracepoints come and go, and
    /// calls it with `MODULE_STATE_COMING` for each loaded module that has
    /// tracepoints. The data is a `struct tp_module` ([`TpModule`]).
    pub(crate) fn register_tracepoint_module_notifier(nb: *mut bindings::notifier_block) -> c_int;

    /// `int unregister_tracepoint_module_notifier(struct notifier_block *nb)`:
    /// removes `nb`, then calls it with `MODULE_STATE_GOING` for each loaded
    /// module that has tracepoints.
    pub(crate) fn unregister_tracepoint_module_notifier(nb: *mut bindings::notifier_block)
        -> c_int;

    /// `unsigned int stack_trace_save(unsigned long *store, unsigned int size,
    /// unsigned int skipnr)`.
    pub(crate) fn stack_trace_save(store: *mut c_ulong, size: c_uint, skipnr: c_uint) -> c_uint;

    /// This module's `struct module`, defined by modpost in the `.mod.c` file.
    pub(crate) static mut __this_module: bindings::module;

    /// `struct dentry *debugfs_create_dir(const char *name, struct dentry *parent)`.
    ///
    /// Returns an `ERR_PTR` on failure (also when debugfs is disabled).
    pub(crate) fn debugfs_create_dir(name: *const c_char, parent: *mut Dentry) -> *mut Dentry;

    /// `struct dentry *debugfs_create_file(const char *name, umode_t mode,
    /// struct dentry *parent, void *data, const struct file_operations *fops)`.
    ///
    /// The file is reached through debugfs' proxy operations, which make
    /// `debugfs_remove` wait for callers still inside `fops`.
    pub(crate) fn debugfs_create_file(
        name: *const c_char,
        mode: bindings::umode_t,
        parent: *mut Dentry,
        data: *mut c_void,
        fops: *const bindings::file_operations,
    ) -> *mut Dentry;

    /// `void debugfs_remove(struct dentry *dentry)`: removes a dentry and
    /// everything below it; accepts NULL and `ERR_PTR` values.
    pub(crate) fn debugfs_remove(dentry: *mut Dentry);
}
