// SPDX-License-Identifier: GPL-2.0

//! This CPU's hot per-CPU data (x86-64's `pcpu_hot`, exported), read with
//! one `%gs`-relative load as the kernel's own inlines do
//! (`raw_smp_processor_id()`, `preempt_count()`, `current`), instead of a
//! call to a C helper: the hit paths read them on every hit (about 15
//! instructions a hit with the calls). Likewise the preempt count's
//! increment and decrement (`preempt_disable/enable_notrace()`), and this
//! CPU's copy of glue.c's per-CPU probe state (`this_cpu_ptr()`).
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
/// inverted in the count), reschedules (`rkp_preempt_schedule_notrace()`),
/// as the kernel's `__preempt_count_dec_and_test()` and its branch. (A
/// `setcc` where the kernel branches on the flags: `asm goto` needs a newer
/// rustc than the kernel's minimum.)
///
/// # Safety
///
/// This CPU's count was raised by [`preempt_count_inc`] in this context.
#[inline(always)]
pub(crate) unsafe fn preempt_enable_notrace() {
    let zero: u8;
    // SAFETY: as in `preempt_count_inc`, a decrement; a compiler barrier.
    unsafe {
        core::arch::asm!(
            "sub dword ptr gs:[{hot} + {off}], 1",
            "sete {zero}",
            hot = sym pcpu_hot,
            off = const PREEMPT_COUNT,
            zero = out(reg_byte) zero,
            options(nostack)
        )
    };
    if zero != 0 {
        // SAFETY: no preconditions once preemption is enabled again.
        unsafe { super::rkp_preempt_schedule_notrace() };
    }
}

extern "C" {
    /// glue.c's per-CPU storage of each CPU's probe state; only its address
    /// is used, by [`ctl_area`].
    static rkp_ctl_area: u8;
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
