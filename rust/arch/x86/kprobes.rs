// SPDX-License-Identifier: GPL-2.0

//! The x86-64 hit path: the int3 handler, per-CPU control blocks.
//!
//! A hit traps on the int3 at the probe address. rkprobes' die notifier finds
//! the probe point in the lock-free table and runs the pre-handlers. Then the
//! instruction either is emulated (see `insn`), or its copy runs out of line
//! in the point's slot with interrupts off, followed there by a second int3
//! (the kernel's scheme since 5.11): that int3 moves `ip` back after the
//! original instruction, restores IF and runs the post-handlers. A boosted
//! copy is followed by a jump back instead, and runs with the interrupted
//! flags and no second trap.
//!
//! No single-step with the trap flag: a #DB runs on its own IST stack, and a
//! probe hit while a CPU is inside its #DB handler (a post-handler, an NMI
//! during a step, a probe in a #DB notifier) would set TF again and have the
//! nested #DB overwrite the outer frames on that same stack. int3 runs on the
//! interrupted stack and nests safely; and an instruction that a #VE/#VC
//! handler emulates (TDX, SEV-ES), or a `rep` string instruction, still ends
//! at the trailing int3. Documentation/kprobes-design.rst has the argument.
//!
//! Everything here runs in int3 exception context, which is NMI-like:
//! interrupts are off, nothing may sleep, allocate, or take a lock, and every
//! function is in rkprobes' own (blacklisted) text. Per-CPU state is only
//! touched by its own CPU, by shared references to cells that an NMI nesting
//! on the same CPU leaves as it found them (see [`Ctl::push`]).
//!
//! A probe hit while this CPU is already inside a probe (in a handler, in an
//! NMI that interrupted a step) counts as missed and runs its instruction
//! without handlers, with the interrupted state saved on a small per-CPU
//! stack, as the kernel's `reenter_kprobe()` does with its `prev_kprobe`.

use super::{
    insn::{ArchInsn, Op},
    regs,
};
use crate::{
    ffi,
    kernel_ext::{
        cpu,
        notifier::{Die, DieEvent, Notify},
        sync::PreemptNotraceGuard,
    },
    kprobe::{Core, Point},
    pure::{
        emulate::{self, FLAG_IF},
        insn::IfModifier,
    },
};
use core::{
    cell::Cell,
    sync::atomic::{compiler_fence, Ordering},
};
use kernel::{ffi::c_int, prelude::*};

/// Priority of rkprobes' die notifier: ahead of debuggers.
pub(crate) const DIE_NOTIFIER_PRIORITY: c_int = 0x7fff_fff0;

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
    /// IF of the interrupted code, restored after the copy ran: read only
    /// in a frame that is `HitSs` or `Reenter`, which the single-step setup
    /// wrote first (a push for a handler leaves it as it was).
    saved_flags: Cell<u64>,
    /// The interrupt level (NMI, hardirq, softirq nesting) of the context
    /// that pushed the frame, where its handlers run: a fault taken at
    /// another level (in an interrupt or NMI that came in meanwhile) is not
    /// theirs.
    level: Cell<u32>,
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
    fn point(&self) -> Option<&Point> {
        if self.status.get() == Status::Busy {
            return None;
        }
        // SAFETY: see above; a non-Busy frame's point was written before its
        // status (type invariant).
        unsafe { self.point.get().as_ref() }
    }

    /// Rewrites a frame that is `Busy`; its status last (type invariant).
    fn fill(&self, point: *const Point, status: Status, saved_flags: Option<u64>, level: u32) {
        self.point.set(point);
        if let Some(f) = saved_flags {
            self.saved_flags.set(f);
        }
        self.level.set(level);
        compiler_fence(Ordering::SeqCst);
        self.status.set(status);
    }
}

/// A CPU's probe state (the kernel's `struct kprobe_ctlblk`), in the
/// per-CPU variable `rkp_ctl_area` of `ffi/glue.c`, as the kernel keeps
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

