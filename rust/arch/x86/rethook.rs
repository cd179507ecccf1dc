// SPDX-License-Identifier: GPL-2.0

//! The x86-64 part of kretprobes: return stubs, hijacking a return address,
//! and the trampoline's callback.
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
use crate::kprobe::kretprobe;
use kernel::prelude::*;

/// Bytes of one return stub.
pub(crate) const RETHOOK_STUB_SIZE: usize = 8;

/// `call rel32`.
const CALL_REL32: u8 = 0xe8;
/// Length of `call rel32`.
const CALL_LEN: usize = 5;
/// `__KERNEL_CS` on x86-64.
const KERNEL_CS: u64 = 0x10;

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

/// Called by `rkp_kretprobe_trampoline` with the registers it saved, as the
/// kernel's `arch_rethook_trampoline_callback()`. Runs in the context the
/// hijacked function returned in.
///
/// # Safety
///
/// Only called by the trampoline, whose stack holds, right above `regs`,
/// the word with the stub's return address.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_kretprobe_trampoline_callback(regs: *mut ffi::pt_regs) {
    // SAFETY: the trampoline's saved registers, ours to change.
    let r = unsafe { &mut *regs };
    r.__bindgen_anon_1.csx = KERNEL_CS;
    r.orig_ax = !0;
    // The trampoline pushed `ss` and `sp` after the stub's call: `sp` as
    // the function's caller sees it is two words further up.
    r.sp = r.sp.wrapping_add(2 * 8);
    // SAFETY: the word right above the saved registers is the one the
    // stub's call pushed (the caller's contract).
    let frame = unsafe { regs.add(1) }.cast::<usize>();
    // SAFETY: as above.
    let stub = unsafe { frame.read() }.wrapping_sub(CALL_LEN);
    // SAFETY: `stub` is the stub that called the trampoline and `frame` the
    // word its call pushed, where the real return address belongs.
    unsafe { kretprobe::trampoline_handler(r, frame, stub) };
    // The trampoline restores the flags with popf right before ret: it pops
    // them from the `ss` slot.
    r.__bindgen_anon_2.ssx = r.flags as u64;
}
