// SPDX-License-Identifier: GPL-2.0

//! Each CPU's probe state, the kernel's `current_kprobe` and
//! `struct kprobe_ctlblk`: a small stack of frames, one per probe this CPU
//! is handling (an active probe, plus reentries from an interrupt, NMI or
//! handler), in the per-CPU variable `rkp_ctl_area` of `ctl.c`.
//!
//! Every hit path uses it from a context the CPU cannot leave (interrupts
//! or preemption off); interrupts, NMIs and exceptions nesting on the same
//! CPU use the same block. Its protocol (a frame is filled before its
//! status says so, and made `Busy` before the depth drops) makes every
//! nesting point safe: see [`Ctl`]. The hit paths that only ever push a
//! first frame (ftrace, an optimized probe's jump) reach it through `%gs`
//! (`ffi::percpu::this_cpu!`), one instruction per access, as the kernel's
//! `this_cpu_*()` do.

use crate::{
    ffi::{self, percpu::this_cpu},
    kernel_ext::{cpu, sync::PreemptNotraceGuard},
    kprobe::Point,
};
use core::{
    cell::Cell,
    mem::offset_of,
    sync::atomic::{compiler_fence, Ordering},
};
use kernel::prelude::*;

/// Saved probe states per CPU: one active probe, plus reentries.
const MAX_DEPTH: usize = 4;

/// Where a CPU is in handling a probe. `Busy` is 0: an all-zero frame is
/// an empty one (the per-CPU storage starts zeroed).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Status {
    /// Running a kretprobe's return handler (the kernel's
    /// `kprobe_busy_begin()`), or a frame being written; no point.
    Busy = 0,
    /// Running pre-handlers.
    HitActive,
    /// Running the copy in the slot, handlers to follow.
    HitSs,
    /// Running post-handlers.
    HitSsDone,
    /// Running the copy of a probe hit inside another probe; no handlers.
    Reenter,
}

/// One level of probe handling on a CPU.
///
/// # Invariants
///
/// `point` is meaningful only when `status` is not [`Status::Busy`]. A frame
/// at or above its control block's depth is `Busy`, and a pushed frame is
/// filled with its status last, so that an interrupt or NMI nesting at any
/// point never follows a stale point or status.
pub(super) struct Frame {
    point: Cell<*const Point>,
    status: Cell<Status>,
    /// A word of the interrupted state that the frame's path restores,
    /// written by that path before it reads it (a push leaves it as it
    /// was, except a `Reenter` push): the IF of the interrupted code,
    /// restored after the copy ran, in a frame that is `HitSs` or
    /// `Reenter`; the ip ftrace returns to, in an ftrace hit's frame
    /// ([`Ctl::this_cpu_save_first`]).
    saved: Cell<u64>,
    /// The preempt count, as stored, of the context that pushed the frame,
    /// where its handlers run. Its interrupt level (NMI, hardirq, softirq
    /// nesting; [`cpu::irq_level_of`], masked by the readers, off the hit
    /// path): a fault taken at another level (in an interrupt or NMI that
    /// came in meanwhile) is not theirs.
    count: Cell<u32>,
}

impl Frame {
    pub(super) fn status(&self) -> Status {
        self.status.get()
    }

    pub(super) fn set_status(&self, s: Status) {
        compiler_fence(Ordering::SeqCst);
        self.status.set(s);
    }

    /// The frame's point, unless it is `Busy`. The point is live: it was
    /// found in the table by this CPU, which has had interrupts or
    /// preemption off since,
    /// holding off the grace period that would free it.
    pub(super) fn point(&self) -> Option<&Point> {
        if self.status.get() == Status::Busy {
            return None;
        }
        // SAFETY: see above; a non-Busy frame's point was written before its
        // status (type invariant).
        unsafe { self.point.get().as_ref() }
    }

    /// The interrupted code's IF that a stepping frame restores (its saved
    /// word).
    pub(super) fn saved_flags(&self) -> u64 {
        self.saved.get()
    }

