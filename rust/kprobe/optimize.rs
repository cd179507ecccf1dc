// SPDX-License-Identifier: GPL-2.0

//! Jump optimization, the optimizer half of the kernel's `kernel/kprobes.c`
//! (`kprobe_optimizer()`, `optimize_kprobe()`, `unoptimize_kprobe()`); the
//! x86 part (detour buffers, the safety analysis, writing the jump) is
//! `arch::opt`.
//!
//! A probe at an int3 site is armed as an int3 first. When it is armed (or
//! enabled, or optimization is switched on), an armed, enabled int3 point
//! with no other probe (rkprobes' or the kernel's) inside its region, that
//! the architecture can optimize, has its detour prepared and is *queued*,
//! as the kernel's
//! `optimize_kprobe()` queues it: `OPTIMIZED` is set, and from now on an
//! int3 hit at it runs the whole region from the detour, so nothing enters
//! the region's bytes after the first in the text any more. The optimizer,
//! a delayed work that runs 5 jiffies later, as the kernel's, so that
//! registrations close together are optimized in one batch, then:
//!
//! 1. looks at the points left for it (`Registry::opt_todo`, as the
//!    kernel's optimizer at its `optimizing_list`), never at every point:
//!    those queued, and those that may have become optimizable since (a
//!    neighbour or a post-handler went; a refusal for now), and queues what
//!    it can;
//! 2. waits for one Tasks RCU grace period for the whole batch: afterwards
//!    no task is preempted at, or returns to, the queued regions' bytes
//!    after the first (it may have been interrupted there, or been in a
//!    boosted copy that jumps back there);
//! 3. under `text_mutex`, checks each point again (no kernel kprobe arrived,
//!    the region's text is unchanged) and writes all the jumps in one
//!    `text_poke_queue()`/`text_poke_finish()` batch (int3, sync, tail,
//!    sync, head, sync), and marks them `Optimized`.
//!
//! Unoptimizing is synchronous, under `Core::reg`, unlike the kernel's
//! delayed unoptimization, so that unregistration returns with the text
//! restored, as it does for int3 probes: an int3 over the jump's first byte,
//! a synchronisation, the four bytes of its displacement back, a
//! synchronisation (the kernel's `arch_unoptimize_kprobe()`); int3 hits run
//! the region from the detour until then. It happens when a point is
//! disarmed (disable, unregister, the global `enabled` switch, its module
//! going), when a probe is registered inside its region, when a client with
//! a post-handler joins it, and when the `optimization` knob goes to 0. A
//! detour is freed with its point, after a Tasks RCU grace period (a task
//! may be preempted in it: it runs with interrupts on).
//!
//! Beyond the kernel, a point with post-handlers is optimized too: its
//! detour calls them after the first instruction (`arch::opt`). A detour is
//! made for one kind of point, with or without post-handlers; when a point
//! whose clients changed kind is queued again, the optimizer pass releases
//! its old detour after a Tasks RCU grace period and makes the other.
//!
//! Context: process context. The optimizer pass takes `Core::reg`, then,
//! never together, the slot cache's mutex and `text_mutex`, and waits for
//! Tasks RCU with `Core::reg` held (see the lock order in `mod.rs`). The
//! other functions run with `Core::reg` held.

use super::{
    point::{Batch, OptState, Point, Points, Reg},
    Core, Registry,
};
use crate::{
    abi::flags,
    arch::{self, OptRefusal},
    kernel_ext::{
        sync::{synchronize_rcu_tasks, TasksGp},
        text::TextGuard,
        work::optimizer,
    },
};
use core::sync::atomic::Ordering;
use kernel::prelude::*;

/// How long the optimizer waits for more work (the kernel's
/// `OPTIMIZE_DELAY`, in jiffies).
const OPTIMIZE_DELAY: u32 = 5;

/// What [`Core::try_queue`] made of a point.
enum Queue {
    /// Queued: the optimizer's next pass writes its jump.
    Queued,
    /// Not now (no memory, or a kernel kprobe in its region): the next pass
    /// asks again.
    Later,
    /// Not optimizable, or already queued or optimized.
    No,
}

/// The optimizer's delayed work, run by `kernel_ext/work.c`. Process context.
#[no_mangle]
pub(crate) extern "C" fn rkp_optimizer_work() {
    if let Ok(core) = Core::get() {
        core.optimize_pass();
    }
}

/// Sets or clears `OPTIMIZED` in the flags of every client of `p` (the
/// kernel's `KPROBE_FLAG_OPTIMIZED`). `reg` is the registration mutex's
/// guard.
fn set_optimized_flag(reg: &Registry, p: &Point, on: bool) {
    for kp in p.clients_w(reg) {
        if on {
            kp.update_flags(flags::OPTIMIZED, 0);
        } else {
            kp.update_flags(0, flags::OPTIMIZED);
        }
    }
}

