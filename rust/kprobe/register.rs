// SPDX-License-Identifier: GPL-2.0

//! Registration, unregistration and arming: the writer side of the core
//! (the kernel's `register_kprobes()`, `unregister_kprobes()`,
//! `enable_kprobe()`/`disable_kprobe()` and `arm_all_kprobes()`).
//!
//! A registration adds its probes to new or existing points, unarmed, and
//! then arms the new points with one text synchronisation; a rejected
//! registration unpublishes and frees what it added. An unregistration
//! unlinks its probes, disarms the points left with no enabled client,
//! unpublishes those left with no client, waits for a grace period and
//! frees what it took away; it allocates nothing and cannot fail.
//!
//! Context: process context, may sleep. The public entry points take
//! `Core::reg`; the functions that take a `Registry` (or say "Writer") run
//! with it held. Arming takes `text_mutex` for int3 sites and calls into
//! ftrace, which takes its own locks and `text_mutex`, for ftrace sites
//! (see the lock order in `mod.rs`).

use super::{
    address::Target,
    client::Client,
    point::{Batch, OptState, Point, Points, Reg},
    Core, Registry,
};
use crate::{
    abi::flags,
    arch,
    kernel_ext::{self, module::ModuleId, sync::synchronize_rcu, text::TextGuard},
};
use kernel::{ffi::c_ulong, prelude::*};

/// What one unregistration takes away: the points whose clients it
/// unlinked, chained through themselves, borrowed from their owner for
/// `'p`.
pub(super) struct Removal<'p> {
    points: Batch<'p>,
}

impl Removal<'_> {
    /// Nothing taken away yet.
    pub(super) fn new() -> Self {
        Self {
            points: Batch::new(),
        }
    }
}

/// What [`Core::finish_removal`] leaves to [`Core::free_removed`], which
/// consumes it: the points it retired, freed only after the grace period
/// that `finish_removal` did not wait for itself. It borrows nothing, so
/// the caller may take `&mut Points` to free them.
///
/// # Invariants
///
/// `waited` is false if and only if `finish_removal` retired a point and
/// waited for no grace period after it did.
#[must_use = "retired points are freed, and unlinked clients waited for, by `free_removed`"]
pub(super) struct Removed {
    waited: bool,
}

impl Drop for Removed {
    /// Not given to `free_removed`: waits for the grace period here, so
    /// that an unregistration still returns only when no CPU can be in
    /// what it unlinked. The retired points stay with their owner until
    /// its next `Points::reclaim`. Process context, may sleep.
    fn drop(&mut self) {
        if !self.waited {
            synchronize_rcu();
        }
    }
}

impl Core {
    /// Registers `kps`, all or nothing, arming new points with one text
    /// synchronisation. Process context, may sleep.
    pub(crate) fn register_many(&self, kps: &[Client]) -> Result {
        // As the kernel's kprobe_events under `LOCKDOWN_KPROBES`, for every
        // way in: the control file, the C ABI and the Rust API.
        kernel_ext::locked_down_kprobes()?;
        // The kernel's own optimizer restores the text of a removed optprobe
        // asynchronously: until it has, the bytes rkprobes would copy are the
        // kernel's jump into a detour buffer that is about to be freed.
        // Process context; it takes only the kernel's kprobe and text
        // mutexes, never one of rkprobes'.
        self.rt.wait_for_kprobe_optimizer();
        let mut locked = self.reg.lock();
        let Reg { points, reg } = &mut *locked;
        let mut failed = None;
        for (i, &kp) in kps.iter().enumerate() {
            if let Err(e) = self.register_one(points, reg, kp) {
                // Never armed: unpublish and free what this call added (every
                // probe before `i` was registered by it, or it would have
                // failed there).
                failed = Some((e, i));
                break;
            }
        }
        if failed.is_none() {
            if let Err(e) = self.arm_points(points, reg, kps.iter().copied()) {
                // Disarms what was armed, as nothing was registered.
                failed = Some((e, kps.len()));
            }
        }
        if let Some((e, n)) = failed {
            self.unregister_locked(points, reg, kps.iter().take(n).copied());
            return Err(e);
        }
        // A registration that grew the table leaves the replaced bucket
        // array to readers until a grace period: wait for one now rather
        // than keep it until the next removal. Growth doubles the table, so
        // few registrations pay this.
        if points.table_has_retired(&self.table) {
            points.reclaim_table(&self.table);
        }
        Ok(())
    }

