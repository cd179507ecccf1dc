// SPDX-License-Identifier: GPL-2.0

//! Access to `struct pt_regs` by x86 register number.

use crate::ffi::pt_regs;

/// The general-purpose register `n` (0 = rax ... 15 = r15, as encoded in
/// ModRM/REX), as saved at the exception.
pub(super) fn gpr(regs: &pt_regs, n: u8) -> u64 {
    let v = match n & 15 {
        0 => regs.ax,
        1 => regs.cx,
        2 => regs.dx,
        3 => regs.bx,
        4 => regs.sp,
        5 => regs.bp,
        6 => regs.si,
        7 => regs.di,
        8 => regs.r8,
        9 => regs.r9,
        10 => regs.r10,
        11 => regs.r11,
        12 => regs.r12,
        13 => regs.r13,
        14 => regs.r14,
        _ => regs.r15,
    };
    v as u64
}