    /// Keeps the interrupted code's IF, before the frame starts stepping.
    pub(super) fn set_saved_flags(&self, f: u64) {
        self.saved.set(f);
    }

    /// Whether the frame was pushed at this CPU's current interrupt level
    /// (NMI, hardirq, softirq nesting): a fault taken at another level (in
    /// an interrupt or NMI that came in meanwhile) is not its handlers'.
    pub(super) fn pushed_at_this_level(&self) -> bool {
        cpu::irq_level_of(self.count.get()) == cpu::irq_level()
    }

    /// Rewrites a frame that is `Busy`; its status last (type invariant).
    fn fill(&self, point: *const Point, status: Status, saved_flags: Option<u64>, count: u32) {
        self.point.set(point);
        if let Some(f) = saved_flags {
            self.saved.set(f);
        }
        self.count.set(count);
        compiler_fence(Ordering::SeqCst);
        self.status.set(status);
    }
}

/// A CPU's probe state (the kernel's `struct kprobe_ctlblk`), in the
/// per-CPU variable `rkp_ctl_area` of `ctl.c`, as the kernel keeps
/// `current_kprobe` and `kprobe_ctlblk` per CPU.
///
/// # Invariants
///
/// All-zero bytes are a valid, idle `Ctl` (depth 0, every frame `Busy`
/// with no point): the storage starts zeroed. Every frame at index `depth`
/// or above is `Busy` (pop makes a frame `Busy` before the depth drops).
pub(super) struct Ctl {
    depth: Cell<usize>,
    frames: [Frame; MAX_DEPTH],
}

/// The size of `rkp_ctl_area` (`RKP_CTL_AREA_WORDS` words in `ctl.h`),
/// checked against the C side's at load ([`init_ctl`]).
const CTL_AREA_BYTES: usize = 16 * 8;
const _: () =
    assert!(core::mem::size_of::<Ctl>() <= CTL_AREA_BYTES && core::mem::align_of::<Ctl>() <= 64);

/// Offsets in a `Ctl` of what the `%gs`-relative accesses touch
/// ([`Ctl::this_cpu_push_first`]): its depth and its first frame.
const DEPTH: usize = offset_of!(Ctl, depth);
const FRAME0_POINT: usize = offset_of!(Ctl, frames) + offset_of!(Frame, point);
const FRAME0_COUNT: usize = offset_of!(Ctl, frames) + offset_of!(Frame, count);
const FRAME0_STATUS: usize = offset_of!(Ctl, frames) + offset_of!(Frame, status);
const FRAME0_SAVED: usize = offset_of!(Ctl, frames) + offset_of!(Frame, saved);
// What the `%gs`-relative accesses load and store: a `usize`, a pointer,
// a `u32`, a one-byte `Status`, a `u64`, as `usize`, `usize`, `u32`, `u8`
// and `usize`.
const _: () = assert!(
    core::mem::size_of::<Cell<usize>>() == 8
        && core::mem::size_of::<Cell<*const Point>>() == 8
        && core::mem::size_of::<Cell<u64>>() == 8
        && core::mem::size_of::<Cell<u32>>() == 4
        && core::mem::size_of::<Cell<Status>>() == 1
);

/// This CPU's control block. Interrupts (or preemption) must be off so that
/// the CPU cannot change while the block is used; any nesting on the CPU
/// (NMI, exceptions) uses it through the same shared reference. Any
/// context.
#[inline(always)]
pub(super) fn this_cpu() -> &'static Ctl {
    // SAFETY: this CPU's copy of `rkp_ctl_area`, 64-byte aligned, as large
    // as a `Ctl` (checked at compile time against `CTL_AREA_BYTES`, and at
    // load against the C side's size, before any probe exists) and valid
    // as one from its zeroed start (type invariant). Each copy is only
    // accessed by its own CPU, through shared references to cells; the
    // only nesting is an NMI or an exception in a handler, which leaves the
    // state as it found it before the interrupted code resumes.
    unsafe { &*ffi::percpu::ctl_area().cast::<Ctl>() }
}