    /// Adds `kp` to a new or existing point, unarmed. Process context.
    fn register_one(&self, points: &Points, reg: &mut Registry, kp: Client) -> Result {
        if !kp.private().is_null() {
            // Already registered (the kernel's -EINVAL for re-registration).
            return Err(EINVAL);
        }
        let target = self.target(kp)?;
        let point = match points.lookup(&self.table, target.addr) {
            Some(point) => {
                if kp.has_post_handler() {
                    // An optimized point runs no post-handler.
                    self.unoptimize_one(reg, point);
                }
                Ok(point)
            }
            None => self.new_point(points, reg, &target).inspect(|_| {
                // Its int3 must not go into another point's jump.
                self.unoptimize_covering(points, reg, target.addr);
            }),
        };
        // The reference kept the module from going while its text was read.
        // From now on the module notifier handles its unloading, which waits
        // for the registration mutex that the caller holds.
        drop(target.module);
        let point = point?;
        // Only DISABLED is the caller's to set.
        kp.update_flags(0, !flags::DISABLED);
        if target.ftrace {
            kp.update_flags(flags::FTRACE, 0);
        }
        kp.set_addr(target.addr);
        if point.opt_state() != OptState::None {
            kp.update_flags(flags::OPTIMIZED, 0);
        }
        // Not registered (checked above, with the registration mutex held
        // since), so appended: its `rkp_private` names the point from now on.
        if !point.append(reg, kp) {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Whether `kp` is registered: found at its point, O(1) but for the
    /// clients of that point. Process context; takes the registration
    /// mutex. The caller passes a valid `kp`.
    pub(crate) fn is_registered(&self, kp: Client) -> bool {
        let locked = self.reg.lock();
        self.point_of(&locked.points, kp).is_some()
    }

    /// The point of a registered probe `kp`: the one its `rkp_private`
    /// names, if that point is live and has `kp` among its clients (the
    /// kernel's `__get_valid_kprobe()`). `rkp_private` is only compared,
    /// never followed. Writer.
    fn point_of<'p>(&'p self, points: &'p Points, kp: Client) -> Option<&'p Point> {
        let (p, addr, f) = (kp.private(), kp.addr(), kp.flags());
        if p.is_null() {
            return None;
        }
        let p = p.cast::<Point>().cast_const();
        let live = if f & flags::GONE == 0 {
            // A registered probe's `addr` is its point's.
            points
                .lookup(&self.table, addr)
                .filter(|q| core::ptr::eq(*q, p))
        } else {
            // Points of unloaded code are off the table: a rare, linear
            // search.
            points.gone().find(|q| core::ptr::eq(*q, p))
        };
        let found = live.filter(|q| q.has_client(kp));
        if found.is_none() {
            pr_err!("probe {:p} is not registered\n", kp.as_ptr());
        }
        found
    }

    /// The live point that `kp`'s `rkp_private` names, for a probe the
    /// caller knows is registered and not of unloaded code: O(1), as it
    /// does not walk the point's clients (see [`Core::point_of`]), and
    /// quiet. `rkp_private` is only compared, never followed. Writer.
    fn live_point_of<'p>(&'p self, points: &'p Points, kp: Client) -> Option<&'p Point> {
        let p = kp.private().cast::<Point>().cast_const();
        points
            .lookup(&self.table, kp.addr())
            .filter(|q| core::ptr::eq(*q, p))
    }

    /// Creates, prepares and publishes a point with no client yet. Writer.
    fn new_point<'p>(
        &self,
        points: &'p Points,
        reg: &mut Registry,
        t: &Target,
    ) -> Result<&'p Point> {
        // A point keeps its function as a 32-bit offset back from `addr`.
        let off = t.addr.checked_sub(t.func).ok_or(EINVAL)?;
        u32::try_from(off).map_err(|_| EINVAL)?;
        // The point's memory first: once `prepare` has a slot, nothing may
        // fail before the point owns it.
        let room = KBox::<Point>::new_uninit(GFP_KERNEL)?;
        let module = t.module.as_ref().map_or(ModuleId::VMLINUX, |m| m.id());
        let point = Point::prepare(self, reg, t.addr, t.func, t.ftrace, module)?;
        let point = KBox::write(room, point);
        points.publish(&self.table, point).map_err(|p| {
            // Not this core's table (never): the point was not published,
            // and releases its slot here.
            arch::release(&self.slots, p.arch());
            EINVAL
        })
    }

