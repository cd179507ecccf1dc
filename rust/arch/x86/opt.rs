// SPDX-License-Identifier: GPL-2.0

//! Jump optimization on x86-64, the counterpart of the kernel's
//! `arch/x86/kernel/kprobes/opt.c`: the detour buffer of an optimized probe,
//! the checks that say whether a probe may be optimized, writing and removing
//! the jump, and the callback through which an optimized hit reaches the
//! same handler dispatch as an int3 hit.
//!
//! An optimized probe's text holds `jmp rel32` into its detour buffer, a
//! 48-byte slot of the out-of-line slot cache (within ±2 GiB of all text):
//!
//! ```text
//!   +0   the probe point (8 bytes, data)
//!   +8   regs->ip as an int3 hit presents it: the probe address + 1;
//!        with post-handlers, the return address of their call (data)
//!   +16  call rkp_optprobe_trampoline      (e8 rel32)
//!   +21  the instructions the jump replaced, relocated, with their
//!        relative branches moved (`FuncCode::plan_region`); for a point
//!        with post-handlers, `call rkp_optprobe_post_trampoline` after
//!        the first of them
//!        jmp back after them, unless they end with a jump or a call
//!        int3 to the end of the slot
//! ```
//!
//! The region is what the kernel's `copy_optimized_instructions()` copies
//! (whole instructions covering the jump's 5 bytes), but where the kernel
//! refuses relative branches, the detour holds them: a `Jcc` as `Jcc rel32`
//! to its target, a `jmp` as `jmp rel32` ending the region, a final `call`
//! as a push of the original return address and a `jmp` to the callee (so
//! the callee returns into the function, as it would have). A branch into
//! the bytes the jump overwrites is still refused, as are branches to the
//! retpoline and return thunks, which the kernel rewrites at boot. A region
//! that ends with a jump before its fifth byte takes those bytes too: no
//! branch reaches them (the same function-wide check). The code must fit
//! the slot: a region whose relocated code is longer than 27 bytes is not
//! optimized.
//!
//! The trampoline (`optprobe_trampoline.S`, in rkprobes' text) saves the
//! registers as an int3 hit's `pt_regs`, finds the header below the return
//! address its call pushed, calls [`rkp_optprobe_callback`], restores the
//! registers and returns (through the return thunk) into the copy. While a
//! probe waits for its jump, and while the jump is being removed, int3 hits
//! at it are sent to the copy at +21 as well: nothing executes the
//! instructions after the first one in the text once the probe is queued
//! (see `rust/kprobe/optimize.rs` for the protocol).
//!
//! Context: [`rkp_optprobe_callback`] and `OptInsn::copy` are the hit path
//! (any context, NMI included; may not sleep, allocate or take locks); the
//! rest runs in process context with `Core::reg` held, and the patching
//! functions with `text_mutex` held too.

use super::{
    arch_insn::Op,
    insn::read_resting,
    opt_insn::{DetourUse, OptInsn, OptW, CALL_LEN, MAX_REGION},
    slot::{INT3, SLOT_SIZE},
};
use crate::{
    ffi::{self, kallsyms::SymbolBuf},
    kernel_ext::{
        sync::{PreemptNotraceGuard, Rcu, TasksGp, TasksStamp},
        text::TextGuard,
    },
    kprobe::{Core, OptState, Point, Registry, Slots},
    pure::insn::{
        analyze::JMP32_INSN_SIZE, FuncCode, IndirectJumpCheck, OptimizeRefusal, RelocError,
    },
};
use core::sync::atomic::Ordering;
use kernel::{ffi::c_ulong, prelude::*};

use super::opt_insn::detour_offsets::{
    DETOUR_CALL as ENTRY, DETOUR_COPY as COPY, DETOUR_IP, DETOUR_POINT,
};
const _: () = assert!(COPY == ENTRY + CALL_LEN && DETOUR_POINT + 8 <= DETOUR_IP);
const _: () = assert!(DETOUR_IP + 8 <= ENTRY);

/// The largest function the optimizer decodes whole (the kernel has no
/// limit; this bounds the work of one optimizer pass per probe).
const MAX_FUNC_SIZE: usize = 64 * 1024;

