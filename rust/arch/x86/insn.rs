// SPDX-License-Identifier: GPL-2.0

//! Analysing, copying and arming a probed x86-64 instruction.
//!
//! As the kernel's `can_probe()`/`arch_copy_kprobe()`: the probe address must
//! be an instruction boundary (found by decoding the function from its start),
//! the instruction must be one that can run out of line or be emulated, and
//! its copy in the slot has its RIP-relative displacement adjusted.
//!
//! rkprobes runs the copy out of line with interrupts off and an int3 after
//! it, so it emulates the instructions whose effect depends on where they
//! run or on IF/TF, exactly
//! the set the kernel emulates (relative and register-indirect call and jmp,
//! Jcc, LOOP/JrCXZ, near ret, cli/sti/pushf/popf), and refuses the kernel's
//! refusals. It also refuses, beyond the kernel: `hlt` (run with IF clear
//! it would never wake), far `ret`, the system-call instructions, and any
//! instruction with an exception-table entry (a fault in its out-of-line copy
//! would find no fixup and oops).

use super::{
    arch_insn::{ArchInsn, Op, BOOST_OFFSET, JMP32_SIZE, WINDOW},
    slot::{INT3, SLOT_SIZE},
};
use crate::{
    kernel_ext::{
        eilseq, eopnotsupp,
        slots::Slot,
        text::{self, TextGuard},
    },
    kprobe::{Core, Registry, Slots},
    pure::insn::{
        adjust_probe_offset, copy_insn, is_boundary, ControlFlow, IndirectOperand, Insn,
        MAX_INSN_SIZE,
    },
};
use kernel::prelude::*;

/// The kernel's `arch_adjust_kprobe_addr()`: a probe at a function's entry
/// goes after its ENDBR, which must never be replaced (an indirect call
/// landing on an int3 instead of ENDBR would fault under IBT).
pub(crate) fn adjust_addr(func: usize, offset: usize) -> Result<usize> {
    let mut b = [0u8; 4];
    text::read(func, &mut b)?;
    let (offset, _on_entry) = adjust_probe_offset(&b, offset as u64);
    func.checked_add(offset as usize).ok_or(EINVAL)
}

/// The 5-byte NOP an ftrace call site holds at rest.
const FTRACE_NOP: [u8; 5] = [0x0f, 0x1f, 0x44, 0x00, 0x00];

/// Reads and decodes the instruction at `addr` as it is without rkprobes'
/// int3s; an ftrace call site decodes as its resting NOP, whatever ftrace
/// has written there.
fn insn_at(core: &Core, reg: &Registry, addr: usize) -> Result<Insn> {
    if core.is_ftrace_site(addr) {
        return Insn::decode(&FTRACE_NOP).map_err(|_| eilseq());
    }
    let mut buf = [0u8; MAX_INSN_SIZE];
    // The last instruction of a mapping may be followed by unmapped memory:
    // shorten the read until it succeeds.
    let mut n = buf.len();
    while core.read_original(reg, addr, &mut buf[..n]).is_err() {
        n -= 1;
        if n == 0 {
            return Err(EFAULT);
        }
    }
    Insn::decode(&buf[..n]).map_err(|_| eilseq())
}

