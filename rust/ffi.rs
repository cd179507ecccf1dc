// SPDX-License-Identifier: GPL-2.0

//! Raw declarations of kernel symbols that `kernel::bindings` does not carry.
//!
//! This is the one place where rkprobes names C symbols the kernel crate has no
//! binding for. Everything declared here is exported to modules (modpost checks
//! that at build time); symbols that are not exported are found at run time by
//! `kallsyms`, never declared here. Only the small abstractions beside this
//! file (`debugfs`, `kallsyms`, ...) use these declarations.

use core::marker::{PhantomData, PhantomPinned};
use kernel::{
    bindings,
    ffi::{c_char, c_int, c_long},
};

/// `struct die_args` of `include/linux/kdebug.h`: what a die notifier gets.
#[repr(C)]
pub(crate) struct DieArgs {
    /// Registers at the exception.
    pub(crate) regs: *mut bindings::pt_regs,
    /// Name of the event ("int3", "debug", ...).
    pub(crate) str_: *const c_char,
    /// Event-specific error code (unused by rkprobes).
    pub(crate) err: c_long,
    /// Trap number.
    pub(crate) trapnr: c_int,
    /// Signal that would be sent for a user-mode exception.
    pub(crate) signr: c_int,
}

/// `enum die_val` of `arch/x86/include/asm/kdebug.h` (the values rkprobes uses).
pub(crate) mod die_val {
    /// Breakpoint (`int3`).
    pub(crate) const DIE_INT3: u64 = 2;
    /// A trap (#DE, #OF, #BR, #UD, #TS, #NP, #SS, #AC) about to be handled.
    pub(crate) const DIE_TRAP: u64 = 8;
    /// General protection fault that the exception table did not fix.
    pub(crate) const DIE_GPF: u64 = 9;
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

extern "C" {
    /// `int register_die_notifier(struct notifier_block *nb)`.
    pub(crate) fn register_die_notifier(nb: *mut bindings::notifier_block) -> c_int;

    /// `int unregister_die_notifier(struct notifier_block *nb)`: returns once
    /// no CPU runs the notifier any more (it synchronises RCU).
    pub(crate) fn unregister_die_notifier(nb: *mut bindings::notifier_block) -> c_int;

    /// `raw_smp_processor_id()`, through `rust/glue.c`.
    pub(crate) fn rkp_smp_processor_id() -> kernel::ffi::c_uint;

    /// `in_nmi()`, through `rust/glue.c`: the NMI nesting of the current
    /// context, as bits of the preempt count. Any context.
    pub(crate) fn rkp_in_nmi() -> kernel::ffi::c_uint;

    /// `security_locked_down(LOCKDOWN_KPROBES)`, through `rust/glue.c`: 0,
    /// or the errno (`-EPERM`) while lockdown forbids new probes. Process
    /// context.
    pub(crate) fn rkp_locked_down_kprobes() -> c_int;

    /// `preempt_disable()`, through `rust/glue.c`.
    pub(crate) fn rkp_preempt_disable();

    /// `preempt_enable()`, through `rust/glue.c`.
    pub(crate) fn rkp_preempt_enable();

    /// `local_irq_save()`, through `rust/glue.c`: returns the flags to restore.
    pub(crate) fn rkp_local_irq_save() -> kernel::ffi::c_ulong;

    /// `local_irq_restore()`, through `rust/glue.c`.
    pub(crate) fn rkp_local_irq_restore(flags: kernel::ffi::c_ulong);

    /// `num_possible_cpus()`, through `rust/glue.c`.
    pub(crate) fn rkp_num_possible_cpus() -> kernel::ffi::c_uint;

    /// `current`, through `rust/glue.c`, without a reference: only compared.
    pub(crate) fn rkp_current_task() -> *mut kernel::ffi::c_void;

    /// `get_task_struct(current)`, through `rust/glue.c`: the current task,
    /// with a reference taken. Any context.
    pub(crate) fn rkp_get_current_task() -> *mut kernel::ffi::c_void;

    /// `put_task_struct()`, through `rust/glue.c`. Any context for a running
    /// task's reference; process context when it may be the last one.
    pub(crate) fn rkp_put_task(task: *mut kernel::ffi::c_void);

    /// Whether a referenced task has run for the last time (`rust/glue.c`).
    pub(crate) fn rkp_task_is_dead(task: *mut kernel::ffi::c_void) -> c_int;

    /// `__module_get(THIS_MODULE)`, through `rust/glue.c`.
    pub(crate) fn rkp_module_get_self();

    /// `module_put(THIS_MODULE)`, through `rust/glue.c`. Any context.
    pub(crate) fn rkp_module_put_self();

    /// Queues the reclaim of kretprobe instances (`rust/glue.c`). Any
    /// context, NMI included.
    pub(crate) fn rkp_kick_gc();

    /// Queues the reclaim of kretprobe instances in a second
    /// (`rust/glue.c`). Any context but NMI.
    pub(crate) fn rkp_kick_gc_later();

    /// Waits until no reclaim is queued or running (`rust/glue.c`).
    /// Process context.
    pub(crate) fn rkp_gc_sync();

    /// `unsigned int stack_trace_save(unsigned long *store, unsigned int size,
    /// unsigned int skipnr)`.
    pub(crate) fn stack_trace_save(
        store: *mut kernel::ffi::c_ulong,
        size: kernel::ffi::c_uint,
        skipnr: kernel::ffi::c_uint,
    ) -> kernel::ffi::c_uint;

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
        data: *mut kernel::ffi::c_void,
        fops: *const bindings::file_operations,
    ) -> *mut Dentry;

    /// `void debugfs_remove(struct dentry *dentry)`: removes a dentry and
    /// everything below it; accepts NULL and `ERR_PTR` values.
    pub(crate) fn debugfs_remove(dentry: *mut Dentry);
}
