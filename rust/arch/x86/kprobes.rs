// SPDX-License-Identifier: GPL-2.0

//! The x86-64 hit path: int3 and #DB handlers, per-CPU control blocks.
//!
//! A hit traps on the int3 at the probe address. rkprobes' die notifier finds
//! the probe point in the lock-free table, runs the pre-handlers, then either
//! emulates the instruction (see `insn`) or single-steps its copy in the slot:
//! `ip` goes to the slot, TF is set and IF cleared in the saved flags, and the
//! #DB that follows the one instruction moves `ip` back after the original
//! instruction, restores TF and IF, and runs the post-handlers.
//!
//! Everything here runs in int3/#DB exception context, which is NMI-like:
//! interrupts are off, nothing may sleep, allocate, or take a lock, and every
//! function is in rkprobes' own (blacklisted) text. Per-CPU state is only
//! touched by its own CPU with interrupts off, so it needs no atomics.
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
    ffi::{self, die_val, DieArgs, NOTIFY_DONE, NOTIFY_STOP},
    kprobe::{Core, Point},
    pure::{
        emulate::{self, FLAG_IF, FLAG_TF},
        insn::IfModifier,
    },
};
use core::{
    cell::UnsafeCell,
    sync::atomic::{AtomicBool, Ordering},
};
use kernel::{
    bindings,
    ffi::{c_int, c_ulong, c_void},
    prelude::*,
    types::Opaque,
};

/// `DR_STEP` of `arch/x86/include/uapi/asm/debugreg.h`: the #DB was a
/// single-step.
const DR_STEP: c_ulong = 1 << 14;

/// Priority of rkprobes' die notifier: ahead of debuggers, which would
/// otherwise see its single-steps.
const NOTIFIER_PRIORITY: c_int = 0x7fff_fff0;

/// Saved probe states per CPU: one active probe, plus reentries.
const MAX_DEPTH: usize = 4;

/// Where a CPU is in handling a probe.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Status {
    /// Running pre-handlers.
    HitActive,
    /// Single-stepping the copy, handlers to follow.
    HitSs,
    /// Running post-handlers.
    HitSsDone,
    /// Single-stepping a probe hit inside another probe; no handlers.
    Reenter,
    /// Running a kretprobe's return handler (the kernel's
    /// `kprobe_busy_begin()`); the frame has no point.
    Busy,
}

/// One level of probe handling on a CPU.
#[derive(Clone, Copy)]
pub(super) struct Frame {
    pub(super) point: *const Point,
    pub(super) status: Status,
    /// TF and IF of the interrupted code, restored after the step.
    pub(super) saved_flags: u64,
}

/// A CPU's probe state (the kernel's `struct kprobe_ctlblk`).
#[derive(Clone, Copy)]
pub(super) struct Ctl {
    depth: usize,
    frames: [Frame; MAX_DEPTH],
}

/// A `Ctl` in its own cache line, owned by one CPU.
#[repr(align(64))]
struct PerCpuCtl(UnsafeCell<Ctl>);

// SAFETY: each `PerCpuCtl` is only accessed by its own CPU, with interrupts
// off (exception context), so accesses never overlap.
unsafe impl Sync for PerCpuCtl {}
// SAFETY: the raw pointers in a `Ctl` are plain data between hits.
unsafe impl Send for PerCpuCtl {}

impl Ctl {
    pub(super) fn depth(&self) -> usize {
        self.depth
    }

    pub(super) fn top(&mut self) -> Option<&mut Frame> {
        let i = self.depth.checked_sub(1)?;
        self.frames.get_mut(i)
    }

    pub(super) fn push(&mut self, f: Frame) -> bool {
        match self.frames.get_mut(self.depth) {
            Some(slot) => {
                *slot = f;
                self.depth += 1;
                true
            }
            None => false,
        }
    }

    pub(super) fn pop(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }
}

/// The architecture's part of the probe core.
#[pin_data(PinnedDrop)]
pub(crate) struct ArchState {
    ctl: KVec<PerCpuCtl>,
    #[pin]
    nb: Opaque<bindings::notifier_block>,
    registered: AtomicBool,
}

