// SPDX-License-Identifier: GPL-2.0

//! Preemption, interrupts and RCU.

use super::list::ReadSection;
use crate::ffi::{self, runtime::Runtime};
use core::{
    marker::PhantomData,
    sync::atomic::{AtomicU32, Ordering},
};

/// Preemption disabled (`preempt_disable()`) until the guard drops; on a
/// preemptible kernel also an RCU read-side critical section.
///
/// Any context; while it lives the code may not sleep.
///
/// # Invariants
///
/// This guard disabled preemption once on this CPU, and enables it once
/// when dropped. It is `!Send`: it must drop on the CPU that made it.
#[must_use = "preemption is enabled again when the guard is dropped"]
pub(crate) struct PreemptGuard {
    _not_send: PhantomData<*mut ()>,
}

impl PreemptGuard {
    /// Disables preemption.
    pub(crate) fn new() -> Self {
        // SAFETY: no preconditions; undone in `drop`.
        unsafe { ffi::rkp_preempt_disable() };
        // INVARIANT: disabled just above.
        Self {
            _not_send: PhantomData,
        }
    }
}

impl Drop for PreemptGuard {
    fn drop(&mut self) {
        // SAFETY: disabled by `new` on this CPU (type invariant).
        unsafe { ffi::rkp_preempt_enable() };
    }
}

/// Preemption disabled without tracing (`preempt_disable_notrace()`) until
/// the guard drops: the hit path's [`PreemptGuard`], as the kernel's ftrace
/// callbacks disable preemption (no preemption tracer or debug accounting
/// called from inside a probe). On a preemptible kernel also an RCU
/// read-side critical section.
///
/// Any context; while it lives the code may not sleep.
///
/// # Invariants
///
/// As [`PreemptGuard`]'s.
#[must_use = "preemption is enabled again when the guard is dropped"]
pub(crate) struct PreemptNotraceGuard {
    _not_send: PhantomData<*mut ()>,
}

impl PreemptNotraceGuard {
    /// Disables preemption.
    #[inline(always)]
    pub(crate) fn new() -> Self {
        // Inline, as the kernel's: a call each way costs 7 instructions of
        // a jump-optimized hit (insn-profile).
        ffi::percpu::preempt_count_inc();
        // INVARIANT: disabled just above.
        Self {
            _not_send: PhantomData,
        }
    }
}

impl Drop for PreemptNotraceGuard {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: disabled by `new` in this context (type invariant).
        unsafe { ffi::percpu::preempt_enable_notrace() };
    }
}

// SAFETY: preemption off is an RCU read-side critical section, which
// `synchronize_rcu()` waits for (RCU-sched has been part of RCU since 4.20),
// for as long as the guard lives; it is `!Send`.
unsafe impl ReadSection for PreemptGuard {}
// SAFETY: as for `PreemptGuard`.
unsafe impl ReadSection for PreemptNotraceGuard {}

/// Interrupts or preemption off, as the hit paths enter: the int3 handler
/// and the fault handlers (exception context, interrupts off or preemption
/// disabled by the kernel's entry code), and the handlers they call, such
/// as the kretprobe entry handler. It changes nothing: it states what its
/// maker argued, for [`Rcu::of`] and the lock-free walks.
///
/// # Invariants
///
/// While it lives, the CPU that made it runs with interrupts or preemption
/// off; it is `!Send`, so it stays on that CPU.
pub(crate) struct NoPreempt {
    _not_send: PhantomData<*mut ()>,
}

impl NoPreempt {
    /// The statement that interrupts or preemption are off. Costs nothing.
    ///
    /// # Safety
    ///
    /// Interrupts or preemption are disabled on this CPU, and stay disabled
    /// for as long as the value lives.
    #[inline(always)]
    pub(crate) unsafe fn assume() -> Self {
        // INVARIANT: the caller's contract.
        Self {
            _not_send: PhantomData,
        }
    }
}

// SAFETY: interrupts or preemption off is an RCU read-side critical section
// for `synchronize_rcu()` (type invariant), for as long as the value lives.
unsafe impl ReadSection for NoPreempt {}

/// A read section, borrowed from the guard or statement that keeps it
/// ([`PreemptNotraceGuard`], [`NoPreempt`]), as a value of no size: the hit
/// path passes it to the functions that walk lock-free structures at no
/// cost, where a reference would take a register.
///
/// # Invariants
///
/// A read section ([`ReadSection`]) lives for `'a` on the CPU that made
/// this value; it is `!Send`.
#[derive(Clone, Copy)]
pub(crate) struct Rcu<'a> {
    _section: PhantomData<&'a ()>,
    _not_send: PhantomData<*mut ()>,
}

