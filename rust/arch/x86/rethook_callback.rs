// SPDX-License-Identifier: GPL-2.0

//! The callback of the kretprobe trampoline (`kretprobe_trampoline.S`):
//! where a hijacked function's return enters the probe core, as the
//! kernel's `arch_rethook_trampoline_callback()`.

use super::rethook::ReturnFrame;
use crate::{ffi, kprobe::kretprobe};
use core::ptr::NonNull;

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
    // stub's call pushed (the caller's contract), not null.
    let word = unsafe { NonNull::new_unchecked(regs.add(1).cast::<usize>()) };
    // SAFETY: the trampoline is called only by return stubs, which are in
    // the pages of kretprobe pools, headed by their pool
    // (`kretprobe/stubs.rs`). The function returned into the stub because
    // the entry handler put the stub's instance out for its frame, which
    // holds a reference on the pool: the pool and its pages stay until
    // that instance is given back, after the return handler. The word is
    // the trampoline's until it returns.
    let frame = unsafe { ReturnFrame::<kretprobe::Pool>::new(word) };
    kretprobe::trampoline_handler(r, frame);
    // The trampoline restores the flags with popf right before ret: it pops
    // them from the `ss` slot.
    r.__bindgen_anon_2.ssx = r.flags as u64;
}
