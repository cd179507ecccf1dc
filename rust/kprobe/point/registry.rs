// SPDX-License-Identifier: GPL-2.0

//! What the registration mutex protects ([`Reg`]): every point's memory
//! ([`Points`]), which owns the points and the probe table's writer's half,
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
use crate::kernel_ext::{
    list::BorrowList,
    owned::OwnedLists,
    sync::{synchronize_rcu_tasks, RcuState},
};
use core::{cell::Cell, sync::atomic::Ordering};
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

/// The list of [`Points`] that holds the live points, in the order they
/// were listed.
const LIVE: usize = 0;
/// The points of unloaded code ([GONE]): unpublished and disarmed, freed
/// when their last client is unregistered.
///
/// [GONE]: super
const GONE: usize = 1;
/// Points taken out of use, freed by [`Points::reclaim`].
const DYING: usize = 2;

/// Every point's memory, and the probe table's writer's half: a point is
/// made by [`Points::publish`], which owns it from then on, and freed only
/// by [`Points::reclaim`], through `&mut self`. A point found through
/// `&Points` (a lookup, a walk of its lists) so lives as long as that
/// borrow, and a writer that holds one cannot free it. Not `Sync`: it is
/// the registration mutex's data.
///
/// # Invariants
///
/// `table_w` is the writer's half of the one table this owner publishes
/// points in, and no other holds it: every member of that table is on
/// `LIVE`. A point on `DYING` was removed from the table, and `retired`,
/// some while `DYING` is not empty, was read after the last of them was.
pub(crate) struct Points {
    lists: OwnedLists<Point, REG_LIST, 3>,
    /// Out only while a method of this type works on it.
    table_w: Cell<Option<TableW<Point>>>,
    retired: Cell<Option<RcuState>>,
}

impl Points {
    /// No points; `table_w` is the probe table's writer's half.
    pub(crate) fn new(table_w: TableW<Point>) -> Self {
        // INVARIANT: no point yet; the table's writer's half is now ours
        // alone (`Table::new` makes one, and it cannot be copied).
        Self {
            lists: OwnedLists::new(),
            table_w: Cell::new(Some(table_w)),
            retired: Cell::new(None),
        }
    }

    /// Calls `f` with the table's writer's half, if `table` is the table
    /// this owner publishes in.
    fn with_table<R>(
        &self,
        table: &Table<Point>,
        f: impl FnOnce(&mut TableW<Point>) -> R,
    ) -> Option<R> {
        let mut w = self.table_w.take()?;
        let r = w.is_for(table).then(|| f(&mut w));
        self.table_w.set(Some(w));
        r
    }

    /// Whether `table` is the table this owner publishes in.
    fn is_ours(&self, table: &Table<Point>) -> bool {
        self.with_table(table, |_| ()).is_some()
    }