/// Classifies `insn`, at `addr`, as the kernel's `can_probe()` and
/// `prepare_emulation()` do (the shared decoder's `probe_refusal()`), with
/// rkprobes' additional refusals; the error is the kernel's errno.
pub(super) fn classify(insn: &Insn, addr: u64) -> Result<Op> {
    if let Some(r) = insn.probe_refusal() {
        return Err(Error::from_errno(r.errno()));
    }
    if let Some(m) = insn.if_modifier() {
        return Ok(Op::IfModifier(m));
    }
    // pt_regs has no APX registers r16-r31.
    let reg = |r: u8| if r < 16 { Ok(r) } else { Err(eopnotsupp()) };
    Ok(match insn.control_flow(addr) {
        ControlFlow::CallRel { target } => Op::Call(target),
        ControlFlow::JmpRel { target } => Op::Jmp(target),
        ControlFlow::Jcc { cond, target } => Op::Jcc(cond, target),
        ControlFlow::Loop {
            kind,
            target,
            addr_bytes,
        } => Op::Loop(kind, addr_bytes, target),
        ControlFlow::Ret { pop } => Op::Ret(pop),
        ControlFlow::CallIndirect(IndirectOperand::Register(r)) => Op::CallIndirect(reg(r)?),
        ControlFlow::JmpIndirect(IndirectOperand::Register(r)) => Op::JmpIndirect(reg(r)?),
        // hlt: run with IF clear it would never wake.
        ControlFlow::None if insn.bytes() == [0xf4] => return Err(eopnotsupp()),
        ControlFlow::None => Op::Step,
        // System calls and returns, APX JMPABS, and anything the refusal
        // list did not already turn away.
        _ => return Err(eopnotsupp()),
    })
}

/// Analyses the instruction at `addr` in the function starting at `func` and,
/// for a stepped one, copies it into a slot; an ftrace call site (`ftrace`)
/// needs neither. Process context, may sleep; `reg` is the registration
/// mutex's guard.
pub(crate) fn prepare(
    core: &Core,
    reg: &Registry,
    addr: usize,
    func: usize,
    ftrace: bool,
) -> Result<ArchInsn> {
    // Is `addr` an instruction boundary? Decode from the function's start.
    if !is_boundary(func as u64, addr as u64, |a| {
        insn_at(core, reg, a as usize).map(|i| i.length())
    })? {
        return Err(eilseq());
    }
    let insn = insn_at(core, reg, addr)?;
    let op = if ftrace {
        Op::Ftrace
    } else {
        classify(&insn, addr as u64)?
    };
    let rt = core.runtime();
    if TextGuard::lock(rt).alternatives_reserved(addr) {
        return Err(EINVAL);
    }
    // An instruction whose faults the exception table fixes up (a user
    // access, `rdmsr_safe()`): a fault in its copy must be handled at the
    // original, which page faults need a hook for (the kernel's kprobes
    // have `kprobe_page_fault()`).
    // SAFETY: `search_exception_tables` only reads the sorted tables.
    let in_extable = !unsafe { rt.search_exception_tables(addr as _) }.is_null();
    if op == Op::Step && in_extable {
        core.hook_page_faults()?;
    }
    let len = insn.length();
    // Boosting needs Tasks RCU to know when no task is preempted in a slot;
    // a boosted copy, whose faults nothing would see, needs no fixup.
    let boostable = op == Op::Step && rt.has_synchronize_rcu_tasks() && insn.can_boost(in_extable);
    let slot = if op == Op::Step {
        Some(alloc_slot(core.slots(), &insn, addr, boostable)?)
    } else {
        None
    };
    let orig = insn.bytes().first().copied().ok_or_else(eilseq)?;
    let mut window = [0u8; WINDOW];
    let window_start = (addr - func).min(JMP32_SIZE - 1);
    if !ftrace {
        let w = window.get_mut(..window_start + len).ok_or(EINVAL)?;
        read_resting(core, reg, addr - window_start, w)?;
    }
    // INVARIANT: a slot exactly for stepped instructions.
    Ok(ArchInsn {
        orig,
        window,
        window_start: window_start as u8,
        len: len as u8,
        op,
        slot,
        boostable,
    })
}

/// Allocates a slot and writes its image: at its start the relocated copy
/// followed by an int3 that traps back to rkprobes whatever the instruction
/// did (ran, was emulated by a #VE/#VC handler, repeated); when `boost`, at
/// `BOOST_OFFSET` a second copy followed by a `jmp rel32` back to the next
/// instruction; int3 everywhere else, so that a reused slot holds nothing
/// of its last probe. The slot's address must be known to relocate, so the
/// image is written after allocation.
fn alloc_slot(slots: &Slots, insn: &Insn, addr: usize, boost: bool) -> Result<Slot> {
    let slot = slots.alloc()?;
    let written =
        slot_image(insn, addr, slot.addr(), boost).and_then(|image| slots.write(&slot, &image));
    match written {
        // Reachable once the point is published and armed.
        Ok(()) => Ok(slot.publish()),
        Err(e) => {
            slots.discard(slot);
            Err(e)
        }
    }
}

