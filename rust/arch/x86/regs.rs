// SPDX-License-Identifier: GPL-2.0

//! Access to `struct pt_regs`: by x86 register number, and the kernel's
//! function arguments.

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

/// How many arguments the kernel's calling convention passes in registers
/// (`NR_REG_ARGUMENTS`).
pub(crate) const NR_REG_ARGUMENTS: usize = 6;

/// The byte offset in `pt_regs` of the register that holds argument `n`
/// (0-based) at a function's entry, for the first [`NR_REG_ARGUMENTS`].
pub(crate) const fn argument_register_offset(n: u32) -> Option<usize> {
    use core::mem::offset_of;
    Some(match n {
        0 => offset_of!(pt_regs, di),
        1 => offset_of!(pt_regs, si),
        2 => offset_of!(pt_regs, dx),
        3 => offset_of!(pt_regs, cx),
        4 => offset_of!(pt_regs, r8),
        5 => offset_of!(pt_regs, r9),
        _ => return None,
    })
}

/// Argument `n` (0-based) of a function at its entry, as the kernel's
/// `regs_get_kernel_argument()`: `rdi`, `rsi`, `rdx`, `rcx`, `r8`, `r9`,
/// then the stack words above the return address, which `stack_nth(k)`
/// reads (the `k`-th word from the stack pointer, as the kernel's
/// `regs_get_kernel_stack_nth()`; the caller chooses how to read it). Any
/// context.
pub(crate) fn regs_get_kernel_argument(
    regs: &pt_regs,
    n: u32,
    stack_nth: impl FnOnce(u64) -> u64,
) -> u64 {
    let v = match n {
        0 => regs.di,
        1 => regs.si,
        2 => regs.dx,
        3 => regs.cx,
        4 => regs.r8,
        5 => regs.r9,
        _ => return stack_nth(u64::from(n) - (NR_REG_ARGUMENTS as u64 - 1)),
    };
    v as u64
}
