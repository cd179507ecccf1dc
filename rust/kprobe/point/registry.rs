// SPDX-License-Identifier: GPL-2.0

//! What the registration mutex protects ([`Reg`]): every point's memory
//! ([`Points`], the probe table's writer's half, which owns the points),
//! and the rest of the writer's state ([`Registry`]), with the batches a
//! writer chains points in ([`Batch`]).
//!
//! A writer borrows the points shared and the rest exclusively at once: a
//! point it found cannot be freed while it holds it (freeing takes `&mut
//! Points`), and it changes the points' writer's state through `&mut
//! Registry` (`Point::w_mut`). Removing a point is two steps:
//! [`Points::retire`] unpublishes it and takes it out of use, through
//! `&Points`; [`Points::reclaim`], through `&mut Points`, waits for the
//! grace periods it needs and gives its box back.
//!
//! Context: process context, with `Core::reg` held.

use super::super::table::{Table, TableW};
use super::{Point, BATCH_LIST, REG_LIST};
use crate::ffi::runtime::Runtime;
use crate::kernel_ext::{list::BorrowList, sync::synchronize_rcu_tasks};
use core::sync::atomic::Ordering;
use kernel::prelude::*;

/// Points chained through their own batch links, so that arming,
/// disarming or freeing any number of them needs no memory. The points are
/// borrowed from their owner ([`Points`]) for `'p`, so none can be freed
/// while it is in a batch. Writer.
pub(crate) struct Batch<'p> {
    list: BorrowList<'p, Point, BATCH_LIST>,
}

impl<'p> Batch<'p> {
    /// An empty batch.
    pub(crate) fn new() -> Self {
        Self {
            list: BorrowList::new(),
        }
    }

    /// Adds `p` unless it is already in a batch.
    pub(crate) fn add(&mut self, p: &'p Point) {
        self.list.push_front(p);
    }

    /// The points, most recently added first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &'p Point> + '_ {
        self.list.iter()
    }

    /// Ends the batch; returns its points, most recently added first, each
    /// out of the batch when yielded, so that the caller may batch it again.
    pub(crate) fn take(self) -> impl Iterator<Item = &'p Point> {
        let mut list = self.list;
        core::iter::from_fn(move || list.drain().next())
    }
}

/// What the registration mutex protects: the points' memory, and the rest
/// of the writer's state. A writer borrows the first shared and the second
/// exclusively at once, so that a point it holds cannot be freed (that takes
/// `&mut Points`) while it changes the registry and the points' writer's
/// state (`Point::w_mut`, which takes `&mut Registry`).
pub(crate) struct Reg {
    /// Every point's memory.
    pub(crate) points: Points,
    /// The rest.
    pub(crate) reg: Registry,
}

/// What the registration mutex protects besides the points' memory.
/// Outside the probe core it is only a token: the proof, for the
/// architecture's writer functions, that the caller holds the mutex.
pub(crate) struct Registry {
    /// Whether probes are armed (`/sys/kernel/debug/rkprobes/enabled`).
    pub(in crate::kprobe) enabled: bool,
    /// Points armed through ftrace; rkprobes' ftrace_ops is registered while
    /// this is non-zero (an ops with an empty filter would trace everything).
    pub(in crate::kprobe) ftrace_armed: usize,
    /// Whether probes may be optimized (`/sys/kernel/debug/rkprobes/
    /// optimization`, the kernel's `debug.kprobes-optimization`).
    pub(in crate::kprobe) optimize: bool,
    /// The core is going away: the optimizer is not queued any more.
    pub(in crate::kprobe) stopping: bool,
    /// The addresses of the points the optimizer's next pass looks at
    /// (`Core::optimize_pass`): those queued, and those that may have
    /// become optimizable. By address, looked up again by the pass, so that
    /// a point freed meanwhile is simply not found.
    pub(in crate::kprobe) opt_todo: KVec<usize>,
    /// `opt_todo` lost an address (no memory): the next pass looks at every
    /// point.
    pub(in crate::kprobe) opt_todo_all: bool,
}

impl Registry {
    /// Probes armed, optimization on.
    pub(in crate::kprobe) fn new() -> Self {
        Self {
            enabled: true,
            ftrace_armed: 0,
            optimize: true,
            stopping: false,
            opt_todo: KVec::new(),
            opt_todo_all: false,
        }
    }
}