impl Core {
    /// Queues the optimizer, if optimization is on: it looks for points
    /// that became optimizable. Writer.
    pub(super) fn kick_optimizer(&self, reg: &Registry) {
        if self.may_optimize(reg) {
            optimizer::kick(OPTIMIZE_DELAY);
        }
    }

    /// Whether optimization is on and possible. Writer.
    fn may_optimize(&self, reg: &Registry) -> bool {
        reg.optimize && reg.enabled && !reg.stopping && arch::can_optimize_here(self)
    }

    /// The kernel's `optimize_kprobe()` conditions for `p`, before the
    /// architecture's: an armed, enabled int3 point, not queued or
    /// optimized yet, and no other rkprobes point in the four bytes after
    /// it (which any region covers). Unlike the kernel's, a point with a
    /// post-handler qualifies (its detour calls it). Writer.
    fn wants_optimizing(&self, reg: &Registry, p: &Point) -> bool {
        p.opt_state() == OptState::None
            && !p.w(reg).opt_refused
            && p.is_armed()
            && !p.arch().is_ftrace()
            && p.any_enabled()
            && (1..5).all(|k| !self.has_point(p.addr() + k))
    }

    /// Whether no other probe is inside `p`'s prepared region: rkprobes'
    /// points after its first byte (the kernel's
    /// `arch_check_optimized_kprobe()`), and the kernel's kprobes anywhere
    /// in the function up to its end (see `native_kprobe_before`). Writer.
    fn region_free(&self, reg: &Registry, p: &Point) -> bool {
        let size = p.opt_w(reg).size();
        size > 0
            && (1..size).all(|k| !self.has_point(p.addr() + k))
            && !self.native_kprobe_before(p.func(reg), p.addr() + size - 1)
    }

    /// Queues `p` for optimization if it can be optimized (the kernel's
    /// `optimize_kprobe()`, with the preparation of its
    /// `try_to_optimize_kprobe()`): its detour is prepared (once per
    /// point), and from now on int3 hits run the region from there; the
    /// optimizer writes the jump. As in the kernel, `OPTIMIZED` is set from
    /// here on. A point queued, or refused for now, is left for the
    /// optimizer's next pass to find. Writer.
    pub(super) fn try_queue(&self, reg: &mut Registry, p: &Point) {
        match self.queue(reg, p) {
            Queue::Queued | Queue::Later => self.todo(reg, p.addr()),
            Queue::No => {}
        }
    }

    /// Leaves the point at `addr` for the optimizer's next pass. Nothing
    /// while no pass can run: turning optimization on (the knob, arming
    /// every probe) looks at every point, so the list stays as long as the
    /// changes between two passes. Writer.
    fn todo(&self, reg: &mut Registry, addr: usize) {
        if !self.may_optimize(reg) {
            return;
        }
        if reg.opt_todo.push(addr, GFP_KERNEL).is_err() {
            reg.opt_todo_all = true;
        }
    }

    /// After the points of a removal were unlinked or freed: leaves for
    /// the optimizer's next pass those that may have become optimizable
    /// (the kernel's re-optimization in `__disarm_kprobe()` and
    /// `__unregister_kprobe_top()`), O(1) per point: a point that lost a
    /// client (perhaps the one with a post-handler), and the points before
    /// a freed one whose region may reach it. Writer.
    pub(super) fn todo_after_removal(
        &self,
        points: &Points,
        reg: &mut Registry,
        removed: &Batch<'_>,
    ) {
        for p in removed.iter() {
            if p.is_empty() {
                for k in 1..arch::MAX_REGION {
                    let a = p.addr().checked_sub(k);
                    if let Some(q) = a.and_then(|a| points.lookup(&self.table, a)) {
                        self.todo(reg, q.addr());
                    }
                }
            } else {
                self.todo(reg, p.addr());
            }
        }
        self.kick_optimizer(reg);
    }

