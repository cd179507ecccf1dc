// SPDX-License-Identifier: GPL-2.0

//! The x86-64 hit path: the int3 handler (and the optimized probes' hit),
//! on the per-CPU control blocks of `ctl`.
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
    arch_insn::{ArchInsn, Op},
    ctl::{this_cpu, Ctl, Frame, Status},
    regs,
};
use crate::{
    ffi,
    kernel_ext::{
        cpu,
        notifier::{Die, DieEvent, Notify},
        sync::{NoPreempt, Rcu},
    },
    kprobe::{Core, Point},
    pure::{
        emulate::{self, FLAG_IF},
        insn::IfModifier,
    },
};
use kernel::ffi::{c_int, c_ulong};

/// Priority of rkprobes' die notifier: ahead of debuggers.
pub(crate) const DIE_NOTIFIER_PRIORITY: c_int = 0x7fff_fff0;

/// A hit through an optimized probe's jump (the kernel's
/// `optimized_callback()`): the per-CPU reentrancy check, then the
/// pre-handlers with `regs` as an int3 hit presents them. Context of the
/// probed code, preemption off (interrupts usually on); may not sleep,
/// allocate or take locks.
pub(super) fn optimized_hit(point: &Point, rcu: Rcu<'_>, regs: *mut ffi::pt_regs) {
    // Preemption is off (the caller, whose read section `rcu` is): the CPU
    // stays.
    if Ctl::this_cpu_depth() > 0 {
        point.missed(rcu);
        return;
    }
    Ctl::this_cpu_push_first(point);
    // A changed `regs->ip` is ignored, as the kernel documents for
    // optimized probes: the detour's copy runs next whatever the handlers
    // returned.
    let _ = point.run_pre_handlers(rcu, regs);
    Ctl::this_cpu_pop_first();
}

/// [`optimized_hit`] of a point whose detour calls the post-handlers after
/// its first instruction: as an int3 hit with a post-handler, the frame
/// pushed for the pre-handlers stays, stepping (`HitSs`, or `Reenter` for a
/// hit inside another probe, which runs no handler), and the first
/// instruction runs with interrupts off, its IF kept in the frame; the
/// post-handlers' callback ([`optimized_post`]) restores it and pops the
/// frame. With interrupts off from here to there the CPU cannot change.
/// If no frame can be pushed (nested deeper than `MAX_DEPTH`), the
/// instruction runs as the probed code had it and nothing is handled.
pub(super) fn optimized_hit_post(point: &Point, rcu: Rcu<'_>, regs: &mut ffi::pt_regs) {
    let ctl = this_cpu();
    let saved = regs.flags as u64 & FLAG_IF;
    let status = if ctl.depth() > 0 {
        point.missed(rcu);
        Status::Reenter
    } else {
        Status::HitActive
    };
    if !ctl.push(point, status, Some(saved)) {
        return;
    }
    if status == Status::HitActive {
        // As for the kernel's optimized probes, a changed `regs->ip` is
        // ignored: the first instruction runs; a pre-handler that asked to
        // skip it only skips the post-handlers, as at an int3 hit.
        let go_on = point.run_pre_handlers(rcu, regs);
        if let Some(f) = ctl.top() {
            f.set_saved_flags(saved);
            f.set_status(if go_on {
                Status::HitSs
            } else {
                Status::Reenter
            });
        }
    }
    regs.flags = (regs.flags as u64 & !FLAG_IF) as _;
    if saved != 0 {
        // SAFETY: a plain call; interrupts go off here, and the trampoline's
        // popf keeps them off (IF cleared above).
        unsafe { ffi::rkp_local_irq_disable() };
    }
}