    /// Arms every point of `kps` that should be and is not. Writer.
    fn arm_points(
        &self,
        points: &Points,
        reg: &mut Registry,
        kps: impl Iterator<Item = Client>,
    ) -> Result {
        if !reg.enabled {
            return Ok(());
        }
        let mut batch = Batch::new();
        // Only registered probes of live code come here (just registered,
        // or checked by `set_enabled_each`): each is found at its point.
        // A point with several of them joins the batch once (`Batch::add`).
        for p in kps.filter_map(|kp| self.live_point_of(points, kp)) {
            batch.add(p);
        }
        let r = self.set_armed(reg, &batch, true, Point::any_enabled);
        for p in batch.iter() {
            self.try_queue(reg, p);
        }
        r
    }

    /// Arms the ftrace sites of `points` (disarmed, wanted) in one filter
    /// change; leaves those it did not arm to the caller's one-at-a-time
    /// loop, which also reports why. Writer.
    fn ftrace_arm_batch<'a>(&self, reg: &mut Registry, points: impl Iterator<Item = &'a Point>) {
        let mut sel: KVec<&Point> = KVec::new();
        let mut addrs: KVec<c_ulong> = KVec::new();
        for p in points {
            // The same rule as for one site (see the loop in `set_armed`).
            if self.native_kprobe_before(p.func(reg), p.addr()) {
                continue;
            }
            if sel.push(p, GFP_KERNEL).is_err()
                || addrs.push(p.addr() as c_ulong, GFP_KERNEL).is_err()
            {
                return;
            }
        }
        if addrs.is_empty()
            || arch::ftrace_arm_many(self, &mut addrs, reg.ftrace_armed == 0).is_err()
        {
            return;
        }
        for p in sel.iter() {
            p.set_armed_state(true);
        }
        reg.ftrace_armed += sel.len();
    }

    /// Disarms the ftrace sites of `points` (armed, not wanted) in one
    /// filter change; without memory for the list, leaves them to the
    /// caller's one-at-a-time loop. Never fails. Writer.
    fn ftrace_disarm_batch<'a>(&self, reg: &mut Registry, points: impl Iterator<Item = &'a Point>) {
        let mut sel: KVec<&Point> = KVec::new();
        let mut addrs: KVec<c_ulong> = KVec::new();
        for p in points {
            if sel.push(p, GFP_KERNEL).is_err()
                || addrs.push(p.addr() as c_ulong, GFP_KERNEL).is_err()
            {
                return;
            }
        }
        arch::ftrace_disarm_many(&mut addrs, reg.ftrace_armed == sel.len());
        for p in sel.iter() {
            p.set_armed_state(false);
        }
        reg.ftrace_armed -= sel.len();
    }

    /// Arms (`on`) or disarms the points of `batch` that `want` it and are
    /// in the other state: int3 sites with one text synchronisation for the
    /// batch, ftrace sites through ftrace (which patches text itself, so not
    /// under `text_mutex`). Best effort, as the kernel's `arm_all_kprobes()`:
    /// a point that cannot be armed stays disarmed, and the first error is
    /// returned. Disarming never fails. Writer.
    pub(super) fn set_armed(
        &self,
        reg: &mut Registry,
        batch: &Batch<'_>,
        on: bool,
        want: impl Fn(&Point) -> bool,
    ) -> Result {
        let want = &want;
        let todo = |ftrace: bool| {
            batch
                .iter()
                .filter(move |p| p.arch().is_ftrace() == ftrace && p.is_armed() != on && want(p))
        };
        let mut result = Ok(());
        if !on {
            // The jump goes first, then the int3 below.
            self.unoptimize(reg, batch, |p| p.is_armed() && want(p));
        }
        if todo(false).next().is_some() {
            if on {
                // The kernel's optimizer restores the text of a removed
                // optprobe asynchronously (see `register_many`).
                // Process context; it takes the kernel's kprobe and text
                // mutexes, never while calling into rkprobes.
                self.rt.wait_for_kprobe_optimizer();
            }
            let guard = TextGuard::lock(&self.rt);
            for p in todo(false) {
                // Checked under `text_mutex`, which the kernel's kprobes hold
                // to arm or optimize: no kernel kprobe appears in between,
                // and a jump of one on its way out is still in the text.
                if on
                    && (self.native_kprobe_before(p.func(reg), p.addr())
                        || !arch::text_unchanged(self, reg, p.addr(), p.arch()))
                {
                    result = result.and(Err(EBUSY));
                    continue;
                }
                // Refused for a point that is not published or has the
                // optimizer's jump in the text; this one is published (a
                // hit finds it) and was unoptimized above.
                if !arch::set_int3(self, reg, &guard, p, on) {
                    pr_err!("probe at {:#x} not (dis)armed\n", p.addr());
                    result = result.and(Err(EINVAL));
                    continue;
                }
                p.set_armed_state(on);
            }
            guard.sync();
        }
        // Many ftrace sites change in one filter update (`ftrace_set_filter_ips`:
        // ftrace patches the text once for all of them); one at a time when
        // there is no memory for the list, or the batch is refused.
        if todo(true).nth(1).is_some() {
            if on {
                self.ftrace_arm_batch(reg, todo(true));
            } else {
                self.ftrace_disarm_batch(reg, todo(true));
            }
        }
        for p in todo(true) {
            if !on {
                // Never fails (see `ftrace_disarm`).
                arch::ftrace_disarm(p.addr(), reg.ftrace_armed == 1);
                p.set_armed_state(false);
                reg.ftrace_armed -= 1;
                continue;
            }
            // No text conflict here (both would be ftrace callbacks), but the
            // same rule as at registration (`check_address_safe`).
            let r = if self.native_kprobe_before(p.func(reg), p.addr()) {
                Err(EBUSY)
            } else {
                arch::ftrace_arm(self, p.addr(), reg.ftrace_armed == 0)
            };
            match r {
                Ok(()) => {
                    p.set_armed_state(true);
                    reg.ftrace_armed += 1;
                }
                Err(e) => result = result.and(Err(e)),
            }
        }
        result
    }

    /// Unregisters `kps`; returns when no CPU can be in their handlers or
    /// slots any more. Never fails, allocates nothing. Process context, may
    /// sleep.
    pub(crate) fn unregister_many(&self, kps: &[Client]) {
        self.unregister_each(kps.iter().copied());
    }

    /// [`Core::unregister_many`] of the probes `kps` yields.
    pub(crate) fn unregister_each(&self, kps: impl Iterator<Item = Client>) {
        let mut locked = self.reg.lock();
        let Reg { points, reg } = &mut *locked;
        self.unregister_locked(points, reg, kps);
    }

    /// Removes each of `kps` from its point, and frees the points left
    /// without a client. Writer.
    fn unregister_locked(
        &self,
        points: &mut Points,
        reg: &mut Registry,
        kps: impl Iterator<Item = Client>,
    ) {
        let mut removal = Removal::new();
        for kp in kps {
            self.unlink_client(points, reg, &mut removal, kp);
        }
        let removed = self.finish_removal(points, reg, removal);
        self.free_removed(points, reg, removed);
    }

    /// Unlinks `kp` from its point's client list, if it is registered. It is
    /// no longer registered when this returns, but readers may stand on it
    /// until the grace period that [`Core::finish_removal`] or
    /// [`Core::free_removed`] waits for. Writer; allocates nothing.
    pub(super) fn unlink_client<'p>(
        &'p self,
        points: &'p Points,
        reg: &mut Registry,
        removal: &mut Removal<'p>,
        kp: Client,
    ) {
        let Some(p) = self.point_of(points, kp) else {
            return;
        };
        // Clears its `rkp_private`: not registered any more.
        if p.unlink(reg, kp) {
            removal.points.add(p);
        }
    }

    /// Disarms the points of `removal` left with no enabled client, and
    /// unpublishes and retires those left with no client. Unless it retired
    /// one, waits until no CPU can be in a client that was unlinked;
    /// otherwise that wait is [`Core::free_removed`]'s, to which the caller
    /// gives what this returns. Writer; allocates nothing.
    pub(super) fn finish_removal(
        &self,
        points: &Points,
        reg: &mut Registry,
        removal: Removal<'_>,
    ) -> Removed {
        // Nothing was unlinked: nothing to wait for.
        if removal.points.iter().next().is_none() {
            // INVARIANT: nothing retired.
            return Removed { waited: true };
        }
        // Disarm before unpublishing: a CPU that trapped on an int3 finds its
        // point until then. Points of unloaded code are disarmed already.
        let _ = self.set_armed(reg, &removal.points, false, |p| !p.any_enabled());
        let mut retired = false;
        for p in removal.points.iter().filter(|p| p.is_empty()) {
            // Off the table (a point of unloaded code was when its code
            // went), freed by `free_removed` after a grace period.
            retired |= points.retire(&self.table, p);
        }
        // A point that lost a neighbour or a post-handler may be optimized.
        self.todo_after_removal(points, reg, &removal.points);
        // No CPU can be in a handler, or in a slot with interrupts off, of
        // what was unlinked or unpublished above after this; when a point
        // was retired, `free_removed` waits for it.
        if !retired {
            synchronize_rcu();
        }
        // INVARIANT: waited above unless a point was retired.
        Removed { waited: !retired }
    }

    /// Frees the points [`Core::finish_removal`] retired (`removed`), after
    /// the grace period they need (`Points::reclaim`: a Tasks RCU one too
    /// if a copy of one ran with interrupts on: a task may have been
    /// preempted in its slot, and leaves it only when it runs again), with
    /// their slots and detours. Writer, may sleep; allocates nothing.
    pub(super) fn free_removed(&self, points: &mut Points, reg: &mut Registry, removed: Removed) {
        // Retired points are on `Points`' list of points to free, whose
        // reclaim waits for the grace period since the last was retired.
        for p in points.reclaim(&self.rt) {
            arch::release(&self.slots, p.arch());
            arch::release_optimized(&self.slots, &p.optinsn, p.opt_w_mut(reg));
        }
        // INVARIANT: a grace period has passed since the last retire: either
        // `finish_removal` retired nothing, or `reclaim` waited for it.
        let mut removed = removed;
        removed.waited = true;
        drop(removed);
        // Waits only if no grace period has passed since the array was
        // replaced (none did if nothing was unlinked).
        points.reclaim_table(&self.table);
    }

    /// `rkp_enable_kprobe`/`rkp_disable_kprobe`. A probe that cannot be
    /// armed stays disabled, as the kernel's `enable_kprobe()` leaves it.
    /// Process context.
    pub(crate) fn set_enabled(&self, kp: Client, enable: bool) -> Result {
        self.set_enabled_each(core::iter::once(kp), enable)
    }

    /// [`Core::set_enabled`] of every probe `kps` yields, all or none: their
    /// points armed or disarmed as one batch (one text synchronisation, one
    /// ftrace filter change). Disarming allocates nothing and fails only
    /// for a probe that is not registered. Process context.
    pub(crate) fn set_enabled_each(
        &self,
        kps: impl Iterator<Item = Client> + Clone,
        enable: bool,
    ) -> Result {
        let mut locked = self.reg.lock();
        let Reg { points, reg } = &mut *locked;
        let points = &*points;
        for kp in kps.clone() {
            if self.point_of(points, kp).is_none() || kp.flags() & flags::GONE != 0 {
                return Err(EINVAL);
            }
        }
        let (set, clear) = if enable {
            (0, flags::DISABLED)
        } else {
            (flags::DISABLED, 0)
        };
        for kp in kps.clone() {
            kp.update_flags(set, clear);
        }
        // A point is in one batch at a time: `arm_points` makes its own.
        let r = if enable {
            self.arm_points(points, reg, kps.clone())
        } else {
            Ok(())
        };
        if r.is_err() {
            for kp in kps.clone() {
                kp.update_flags(flags::DISABLED, 0);
            }
        }
        if !enable || r.is_err() {
            let mut batch = Batch::new();
            // Checked above: registered, of live code.
            for kp in kps {
                if let Some(p) = self.live_point_of(points, kp) {
                    batch.add(p);
                }
            }
            // Never fails.
            let _ = self.set_armed(reg, &batch, false, |p| !p.any_enabled());
        }
        r
    }

    /// Arms or disarms every point (`/sys/kernel/debug/rkprobes/enabled`),
    /// best effort as the kernel's `arm_all_kprobes()`: the first error is
    /// returned, and the points that could not be armed stay disarmed.
    /// Process context.
    pub(crate) fn set_all_armed(&self, on: bool) -> Result {
        let mut locked = self.reg.lock();
        let Reg { points, reg } = &mut *locked;
        if reg.enabled == on {
            return Ok(());
        }
        reg.enabled = on;
        let mut all = Batch::new();
        for p in points.live() {
            all.add(p);
        }
        let r = self.set_armed(reg, &all, on, |p| !on || p.any_enabled());
        if r.is_err() {
            pr_warn!("probes globally enabled, but some could not be armed\n");
        }
        for p in all.iter() {
            self.try_queue(reg, p);
        }
        r
    }
}