    /// [`Core::try_queue`] without leaving the point for later.
    fn queue(&self, reg: &mut Registry, p: &Point) -> Queue {
        if !self.may_optimize(reg) || !self.wants_optimizing(reg, p) {
            return Queue::No;
        }
        match arch::prepare_optimized(self, reg, p) {
            Ok(()) => {}
            Err(OptRefusal::Never) => {
                p.w_mut(reg).opt_refused = true;
                return Queue::No;
            }
            Err(OptRefusal::NotNow) => return Queue::Later,
            // The next pass releases the detour and makes the other kind.
            Err(OptRefusal::Stale) => {
                optimizer::kick(OPTIMIZE_DELAY);
                return Queue::Later;
            }
            // Looked at again when its clients change
            // (`todo_after_removal`).
            Err(OptRefusal::NotWithPost) => return Queue::No,
        }
        // Keeps the kernel's kprobes out of the jump from now on: the
        // kernel's `register_kprobe()` refuses blacklisted addresses. A
        // registration that got past that check before is seen by
        // `region_free` now or under `text_mutex` before the jump goes in.
        let (start, end) = p.opt_w(reg).decode_shadow(p.addr());
        p.w_mut(reg).reservation = self.blacklist.reserve(start, end);
        if !self.region_free(reg, p) {
            self.blacklist
                .release(p.w_mut(reg).reservation.take().into_iter());
            // A kernel kprobe in the region, whose going rkprobes is not
            // told of: looked at again by every pass.
            return Queue::Later;
        }
        // A task may be preempted in the detour from now on.
        p.ran_boosted();
        p.set_opt_state(OptState::Queued);
        arch::detour_in_use(p, reg);
        set_optimized_flag(reg, p, true);
        optimizer::kick(OPTIMIZE_DELAY);
        Queue::Queued
    }

    /// One pass of the optimizer (the kernel's `kprobe_optimizer()`); see
    /// the module documentation. It looks only at the points left for it
    /// (`Registry::opt_todo`), as the kernel's at its `optimizing_list`.
    /// Process context, may sleep; takes `Core::reg`.
    fn optimize_pass(&self) {
        let mut locked = self.reg.lock();
        let Reg { points, reg } = &mut *locked;
        let points = &*points;
        let todo = core::mem::take(&mut reg.opt_todo);
        if !self.may_optimize(reg) {
            // Turning optimization on again looks at every point.
            reg.opt_todo_all = false;
            return;
        }
        let mut batch = Batch::new();
        if core::mem::take(&mut reg.opt_todo_all) {
            for p in points.live() {
                batch.add(p);
            }
        }
        for &addr in todo.iter() {
            if let Some(p) = points.lookup(&self.table, addr) {
                batch.add(p);
            }
        }
        drop(todo);
        self.release_stale_detours(reg, &batch);
        let mut queued = Batch::new();
        for p in batch.take() {
            // Points that became optimizable since they were armed.
            if let Queue::Later = self.queue(reg, p) {
                self.todo(reg, p.addr());
            }
            if p.opt_state() == OptState::Queued {
                queued.add(p);
            }
        }
        let batch = queued;
        if batch.iter().next().is_none() {
            return;
        }
        // No task is left where it could come back into the regions' bytes
        // after the first: hits have run them from the detours since the
        // points were queued.
        let gp = TasksGp::wait(&self.rt);
        let guard = TextGuard::lock(&self.rt);
        let mut dropped = false;
        for p in batch.iter() {
            // Under `text_mutex`, which the kernel's kprobes hold to arm: no
            // kernel kprobe arrived; the architecture checks that nothing
            // else patched the region.
            let queued = self.region_free(reg, p)
                && gp
                    .as_ref()
                    .is_some_and(|gp| arch::optimize(&guard, p, reg, gp));
            if !queued {
                p.set_opt_state(OptState::None);
                arch::detour_unused(p, reg);
                set_optimized_flag(reg, p, false);
                dropped = true;
            }
        }
        guard.poke_bp_finish();
        drop(guard);
        for p in batch.iter() {
            if p.opt_state() == OptState::Queued {
                p.set_opt_state(OptState::Optimized);
                self.nr_optimized.fetch_add(1, Ordering::Relaxed);
            }
        }
        if dropped {
            let dropped = batch.iter().filter(|p| p.opt_state() == OptState::None);
            self.blacklist
                .release(dropped.filter_map(|p| p.w_mut(reg).reservation.take()));
        }
    }

    /// Releases the detours of the points of `batch` that were made for the
    /// other kind of point (with or without post-handlers) and are not in
    /// use (neither queued nor optimized), after a Tasks RCU grace period:
    /// a task may still be preempted in one from when it was. They are made
    /// again when the point is queued. Writer, may sleep.
    pub(super) fn release_stale_detours(&self, reg: &mut Registry, batch: &Batch<'_>) {
        let stale = |reg: &Registry, p: &Point| {
            p.opt_state() == OptState::None
                && p.opt_w(reg).is_prepared()
                && p.opt_w(reg).has_post() != p.has_post()
        };
        if !batch.iter().any(|p| stale(reg, p)) {
            return;
        }
        synchronize_rcu_tasks(&self.rt);
        for p in batch.iter() {
            if stale(reg, p) {
                arch::release_optimized(&self.slots, &p.optinsn, p.opt_w_mut(reg));
            }
        }
    }