/// `jmp rel32`.
const JMP32: u8 = 0xe9;
/// `call rel32`.
const CALL32: u8 = 0xe8;

/// Why a probe cannot be optimized now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OptRefusal {
    /// Never: the code at the probe does not allow it (the kernel's
    /// `can_optimize()` and `copy_optimized_instructions()`, a reserved
    /// region, a detour out of reach). Not asked again.
    Never,
    /// Not now (no memory for a detour): asked again at the next pass.
    NotNow,
    /// Not while a client has a post-handler: the first instruction cannot
    /// run alone in the detour (it is emulated at an int3 hit, or a
    /// branch), or the region's code and the post-handlers' call do not
    /// fit the slot. Asked again when the clients change.
    NotWithPost,
    /// The detour was made for the other kind of point (with or without
    /// post-handlers): the optimizer releases it once no task can be in it
    /// ([`Core::release_stale_detours`]) and makes it again.
    ///
    /// [`Core::release_stale_detours`]: crate::kprobe::Core
    Stale,
}

/// Whether the kernel lets rkprobes optimize at all: its live patching and
/// Tasks RCU (to know when no task is left in the region or a detour) must
/// have been found. Any context.
pub(crate) fn can_optimize_here(core: &Core) -> bool {
    core.runtime().has_text_poke_bp() && core.runtime().has_synchronize_rcu_tasks()
}

/// Whether the kernel's `can_optimize()` skips the indirect-jump check: a
/// kernel built with retpolines or IBT has no jump tables.
const INDIRECT: IndirectJumpCheck =
    if cfg!(CONFIG_MITIGATION_RETPOLINE) || cfg!(CONFIG_X86_KERNEL_IBT) {
        IndirectJumpCheck::Skip
    } else {
        IndirectJumpCheck::Refuse
    };

/// Analyses the code around `point` as the kernel's `can_optimize()` and
/// `copy_optimized_instructions()` do, and writes its detour buffer
/// (the kernel's `arch_prepare_optimized_kprobe()`). Done once per point:
/// the detour stays with the point until it is freed. Process context;
/// `reg` is the registration mutex's guard.
pub(crate) fn prepare_optimized(
    core: &Core,
    reg: &mut Registry,
    point: &Point,
) -> Result<(), OptRefusal> {
    let post = point.has_post();
    if point.opt_w(reg).is_prepared() {
        if point.opt_w(reg).post != post {
            return Err(OptRefusal::Stale);
        }
        return Ok(());
    }
    let addr = point.addr();
    let rt = core.runtime();
    let in_extable = |a: u64| {
        // SAFETY: `search_exception_tables` only reads the sorted tables.
        !unsafe { rt.search_exception_tables(a as c_ulong) }.is_null()
    };
    // The function, as it is at rest (rkprobes' int3s and jumps, and ftrace's
    // call sites, read as the bytes they replaced).
    let (func, fsize) = {
        let mut buf = SymbolBuf::new().map_err(|_| OptRefusal::NotNow)?;
        let sym = buf.symbolise(addr).ok_or(OptRefusal::Never)?;
        let start = sym.start(addr as u64).ok_or(OptRefusal::Never)? as usize;
        (start, sym.size as usize)
    };
    if func != point.func(reg) || fsize > MAX_FUNC_SIZE {
        return Err(OptRefusal::Never);
    }
    // The point is within the function (`func` starts its symbol).
    let to_func_end = u16::try_from(func + fsize - addr).map_err(|_| OptRefusal::Never)?;
    let mut code = KVec::from_elem(0u8, fsize, GFP_KERNEL).map_err(|_| OptRefusal::NotNow)?;
    read_resting(core, reg, func, &mut code).map_err(|_| OptRefusal::Never)?;
    let f = FuncCode::new(&code, func as u64);
    let mut names = SymbolBuf::new().map_err(|_| OptRefusal::NotNow)?;
    let names = core::cell::RefCell::new(&mut names);
    let slot = core.slots().alloc().map_err(|_| OptRefusal::NotNow)?;
    let image = detour_image(
        &f,
        point,
        slot.addr(),
        in_extable,
        |a| is_thunk(&mut names.borrow_mut(), a),
        post,
    );
    let reserved = image
        .as_ref()
        .map_or(true, |d| region_reserved(core, addr, d.taken));
    let written = match image {
        Ok(d) if !reserved => core
            .slots()
            .write(&slot, &d.image)
            .map(|()| d.taken)
            .map_err(|_| OptRefusal::NotNow),
        Ok(_) => Err(OptRefusal::Never),
        Err(e) => Err(e),
    };
    let size = match written {
        Ok(size) => size,
        Err(e) => {
            core.slots().discard(slot);
            return Err(e);
        }
    };
    let mut orig = [0u8; MAX_REGION];
    if let (Some(o), Some(c)) = (
        orig.get_mut(..size),
        code.get(addr - func..addr - func + size),
    ) {
        o.copy_from_slice(c);
    }
    let slot = slot.publish();
    *point.opt_w_mut(reg) = OptW {
        slot: Some(slot),
        post,
        size: size as u8,
        orig,
        to_func_end,
        detour: DetourUse::Unused,
    };
    // INVARIANT: the slot holds the detour for this region.
    point
        .optinsn
        .copy
        .store(slot.addr() + COPY, Ordering::Relaxed);
    Ok(())
}

