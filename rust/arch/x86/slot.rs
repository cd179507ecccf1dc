// SPDX-License-Identifier: GPL-2.0

//! The x86-64 layout of rkprobes' executable text: the size of an
//! out-of-line slot and the byte that fills what no slot uses. A leaf: the
//! probe core's slot cache (`kernel_ext/slots.rs`, `kprobe::Slots`) is made
//! with them, and the architecture's files that fill slots use them too.

/// The int3 opcode.
pub(super) const INT3: u8 = 0xcc;

/// What executable pages of rkprobes are filled with: a stray jump traps.
pub(crate) const TRAP_FILL: u8 = INT3;

/// Size of an out-of-line slot: two copies of the longest x86 instruction
/// (15 bytes), one followed by an int3, one by a rel32 jump back (5 bytes),
/// rounded up to keep slots 16-byte aligned.
pub(crate) const SLOT_SIZE: usize = 48;
