// SPDX-License-Identifier: GPL-2.0

//! The kernel's exception handling: its int3 entry, called by rkprobes once
//! at load to trace its path (`rust/arch/x86/trap_path.rs`), and its
//! exception-table fixup, for a #GP in a probed instruction's copy.

use super::{kc, Runtime};
use kernel::{
    bindings, c_str,
    ffi::{c_int, c_ulong},
};

/// `X86_TRAP_BP` (`arch/x86/include/asm/trapnr.h`): the breakpoint vector.
const X86_TRAP_BP: c_int = 3;
/// `SIGTRAP`.
const SIGTRAP: c_int = 5;

/// As the other methods of [`Runtime`]: each calls its function's static
/// call, set by [`Runtime::find`] (`notify_die()` always, it is required).
impl Runtime {
    /// `notify_die(DIE_INT3, "int3", regs, 0, X86_TRAP_BP, SIGTRAP)`: the
    /// die chain's notification of a kernel breakpoint, as `exc_int3()`
    /// sends it; what the chain's callbacks returned.
    ///
    /// # Safety
    ///
    /// Exception context, interrupts off; `regs` are valid, writable
    /// registers of a kernel-mode int3 whose `ip` no notifier claims but
    /// the caller's, so that nothing else acts on them.
    pub(crate) unsafe fn notify_die_int3(&self, regs: *mut bindings::pt_regs) -> c_int {
        // SAFETY: the caller's contract; the static call is set (required).
        unsafe {
            kc::rkp_kc_notify_die(
                crate::ffi::die_val::DIE_INT3 as c_int,
                c_str!("int3").as_char_ptr(),
                regs,
                0,
                X86_TRAP_BP,
                SIGTRAP,
            )
        }
    }

    /// `kprobe_int3_handler()`, which `exc_int3()` calls before the die
    /// chain on a kernel with kprobes: whether it claimed the trap; `None`
    /// without kprobes.
    ///
    /// # Safety
    ///
    /// As [`Runtime::notify_die_int3`], and `regs->ip - 1` holds an int3
    /// at which the kernel has no kprobe.
    pub(crate) unsafe fn kprobe_int3_handler(&self, regs: *mut bindings::pt_regs) -> Option<bool> {
        self.kprobe_int3_handler.then(|| {
            // SAFETY: the caller's contract.
            unsafe { kc::rkp_kc_kprobe_int3_handler(regs) != 0 }
        })
    }

    /// `fixup_exception(regs, trapnr, error_code, 0)`: whether the
    /// exception table has an entry for `regs->ip`, whose handler then
    /// changed the registers (the kernel's fixup of a kernel-mode fault).
    ///
    /// # Safety
    ///
    /// Exception context: `regs` are the valid, writable registers of the
    /// kernel-mode exception `trapnr` being handled on this CPU, which the
    /// kernel handles as fixed when this returns true.
    pub(crate) unsafe fn fixup_exception(
        &self,
        regs: *mut bindings::pt_regs,
        trapnr: c_int,
        error_code: c_ulong,
    ) -> bool {
        // SAFETY: the caller's contract; the static call is set (required).
        unsafe { kc::rkp_kc_fixup_exception(regs, trapnr, error_code, 0) != 0 }
    }
}
