// SPDX-License-Identifier: GPL-2.0

//! Per-CPU data through `%gs`, as the kernel's `this_cpu_*()` inlines:
//! [`this_cpu!`], the one `%gs`-relative access of rkprobes, and what is
//! built on it. This CPU's hot data (x86-64's `pcpu_hot`, exported) is read
//! with one load as the kernel's `raw_smp_processor_id()`,
//! `preempt_count()` and `current` do, instead of a call to a C helper:
//! the hit paths read them on every hit. Likewise the preempt count's
//! increment and decrement (`preempt_disable/enable_notrace()`), this
//! CPU's copy of the probe state of `arch/x86/ctl.c` (`this_cpu_ptr()`;
//! `arch/x86/ctl.rs` accesses its members with [`this_cpu!`] too), and the
//! flags register (`native_save_fl()`).
//!
//! Any context, NMI included. The loads are volatile (never merged or moved
//! across other code): the CPU number may change between two reads where
//! the caller can migrate.

use ::kernel::bindings::{pcpu_hot, pcpu_hot__bindgen_ty_1__bindgen_ty_1 as Hot, this_cpu_off};
use core::mem::offset_of;

// `pcpu_hot`'s fields are those of its first union member, at offset 0.
const CPU_NUMBER: usize = offset_of!(Hot, cpu_number);
const PREEMPT_COUNT: usize = offset_of!(Hot, preempt_count);
const CURRENT_TASK: usize = offset_of!(Hot, current_task);

/// One instruction on this CPU's copy of a per-CPU variable, through
/// `%gs`, as the kernel's `percpu_from_op()`, `percpu_to_op()` and
/// `percpu_add_op()` over `__percpu_arg()`: the `$ty` (`u8`, `u32`, `u64`
/// or `usize`) at `$off` bytes into the per-CPU symbol `$var`, whose value
/// is its offset in the per-CPU area that `%gs` points to. One
/// instruction, so an interrupt or NMI on this CPU sees the memory before
/// or after it, never in between.
///
/// - `this_cpu!(read $ty, $var, $off)`: the value. Volatile, but not a
///   compiler barrier (`readonly`).
/// - `this_cpu!(write $ty, $var, $off, $v)` stores `$v` (of type `$ty`);
///   `this_cpu!(write $ty, $var, $off, const $c)` stores the constant `$c`.
/// - `this_cpu!(add $ty, ...)`, `this_cpu!(sub $ty, ...)`: adds or
///   subtracts the constant `$c`, in place; `sub` may be followed by
///   `; $lines; $operands`: more instructions, which see the flags of the
///   subtraction, with their operands.
///
/// Stores and read-modify-writes are compiler barriers (not `nomem`), so
/// that a sequence of them stays in order around the code between.
///
/// It expands to an `asm!`, in the caller's `unsafe` block: the caller
/// argues that `$var` is a per-CPU variable with a `$ty` at `$off` that
/// this context may access so, and for a store, that the value is valid
/// there.
macro_rules! this_cpu {
    (read $ty:ident, $var:path, $off:expr) => {{
        let v: $ty;
        $crate::ffi::percpu::this_cpu!(@asm (nostack, readonly, preserves_flags),
            [concat!("mov {v", $crate::ffi::percpu::this_cpu!(@reg $ty), "}, ",
                $crate::ffi::percpu::this_cpu!(@mem $ty))],
            $var, $off, v = out(reg) v,);
        v
    }};
    (write $ty:ident, $var:path, $off:expr, const $c:expr) => {
        $crate::ffi::percpu::this_cpu!(@asm (nostack, preserves_flags),
            [concat!("mov ", $crate::ffi::percpu::this_cpu!(@mem $ty), ", {c}")],
            $var, $off, c = const $c,)
    };
    (write $ty:ident, $var:path, $off:expr, $v:expr) => {
        $crate::ffi::percpu::this_cpu!(@asm (nostack, preserves_flags),
            [concat!("mov ", $crate::ffi::percpu::this_cpu!(@mem $ty), ", {v",
                $crate::ffi::percpu::this_cpu!(@reg $ty), "}")],
            $var, $off, v = in(reg) { let v: $ty = $v; v },)
    };
    (add $ty:ident, $var:path, $off:expr, const $c:expr) => {
        $crate::ffi::percpu::this_cpu!(@asm (nostack),
            [concat!("add ", $crate::ffi::percpu::this_cpu!(@mem $ty), ", {c}")],
            $var, $off, c = const $c,)
    };
    (sub $ty:ident, $var:path, $off:expr, const $c:expr) => {
        $crate::ffi::percpu::this_cpu!(@asm (nostack),
            [concat!("sub ", $crate::ffi::percpu::this_cpu!(@mem $ty), ", {c}")],
            $var, $off, c = const $c,)
    };
    (sub $ty:ident, $var:path, $off:expr, const $c:expr;
     $($line:literal),+; $($operands:tt)*) => {
        $crate::ffi::percpu::this_cpu!(@asm (),
            [concat!("sub ", $crate::ffi::percpu::this_cpu!(@mem $ty), ", {c}"), $($line),+],
            $var, $off, c = const $c, $($operands)*)
    };
    // The memory operand, the one place `%gs` is written.
    (@mem u8) => { "byte ptr gs:[{var} + {off}]" };
    (@mem u32) => { "dword ptr gs:[{var} + {off}]" };
    (@mem u64) => { "qword ptr gs:[{var} + {off}]" };
    (@mem usize) => { "qword ptr gs:[{var} + {off}]" };
    // The register's size, as a template modifier.
    (@reg u8) => { ":l" };
    (@reg u32) => { ":e" };
    (@reg u64) => { "" };
    (@reg usize) => { "" };
    (@asm ($($opt:ident),*), [$($line:expr),+], $var:path, $off:expr, $($operands:tt)*) => {
        core::arch::asm!(
            $($line),+,
            $($operands)*
            var = sym $var,
            off = const $off,
            options($($opt),*)
        )
    };
}
pub(crate) use this_cpu;