/// After the first instruction of a detour that calls the post-handlers,
/// `ret` naming which (see `rkp_optprobe_post_callback`): if this CPU's
/// innermost frame is that point's, stepping, `ip` goes after the original
/// instruction, IF as the probed code had it, the post-handlers run (a
/// `HitSs` frame), and the frame is popped: the int3 path's `resume`.
/// Interrupts off.
///
/// Every way into the detour's first instruction pushes a frame for it,
/// at the pre-handlers' callback or at the int3 hit that sent it there (a
/// hit inside another probe pushes a `Reenter` frame), and anything that
/// nests meanwhile (an NMI, or an exception the instruction raises) pops
/// what it pushed before the instruction completes: the innermost frame is
/// this one's. The one exception is a nesting deeper than `MAX_DEPTH`,
/// where no frame could be pushed: an innermost frame of the same point,
/// stepping, would then be taken for its own (four nested hits of one
/// point inside its own first instruction).
pub(super) fn optimized_post(ret: usize, rcu: Rcu<'_>, regs: &mut ffi::pt_regs) {
    let ctl = this_cpu();
    let Some(frame) = ctl.top() else {
        return;
    };
    let status = frame.status();
    let Some(point) = frame.point() else {
        return;
    };
    if !matches!(status, Status::HitSs | Status::Reenter) || point.optinsn.post_ret() != ret {
        return;
    }
    regs.ip = point.addr().wrapping_add(point.arch().len as usize) as _;
    let saved = frame.saved_flags();
    regs.flags = (regs.flags as u64 | saved) as _;
    if status == Status::HitSs {
        frame.set_status(Status::HitSsDone);
        point.run_post_handlers(rcu, regs, 0);
    }
    ctl.pop();
    if saved != 0 {
        // SAFETY: a plain call, interrupts off; the trampoline's popf turns
        // them on (IF set above).
        unsafe { ffi::rkp_trace_hardirqs_on() };
    }
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
        Die::Gpf(err) => fault(core, regs, event.trapnr, Some(err)),
        Die::Trap => fault(core, regs, event.trapnr, None),
        Die::Oops => {
            oops(regs);
            false
        }
        // rkprobes single-steps nothing with the trap flag.
        Die::Debug(_) => false,
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
    let slot = point.arch().slot?;
    // A slot is a copy's bytes in execmem, far below the top of the
    // address space: no overflow to check.
    Some((
        slot.addr(),
        slot.addr().wrapping_add(usize::from(point.arch().len)),
    ))
}

/// An int3: the trailing int3 of the copy this CPU runs, or a probe point.
/// int3 context. Inline into the die notifier's callback, its one caller.
#[inline(always)]
fn int3(core: &Core, regs: &mut ffi::pt_regs) -> bool {
    // SAFETY: int3 exception context, entered with interrupts off (the
    // kernel's `exc_int3()`), which nothing here turns on; the statement
    // lives until this function returns.
    let section = unsafe { NoPreempt::assume() };
    let rcu = Rcu::of(&section);
    let addr = regs.ip.wrapping_sub(1);
    let ctl = this_cpu();
    // The depth first: an idle CPU (the common hit) skips the frame lookup
    // and its bounds check, 11 instructions.
    if ctl.depth() > 0 {
        if let Some(top) = ctl.top() {
            if matches!(top.status(), Status::HitSs | Status::Reenter) {
                if let Some(point) = top.point() {
                    if step_range(point).is_some_and(|(_, end)| end == addr) {
                        resume(point, rcu, regs, ctl, top);
                        return true;
                    }
                }
            }
        }
    }
    let Some(point) = core.lookup(&rcu, addr) else {
        // An int3 whose byte is gone was removed while this CPU trapped on it
        // (the kernel's kprobe_int3_handler() does the same): run the
        // original instruction again. Unreachable for rkprobes' own probes,
        // which are disarmed before they are unpublished, but a kernel
        // without kprobes has nobody else to do it.
        // SAFETY: the CPU just executed the byte at `addr`, so it is mapped
        // and readable (kernel text is never execute-only on x86); a plain
        // read avoids calling anything that could itself be probed.
        let byte = unsafe { (addr as *const u8).read_volatile() };
        if byte != super::slot::INT3 {
            regs.ip = addr;
            return true;
        }
        return false;
    };
    if ctl.depth() > 0 {
        point.missed(rcu);
        return setup(point, rcu, regs, ctl, true, false);
    }
    if !ctl.push(point, Status::HitActive, None) {
        return false;
    }
    if !point.run_pre_handlers(rcu, regs) {
        // A handler moved `ip`: the instruction does not run.
        ctl.pop_first();
        return true;
    }
    // As the kernel's aggregate probe, whose `post_handler` is set when any
    // client has one: the copy traps back then, and is not boosted.
    setup(point, rcu, regs, ctl, false, point.has_post())
}

