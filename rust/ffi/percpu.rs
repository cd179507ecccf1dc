// SPDX-License-Identifier: GPL-2.0

//! This CPU's hot per-CPU data (x86-64's `pcpu_hot`, exported), read with
//! one `%gs`-relative load as the kernel's own inlines do
//! (`raw_smp_processor_id()`, `preempt_count()`, `current`), instead of a
//! call to a C helper: the hit paths read them on every hit (about 15
//! instructions a hit with the calls). Likewise the preempt count's
//! increment and decrement (`preempt_disable/enable_notrace()`), and this
//! CPU's copy of glue.c's per-CPU probe state (`this_cpu_ptr()`), and
//! the flags register (`native_save_fl()`).
//!
//! Any context, NMI included. The loads are volatile (never merged or moved
//! across other code): the CPU number may change between two reads where
//! the caller can migrate.

use ::kernel::bindings::{pcpu_hot, pcpu_hot__bindgen_ty_1__bindgen_ty_1 as Hot};
use core::mem::offset_of;

// `pcpu_hot`'s fields are those of its first union member, at offset 0.
const CPU_NUMBER: usize = offset_of!(Hot, cpu_number);
const PREEMPT_COUNT: usize = offset_of!(Hot, preempt_count);
const CURRENT_TASK: usize = offset_of!(Hot, current_task);

/// One `%gs`-relative load of `$ty` at `pcpu_hot + $off`, `$mov` being the
/// instruction with its operand size.
macro_rules! hot_read {
    ($ty:ty, $mov:literal, $off:expr) => {{
        let v: $ty;
        // SAFETY: a load of this CPU's `pcpu_hot` field at `$off` through
        // `%gs`, which points to this CPU's per-CPU area in the kernel; the
        // symbol's value is its offset there.
        unsafe {
            core::arch::asm!(
                $mov,
                v = out(reg) v,
                hot = sym pcpu_hot,
                off = const $off,
                options(nostack, readonly, preserves_flags)
            )
        };
        v
    }};
}

/// `this_cpu_read(pcpu_hot.cpu_number)`: the id of the CPU this runs on.
#[inline(always)]
pub(crate) fn cpu_number() -> u32 {
    hot_read!(u32, "mov {v:e}, dword ptr gs:[{hot} + {off}]", CPU_NUMBER)
}

/// `raw_cpu_read_4(pcpu_hot.preempt_count)`: this CPU's preempt count,
/// with x86's inverted `PREEMPT_NEED_RESCHED` bit as stored.
#[inline(always)]
pub(crate) fn preempt_count_raw() -> u32 {
    hot_read!(
        u32,
        "mov {v:e}, dword ptr gs:[{hot} + {off}]",
        PREEMPT_COUNT
    )
}

/// `current`: the running task's `task_struct`, as an address.
#[inline(always)]
pub(crate) fn current_task() -> *mut core::ffi::c_void {
    hot_read!(
        *mut core::ffi::c_void,
        "mov {v}, qword ptr gs:[{hot} + {off}]",
        CURRENT_TASK
    )
}

/// `__preempt_count_add(1)`: `preempt_disable_notrace()` without the
/// compiler barrier, which the caller's asm gives (no `nomem`).
#[inline(always)]
pub(crate) fn preempt_count_inc() {
    // SAFETY: an increment of this CPU's preempt count through `%gs`, as
    // the kernel's inline does; one instruction, so an interrupt sees the
    // count before or after it, never in between. Not `nomem`: a compiler
    // barrier, as `preempt_disable()` is one.
    unsafe {
        core::arch::asm!(
            "add dword ptr gs:[{hot} + {off}], 1",
            hot = sym pcpu_hot,
            off = const PREEMPT_COUNT,
            options(nostack)
        )
    };
}

