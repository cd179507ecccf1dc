// SPDX-License-Identifier: GPL-2.0

//! Tasks as the kretprobe hit path sees them: the current task's identity,
//! and counted references kept as raw pointers in lock-free instance slots
//! (an `ARef<Task>` cannot live in an `AtomicPtr`, and its drop may free the
//! task, which the hit path must never do).

use super::objpool::Token;
use crate::ffi::{self, runtime::Runtime};
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicI32, Ordering},
};
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

/// A counted reference on a task (`get_task_struct()`), kept as a raw
/// pointer so that it fits a lock-free slot ([`Token`]); dropping it puts
/// the reference (`put_task_struct()`).
///
/// Dropping it may free the task, which only process context may do unless
/// the reference is known not to be the last: the hit path puts its
/// references with [`TaskRef::put_on_return`].
///
/// # Invariants
///
/// The pointer is a live `task_struct` on which this value holds one
/// reference.
pub(crate) struct TaskRef(NonNull<c_void>);

// SAFETY: a reference on a task may be put by any task on any CPU.
unsafe impl Send for TaskRef {}

impl TaskRef {
    /// Takes a reference on the current task (`get_task_struct(current)`).
    /// Any context, NMI included.
    ///
    /// Inline, as the kernel's `refcount_inc()` is (the calls cost 14
    /// instructions of every kretprobe hit): the running task's count is
    /// above zero, so the one increment is the whole work unless the count
    /// is saturated, which is left to the kernel's own `refcount_inc()` to
    /// report.
    #[inline]
    pub(crate) fn current() -> Self {
        let task = current_id();
        // SAFETY: the current task is live while it runs.
        let count = unsafe { usage(task) };
        let old = count.fetch_add(1, Ordering::Relaxed);
        let task = if old <= 0 || old == i32::MAX {
            // Never for a running task short of a leak of 2^31 references:
            // undone, and taken by the kernel, which warns and saturates.
            count.fetch_sub(1, Ordering::Relaxed);
            // SAFETY: no preconditions; a running task's count is above
            // zero.
            unsafe { ffi::rkp_get_current_task() }
        } else {
            task
        };
        // SAFETY: `current` is never null.
        // INVARIANT: a reference was taken on the live current task.
        TaskRef(unsafe { NonNull::new_unchecked(task) })
    }

    /// Puts the reference that a kretprobe instance held for its frame,
    /// from the trampoline, when the frame has returned. Any context, NMI
    /// included; never frees the task. Returns the reference if putting it
    /// here would have been the last (see [`TaskRef::put_last_on_return`]),
    /// for the caller to hand to process context.
    ///
    /// Inline: one decrement (`refcount_dec_and_test()`'s fast path) is the
    /// whole work when the count stays above zero, which it does for the
    /// task the caller runs as (a running task holds its own reference) and
    /// in practice for `__switch_to`'s `prev` too. A decrement that reached
    /// zero is undone: the reference was the last (a dead `prev`), which is
    /// handed back, or the count was broken, which the kernel's
    /// `put_task_struct()` reports. The moment at zero is seen by no one: a
    /// task's count may be taken only by holders of a reference (there is
    /// none but this one) or within an RCU read-side section that found the
    /// task while its own reference was still held (that one was put after
    /// a grace period, which every such section has ended).
    #[inline]
    #[must_use = "a reference handed back must be put in process context"]
    pub(crate) fn put_on_return(self) -> Option<Self> {
        // SAFETY: the reference being put keeps the task alive until here.
        let count = unsafe { usage(self.0.as_ptr()) };
        // Release, as `refcount_dec_and_test()`: the holder's accesses to
        // the task come before the count drops.
        if count.fetch_sub(1, Ordering::Release) > 1 {
            // The reference is put: not dropped again.
            let _ = core::mem::ManuallyDrop::new(self);
            return None;
        }
        count.fetch_add(1, Ordering::Relaxed);
        self.put_last_on_return()
    }

    /// [`TaskRef::put_on_return`] when the count would have reached zero
    /// (it is back where it was).
    ///
    /// For the task the caller runs as, the count is broken (a running task
    /// holds another reference): the reference is put by the kernel's
    /// `put_task_struct()`, which reports it and never frees a running task.
    /// For another task (`__switch_to`'s `prev`, whose frame returns as the
    /// next task, with interrupts off and the runqueue's lock held, where
    /// `put_task_struct()` must not free a task), the reference is handed
    /// back. That does not happen in practice: `prev` keeps its own
    /// reference (the one `delayed_put_task_struct()` puts once its
    /// `rcu_users` are gone) until `finish_task_switch()` drops the
    /// scheduler's `rcu_users` of a dead `prev`, which it does only after
    /// `__switch_to` has returned through the stub and this put is done.
    #[cold]
    #[inline(never)]
    fn put_last_on_return(self) -> Option<Self> {
        if self.0.as_ptr() != current_id() {
            return Some(self);
        }
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: the reference this value holds, put once here (the value
        // is not dropped).
        unsafe { ffi::rkp_put_task(this.0.as_ptr()) };
        None
    }
}

impl Drop for TaskRef {
    fn drop(&mut self) {
        // SAFETY: the reference this value holds (the type invariant), put
        // once.
        unsafe { ffi::rkp_put_task(self.0.as_ptr()) }
    }
}

// SAFETY: `into_raw` gives up the non-null task pointer with its reference,
// and `from_raw` takes both back; two references on one task are
// interchangeable.
unsafe impl Token for TaskRef {
    fn into_raw(self) -> NonNull<c_void> {
        core::mem::ManuallyDrop::new(self).0
    }

    unsafe fn from_raw(p: NonNull<c_void>) -> Self {
        // INVARIANT: `p` came from `into_raw`, with its reference (the
        // caller's contract).
        TaskRef(p)
    }
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

/// `stack_trace_save_regs()` from the frame whose code is at `ip` and whose
/// stack pointer is `sp`, in the current task, into `store`; returns the
/// number of entries (0 without the kernel's `stack_trace_save_regs()`).
/// Any context. Any `ip` and `sp` are safe: the unwinder reads the stack
/// only where it checked that the current task's stacks are, and a frame
/// it cannot make sense of ends the walk.
pub(crate) fn stack_trace_save_from(
    rt: &Runtime,
    ip: usize,
    sp: usize,
    store: &mut [c_ulong],
) -> usize {
    // SAFETY: an all-zero `pt_regs` is valid (integers).
    let mut regs: ffi::pt_regs = unsafe { core::mem::zeroed() };
    regs.ip = ip as _;
    regs.sp = sp as _;
    let len = store.len().min(u32::MAX as usize) as u32;
    // SAFETY: `regs` describe a frame of the current task as far as the
    // unwinder is concerned (it checks every stack access, above); `store`
    // has room for `len` entries.
    let n = unsafe { rt.stack_trace_save_regs(&mut regs, store.as_mut_ptr(), len, 0) };
    (n as usize).min(store.len())
}

/// Sleeps for at least `ms` milliseconds (`msleep()`). Process context.
pub(crate) fn msleep(ms: u32) {
    // SAFETY: process context is the caller's (documented) contract; the
    // call has no other precondition.
    unsafe { ffi::msleep(ms) };
}