/// The image of a slot at `at` for `insn`, probed at `addr` (see
/// [`alloc_slot`]).
fn slot_image(insn: &Insn, addr: usize, at: usize, boost: bool) -> Result<[u8; SLOT_SIZE]> {
    let mut image = [INT3; SLOT_SIZE];
    let relocate = |dest: usize, out: &mut [u8]| {
        copy_insn(insn, addr as u64, dest as u64, out).map_err(|e| {
            pr_err!("cannot relocate the instruction at {addr:#x}: {e:?}\n");
            EINVAL
        })
    };
    // The trailing int3 is already there: the copy is at most 15 bytes.
    relocate(at, image.get_mut(..MAX_INSN_SIZE).ok_or(EINVAL)?)?;
    if boost {
        let copy = relocate(
            at + BOOST_OFFSET,
            image
                .get_mut(BOOST_OFFSET..BOOST_OFFSET + MAX_INSN_SIZE)
                .ok_or(EINVAL)?,
        )?;
        // The jump back: from the end of the copy to the end of the original
        // instruction; slots are within ±2 GiB of all text.
        let jmp_at = BOOST_OFFSET + copy.len;
        let from = (at + jmp_at + JMP32_SIZE) as i64;
        let to = (addr + copy.len) as i64;
        let rel = i32::try_from(to - from).map_err(|_| EINVAL)?;
        let jmp = image.get_mut(jmp_at..jmp_at + JMP32_SIZE).ok_or(EINVAL)?;
        jmp[0] = 0xe9;
        jmp[1..].copy_from_slice(&rel.to_le_bytes());
    }
    Ok(image)
}

/// Whether the text around the instruction at `addr` is still as `prepare`
/// read it (at rest: see [`read_resting`]). A kernel
/// optprobe's jump that covers `addr` starts at most four bytes before it;
/// while the kernel's optimizer has one queued for removal, its probe is no
/// longer in the kernel's table but the jump is still in the text. Called
/// with `text_mutex` held, which the kernel's optimizer takes to patch.
/// Process context.
pub(crate) fn text_unchanged(core: &Core, reg: &Registry, addr: usize, insn: &ArchInsn) -> bool {
    if insn.is_ftrace() {
        return true;
    }
    let n = insn.window_start as usize + insn.len as usize;
    let mut now = [0u8; WINDOW];
    match (now.get_mut(..n), insn.window.get(..n)) {
        (Some(now), Some(then)) => {
            read_resting(core, reg, addr - insn.window_start as usize, now).is_ok() && now == then
        }
        _ => false,
    }
}

/// Reads text at `start` as it is at rest: rkprobes' own int3s as the bytes
/// they replaced, and any byte of an ftrace call site (which changes
/// whenever tracing of its function does) as the 5-byte NOP's. Process
/// context; `reg` is the registration mutex's guard.
pub(super) fn read_resting(core: &Core, reg: &Registry, start: usize, buf: &mut [u8]) -> Result {
    core.read_original(reg, start, buf)?;
    // A site that overlaps `buf` starts at most `FTRACE_NOP.len() - 1` bytes
    // before it.
    let first = start.saturating_sub(FTRACE_NOP.len() - 1);
    for site in (first..start + buf.len()).filter(|&a| core.is_ftrace_site(a)) {
        for (i, &b) in FTRACE_NOP.iter().enumerate() {
            if let Some(at) = (site + i).checked_sub(start) {
                if let Some(slot) = buf.get_mut(at) {
                    *slot = b;
                }
            }
        }
    }
    Ok(())
}

/// Frees what `prepare` allocated. The caller guarantees that no CPU runs in
/// the slot any more. Process context.
pub(crate) fn release(slots: &Slots, insn: &ArchInsn) {
    if let Some(slot) = insn.slot {
        slots.free(slot);
    }
}
