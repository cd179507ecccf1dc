// SPDX-License-Identifier: GPL-2.0

//! The callback of the kretprobe trampoline (`kretprobe_trampoline.S`):
//! where a hijacked function's return enters the probe core, as the
//! kernel's `arch_rethook_trampoline_callback()`.

use super::rethook::CALL_LEN;
use crate::{ffi, kprobe::kretprobe};

/// `__KERNEL_CS` on x86-64.
const KERNEL_CS: u64 = 0x10;

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