    /// Takes `point`, lists it with the live points and publishes it in
    /// `table` (the probe table): from now on the hit path finds it. On
    /// failure the point is not live: it is given back (`Some`) if `table`
    /// is not this owner's or it is listed already; if the table refused
    /// it (`None`), it is taken out of use, for [`Points::reclaim`] to
    /// free. Allocates only to grow the table (see `Table::insert`).
    /// Writer.
    pub(crate) fn publish<'p>(
        &'p self,
        table: &Table<Point>,
        point: KBox<Point>,
    ) -> Result<&'p Point, Option<KBox<Point>>> {
        if !self.is_ours(table) {
            return Err(Some(point));
        }
        let p = self.lists.push_back(LIVE, point).map_err(Some)?;
        let inserted = self.with_table(table, |w| {
            // SAFETY: `p` is this owner's until `reclaim` frees it, which
            // frees only points on `DYING`; `retire` puts a point there after
            // it removed it from this table, and `reclaim` waits for a grace
            // period after that first (type invariant).
            // INVARIANT: a member on `LIVE`.
            unsafe { table.insert(w, p) }
        });
        if inserted != Some(Ok(())) {
            // INVARIANT: not in the table; `retired` read after that.
            self.retired.set(Some(RcuState::now()));
            self.lists.move_to(p, DYING);
            return Err(None);
        }
        Ok(p)
    }

    /// The live point at `addr`, found in `table` (the probe table), for as
    /// long as `self` is borrowed. Writer.
    pub(crate) fn lookup<'p>(&'p self, table: &'p Table<Point>, addr: usize) -> Option<&'p Point> {
        if !self.is_ours(table) {
            return None;
        }
        // The table's members are this owner's live points (type
        // invariant), freed only through `&mut self`.
        table.lookup(addr)
    }

    /// The live points, in the order they were listed.
    pub(crate) fn live(&self) -> impl Iterator<Item = &Point> + '_ {
        self.lists.iter(LIVE)
    }

    /// The points of unloaded code.
    pub(crate) fn gone(&self) -> impl Iterator<Item = &Point> + '_ {
        self.lists.iter(GONE)
    }

    /// The live points, then those of unloaded code.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Point> + '_ {
        Iterator::chain(self.live(), self.gone())
    }

    /// Unpublishes a live point from `table` and moves it to the points of
    /// unloaded code. Readers may stand on it until the next grace period.
    /// Allocates nothing. Writer.
    pub(crate) fn move_to_gone(&self, table: &Table<Point>, p: &Point) -> bool {
        // INVARIANT: off the table before it leaves `LIVE`.
        self.lists.list_of(p) == Some(LIVE)
            && self.with_table(table, |w| table.remove(w, p)) == Some(true)
            && self.lists.move_to(p, GONE)
    }

    /// Unpublishes `p` from `table`, if it is there, and takes it out of
    /// use: [`Points::reclaim`] frees it. Allocates nothing. Writer.
    pub(crate) fn retire(&self, table: &Table<Point>, p: &Point) -> bool {
        if !matches!(self.lists.list_of(p), Some(LIVE | GONE))
            || self.with_table(table, |w| table.remove(w, p)).is_none()
        {
            return false;
        }
        // INVARIANT: off the table; `retired` read after that.
        self.retired.set(Some(RcuState::now()));
        self.lists.move_to(p, DYING)
    }

    /// Gives back the points taken out of use, once no CPU can be in them:
    /// after a grace period since the last was retired
    /// (`cond_synchronize_rcu()`: unregistration waits for no other), and a
    /// Tasks RCU one if one of them ran a copy with interrupts on
    /// (`Point::was_boosted`). The caller releases their slots. Process
    /// context, may sleep.
    pub(crate) fn reclaim(&mut self, rt: &Runtime) -> impl Iterator<Item = KBox<Point>> + '_ {
        if !self.lists.is_empty(DYING) {
            if let Some(state) = self.retired.take() {
                state.wait();
            }
            // Read after the grace period: a CPU that was running one of
            // these points' copies when it was unpublished may mark it
            // boosted until then.
            let boosted = self
                .lists
                .iter(DYING)
                .any(|p| p.was_boosted.load(Ordering::Relaxed));
            if boosted {
                synchronize_rcu_tasks(rt);
            }
        }
        self.lists.take(DYING)
    }

    /// Whether growth left a replaced bucket array for
    /// [`Points::reclaim_table`].
    pub(crate) fn table_has_retired(&self, table: &Table<Point>) -> bool {
        self.with_table(table, |w| w.has_retired()) == Some(true)
    }

    /// Frees the bucket array that `table`'s growth replaced, a grace period
    /// after it was. Process context, may sleep.
    pub(crate) fn reclaim_table(&self, table: &Table<Point>) {
        self.with_table(table, |w| table.reclaim(w));
    }
}

impl Drop for Points {
    /// The probe core removes every point before it drops the registry; a
    /// point left may still be published, so it is left allocated.
    fn drop(&mut self) {
        let mut left = 0usize;
        for i in [LIVE, GONE, DYING] {
            for p in self.lists.take(i) {
                core::mem::forget(p);
                left += 1;
            }
        }
        if left > 0 {
            pr_warn!("{} probe points left at unload; not freed\n", left);
        }
    }
}
