// SPDX-License-Identifier: GPL-2.0

//! Tasks as the kretprobe hit path sees them: the current task's identity,
//! and counted references kept as raw pointers in lock-free instance slots
//! (an `ARef<Task>` cannot live in an `AtomicPtr`, and its drop may free the
//! task, which the hit path must never do).

use crate::ffi;
use kernel::ffi::{c_ulong, c_void};

/// The current task's address, only to be compared, never dereferenced.
/// Any context, NMI included.
pub(crate) fn current_id() -> *mut c_void {
    ffi::percpu::current_task()
}

/// Takes a reference on the current task (`get_task_struct(current)`) and
/// returns it raw, for [`put_raw`] to drop. Any context, NMI included.
pub(crate) fn get_current_raw() -> *mut c_void {
    // SAFETY: no preconditions; a running task's count is above zero.
    unsafe { ffi::rkp_get_current_task() }
}

/// Drops a reference from [`get_current_raw`].
///
/// # Safety
///
/// `task` came from [`get_current_raw`] and is put once. Unless the caller
/// runs as that task (whose reference cannot be the last one while it
/// runs), process context: the last put frees the task.
pub(crate) unsafe fn put_raw(task: *mut c_void) {
    // SAFETY: the caller's contract.
    unsafe { ffi::rkp_put_task(task) }
}

/// Whether a task has run for the last time (it will never return through
/// its frames). Any context.
///
/// # Safety
///
/// `task` is referenced (from [`get_current_raw`], not yet put).
pub(crate) unsafe fn is_dead(task: *mut c_void) -> bool {
    // SAFETY: the caller's contract keeps the task alive.
    unsafe { ffi::rkp_task_is_dead(task) != 0 }
}

/// `stack_trace_save()`: the current task's stack trace into `store`,
/// skipping `skip` entries; returns the number of entries. Any context.
pub(crate) fn stack_trace_save(store: &mut [c_ulong], skip: u32) -> usize {
    let len = store.len().min(u32::MAX as usize) as u32;
    // SAFETY: `store` has room for `len` entries.
    unsafe { ffi::stack_trace_save(store.as_mut_ptr(), len, skip) as usize }
}
