// SPDX-License-Identifier: GPL-2.0

//! This CPU's hot per-CPU data (x86-64's `pcpu_hot`, exported), read with
//! one `%gs`-relative load as the kernel's own inlines do
//! (`raw_smp_processor_id()`, `preempt_count()`, `current`), instead of a
//! call to a C helper: the hit paths read them on every hit (about 15
//! instructions a hit with the calls).
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