/// Runs the probed instruction: emulates it, or sends `ip` to its copy.
/// `post`: some client has a post-handler ([`Point::has_post`]), so the
/// copy must trap back. int3 context; the caller pushed a frame unless `reenter`.
/// Inline: as a call, its prologue and epilogue cost 12 instructions a hit.
#[inline(always)]
fn setup(
    point: &Point,
    rcu: Rcu<'_>,
    regs: &mut ffi::pt_regs,
    ctl: &Ctl,
    reenter: bool,
    post: bool,
) -> bool {
    if let Some(copy) = point.detour() {
        // Queued for optimization, optimized, or being unoptimized: the
        // whole region runs from the detour, so that nothing executes its
        // bytes after the first in the text (the kernel's
        // `setup_detour_execution()`). It runs with the interrupted flags,
        // as a boosted copy. A detour without the post-handlers' call is a
        // point's without post-handlers: registering one unoptimizes the
        // point first, and the optimizer makes the detour again with it.
        regs.ip = copy as _;
        if point.optinsn.post_ret() == 0 {
            if !reenter {
                ctl.pop_first();
            }
            return true;
        }
        // A detour that calls the post-handlers after its first
        // instruction: the frame stays for them (`optimized_post`), as when
        // the copy is stepped below.
        return start_step(point, regs, ctl, reenter);
    }
    let insn = point.arch();
    // A discriminant test: `!=` is the derived `PartialEq`, which LLVM
    // leaves out of line (a call and 14 instructions a hit).
    if !matches!(insn.op, Op::Step) {
        emulate(insn, point.addr(), regs);
        if !reenter {
            ctl.top_set_status(Status::HitSsDone);
            point.run_post_handlers(rcu, regs, 0);
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
    regs.ip = copy as _;
    start_step(point, regs, ctl, reenter)
}

/// Readies this CPU's frame for a copy of `point`'s instruction that runs
/// with interrupts off until the frame's path resumes (the copy's trailing
/// int3, or a detour's call of the post-handlers): the interrupted IF kept
/// in the frame, pushed as `Reenter` for a hit inside another probe, and
/// IF cleared. False when nested deeper than `MAX_DEPTH`: the kernel's
/// "unrecoverable kprobe" case, where leaving the trap unhandled makes the
/// kernel report it rather than corrupt the interrupted probe's state.
/// int3 context.
#[inline(always)]
fn start_step(point: &Point, regs: &mut ffi::pt_regs, ctl: &Ctl, reenter: bool) -> bool {
    let saved = regs.flags as u64 & FLAG_IF;
    if reenter {
        if !ctl.push(point, Status::Reenter, Some(saved)) {
            return false;
        }
    } else if let Some(f) = ctl.top() {
        f.set_saved_flags(saved);
        f.set_status(Status::HitSs);
    }
    regs.flags = (regs.flags as u64 & !FLAG_IF) as _;
    true
}

/// The copy of the innermost frame's point ran into its trailing int3: `ip`
/// goes back after the original instruction, IF as it was, and the
/// post-handlers run (the kernel's `resume_singlestep()` and
/// `kprobe_post_process()`). int3 context.
fn resume(point: &Point, rcu: Rcu<'_>, regs: &mut ffi::pt_regs, ctl: &Ctl, frame: &Frame) {
    regs.ip = point.addr().wrapping_add(point.arch().len as usize) as _;
    regs.flags = (regs.flags as u64 | frame.saved_flags()) as _;
    if frame.status() == Status::HitSs {
        frame.set_status(Status::HitSsDone);
        point.run_post_handlers(rcu, regs, 0);
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

/// An oops at this CPU's probe (`DIE_OOPS`): a fault in a copy that no
/// die event reported first (a page fault the exception table did not fix
/// goes straight to the oops), or in a handler. The context dies and never
/// comes back to the copy or the handler, so its frames are taken off this
/// CPU's stack, as the kernel's `kprobe_fault_handler()` resets its
/// control block; otherwise every later hit on this CPU would count as
/// missed, and the point could be freed under the stale frame. A task's
/// oops takes every frame: interrupts that pushed frames above the task
/// have returned, and the frames under the top one (the handler of an
/// optimized or ftrace hit that hit an int3 probe, a kretprobe's return
/// handler) are the task's too. An oops in an interrupt is fatal anyway:
/// its top frame only. The registers are put back as the probe hid them
/// (`ip` at the probe address, its flags) for what reads them after the
/// notification (a crash dump); the oops report, printed before it, shows
/// the copy. The oops goes on. Exception context, may not sleep or lock.
fn oops(regs: &mut ffi::pt_regs) {
    let ctl = this_cpu();
    let Some(frame) = ctl.top() else {
        return;
    };
    match (frame.status(), frame.point()) {
        // The copy runs with interrupts off: a fault in it is the copy's.
        (Status::HitSs | Status::Reenter, Some(point)) => {
            if !in_copy(point, regs) {
                return;
            }
            regs.ip = point.addr() as _;
            regs.flags = (regs.flags as u64 | frame.saved_flags()) as _;
        }
        // A handler's, when raised at the level of the frame's push (not
        // by an interrupt taken in the handler).
        (Status::HitActive | Status::HitSsDone, Some(_)) if frame.pushed_at_this_level() => {}
        _ => return,
    }
    ctl.pop();
    if cpu::irq_level() == 0 {
        while ctl.top().is_some() {
            ctl.pop();
        }
    }
}

/// A fault reported through the die chain (`DIE_GPF` after the exception
/// table found no fixup, with its error code; `DIE_TRAP` for #DE, #OF,
/// #BR, #UD, #TS, #NP, #SS, #AC, before the table is searched) while this
/// CPU handles a probe. It is the probe's only when raised by one of its
/// handlers, at the handler's NMI level, or by its copy: then the fault
/// handlers see it first, and a fault in the copy is put back where the
/// instruction really is ([`leave_copy`]), as the kernel's
/// `kprobe_fault_handler()` does, so that the kernel reports or fixes it
/// there. A #GP has been looked up in the exception table already, at the
/// copy's address, which has no entry: it is looked up again at the
/// original's, which may have one (`rdmsr_safe()`, a non-canonical address
/// read by `copy_from_kernel_nofault()`), and fixed up as it would have
/// been without the probe; the kernel's own kprobes oops there.
/// Exception context, where a #GP may have turned interrupts on again
/// (`exc_general_protection()`): as the kernel's
/// `kprobe_exceptions_notify()`, a preemptible context is not inside a
/// probe (handlers and copies run with preemption or interrupts off), and
/// could not use this CPU's block anyway.
fn fault(core: &Core, regs: &mut ffi::pt_regs, trapnr: c_int, gp: Option<c_ulong>) -> bool {
    if cpu::preemptible() {
        return false;
    }
    // SAFETY: not preemptible (checked above): interrupts or preemption are
    // off, and this exception's handling turns neither on before it
    // returns; the statement lives until this function returns.
    let section = unsafe { NoPreempt::assume() };
    let rcu = Rcu::of(&section);
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
            frame.pushed_at_this_level() && point.run_fault_handlers(rcu, regs, trapnr)
        }
        status @ (Status::HitSs | Status::Reenter) => {
            if !in_copy(point, regs) {
                // Interrupts are off while the copy runs: nothing else runs
                // at this level but the copy.
                return false;
            }
            if status == Status::HitSs && point.run_fault_handlers(rcu, regs, trapnr) {
                return true;
            }
            leave_copy(point, regs, ctl, frame);
            // SAFETY: `regs` are this exception's, and `ip` is a kernel
            // address now (the probe's).
            gp.is_some_and(|err| unsafe {
                core.runtime()
                    .fixup_exception(core::ptr::from_mut(regs), trapnr, err)
            })
        }
        Status::Busy => false,
    }
}

/// Whether `regs.ip` lies in the copy of `point` that runs with a
/// trailing int3.
pub(super) fn in_copy(point: &Point, regs: &ffi::pt_regs) -> bool {
    let ip = regs.ip;
    step_range(point).is_some_and(|(copy, end)| (copy..end).contains(&ip))
        || point
            .optinsn
            .post_step_range()
            .is_some_and(|(copy, end)| (copy..end).contains(&ip))
}

/// Takes the copy of `point`, the innermost frame's, out of a fault: `ip`
/// back at the probe address, the interrupt flag as the probed code had
/// it, the frame popped (the kernel's `kprobe_fault_handler()`). The
/// kernel then handles the fault at the original instruction, where its
/// exception-table entry is; a fault it resolves returns to the int3, and
/// the probe hits again. Exception context.
pub(super) fn leave_copy(point: &Point, regs: &mut ffi::pt_regs, ctl: &Ctl, frame: &Frame) {
    regs.ip = point.addr() as _;
    regs.flags = (regs.flags as u64 | frame.saved_flags()) as _;
    ctl.pop();
}