/// `preempt_enable_notrace()`: decrements this CPU's preempt count and,
/// when it reached zero with `PREEMPT_NEED_RESCHED` set (x86 keeps that bit
/// inverted in the count), reschedules, as the kernel's
/// `__preempt_count_dec_and_test()` and `__preempt_schedule_notrace()`: a
/// call, from the asm, of the register-preserving thunk (through its
/// static call with `PREEMPT_DYNAMIC`), so that the common case is the
/// subtraction and a branch. (Rust has no flag outputs, and `asm goto`
/// needs a newer rustc than the kernel's minimum; a `setcc` and a test
/// were two more instructions a hit.)
///
/// # Safety
///
/// This CPU's count was raised by [`preempt_count_inc`] in this context.
#[inline(always)]
pub(crate) unsafe fn preempt_enable_notrace() {
    // SAFETY: as in `preempt_count_inc`, a decrement; a compiler barrier.
    // The call (not `nostack`: the compiler leaves the stack aligned for
    // it) is to a thunk that saves and restores every register a C call
    // may clobber, as the kernel's inline relies on; it clobbers the flags
    // (not `preserves_flags`). Only once preemption is enabled again.
    #[cfg(CONFIG_PREEMPTION)]
    unsafe {
        core::arch::asm!(
            "sub dword ptr gs:[{hot} + {off}], 1",
            "jnz 2f",
            "call {sched}",
            "2:",
            hot = sym pcpu_hot,
            off = const PREEMPT_COUNT,
            sched = sym preempt_schedule_notrace_call,
        )
    };
    // SAFETY: as above; without preemption there is nothing to schedule.
    #[cfg(not(CONFIG_PREEMPTION))]
    unsafe {
        core::arch::asm!(
            "sub dword ptr gs:[{hot} + {off}], 1",
            hot = sym pcpu_hot,
            off = const PREEMPT_COUNT,
            options(nostack)
        )
    };
}

#[cfg(all(CONFIG_PREEMPTION, CONFIG_PREEMPT_DYNAMIC))]
extern "C" {
    /// The static call's trampoline of `preempt_schedule_notrace`
    /// (`EXPORT_STATIC_CALL_TRAMP`): a jump to the register-preserving
    /// thunk, or a return while the boot-time preemption model is not full.
    /// Only called from the asm of [`preempt_enable_notrace`].
    #[link_name = "__SCT__preempt_schedule_notrace"]
    fn preempt_schedule_notrace_call();
}

#[cfg(all(CONFIG_PREEMPTION, not(CONFIG_PREEMPT_DYNAMIC)))]
extern "C" {
    /// `preempt_schedule_notrace()` behind a thunk that preserves every
    /// register (exported). Only called from the asm of
    /// [`preempt_enable_notrace`].
    #[link_name = "preempt_schedule_notrace_thunk"]
    fn preempt_schedule_notrace_call();
}

extern "C" {
    /// glue.c's per-CPU storage of each CPU's probe state; only its address
    /// is used, by [`ctl_area`] and by `%gs`-relative accesses
    /// (`arch/x86/ctl.rs`).
    pub(crate) static rkp_ctl_area: u8;
}

/// `this_cpu_ptr(&rkp_ctl_area)` (glue.c): this CPU's copy of the probe
/// state storage, with the kernel's two instructions (the per-CPU pointer
/// plus this CPU's offset) instead of a lookup by CPU number. Any context;
/// the answer stays true only while the caller cannot migrate.
#[inline(always)]
pub(crate) fn ctl_area() -> *mut u8 {
    let p: *mut u8;
    // SAFETY: a load of this CPU's `this_cpu_off` through `%gs` (as
    // `arch_raw_cpu_ptr()`), added to the per-CPU pointer of
    // `rkp_ctl_area`, whose symbol value the module loader set to it.
    unsafe {
        core::arch::asm!(
            "mov {p}, qword ptr gs:[{toff}]",
            "lea {p}, [{p} + {area}]",
            p = out(reg) p,
            toff = sym ::kernel::bindings::this_cpu_off,
            area = sym rkp_ctl_area,
            options(nostack, readonly, preserves_flags)
        )
    };
    p
}

/// `this_cpu_ptr(p)` of a dynamic per-CPU pointer (`alloc_percpu()`): `p`
/// plus this CPU's `this_cpu_off`, one `%gs`-relative load. Any context;
/// the answer stays true only while the caller cannot migrate.
#[inline(always)]
pub(crate) fn this_cpu_ptr(p: *mut u8) -> *mut u8 {
    let off: usize;
    // SAFETY: a load of this CPU's `this_cpu_off` through `%gs`, as
    // `arch_raw_cpu_ptr()` does.
    unsafe {
        core::arch::asm!(
            "mov {off}, qword ptr gs:[{toff}]",
            off = out(reg) off,
            toff = sym ::kernel::bindings::this_cpu_off,
            options(nostack, readonly, preserves_flags)
        )
    };
    p.wrapping_add(off)
}

/// This CPU's flags register (`native_save_fl()`), read through the stack.
/// Any context.
#[inline(always)]
pub(crate) fn save_flags() -> u64 {
    let flags: u64;
    // SAFETY: reads the flags register through the stack; no other effect.
    unsafe { core::arch::asm!("pushfq", "pop {}", out(reg) flags, options(preserves_flags)) };
    flags
}