impl ArchState {
    /// Allocates per-CPU state. Process context.
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        // SAFETY: `nr_cpu_ids` is set at boot and never changes afterwards.
        let ncpus = unsafe { bindings::nr_cpu_ids } as usize;
        let empty = Frame {
            point: core::ptr::null(),
            status: Status::HitActive,
            saved_flags: 0,
        };
        let ctl = (|| -> Result<KVec<PerCpuCtl>> {
            let mut v = KVec::with_capacity(ncpus, GFP_KERNEL)?;
            for _ in 0..ncpus {
                v.push(
                    PerCpuCtl(UnsafeCell::new(Ctl {
                        depth: 0,
                        frames: [empty; MAX_DEPTH],
                    })),
                    GFP_KERNEL,
                )?;
            }
            Ok(v)
        })();
        try_pin_init!(Self {
            ctl: ctl?,
            nb <- Opaque::ffi_init(|nb: *mut bindings::notifier_block| {
                // SAFETY: `nb` is valid for writes during initialisation.
                unsafe {
                    nb.write(bindings::notifier_block {
                        notifier_call: Some(die_notify),
                        next: core::ptr::null_mut(),
                        priority: NOTIFIER_PRIORITY,
                    })
                };
            }),
            registered: AtomicBool::new(false),
        }? Error)
    }

    /// Hooks the die chain. Called once the core is at its final address.
    pub(crate) fn start(&self) -> Result {
        // SAFETY: `nb` is pinned inside the core, which unregisters it in
        // `stop` before it is freed.
        let ret = unsafe { ffi::register_die_notifier(self.nb.get()) };
        if ret != 0 {
            return Err(Error::from_errno(ret));
        }
        self.registered.store(true, Ordering::Release);
        Ok(())
    }

    /// Unhooks the die chain; returns when no CPU runs the notifier. Called
    /// after every probe has been disarmed. Process context.
    pub(crate) fn stop(&self) {
        if self.registered.swap(false, Ordering::AcqRel) {
            // SAFETY: registered by `start`; unregistering waits for a grace
            // period, after which no CPU is inside `die_notify`.
            unsafe { ffi::unregister_die_notifier(self.nb.get()) };
        }
    }

    /// This CPU's control block. Exception context.
    ///
    /// # Safety
    ///
    /// Interrupts are off and the caller holds no other reference from this
    /// function.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn this_cpu(&self) -> Option<&mut Ctl> {
        // SAFETY: interrupts are off, so the CPU cannot change under us.
        let cpu = unsafe { ffi::rkp_smp_processor_id() } as usize;
        // SAFETY: only this CPU touches its block, and not reentrantly (the
        // caller's contract).
        self.ctl.get(cpu).map(|c| unsafe { &mut *c.0.get() })
    }
}

// SAFETY: the notifier block is only written before registration; the die
// chain, not Rust code, uses it afterwards.
unsafe impl Sync for ArchState {}
// SAFETY: as for `Sync`; the state is not tied to a thread.
unsafe impl Send for ArchState {}

#[pinned_drop]
impl PinnedDrop for ArchState {
    fn drop(self: Pin<&mut Self>) {
        self.stop();
    }
}

/// Runs `f` with interrupts off and this CPU marked as inside a probe, so
/// that a probe hit from `f` counts as missed: the kernel's
/// `kprobe_busy_begin()`/`kprobe_busy_end()` around a kretprobe's return
/// handler. `f` is told whether the CPU was free; when it was not (the
/// return came from inside a probe handler), it must not run handlers.
/// Any context.
pub(crate) fn run_busy(core: &Core, f: impl FnOnce(bool)) {
    // SAFETY: no preconditions; restored below.
    let flags = unsafe { ffi::rkp_local_irq_save() };
    let free = {
        // SAFETY: interrupts are off; the reference ends with this block,
        // before `f` can reach another user of the block.
        match unsafe { core.arch.this_cpu() } {
            Some(ctl) if ctl.depth() == 0 => ctl.push(Frame {
                point: core::ptr::null(),
                status: Status::Busy,
                saved_flags: 0,
            }),
            _ => false,
        }
    };
    f(free);
    if free {
        // SAFETY: as above; every probe hit in `f` popped what it pushed.
        if let Some(ctl) = unsafe { core.arch.this_cpu() } {
            ctl.pop();
        }
    }
    // SAFETY: the flags saved above.
    unsafe { ffi::rkp_local_irq_restore(flags) };
}