impl<'a> Rcu<'a> {
    /// The read section `section` keeps, for as long as it is borrowed.
    #[inline(always)]
    pub(crate) fn of<G: ReadSection>(_section: &'a G) -> Self {
        // INVARIANT: `_section` lives for `'a`, and keeps the CPU in a read
        // section while it does (`ReadSection`).
        Self {
            _section: PhantomData,
            _not_send: PhantomData,
        }
    }
}

// SAFETY: a value lives at most `'a`, during which the section it was
// borrowed from lives (type invariant); it is `!Send`.
unsafe impl ReadSection for Rcu<'_> {}

/// Waits for an RCU grace period (`synchronize_rcu()`): every CPU that was
/// in a read-side critical section (preemption or interrupts off included)
/// has left it. Process context, may sleep.
pub(crate) fn synchronize_rcu() {
    // SAFETY: no precondition beyond process context, the caller's
    // (documented) contract.
    unsafe { ffi::synchronize_rcu() };
}

/// Waits until every queued RCU callback has run (`rcu_barrier()`).
/// Process context, may sleep.
pub(crate) fn rcu_barrier() {
    // SAFETY: as for `synchronize_rcu`.
    unsafe { ffi::rcu_barrier() };
}

/// Waits for a Tasks RCU grace period (`synchronize_rcu_tasks()`): no task
/// is still preempted where it was when this was called (in a boosted slot,
/// in the trampoline). Does nothing on a kernel without Tasks RCU (which
/// is why boosting needs it). Process context, may sleep.
pub(crate) fn synchronize_rcu_tasks(rt: &Runtime) {
    // SAFETY: process context, the caller's (documented) contract.
    unsafe { rt.synchronize_rcu_tasks() };
}

/// How many Tasks RCU grace periods [`TasksGp::wait`] has started, modulo
/// 2^32.
static TASKS_GP_STARTS: AtomicU32 = AtomicU32::new(0);

/// A moment in the sequence of Tasks RCU grace periods that
/// [`TasksGp::wait`] waits for: taken after a change, it tells a later
/// grace period that started after the change ([`TasksGp::covers`]). The
/// count wraps: stamps are compared as serial numbers, so a stamp is good
/// for 2^31 grace periods (years of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TasksStamp(u32);

impl TasksStamp {
    /// Now: grace periods that [`TasksGp::wait`] starts from here on cover
    /// it. Any context.
    pub(crate) fn now() -> Self {
        Self(TASKS_GP_STARTS.load(Ordering::SeqCst))
    }
}

/// A Tasks RCU grace period that has ended.
///
/// # Invariants
///
/// `started` is the value `TASKS_GP_STARTS` took when the grace period was
/// asked for, after which it ended.
pub(crate) struct TasksGp {
    started: u32,
}

impl TasksGp {
    /// Waits for a Tasks RCU grace period: no task is still preempted where
    /// it was when this was called. `None`, without waiting, on a kernel
    /// without Tasks RCU. Process context, may sleep.
    pub(crate) fn wait(rt: &Runtime) -> Option<Self> {
        if !rt.has_synchronize_rcu_tasks() {
            return None;
        }
        // SeqCst, as `TasksStamp::now`: a stamp that reads an earlier value
        // was taken, with whatever preceded it, before this grace period.
        let started = TASKS_GP_STARTS
            .fetch_add(1, Ordering::SeqCst)
            .wrapping_add(1);
        synchronize_rcu_tasks(rt);
        // INVARIANT: counted before it was asked for, and it has ended.
        Some(Self { started })
    }

    /// Whether this grace period began after `stamp` was taken: no task is
    /// still preempted where it was at the stamp.
    pub(crate) fn covers(&self, stamp: TasksStamp) -> bool {
        (self.started.wrapping_sub(stamp.0) as i32) > 0
    }
}

/// A point in RCU's sequence of grace periods (`get_state_synchronize_rcu()`),
/// taken after something was unpublished: [`RcuState::wait`] returns once a
/// full grace period has passed since, at once if one already has (as after
/// a `synchronize_rcu()` the caller waited for meanwhile).
///
/// # Invariants
///
/// `self.0` is a value that `get_state_synchronize_rcu()` returned.
#[must_use = "what was unpublished may be freed only after `wait`"]
pub(crate) struct RcuState(kernel::ffi::c_ulong);

impl RcuState {
    /// Now: a reader that may still hold what the caller unpublished
    /// before this call started before it. Any context.
    pub(crate) fn now() -> Self {
        // SAFETY: no precondition; it reads RCU's counters.
        // INVARIANT: the value returned.
        Self(unsafe { ffi::get_state_synchronize_rcu() })
    }

    /// Waits until a grace period has passed since [`RcuState::now`]
    /// (`cond_synchronize_rcu()`): no reader that began before it is left.
    /// Process context, may sleep.
    pub(crate) fn wait(self) {
        // SAFETY: a value of `get_state_synchronize_rcu()` (type invariant);
        // process context, the caller's (documented) contract.
        unsafe { ffi::cond_synchronize_rcu(self.0) };
    }
}
