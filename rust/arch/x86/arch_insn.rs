// SPDX-License-Identifier: GPL-2.0

//! What a probe point keeps of its instruction on x86-64 (the kernel's
//! `arch_specific_insn`): how it is run, its slot, and the original bytes
//! around it. A leaf, so that the probe point can hold it; analysing,
//! copying and arming the instruction is `insn.rs`'s.

use crate::{
    kernel_ext::slots::Slot,
    pure::insn::{IfModifier, LoopKind, MAX_INSN_SIZE},
};

/// Length of `jmp rel32`.
pub(super) const JMP32_SIZE: usize = 5;

/// The bytes another patcher's 5-byte jump could change over an instruction:
/// the four before it and the instruction itself.
pub(super) const WINDOW: usize = JMP32_SIZE - 1 + MAX_INSN_SIZE;

/// How a probed instruction is run; branch targets are absolute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    /// Run out of line in the slot; afterwards `ip` moves back by the
    /// distance between slot and probe.
    Step,
    /// `call rel32` to the target.
    Call(u64),
    /// `jmp rel8/rel32` to the target.
    Jmp(u64),
    /// `Jcc rel8/rel32`: condition code, target.
    Jcc(u8, u64),
    /// `LOOP*`/`JrCXZ`: kind, address size in bytes, target.
    Loop(LoopKind, u8, u64),
    /// Near `ret` (with the bytes `ret imm16` releases).
    Ret(u16),
    /// `call *%reg`.
    CallIndirect(u8),
    /// `jmp *%reg`.
    JmpIndirect(u8),
    /// `cli`, `sti`, `pushf` or `popf`.
    IfModifier(IfModifier),
    /// An ftrace call site, run through ftrace (no int3, no slot).
    Ftrace,
}

/// A probed instruction, analysed.
///
/// # Invariants
///
/// `slot` is `Some` exactly when `op` is [`Op::Step`]; it then holds the
/// relocated copy of the instruction, of `len` bytes, followed by an int3,
/// and, when `boostable`, a second copy followed by a `jmp` back to the
/// instruction after the probe (see `insn.rs`'s `alloc_slot`).
pub(crate) struct ArchInsn {
    pub(super) orig: u8,
    /// The original bytes from `JMP32_SIZE - 1` before the instruction (or
    /// the function's start) to its end, as prepared; `window_start` bytes
    /// come before the instruction.
    pub(super) window: [u8; WINDOW],
    pub(super) window_start: u8,
    pub(super) len: u8,
    pub(super) op: Op,
    pub(super) slot: Option<Slot>,
    pub(super) boostable: bool,
}

impl ArchInsn {
    /// The original first byte, which arming replaces with int3.
    pub(crate) fn orig_byte(&self) -> u8 {
        self.orig
    }

    /// Whether the probe goes through ftrace.
    pub(crate) fn is_ftrace(&self) -> bool {
        self.op == Op::Ftrace
    }

    /// Where the copy that may run boosted starts, when there is one (the
    /// kernel's `can_boost()`): it is followed by a jump back instead of a
    /// trap. Boosted copies run with interrupts on and can be preempted;
    /// their slots are freed only after `synchronize_rcu_tasks()`.
    pub(super) fn boosted_copy(&self) -> Option<usize> {
        match self.slot {
            // A slot is far below the top of the address space.
            Some(s) if self.boostable => Some(s.addr().wrapping_add(BOOST_OFFSET)),
            _ => None,
        }
    }
}

/// Where a slot's boosted copy starts: after the stepped copy and its int3.
pub(super) const BOOST_OFFSET: usize = MAX_INSN_SIZE + 1;