/// Whether another text patcher owns a byte of the region (the kernel's
/// checks in `copy_optimized_instructions()`): ftrace, alternatives, jump
/// labels, static calls. Process context.
fn region_reserved(core: &Core, addr: usize, size: usize) -> bool {
    let last = addr + size - 1;
    // An ftrace site overlapping the region starts at most 4 bytes before it.
    let ftrace = (addr.saturating_sub(4)..=last).any(|a| core.is_ftrace_site(a));
    ftrace
        || core.sites().reserved(addr, last)
        || TextGuard::lock(core.runtime()).alternatives_reserved_range(addr, last)
}

/// `rel32` from the end of a 5-byte instruction at `at` to `to`, if it
/// fits.
fn rel32(at: usize, to: usize) -> Option<[u8; 4]> {
    let next = (at as i64).wrapping_add(JMP32_INSN_SIZE as i64);
    i32::try_from((to as i64).wrapping_sub(next))
        .ok()
        .map(i32::to_le_bytes)
}

/// Whether `addr` is one of the kernel's retpoline or return thunks, which
/// the kernel rewrites at boot and whose callers a region never moves: by
/// name, as `objtool` and the kernel's `__x86_indirect_thunk_array` know
/// them. A name that cannot be looked up counts as a thunk. Process
/// context.
fn is_thunk(buf: &mut SymbolBuf, addr: u64) -> bool {
    const THUNKS: [&str; 6] = [
        "__x86_indirect_",
        "__x86_return_thunk",
        "srso_",
        "retbleed_",
        "entry_untrain_ret",
        "call_depth_return_thunk",
    ];
    buf.symbolise(addr as usize)
        .map_or(true, |s| THUNKS.iter().any(|t| s.name.starts_with(t)))
}