impl Ctl {
    pub(super) fn depth(&self) -> usize {
        self.depth.get()
    }

    /// The innermost frame.
    pub(super) fn top(&self) -> Option<&Frame> {
        let i = self.depth.get().checked_sub(1)?;
        self.frames.get(i)
    }

    /// Sets the status of the innermost frame, if there is one.
    pub(super) fn top_set_status(&self, s: Status) {
        if let Some(f) = self.top() {
            f.set_status(s);
        }
    }

    /// Pushes a frame; false when nested deeper than `MAX_DEPTH`.
    ///
    /// The new top is `Busy` (type invariant) when the depth grows, and
    /// stays so until it is filled, status last: an interrupt or NMI landing
    /// before the depth grows pushes its own frame at the same index and
    /// pops it, `Busy` again, before this resumes; one landing after sees
    /// a frame that names no point.
    /// `saved_flags` is given for a `Reenter` frame; other frames get theirs
    /// when they start single-stepping.
    pub(super) fn push(
        &self,
        point: *const Point,
        status: Status,
        saved_flags: Option<u64>,
    ) -> bool {
        let i = self.depth.get();
        let Some(f) = self.frames.get(i) else {
            return false;
        };
        self.depth.set(i + 1);
        compiler_fence(Ordering::SeqCst);
        f.fill(point, status, saved_flags, cpu::preempt_count_raw());
        true
    }

    /// [`Ctl::depth`] of this CPU's block, through `%gs` (the kernel's
    /// `this_cpu_read()`): no pointer to the block to compute and keep
    /// across the handlers. For the hit paths that push only a first frame.
    /// Preemption off.
    #[inline(always)]
    pub(super) fn this_cpu_depth() -> usize {
        // SAFETY: a load of this CPU's block's depth, a `usize` at `DEPTH`
        // in `rkp_ctl_area`.
        unsafe { this_cpu!(read usize, ffi::rkp_ctl_area, DEPTH) }
    }

    /// [`Ctl::push`] of a `HitActive` frame for `point` on this CPU's
    /// block at depth 0, through `%gs` as [`Ctl::this_cpu_depth`]: the same
    /// stores in the same order (the depth, then the frame, status last),
    /// one instruction each, each a compiler barrier. The caller found the
    /// depth 0 with preemption off; an interrupt or NMI that pushed
    /// meanwhile popped again.
    #[inline(always)]
    pub(super) fn this_cpu_push_first(point: *const Point) {
        let count = cpu::preempt_count_raw();
        // SAFETY: this and each store below is to this CPU's block, at the
        // offset of one of its members, of a value valid for it; the depth
        // grows from 0 while frame 0 is `Busy` (type invariant), and the
        // status is written last.
        unsafe { this_cpu!(write usize, ffi::rkp_ctl_area, DEPTH, const 1) };
        // SAFETY: as the depth's store above.
        unsafe { this_cpu!(write usize, ffi::rkp_ctl_area, FRAME0_POINT, point as usize) };
        // SAFETY: as the depth's store above.
        unsafe { this_cpu!(write u32, ffi::rkp_ctl_area, FRAME0_COUNT, count) };
        // SAFETY: as the depth's store above.
        unsafe {
            this_cpu!(write u8, ffi::rkp_ctl_area, FRAME0_STATUS, const Status::HitActive as u8)
        };
    }

    /// Keeps `v` in the saved word of this CPU's first frame (see
    /// [`Frame`]'s `saved`), through `%gs`: the frame [`Ctl::this_cpu_push_first`]
    /// pushed, which no other path writes until it is popped. For the ftrace
    /// hit, whose saved ip would otherwise take a register kept across the
    /// handlers' calls.
    #[inline(always)]
    pub(super) fn this_cpu_save_first(v: usize) {
        // SAFETY: a store to this CPU's block, of a word at its `u64`
        // member's offset.
        unsafe { this_cpu!(write usize, ffi::rkp_ctl_area, FRAME0_SAVED, v) };
    }