/// The size of `rkp_ctl_area` (`RKP_CTL_AREA_WORDS` words in `glue.h`),
/// checked against the C side's at load ([`init_ctl`]).
const CTL_AREA_BYTES: usize = 16 * 8;
const _: () =
    assert!(core::mem::size_of::<Ctl>() <= CTL_AREA_BYTES && core::mem::align_of::<Ctl>() <= 64);

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
        f.fill(point, status, saved_flags, cpu::irq_level());
        true
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
    // SAFETY: a constant of glue.c.
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
    let free = (ctl.depth() == 0
        || ctl
            .top()
            .is_some_and(|top| top.level.get() != cpu::irq_level()))
        && ctl.push(core::ptr::null(), Status::Busy, None);
    f(free);
    if free {
        // Every probe hit in `f` popped what it pushed.
        ctl.pop();
    }
    drop(preempt);
}

/// A hit through an optimized probe's jump (the kernel's
/// `optimized_callback()`): the per-CPU reentrancy check, then the
/// pre-handlers with `regs` as an int3 hit presents them. Context of the
/// probed code, preemption off (interrupts usually on); may not sleep,
/// allocate or take locks.
pub(super) fn optimized_hit(point: &Point, regs: *mut ffi::pt_regs) {
    // Preemption is off (the caller): the CPU stays.
    let ctl = this_cpu();
    if ctl.depth() > 0 {
        point.missed();
        return;
    }
    if !ctl.push(point, Status::HitActive, None) {
        return;
    }
    // A changed `regs->ip` is ignored, as the kernel documents for
    // optimized probes: the detour's copy runs next whatever the handlers
    // returned.
    let _ = point.run_pre_handlers(regs);
    ctl.pop_first();
}

/// The handler of the die notifier (the kernel's
/// `kprobe_exceptions_notify()`): int3 and faults. Exception context,
/// NMI-like: may not sleep, allocate or take locks. Inline (`Core::notify`).
#[inline(always)]
pub(crate) fn die_notify(core: &Core, event: DieEvent<'_>) -> Notify {
    let regs = event.regs;
    // SAFETY: every member of the `cs` union holds the selector in its low
    // bits; reading the 16-bit one is always valid.
    if unsafe { regs.__bindgen_anon_1.cs } & 3 != 0 {
        // User mode: never one of ours.
        return Notify::Done;
    }
    let handled = match event.die {
        Die::Int3 => int3(core, regs),
        Die::Gpf | Die::Trap => fault(regs, event.trapnr),
    };
    if handled {
        Notify::Stop
    } else {
        Notify::Done
    }
}

/// Where the copy of `point` that runs with a trailing int3 starts, and
/// where that int3 is.
fn step_range(point: &Point) -> Option<(usize, usize)> {
    let slot = point.arch.slot?;
    // A slot is a copy's bytes in execmem, far below the top of the
    // address space: no overflow to check.
    Some((
        slot.addr(),
        slot.addr().wrapping_add(usize::from(point.arch.len)),
    ))
}

/// An int3: the trailing int3 of the copy this CPU runs, or a probe point.
/// int3 context. Inline into the die notifier's callback, its one caller.
#[inline(always)]
fn int3(core: &Core, regs: &mut ffi::pt_regs) -> bool {
    let addr = regs.ip.wrapping_sub(1);
    let ctl = this_cpu();
    // The depth first: an idle CPU (the common hit) skips the frame lookup
    // and its bounds check, 11 instructions.
    if ctl.depth() > 0 {
        if let Some(top) = ctl.top() {
            if matches!(top.status(), Status::HitSs | Status::Reenter) {
                if let Some(point) = top.point() {
                    if step_range(point).is_some_and(|(_, end)| end == addr) {
                        resume(point, regs, ctl, top);
                        return true;
                    }
                }
            }
        }
    }
    let Some(point) = core.lookup(addr) else {
        // An int3 whose byte is gone was removed while this CPU trapped on it
        // (the kernel's kprobe_int3_handler() does the same): run the
        // original instruction again. Unreachable for rkprobes' own probes,
        // which are disarmed before they are unpublished, but a kernel
        // without kprobes has nobody else to do it.
        // SAFETY: the CPU just executed the byte at `addr`, so it is mapped
        // and readable (kernel text is never execute-only on x86); a plain
        // read avoids calling anything that could itself be probed.
        let byte = unsafe { (addr as *const u8).read_volatile() };
        if byte != super::insn::INT3 {
            regs.ip = addr;
            return true;
        }
        return false;
    };
    if ctl.depth() > 0 {
        point.missed();
        return setup(point, regs, ctl, true, false);
    }
    if !ctl.push(point, Status::HitActive, None) {
        return false;
    }
    if !point.run_pre_handlers(regs) {
        // A handler moved `ip`: the instruction does not run.
        ctl.pop_first();
        return true;
    }
    // As the kernel's aggregate probe, whose `post_handler` is set when any
    // client has one: the copy traps back then, and is not boosted.
    setup(point, regs, ctl, false, point.has_post())
}