/// The detour of `point` for the slot at `at`: the region's instructions,
/// relocated by [`FuncCode::plan_region_gap`] with their relative
/// branches, and the jump back unless the region ends with a branch; with
/// `post`, the call of the post-handlers' trampoline after the first
/// instruction.
fn detour_image(
    f: &FuncCode<'_>,
    point: &Point,
    at: usize,
    in_extable: impl Fn(u64) -> bool,
    is_thunk: impl Fn(u64) -> bool,
    post: bool,
) -> Result<Detour, OptRefusal> {
    let addr = point.addr();
    // With post-handlers, the first instruction runs alone, as an int3 hit
    // steps it, and the post-handlers' call follows it.
    if post && !matches!(point.arch().op, Op::Step) {
        return Err(OptRefusal::NotWithPost);
    }
    let mut image = [INT3; SLOT_SIZE];
    let copy = image.get_mut(COPY..).ok_or(OptRefusal::Never)?;
    let gap = if post { CALL_LEN } else { 0 };
    let plan = f
        .plan_region_gap(
            addr as u64,
            (at + COPY) as u64,
            copy,
            gap,
            INDIRECT,
            in_extable,
            is_thunk,
        )
        .map_err(|e: OptimizeRefusal| match e {
            OptimizeRefusal::BranchBeforeGap { .. }
            | OptimizeRefusal::Reloc {
                error: RelocError::BufferTooSmall,
                ..
            } if post => OptRefusal::NotWithPost,
            _ => OptRefusal::Never,
        })?;
    if plan.taken > MAX_REGION {
        return Err(OptRefusal::Never);
    }
    let post_ret = if post {
        let call_at = at + COPY + plan.first_emitted;
        let trampoline = ffi::rkp_optprobe_post_trampoline as *const () as usize;
        let rel = rel32(call_at, trampoline).ok_or(OptRefusal::Never)?;
        if let Some(d) =
            image.get_mut(COPY + plan.first_emitted..COPY + plan.first_emitted + CALL_LEN)
        {
            d.copy_from_slice(&[CALL32, rel[0], rel[1], rel[2], rel[3]]);
        }
        call_at + CALL_LEN
    } else {
        0
    };
    let trampoline = if post {
        ffi::rkp_optprobe_entry_post_trampoline as *const () as usize
    } else {
        ffi::rkp_optprobe_trampoline as *const () as usize
    };
    let call = rel32(at + ENTRY, trampoline).ok_or(OptRefusal::Never)?;
    // The probe's jump must reach the detour too.
    rel32(addr, at + ENTRY).ok_or(OptRefusal::Never)?;
    let point_ptr = core::ptr::from_ref(point) as usize;
    let mut put = |off: usize, bytes: &[u8]| {
        if let Some(d) = image.get_mut(off..off + bytes.len()) {
            d.copy_from_slice(bytes);
        }
    };
    put(DETOUR_POINT, &point_ptr.to_le_bytes());
    // The post-handlers' call's return address, or regs->ip as an int3 hit
    // presents it, for the trampoline that enters the detour.
    let word = if post { post_ret } else { addr + 1 };
    put(DETOUR_IP, &word.to_le_bytes());
    put(ENTRY, &[CALL32]);
    put(ENTRY + 1, &call);
    Ok(Detour {
        image,
        taken: plan.taken,
    })
}

/// A detour written for a slot ([`detour_image`]).
struct Detour {
    image: [u8; SLOT_SIZE],
    /// The bytes the probe takes (`RegionPlan::taken`).
    taken: usize,
}

/// Notes that int3 hits run `point`'s region from its detour from now on:
/// the probe core calls it right after it queued the point. Does nothing
/// unless the point is queued. Writer (`reg`).
pub(crate) fn detour_in_use(point: &Point, reg: &mut Registry) {
    if point.opt_state() == OptState::Queued {
        point.opt_w_mut(reg).detour = DetourUse::InUse(TasksStamp::now());
    }
}

/// Notes that int3 hits no longer run `point`'s region from its detour:
/// the probe core calls it right after it set the point back to a plain
/// int3 probe. Does nothing unless the point is one. Writer (`reg`).
pub(crate) fn detour_unused(point: &Point, reg: &mut Registry) {
    if point.opt_state() == OptState::None {
        point.opt_w_mut(reg).detour = DetourUse::Unused;
    }
}

/// Queues the jump into `point`'s detour over its int3 (the kernel's
/// `arch_optimize_kprobes()`); [`TextGuard::poke_bp_finish`] writes it.
/// Returns whether it was queued: only if the region's text is its int3
/// and the original bytes the detour copied (nothing else patched it), the
/// point is queued, and `gp` began after int3 hits began to run the region
/// from the detour, so that no task can be inside the region's bytes after
/// the first. Process context, under `text_mutex` (`guard`), writer
/// (`reg`).
pub(crate) fn optimize(guard: &TextGuard<'_>, point: &Point, reg: &Registry, gp: &TasksGp) -> bool {
    let w = point.opt_w(reg);
    let in_use = matches!(w.detour, DetourUse::InUse(since) if gp.covers(since));
    if point.opt_state() != OptState::Queued || !in_use || !int3_then_orig(point, w, w.size()) {
        return false;
    }
    let Some(jmp) = jump_of(point, w) else {
        return false;
    };
    // SAFETY: `point.addr()` starts an instruction, the region's first,
    // whose int3 is in the text (checked above, under `text_mutex`, which
    // every patcher of kernel text holds); no task can be inside the
    // region's bytes after the first, where a jump into the region never
    // goes (the detour's analysis), as int3 hits have run the region from
    // the detour since before `gp` began (checked above), and `gp` has
    // ended. The guard finishes the batch before it unlocks.
    unsafe { guard.poke_bp_queue(point.addr(), &jmp) };
    true
}