    /// What [`Ctl::this_cpu_save_first`] kept.
    #[inline(always)]
    pub(super) fn this_cpu_saved_first() -> usize {
        // SAFETY: a load of this CPU's block's `u64` member, as a word.
        unsafe { this_cpu!(read usize, ffi::rkp_ctl_area, FRAME0_SAVED) }
    }

    /// [`Ctl::pop_first`] on this CPU's block through `%gs`: frame 0 `Busy`,
    /// then depth 0, after the handlers (each store a compiler barrier).
    #[inline(always)]
    pub(super) fn this_cpu_pop_first() {
        // SAFETY: stores to this CPU's block, at its members' offsets, of
        // valid values, in the order of its invariant.
        unsafe { this_cpu!(write u8, ffi::rkp_ctl_area, FRAME0_STATUS, const Status::Busy as u8) };
        // SAFETY: as above.
        unsafe { this_cpu!(write usize, ffi::rkp_ctl_area, DEPTH, const 0) };
    }

    /// Pops the frame that a [`Ctl::push`] at depth 0 pushed (the depth is
    /// 1 again once every nested context popped its own): [`Ctl::pop`] with
    /// the frame known, as the hit paths use it.
    pub(super) fn pop_first(&self) {
        compiler_fence(Ordering::SeqCst);
        self.frames[0].status.set(Status::Busy);
        compiler_fence(Ordering::SeqCst);
        self.depth.set(0);
    }

    /// Pops the frame a successful [`Ctl::push`] pushed: `Busy` first, then
    /// the depth (type invariant). Does nothing at depth 0.
    pub(super) fn pop(&self) {
        compiler_fence(Ordering::SeqCst);
        let d = self.depth.get();
        if let Some(f) = d.checked_sub(1).and_then(|i| self.frames.get(i)) {
            f.status.set(Status::Busy);
            compiler_fence(Ordering::SeqCst);
            self.depth.set(d - 1);
        }
    }
}

/// Readies the per-CPU control blocks in `rkp_ctl_area` ([`this_cpu`]):
/// checks the C side's size against [`CTL_AREA_BYTES`] and zeroes every
/// possible CPU's block (`cpu::check_percpu` checked the inline pointer).
/// Process context, before any probe exists.
pub(crate) fn init_ctl() -> Result {
    // SAFETY: a constant of ctl.c.
    if unsafe { ffi::rkp_ctl_area_size } as usize != CTL_AREA_BYTES {
        pr_err!("rkp_ctl_area's size differs from the Rust side's\n");
        return Err(EINVAL);
    }
    // SAFETY: process context; no probe exists yet, so no hit path uses the
    // blocks.
    unsafe { ffi::rkp_ctl_area_reset() };
    Ok(())
}

/// Runs `f` with preemption off and this CPU marked as inside a probe, so
/// that a probe hit from `f` counts as missed: the kernel's
/// `kprobe_busy_begin()`/`kprobe_busy_end()` around a kretprobe's return
/// handler, which runs, as the kernel's on x86 (`rethook`), with interrupts
/// as the returning code had them: the control block is safe against an
/// interrupt or NMI nesting on the CPU, and a hit there counts a miss.
/// `f` is told whether the CPU was free; when it was not (the return came
/// from inside a probe handler), it must not run handlers. Any context.
///
/// The CPU is also free when what it handles was pushed at another
/// interrupt level: the return came from an interrupt or NMI that arrived
/// meanwhile, not from a handler, and its handler runs, as in the kernel.
pub(crate) fn run_busy(f: impl FnOnce(bool)) {
    let preempt = PreemptNotraceGuard::new();
    let ctl = this_cpu();
    let free = (ctl.depth() == 0 || ctl.top().is_some_and(|top| !top.pushed_at_this_level()))
        && ctl.push(core::ptr::null(), Status::Busy, None);
    f(free);
    if free {
        // Every probe hit in `f` popped what it pushed.
        ctl.pop();
    }
    drop(preempt);
}