/// Runs the probed instruction: emulates it, or sends `ip` to its copy.
/// `post`: some client has a post-handler ([`Point::has_post`]), so the
/// copy must trap back. int3 context; the caller pushed a frame unless `reenter`.
/// Inline (as a call, its prologue and epilogue were 12 instructions a hit).
#[inline(always)]
fn setup(point: &Point, regs: &mut ffi::pt_regs, ctl: &Ctl, reenter: bool, post: bool) -> bool {
    if let Some(copy) = point.detour() {
        // Queued for optimization, optimized, or being unoptimized: the
        // whole region runs from the detour, so that nothing executes its
        // bytes after the first in the text (the kernel's
        // `setup_detour_execution()`). It runs with the interrupted flags,
        // as a boosted copy. A point with a detour has no post-handler
        // (registration unoptimizes first).
        if !reenter {
            ctl.pop_first();
        }
        regs.ip = copy as _;
        return true;
    }
    let insn = &point.arch;
    // A discriminant test (`!=` is the derived `PartialEq`, which LLVM
    // left out of line: a call and 14 instructions a hit).
    if !matches!(insn.op, Op::Step) {
        emulate(insn, point.addr, regs);
        if !reenter {
            ctl.top_set_status(Status::HitSsDone);
            point.run_post_handlers(regs, 0);
            ctl.pop_first();
        }
        return true;
    }
    let Some((copy, _)) = step_range(point) else {
        // Cannot happen (a copied instruction has a slot): leave the trap to
        // the kernel rather than run garbage.
        if !reenter {
            ctl.pop_first();
        }
        return false;
    };
    if !post && !reenter {
        if let Some(boosted) = insn.boosted_copy() {
            // Boosted: the copy is followed by a jump back, so it runs with
            // the interrupted flags and no second trap.
            point.ran_boosted();
            ctl.pop_first();
            regs.ip = boosted as _;
            return true;
        }
    }
    let saved = regs.flags as u64 & FLAG_IF;
    if reenter {
        if !ctl.push(point, Status::Reenter, Some(saved)) {
            // Nested deeper than MAX_DEPTH: the kernel's "unrecoverable
            // kprobe" case. Leaving the trap unhandled makes the kernel report
            // it rather than corrupt the interrupted probe's state.
            return false;
        }
    } else if let Some(f) = ctl.top() {
        f.saved_flags.set(saved);
        f.set_status(Status::HitSs);
    }
    regs.flags = (regs.flags as u64 & !FLAG_IF) as _;
    regs.ip = copy as _;
    true
}

/// The copy of the innermost frame's point ran into its trailing int3: `ip`
/// goes back after the original instruction, IF as it was, and the
/// post-handlers run (the kernel's `resume_singlestep()` and
/// `kprobe_post_process()`). int3 context.
fn resume(point: &Point, regs: &mut ffi::pt_regs, ctl: &Ctl, frame: &Frame) {
    regs.ip = point.addr.wrapping_add(point.arch.len as usize) as _;
    regs.flags = (regs.flags as u64 | frame.saved_flags.get()) as _;
    if frame.status() == Status::HitSs {
        frame.set_status(Status::HitSsDone);
        point.run_post_handlers(regs, 0);
    }
    ctl.pop();
}