/// Whether the first `len` bytes of `point`'s region are its int3 followed
/// by the region's original bytes: nothing else patched them (the whole
/// region before the jump goes in, its first five bytes once it is out).
/// Process context, under `text_mutex`.
fn int3_then_orig(point: &Point, w: &OptW, len: usize) -> bool {
    let mut now = [0u8; MAX_REGION];
    match (now.get_mut(..len), w.orig.get(1..len)) {
        (Some(now), Some(then)) => {
            crate::kernel_ext::text::read(point.addr(), now).is_ok()
                && now.first() == Some(&INT3)
                && now.get(1..) == Some(then)
        }
        _ => false,
    }
}

/// The jump into `point`'s detour, as [`optimize`] writes it.
fn jump_of(point: &Point, w: &OptW) -> Option<[u8; JMP32_INSN_SIZE]> {
    let rel = rel32(point.addr(), w.slot?.addr() + ENTRY)?;
    Some([JMP32, rel[0], rel[1], rel[2], rel[3]])
}

/// Whether the text at `point` holds `bytes`. Process context.
fn text_is(point: &Point, bytes: &[u8]) -> bool {
    let mut now = [0u8; JMP32_INSN_SIZE];
    now.get_mut(..bytes.len())
        .is_some_and(|now| crate::kernel_ext::text::read(point.addr(), now).is_ok() && now == bytes)
}

/// First step of removing the jump (the kernel's `arch_unoptimize_kprobe()`):
/// an int3 over its first byte, after which (once every CPU synchronised,
/// [`TextGuard::sync`]) no CPU runs into the jump's other bytes. Does
/// nothing, and returns false, unless the point is optimized and its jump
/// is in the text. Process context, under `text_mutex` (`guard`), writer
/// (`reg`).
pub(crate) fn unoptimize_start(guard: &TextGuard<'_>, point: &Point, reg: &mut Registry) -> bool {
    if point.opt_state() != OptState::Optimized {
        return false;
    }
    let Some(jmp) = jump_of(point, point.opt_w(reg)) else {
        return false;
    };
    if !text_is(point, &jmp) {
        return false;
    }
    // SAFETY: one byte at an instruction boundary, the jump's first
    // (checked above, under `text_mutex`, which every patcher of kernel
    // text holds).
    unsafe { guard.poke(point.addr(), &[INT3]) };
    point.opt_w_mut(reg).detour = DetourUse::Unoptimizing(guard.sync_stamp());
    true
}

/// Second step: the bytes the jump's displacement replaced go back, once
/// every CPU has synchronised since [`unoptimize_start`]. Does nothing,
/// and returns false, otherwise. Process context, under `text_mutex`
/// (`guard`), writer (`reg`).
pub(crate) fn unoptimize_finish(guard: &TextGuard<'_>, point: &Point, reg: &mut Registry) -> bool {
    let w = point.opt_w(reg);
    let DetourUse::Unoptimizing(from) = w.detour else {
        return false;
    };
    // Int3 hits still run the region from the detour (the point is still
    // optimized), and every CPU has seen the int3.
    if point.opt_state() != OptState::Optimized || !guard.synced_since(from) {
        return false;
    }
    let Some(mut jmp) = jump_of(point, w) else {
        return false;
    };
    jmp[0] = INT3;
    if !text_is(point, &jmp) {
        return false;
    }
    let orig = w.orig;
    if let Some(tail) = orig.get(1..JMP32_INSN_SIZE) {
        // SAFETY: no CPU executes these bytes: they are the rest of a jump
        // whose first byte is an int3 that every CPU has seen since (both
        // checked above, under `text_mutex`), and no CPU is inside an
        // instruction.
        unsafe { guard.poke(point.addr() + 1, tail) };
    }
    // Int3 hits run the region from the detour until the state changes.
    point.opt_w_mut(reg).detour = DetourUse::InUse(TasksStamp::now());
    true
}

