// SPDX-License-Identifier: GPL-2.0

//! Tasks as the kretprobe hit path sees them: the current task's identity,
//! and counted references kept as raw pointers in lock-free instance slots
//! (an `ARef<Task>` cannot live in an `AtomicPtr`, and its drop may free the
//! task, which the hit path must never do).

use crate::ffi;
use core::sync::atomic::{AtomicI32, Ordering};
use kernel::ffi::{c_ulong, c_void};

/// The current task's address, only to be compared, never dereferenced.
/// Any context, NMI included.
pub(crate) fn current_id() -> *mut c_void {
    ffi::percpu::current_task()
}

/// The reference count of `task` (`task->usage`, a `refcount_t`).
///
/// # Safety
///
/// `task` is a live task.
unsafe fn usage<'a>(task: *mut c_void) -> &'a AtomicI32 {
    // SAFETY: the caller's contract; `refcount_t` is an `atomic_t`, which
    // the kernel only updates atomically.
    unsafe {
        AtomicI32::from_ptr(core::ptr::addr_of_mut!(
            (*task.cast::<ffi::task_struct>()).usage.refs.counter
        ))
    }
}

/// Takes a reference on the current task (`get_task_struct(current)`) and
/// returns it raw, for [`put_raw`] to drop. Any context, NMI included.
///
/// Inline, as the kernel's `refcount_inc()` is (the calls cost 14
/// instructions of every kretprobe hit): the running task's count is above
/// zero, so the one increment is the whole work unless the count is
/// saturated, which is left to the kernel's own `refcount_inc()` to report.
#[inline]
pub(crate) fn get_current_raw() -> *mut c_void {
    let task = current_id();
    // SAFETY: the current task is live while it runs.
    let count = unsafe { usage(task) };
    let old = count.fetch_add(1, Ordering::Relaxed);
    if old <= 0 || old == i32::MAX {
        // Never for a running task short of a leak of 2^31 references:
        // undone, and taken by the kernel, which warns and saturates.
        count.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: no preconditions; a running task's count is above zero.
        return unsafe { ffi::rkp_get_current_task() };
    }
    task
}

/// Drops a reference from [`get_current_raw`], taken by the task the caller
/// runs as (a kretprobe's return).
///
/// Inline (`refcount_dec_and_test()`'s fast path; 9 instructions of every
/// kretprobe return as a call): a running task holds its own reference, so
/// this put is never the last. A broken count is put back and left to the
/// kernel's `put_task_struct()`, which reports it.
///
/// # Safety
///
/// `task` came from [`get_current_raw`], is put once, and is the task the
/// caller runs as.
#[inline]
pub(crate) unsafe fn put_current_raw(task: *mut c_void) {
    // SAFETY: the reference being put keeps the task alive until here.
    let count = unsafe { usage(task) };
    // Release, as `refcount_dec_and_test()`: the holder's accesses to the
    // task come before the count drops.
    if count.fetch_sub(1, Ordering::Release) > 1 {
        return;
    }
    // The count was broken (a running task's is at least 2 here): put
    // back, and left to the kernel, which warns.
    count.fetch_add(1, Ordering::Relaxed);
    // SAFETY: the caller's contract; the reference is held again.
    unsafe { ffi::rkp_put_task(task) }
}

/// Drops a reference from [`get_current_raw`] on a task that may have
/// exited (`put_task_struct()`): the last put frees it.
///
/// # Safety
///
/// `task` came from [`get_current_raw`] and is put once. Process context.
pub(crate) unsafe fn put_raw(task: *mut c_void) {
    // SAFETY: the caller's contract.
    unsafe { ffi::rkp_put_task(task) }
}

/// Whether a task has run for the last time (it will never return through
/// its frames). Any context.
///
/// # Safety
///
/// `task`'s memory is live: it is referenced, or was when the caller's
/// RCU read-side section began (a task's memory outlives a grace period
/// after its death: its own reference is put by an RCU callback).
pub(crate) unsafe fn is_dead(task: *mut c_void) -> bool {
    // SAFETY: the caller's contract keeps the task's memory.
    unsafe { ffi::rkp_task_is_dead(task) != 0 }
}

/// `stack_trace_save()`: the current task's stack trace into `store`,
/// skipping `skip` entries; returns the number of entries. Any context.
pub(crate) fn stack_trace_save(store: &mut [c_ulong], skip: u32) -> usize {
    let len = store.len().min(u32::MAX as usize) as u32;
    // SAFETY: `store` has room for `len` entries.
    unsafe { ffi::stack_trace_save(store.as_mut_ptr(), len, skip) as usize }
}

/// Sleeps for at least `ms` milliseconds (`msleep()`). Process context.
pub(crate) fn msleep(ms: u32) {
    // SAFETY: process context is the caller's (documented) contract; the
    // call has no other precondition.
    unsafe { ffi::msleep(ms) };
}