/// Emulates an instruction that does not run out of line. int3 context: the
/// int3 entry leaves a gap below the interrupted stack, so a push of one word
/// (call, pushf) is safe.
fn emulate(insn: &ArchInsn, addr: usize, regs: &mut ffi::pt_regs) {
    let next = addr.wrapping_add(insn.len as usize) as u64;
    let push = |regs: &mut ffi::pt_regs, v: u64| {
        regs.sp = regs.sp.wrapping_sub(8);
        // SAFETY: the int3 gap makes the word below the interrupted stack
        // writable and unused (see the function comment).
        unsafe { (regs.sp as *mut u64).write(v) };
    };
    let pop = |regs: &mut ffi::pt_regs| -> u64 {
        // SAFETY: the interrupted code's stack top, which it was about to pop.
        let v = unsafe { (regs.sp as *const u64).read() };
        regs.sp = regs.sp.wrapping_add(8);
        v
    };
    let ip = match insn.op {
        // Never emulated (a stepped instruction; an ftrace site has no int3).
        Op::Step | Op::Ftrace => next,
        Op::Call(target) => {
            push(regs, next);
            target
        }
        Op::Jmp(target) => target,
        Op::Jcc(cc, target) => {
            if emulate::condition_holds(cc, regs.flags as u64) {
                target
            } else {
                next
            }
        }
        Op::Loop(kind, asize, target) => {
            let (rcx, taken) = emulate::run_loop(kind, asize, regs.cx as u64, regs.flags as u64);
            regs.cx = rcx as _;
            if taken {
                target
            } else {
                next
            }
        }
        Op::Ret(extra) => {
            let ip = pop(regs);
            regs.sp = regs.sp.wrapping_add(u64::from(extra) as _);
            ip
        }
        Op::CallIndirect(r) => {
            let target = regs::gpr(regs, r);
            push(regs, next);
            target
        }
        Op::JmpIndirect(r) => regs::gpr(regs, r),
        Op::IfModifier(m) => {
            match m {
                IfModifier::Cli => regs.flags = (regs.flags as u64 & !FLAG_IF) as _,
                IfModifier::Sti => regs.flags = (regs.flags as u64 | FLAG_IF) as _,
                IfModifier::Pushf => {
                    let f = regs.flags as u64;
                    push(regs, f);
                }
                IfModifier::Popf => {
                    // popf: the kernel's emulation takes the popped value
                    // whole, TF and IF included.
                    let f = pop(regs);
                    regs.flags = f as _;
                }
            }
            next
        }
    };
    regs.ip = ip as _;
}

/// A fault reported through the die chain (`DIE_GPF` after the exception
/// table found no fixup, `DIE_TRAP` for #DE, #OF, #BR, #UD, #TS, #NP, #SS,
/// #AC) while this CPU handles a probe. It is the probe's only when raised by
/// one of its handlers, at the handler's NMI level, or by its copy: then the
/// fault handlers see it first, and a fault in the copy has `ip` put back at
/// the probe address, so that the kernel reports (or fixes) it where the
/// instruction really is, as the kernel's `kprobe_fault_handler()` does.
/// Exception context, where a #GP may have turned interrupts on again
/// (`exc_general_protection()`): as the kernel's
/// `kprobe_exceptions_notify()`, a preemptible context is not inside a
/// probe (handlers and copies run with preemption or interrupts off), and
/// could not use this CPU's block anyway.
fn fault(regs: &mut ffi::pt_regs, trapnr: c_int) -> bool {
    if cpu::preemptible() {
        return false;
    }
    let ctl = this_cpu();
    let Some(frame) = ctl.top() else {
        return false;
    };
    let Some(point) = frame.point() else {
        return false;
    };
    match frame.status() {
        // A handler runs at the interrupt level of the frame's push (an
        // int3 hit enters NMI context itself; an optimized hit runs where
        // the probed code ran, with interrupts on); an interrupt or NMI that
        // came in during the handler and faulted is at another level.
        Status::HitActive | Status::HitSsDone => {
            frame.level.get() == cpu::irq_level() && point.run_fault_handlers(regs, trapnr)
        }
        status @ (Status::HitSs | Status::Reenter) => {
            let Some((copy, end)) = step_range(point) else {
                return false;
            };
            let ip = regs.ip;
            if ip < copy || ip >= end {
                // Interrupts are off while the copy runs: nothing else runs
                // at this level but the copy.
                return false;
            }
            if status == Status::HitSs && point.run_fault_handlers(regs, trapnr) {
                return true;
            }
            regs.ip = point.addr as _;
            regs.flags = (regs.flags as u64 | frame.saved_flags.get()) as _;
            ctl.pop();
            false
        }
        Status::Busy => false,
    }
}