/// `this_cpu_read(pcpu_hot.cpu_number)`: the id of the CPU this runs on.
#[inline(always)]
pub(crate) fn cpu_number() -> u32 {
    // SAFETY: a load of this CPU's `pcpu_hot.cpu_number`, a `u32`.
    unsafe { this_cpu!(read u32, pcpu_hot, CPU_NUMBER) }
}

/// `raw_cpu_read_4(pcpu_hot.preempt_count)`: this CPU's preempt count,
/// with x86's inverted `PREEMPT_NEED_RESCHED` bit as stored.
#[inline(always)]
pub(crate) fn preempt_count_raw() -> u32 {
    // SAFETY: a load of this CPU's `pcpu_hot.preempt_count`, a `u32`.
    unsafe { this_cpu!(read u32, pcpu_hot, PREEMPT_COUNT) }
}

/// `current`: the running task's `task_struct`, as an address.
#[inline(always)]
pub(crate) fn current_task() -> *mut core::ffi::c_void {
    // SAFETY: a load of this CPU's `pcpu_hot.current_task`, a pointer.
    unsafe { this_cpu!(read usize, pcpu_hot, CURRENT_TASK) as *mut core::ffi::c_void }
}

/// `__preempt_count_add(1)`: `preempt_disable_notrace()` without the
/// compiler barrier, which the caller's asm gives (no `nomem`).
#[inline(always)]
pub(crate) fn preempt_count_inc() {
    // SAFETY: an increment of this CPU's preempt count through `%gs`, as
    // the kernel's inline does; one instruction, so an interrupt sees the
    // count before or after it, never in between. Not `nomem`: a compiler
    // barrier, as `preempt_disable()` is one.
    unsafe { this_cpu!(add u32, pcpu_hot, PREEMPT_COUNT, const 1) };
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
        this_cpu!(sub u32, pcpu_hot, PREEMPT_COUNT, const 1;
            "jnz 2f", "call {sched}", "2:"; sched = sym preempt_schedule_notrace_call,)
    };
    // SAFETY: as above; without preemption there is nothing to schedule.
    #[cfg(not(CONFIG_PREEMPTION))]
    unsafe {
        this_cpu!(sub u32, pcpu_hot, PREEMPT_COUNT, const 1)
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

/// `this_cpu_ptr(&rkp_ctl_area)` (`arch/x86/ctl.c`): this CPU's copy of
/// the probe state storage, with the kernel's two instructions (this CPU's
/// offset plus the per-CPU pointer) instead of a lookup by CPU number. Any
/// context; the answer stays true only while the caller cannot migrate.
#[inline(always)]
pub(crate) fn ctl_area() -> *mut u8 {
    let p: *mut u8;
    // SAFETY: adds the per-CPU pointer of `rkp_ctl_area`, whose symbol
    // value the module loader set to it, to this CPU's offset; no memory
    // access.
    unsafe {
        core::arch::asm!(
            "lea {p}, [{p} + {area}]",
            p = inout(reg) this_cpu_offset() => p,
            area = sym super::glue::rkp_ctl_area,
            options(pure, nomem, nostack, preserves_flags)
        )
    };
    p
}

/// This CPU's `this_cpu_off`, which `this_cpu_ptr()` adds to a per-CPU
/// pointer. Any context; the answer stays true only while the caller
/// cannot migrate.
#[inline(always)]
fn this_cpu_offset() -> usize {
    // SAFETY: a load of this CPU's `this_cpu_off`, an `unsigned long`, as
    // `arch_raw_cpu_ptr()` does.
    unsafe { this_cpu!(read usize, this_cpu_off, 0) }
}

/// `this_cpu_ptr(p)` of a dynamic per-CPU pointer (`alloc_percpu()`): `p`
/// plus this CPU's `this_cpu_off`, one `%gs`-relative load. Any context;
/// the answer stays true only while the caller cannot migrate.
#[inline(always)]
pub(crate) fn this_cpu_ptr(p: *mut u8) -> *mut u8 {
    p.wrapping_add(this_cpu_offset())
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