/// Whether `point`'s region starts with its int3 followed by the bytes the
/// jump's displacement replaced: no jump of it is in the text. Process
/// context, under `text_mutex`, writer (`reg`).
pub(crate) fn jump_taken_out(point: &Point, reg: &Registry) -> bool {
    int3_then_orig(point, point.opt_w(reg), JMP32_INSN_SIZE)
}

/// Frees the detour, if it has one that int3 hits no longer use. The
/// caller guarantees that no task can be in it any more (a Tasks RCU grace
/// period passed since it was last in use). A detour still in use is left
/// allocated for ever, with an error: its jump may be in the text. Process
/// context.
pub(crate) fn release_optimized(slots: &Slots, opt: &OptInsn, w: &mut OptW) {
    if w.slot.is_some() && w.detour != DetourUse::Unused {
        pr_err!("a detour still in use is left allocated\n");
        w.slot = None;
        return;
    }
    if let Some(slot) = w.slot.take() {
        opt.copy.store(0, Ordering::Relaxed);
        w.post = false;
        slots.free(slot);
    }
}

/// Called by `rkp_optprobe_trampoline` for a hit through the jump of
/// `point`, with the registers as an int3 hit presents them (the kernel's
/// `optimized_callback()`). Runs in the context of the probed code, with
/// interrupts as it had them (usually on) and preemption disabled here, as
/// the kernel's: the per-CPU reentrancy check (a hit while this CPU handles
/// a probe is counted in `nmissed`), then the pre-handlers, through the
/// same dispatch as an int3 hit. A pre-handler's change of `regs->ip` is
/// ignored, as in the kernel's optimized probes; every other register is
/// restored from `regs` by the trampoline.
///
/// # Safety
///
/// Only called by the trampoline, with the point of the detour it came
/// from (which lives until a Tasks RCU grace period after the detour was
/// last in use) and its saved registers.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_optprobe_callback(
    point: *const Point,
    regs: *mut ffi::pt_regs,
) {
    let preempt = PreemptNotraceGuard::new();
    // SAFETY: the caller's contract.
    let point = unsafe { &*point };
    super::kprobes::optimized_hit(point, Rcu::of(&preempt), regs);
}

/// [`rkp_optprobe_callback`] for the detour of a point with post-handlers,
/// called by `rkp_optprobe_entry_post_trampoline`: `regs->ip` as an int3
/// hit presents it, then the pre-handlers, leaving this CPU's frame for
/// the post-handlers' callback and interrupts off
/// (`kprobes::optimized_hit_post`).
///
/// # Safety
///
/// As for [`rkp_optprobe_callback`].
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_optprobe_entry_post_callback(
    point: *const Point,
    regs: *mut ffi::pt_regs,
) {
    let preempt = PreemptNotraceGuard::new();
    // SAFETY: the caller's contract.
    let point = unsafe { &*point };
    // SAFETY: the trampoline's saved registers (the caller's contract).
    let regs = unsafe { &mut *regs };
    regs.ip = point.addr().wrapping_add(1) as _;
    super::kprobes::optimized_hit_post(point, Rcu::of(&preempt), regs);
}

/// Called by `rkp_optprobe_post_trampoline`, which the detour of a point
/// with post-handlers calls after the copy of its first instruction, with
/// `ret` that call's return address (which detour) and the registers after
/// the instruction. Interrupts are off (the first instruction ran with
/// them off, as an int3 hit steps its copy): may not sleep, allocate or
/// take locks. The post-handlers run if this CPU's innermost frame is the
/// one that the detour's pre-handlers' callback, or an int3 hit sending
/// the point's hits to its detour, pushed; `ip` and `sp` changes are
/// ignored, as for the pre-handlers.
///
/// # Safety
///
/// Only called by the trampoline, with its saved registers.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_optprobe_post_callback(ret: usize, regs: *mut ffi::pt_regs) {
    let preempt = PreemptNotraceGuard::new();
    // SAFETY: the caller's contract: the trampoline's frame.
    let regs = unsafe { &mut *regs };
    super::kprobes::optimized_post(ret, Rcu::of(&preempt), regs);
}