/// The die notifier: int3, #DB and faults. Exception context.
///
/// # Safety
///
/// Called by the die chain with the `notifier_block` of an `ArchState` and,
/// for the events handled, a `struct die_args`.
unsafe extern "C" fn die_notify(
    nb: *mut bindings::notifier_block,
    val: c_ulong,
    data: *mut c_void,
) -> c_int {
    let event = val as u64;
    if !matches!(
        event,
        die_val::DIE_INT3 | die_val::DIE_DEBUG | die_val::DIE_GPF | die_val::DIE_TRAP
    ) {
        return NOTIFY_DONE;
    }
    // SAFETY: `nb` is the `nb` field of a live `ArchState` (it is unregistered
    // before the state is freed), which is the `arch` field of a `Core`.
    let core = unsafe {
        let state = kernel::container_of!(nb, ArchState, nb);
        &*kernel::container_of!(state, Core, arch)
    };
    // SAFETY: the die chain passes `struct die_args` for these events.
    let args = unsafe { &*data.cast::<DieArgs>() };
    if args.regs.is_null() {
        return NOTIFY_DONE;
    }
    // SAFETY: the exception's saved registers, ours to change until return.
    let regs = unsafe { &mut *args.regs };
    // SAFETY: every member of the `cs` union holds the selector in its low
    // bits; reading the 16-bit one is always valid.
    if unsafe { regs.__bindgen_anon_1.cs } & 3 != 0 {
        // User mode: never one of ours.
        return NOTIFY_DONE;
    }
    let handled = match event {
        die_val::DIE_INT3 => int3(core, regs),
        // In 6.12 `err` of DIE_DEBUG points to the #DB handler's dr6.
        die_val::DIE_DEBUG => debug(core, regs, args.err as *mut c_ulong),
        _ => fault(core, regs, args.trapnr),
    };
    if handled {
        NOTIFY_STOP
    } else {
        NOTIFY_DONE
    }
}

/// An int3: ours if a probe point is at the address before `ip`.
/// int3 context.
fn int3(core: &Core, regs: &mut bindings::pt_regs) -> bool {
    let addr = regs.ip.wrapping_sub(1);
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
    // SAFETY: int3 context has interrupts off; no other reference is live.
    let Some(ctl) = (unsafe { core.arch.this_cpu() }) else {
        return false;
    };
    if ctl.depth > 0 {
        point.missed();
        return setup(point, regs, ctl, true);
    }
    if !ctl.push(Frame {
        point,
        status: Status::HitActive,
        saved_flags: 0,
    }) {
        return false;
    }
    if point.run_pre_handlers(regs) {
        // The handler moved `ip`: the instruction does not run.
        ctl.pop();
        return true;
    }
    setup(point, regs, ctl, false)
}

/// Runs the probed instruction: emulates it, or sets up its single-step.
/// int3 context; the caller pushed a frame unless `reenter`.
fn setup(point: &Point, regs: &mut bindings::pt_regs, ctl: &mut Ctl, reenter: bool) -> bool {
    let insn = &point.arch;
    if insn.op != Op::Step {
        emulate(insn, point.addr, regs);
        if !reenter {
            if let Some(f) = ctl.top() {
                f.status = Status::HitSsDone;
            }
            point.run_post_handlers(regs, 0);
            ctl.pop();
        }
        return true;
    }
    let Some(slot) = insn.slot else {
        // Cannot happen (a stepped instruction has a slot): leave the trap
        // to the kernel rather than run garbage.
        if !reenter {
            ctl.pop();
        }
        return false;
    };
    if point.boost() {
        // Boosted: the copy is followed by a jump back, so it runs with the
        // interrupted flags and no #DB; there are no post-handlers to run.
        if !reenter {
            ctl.pop();
        }
        regs.ip = slot.addr as _;
        return true;
    }
    let frame = Frame {
        point,
        status: if reenter {
            Status::Reenter
        } else {
            Status::HitSs
        },
        saved_flags: regs.flags as u64 & (FLAG_TF | FLAG_IF),
    };
    if reenter {
        if !ctl.push(frame) {
            // Nested deeper than MAX_DEPTH: the kernel's "unrecoverable
            // kprobe" case. Leaving the trap unhandled makes the kernel report
            // it rather than corrupt the interrupted probe's state.
            return false;
        }
    } else if let Some(f) = ctl.top() {
        *f = frame;
    }
    regs.flags = ((regs.flags as u64 | FLAG_TF) & !FLAG_IF) as _;
    regs.ip = slot.addr as _;
    true
}