/// Every point's memory, through the probe table's writer's half, which
/// owns the points: a point is made by [`Points::publish`], and freed only
/// by [`Points::reclaim`], through `&mut self`, a grace period after it left
/// the table. A point found through `&Points` (a lookup, a walk of its
/// lists) so lives as long as that borrow, and a writer that holds one
/// cannot free it. The points are live (published in the table), of
/// unloaded code ([GONE]: off the table, freed when their last client is
/// unregistered), or taken out of use. Not `Sync`: it is the registration
/// mutex's data.
///
/// [GONE]: super
pub(crate) struct Points {
    w: TableW<Point, REG_LIST>,
}

impl Points {
    /// No points; `table_w` is the probe table's writer's half.
    pub(crate) fn new(table_w: TableW<Point, REG_LIST>) -> Self {
        Self { w: table_w }
    }

    /// Takes `point`, lists it with the live points and publishes it in
    /// `table` (the probe table): from now on the hit path finds it. Gives
    /// it back, not live, if `table` is not this owner's or it is listed
    /// already. Allocates only to grow the table (see `TableW::publish`).
    /// Writer.
    pub(crate) fn publish<'p>(
        &'p self,
        table: &Table<Point>,
        point: KBox<Point>,
    ) -> Result<&'p Point, KBox<Point>> {
        self.w.publish(table, point)
    }

    /// The live point at `addr`, found in `table` (the probe table), for as
    /// long as `self` is borrowed. Writer.
    pub(crate) fn lookup<'p>(&'p self, table: &Table<Point>, addr: usize) -> Option<&'p Point> {
        self.w.lookup(table, addr)
    }

    /// The live points, in the order they were listed.
    pub(crate) fn live(&self) -> impl Iterator<Item = &Point> + '_ {
        self.w.published()
    }

    /// The points of unloaded code.
    pub(crate) fn gone(&self) -> impl Iterator<Item = &Point> + '_ {
        self.w.kept()
    }

    /// The live points, then those of unloaded code.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Point> + '_ {
        Iterator::chain(self.live(), self.gone())
    }

    /// Unpublishes a live point from `table` and moves it to the points of
    /// unloaded code. Readers may stand on it until the next grace period.
    /// Allocates nothing. Writer.
    pub(crate) fn move_to_gone(&self, table: &Table<Point>, p: &Point) -> bool {
        self.w.unpublish(table, p)
    }

    /// Unpublishes `p` from `table`, if it is there, and takes it out of
    /// use: [`Points::reclaim`] frees it. Allocates nothing. Writer.
    pub(crate) fn retire(&self, table: &Table<Point>, p: &Point) -> bool {
        self.w.retire(table, p)
    }

    /// Gives back the points taken out of use, once no CPU can be in them:
    /// after a grace period since the last was retired
    /// (`cond_synchronize_rcu()`: unregistration waits for no other), and a
    /// Tasks RCU one if one of them ran a copy with interrupts on
    /// (`Point::was_boosted`). The caller releases their slots. Process
    /// context, may sleep.
    pub(crate) fn reclaim(&mut self, rt: &Runtime) -> impl Iterator<Item = KBox<Point>> + '_ {
        if self.w.retired().next().is_some() {
            self.w.wait_retired();
            // Read after the grace period: a CPU that was running one of
            // these points' copies when it was unpublished may mark it
            // boosted until then.
            let boosted = self
                .w
                .retired()
                .any(|p| p.was_boosted.load(Ordering::Relaxed));
            if boosted {
                synchronize_rcu_tasks(rt);
            }
        }
        self.w.reclaim()
    }

    /// Whether growth left a replaced bucket array for
    /// [`Points::reclaim_table`].
    pub(crate) fn table_has_retired(&self, table: &Table<Point>) -> bool {
        self.w.is_for(table) && self.w.has_retired_table()
    }

    /// Frees the bucket array that `table`'s growth replaced, a grace period
    /// after it was. Process context, may sleep.
    pub(crate) fn reclaim_table(&self, table: &Table<Point>) {
        if self.w.is_for(table) {
            self.w.reclaim_table();
        }
    }
}

impl Drop for Points {
    /// The probe core removes every point before it drops the registry; a
    /// point left may still be published, so it is left allocated.
    fn drop(&mut self) {
        let left = self.w.leak();
        if left > 0 {
            pr_warn!("{} probe points left at unload; not freed\n", left);
        }
    }
}