    /// Takes the jump out of the points of `batch` that `want` it and have
    /// one (the kernel's forced `arch_unoptimize_kprobe()`), with two
    /// synchronisations for the batch; their int3 stays. Their detours stay
    /// allocated (tasks may still be in them) until their points are freed.
    /// Writer.
    pub(super) fn unoptimize(
        &self,
        reg: &mut Registry,
        batch: &Batch<'_>,
        want: impl Fn(&Point) -> bool,
    ) {
        let want = &want;
        let todo = |s: OptState| batch.iter().filter(move |p| p.opt_state() == s && want(p));
        if todo(OptState::Optimized).next().is_some() {
            let guard = TextGuard::lock(&self.rt);
            // Their detours stay in use by int3 hits until the state
            // changes below.
            for p in todo(OptState::Optimized) {
                arch::unoptimize_start(&guard, p, reg);
            }
            guard.sync();
            for p in todo(OptState::Optimized) {
                arch::unoptimize_finish(&guard, p, reg);
            }
            guard.sync();
            for p in todo(OptState::Optimized) {
                // A jump that could not be taken out keeps its point
                // optimized, and its detour allocated, for ever: the point
                // stays in the text's hands, not the core's.
                if !arch::jump_taken_out(p, reg) {
                    pr_err!(
                        "optimized probe at {:#x}: its jump stays in the text\n",
                        p.addr()
                    );
                    continue;
                }
                self.nr_optimized.fetch_sub(1, Ordering::Relaxed);
                p.set_opt_state(OptState::None);
                arch::detour_unused(p, reg);
                set_optimized_flag(reg, p, false);
            }
        }
        // Queued points have no jump yet: nothing to undo in the text; int3
        // hits stop using the detour.
        for p in todo(OptState::Queued) {
            p.set_opt_state(OptState::None);
            arch::detour_unused(p, reg);
            set_optimized_flag(reg, p, false);
        }
        // No jump left: the kernel's kprobes may come back.
        self.blacklist.release(
            batch
                .iter()
                .filter(|p| p.opt_state() == OptState::None)
                .filter_map(|p| p.w_mut(reg).reservation.take()),
        );
    }

    /// Unoptimizes `p`. Writer.
    pub(super) fn unoptimize_one(&self, reg: &mut Registry, p: &Point) {
        let mut one = Batch::new();
        one.add(p);
        self.unoptimize(reg, &one, |_| true);
    }

    /// Unoptimizes the point whose jump covers `addr` (after its first
    /// byte), before a probe is placed there (the kernel's
    /// `__arm_kprobe()` does the same through `get_optimized_kprobe()`).
    /// Writer.
    pub(super) fn unoptimize_covering(&self, points: &Points, reg: &mut Registry, addr: usize) {
        for k in 1..arch::MAX_REGION {
            let a = addr.checked_sub(k);
            let Some(p) = a.and_then(|a| points.lookup(&self.table, a)) else {
                continue;
            };
            if p.opt_state() != OptState::None && k < p.opt_w(reg).size() {
                self.unoptimize_one(reg, p);
            }
        }
    }

    /// The `optimization` knob (the kernel's `debug.kprobes-optimization`
    /// sysctl): 0 unoptimizes every probe, 1 optimizes what can be (after
    /// the optimizer's delay). Process context.
    pub(crate) fn set_optimization(&self, on: bool) {
        let mut locked = self.reg.lock();
        let Reg { points, reg } = &mut *locked;
        if reg.optimize == on {
            return;
        }
        reg.optimize = on;
        let mut all = Batch::new();
        for p in points.live() {
            all.add(p);
        }
        if on {
            for p in all.iter() {
                self.try_queue(reg, p);
            }
        } else {
            self.unoptimize(reg, &all, |_| true);
        }
    }

    /// Whether the `optimization` knob is on. Process context.
    pub(crate) fn optimization(&self) -> bool {
        self.reg.lock().reg.optimize
    }

    /// How many points are optimized and queued, how many addresses are
    /// left for the optimizer's next pass, and whether that pass looks at
    /// every point (the list lost one). Process context; takes `Core::reg`.
    pub(crate) fn optimizer_state(&self) -> (usize, usize, usize, bool) {
        let locked = self.reg.lock();
        let Reg { points, reg } = &*locked;
        let (mut optimized, mut queued) = (0, 0);
        for p in points.live() {
            match p.opt_state() {
                OptState::Optimized => optimized += 1,
                OptState::Queued => queued += 1,
                OptState::None => {}
            }
        }
        (optimized, queued, reg.opt_todo.len(), reg.opt_todo_all)
    }

    /// Stops the optimizer for good: it is cancelled (or waited for) and
    /// never queued again. Process context, without `Core::reg`.
    pub(super) fn stop_optimizer(&self) {
        self.reg.lock().reg.stopping = true;
        optimizer::cancel();
    }
}
