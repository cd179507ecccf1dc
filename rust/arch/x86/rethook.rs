// SPDX-License-Identifier: GPL-2.0

//! The x86-64 part of kretprobes: return stubs and hijacking a return
//! address (the trampoline's callback, which enters the probe core, is
//! `rethook_callback.rs`).
//!
//! A kretprobe's pool has one 8-byte stub per instance: `call` to
//! `rkp_kretprobe_trampoline` (`kretprobe_trampoline.S`), padded with int3.
//! A hijacked function returns into its instance's stub; the stub's `call`
//! pushes the stub's address (plus 5) exactly where the real return address
//! was, which is also where the trampoline's `ret` will find the real one
//! once the callback has written it back. This is the frame layout of the
//! kernel's `arch_rethook_trampoline`, whose fake return address is pushed
//! by the trampoline itself instead.

use crate::ffi::{self, rkp_kretprobe_trampoline};
use kernel::prelude::*;

/// Bytes of one return stub.
pub(crate) const RETHOOK_STUB_SIZE: usize = 8;

/// `call rel32`.
const CALL_REL32: u8 = 0xe8;
/// Length of `call rel32`.
pub(super) const CALL_LEN: usize = 5;

/// The code of the stub at `at`: a call of the trampoline. `ERANGE` when the
/// trampoline is beyond a rel32's reach (execmem places stubs within it).
pub(crate) fn rethook_stub(at: usize) -> Result<[u8; RETHOOK_STUB_SIZE]> {
    let target = rkp_kretprobe_trampoline as *const () as usize as i64;
    let next = (at as i64).wrapping_add(CALL_LEN as i64);
    let rel = i32::try_from(target.wrapping_sub(next)).map_err(|_| ERANGE)?;
    let r = rel.to_le_bytes();
    Ok([CALL_REL32, r[0], r[1], r[2], r[3], 0xcc, 0xcc, 0xcc])
}

/// Where the return address of a function being entered is, and its value.
/// Hit path at the function's entry (int3 context or the ftrace callback).
///
/// # Safety
///
/// `regs` are those of a hit at a function's first instruction (after
/// ENDBR), where `sp` points to the return address.
pub(crate) unsafe fn rethook_prepare(regs: &ffi::pt_regs) -> (usize, usize) {
    let fp = regs.sp;
    // SAFETY: the caller's contract: the top of the live stack.
    let ret = unsafe { (fp as *const usize).read() };
    (fp, ret)
}

/// Replaces the return address at `fp` with `stub`. Hit path.
///
/// # Safety
///
/// `fp` is where [`rethook_prepare`] found the return address, in the same
/// hit.
pub(crate) unsafe fn rethook_hijack(fp: usize, stub: usize) {
    // SAFETY: the caller's contract.
    unsafe { (fp as *mut usize).write(stub) };
}

/// Writes the real return address back into the frame. Trampoline context.
///
/// # Safety
///
/// `frame` is the stack word the trampoline's `ret` pops.
pub(crate) unsafe fn rethook_fixup_return(frame: *mut usize, real: usize) {
    // SAFETY: the caller's contract.
    unsafe { frame.write(real) };
}