/// Emulates an instruction that does not run out of line. int3 context: the
/// int3 entry leaves a gap below the interrupted stack, so a push of one word
/// (call, pushf) is safe.
fn emulate(insn: &ArchInsn, addr: usize, regs: &mut bindings::pt_regs) {
    let next = addr.wrapping_add(insn.len as usize) as u64;
    let push = |regs: &mut bindings::pt_regs, v: u64| {
        regs.sp = regs.sp.wrapping_sub(8);
        // SAFETY: the int3 gap makes the word below the interrupted stack
        // writable and unused (see the function comment).
        unsafe { (regs.sp as *mut u64).write(v) };
    };
    let pop = |regs: &mut bindings::pt_regs| -> u64 {
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

/// A #DB: ours if this CPU is single-stepping a probe's copy. #DB context.
fn debug(core: &Core, regs: &mut bindings::pt_regs, dr6: *mut c_ulong) -> bool {
    if dr6.is_null() {
        return false;
    }
    // SAFETY: the #DB handler passes a pointer to its local dr6.
    if unsafe { *dr6 } & DR_STEP == 0 {
        return false;
    }
    // SAFETY: #DB context has interrupts off; no other reference is live.
    let Some(ctl) = (unsafe { core.arch.this_cpu() }) else {
        return false;
    };
    let Some(frame) = ctl.top() else {
        return false;
    };
    if frame.status != Status::HitSs && frame.status != Status::Reenter {
        return false;
    }
    // SAFETY: the frame's point is live: it was found in the table by this
    // CPU, which has had interrupts off since, holding off the grace period
    // that would free it.
    let point = unsafe { &*frame.point };
    let Some(slot) = point.arch.slot else {
        return false;
    };
    // SAFETY: see above; consuming the step.
    unsafe { *dr6 &= !DR_STEP };
    let ip = regs.ip;
    if ip == slot.addr {
        // A REP string instruction steps one iteration at a time: keep
        // stepping in the slot until it is done.
        return true;
    }
    regs.ip = ip.wrapping_sub(slot.addr).wrapping_add(point.addr) as _;
    regs.flags = ((regs.flags as u64 & !(FLAG_TF | FLAG_IF)) | frame.saved_flags) as _;
    if frame.status == Status::Reenter {
        ctl.pop();
        return true;
    }
    frame.status = Status::HitSsDone;
    point.run_post_handlers(regs, 0);
    ctl.pop();
    true
}

/// A fault reported through the die chain (`DIE_GPF` after the exception
/// table found no fixup, `DIE_TRAP` for #DE, #OF, #BR, #UD, #TS, #NP, #SS,
/// #AC) while this CPU handles a probe: the probe's fault handlers see it
/// first. A fault in the out-of-line copy then has `ip` put back at the probe
/// address, so that the kernel reports (or fixes) it where the instruction
/// really is, as the kernel's `kprobe_fault_handler()` does. Exception
/// context.
fn fault(core: &Core, regs: &mut bindings::pt_regs, trapnr: c_int) -> bool {
    // SAFETY: exception context with interrupts off; no other reference.
    let Some(ctl) = (unsafe { core.arch.this_cpu() }) else {
        return false;
    };
    let Some(frame) = ctl.top() else {
        return false;
    };
    if frame.status == Status::Busy || frame.point.is_null() {
        return false;
    }
    // SAFETY: the frame's point stays live while this CPU handles it (see
    // `debug`).
    let point = unsafe { &*frame.point };
    if frame.status != Status::Reenter && point.run_fault_handlers(regs, trapnr) {
        return true;
    }
    let in_slot = point
        .arch
        .slot
        .is_some_and(|s| regs.ip >= s.addr && regs.ip < s.addr + point.arch.len as usize);
    if in_slot && matches!(frame.status, Status::HitSs | Status::Reenter) {
        regs.ip = point.addr as _;
        regs.flags = ((regs.flags as u64 & !(FLAG_TF | FLAG_IF)) | frame.saved_flags) as _;
        ctl.pop();
    }
    false
}
