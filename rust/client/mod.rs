// SPDX-License-Identifier: GPL-2.0

//! The safe Rust interface to rkprobes, for client modules.
//!
//! A Rust module cannot call another module's Rust API, so clients use
//! rkprobes' C ABI (`include/rkprobes.h`); this file wraps it. A client
//! includes it with
//!
//! ```ignore
//! #[path = "../rust/client/mod.rs"]
//! pub mod rkprobes;
//! ```
//!
//! and gets [`Kprobe`], a pinned probe that unregisters itself when dropped,
//! handlers written against the [`KprobeHandler`] trait, typed access to the
//! registers ([`Regs`]), and reads of kernel memory that fail instead of
//! faulting ([`read_kernel`]). A handler written against this interface
//! cannot fault through it.

#[path = "../ffi/abi.rs"]
pub mod abi;

use abi::RkpKprobe;
use kernel::{bindings, ffi::c_ulong, prelude::*, str::CStr, types::FromBytes};

/// The C ABI of `include/rkprobes.h`, the one declaration of its functions
/// on the Rust side; the safe types below wrap it. Direct calls are for code
/// that tests the ABI itself (raw structures, double registration).
pub mod raw {
    use super::abi::{RkpKprobe, RkpKretprobe, RKP_ABI_VERSION};
    use kernel::ffi::{c_int, c_uint, c_ulong};

    /// `rkp_register_kprobe()`: registers and arms (unless
    /// `RKP_FLAG_DISABLED`).
    ///
    /// # Safety
    ///
    /// As `rkp_register_kprobe()` of `include/rkprobes.h`.
    pub unsafe extern "C" fn rkp_register_kprobe(p: *mut RkpKprobe) -> c_int {
        // SAFETY: the caller's contract.
        unsafe { rkp_register_kprobe_abi(p, RKP_ABI_VERSION) }
    }

    /// `rkp_register_kprobes()`: all or none.
    ///
    /// # Safety
    ///
    /// As `rkp_register_kprobes()` of `include/rkprobes.h`.
    pub unsafe extern "C" fn rkp_register_kprobes(kps: *mut *mut RkpKprobe, num: c_int) -> c_int {
        // SAFETY: the caller's contract.
        unsafe { rkp_register_kprobes_abi(kps, num, RKP_ABI_VERSION) }
    }

    /// `rkp_register_kretprobe()`.
    ///
    /// # Safety
    ///
    /// As `rkp_register_kretprobe()` of `include/rkprobes.h`.
    pub unsafe extern "C" fn rkp_register_kretprobe(rp: *mut RkpKretprobe) -> c_int {
        // SAFETY: the caller's contract.
        unsafe { rkp_register_kretprobe_abi(rp, RKP_ABI_VERSION) }
    }

    /// `rkp_register_kretprobes()`: all or none.
    ///
    /// # Safety
    ///
    /// As `rkp_register_kretprobes()` of `include/rkprobes.h`.
    pub unsafe extern "C" fn rkp_register_kretprobes(
        rps: *mut *mut RkpKretprobe,
        num: c_int,
    ) -> c_int {
        // SAFETY: the caller's contract.
        unsafe { rkp_register_kretprobes_abi(rps, num, RKP_ABI_VERSION) }
    }

    extern "C" {
        /// `rkp_register_kprobe_abi()`: registration by a client of ABI
        /// version `abi`; any but [`RKP_ABI_VERSION`] is refused (`ENOEXEC`).
        pub fn rkp_register_kprobe_abi(p: *mut RkpKprobe, abi: c_uint) -> c_int;
        /// `rkp_register_kprobes_abi()`.
        pub fn rkp_register_kprobes_abi(kps: *mut *mut RkpKprobe, num: c_int, abi: c_uint)
            -> c_int;
        /// `rkp_register_kretprobe_abi()`.
        pub fn rkp_register_kretprobe_abi(rp: *mut RkpKretprobe, abi: c_uint) -> c_int;
        /// `rkp_register_kretprobes_abi()`.
        pub fn rkp_register_kretprobes_abi(
            rps: *mut *mut RkpKretprobe,
            num: c_int,
            abi: c_uint,
        ) -> c_int;
        /// `rkp_unregister_kprobe()`: never fails; the probe may be freed after it.
        pub fn rkp_unregister_kprobe(p: *mut RkpKprobe);
        /// `rkp_enable_kprobe()`.
        pub fn rkp_enable_kprobe(p: *mut RkpKprobe) -> c_int;
        /// `rkp_disable_kprobe()`.
        pub fn rkp_disable_kprobe(p: *mut RkpKprobe) -> c_int;
        /// `rkp_unregister_kprobes()`: one grace period for all.
        pub fn rkp_unregister_kprobes(kps: *mut *mut RkpKprobe, num: c_int);
        /// `rkp_unregister_kretprobes()`.
        pub fn rkp_unregister_kretprobes(rps: *mut *mut RkpKretprobe, num: c_int);
        /// `rkp_unregister_kretprobe()`: never fails.
        pub fn rkp_unregister_kretprobe(rp: *mut RkpKretprobe);
        /// `rkp_kretprobe_find_ret_addr()`: the real return address behind the trampoline.
        pub fn rkp_kretprobe_find_ret_addr(addr: c_ulong) -> c_ulong;
        /// `rkp_stack_trace_save()`: a stack trace with return addresses restored.
        pub fn rkp_stack_trace_save(store: *mut c_ulong, size: u32, skipnr: u32) -> u32;
    }
}

use raw::*;

/// The registers at a probe hit.
#[repr(transparent)]
pub struct Regs(bindings::pt_regs);

impl Regs {
    /// The instruction pointer.
    pub fn ip(&self) -> usize {
        self.0.ip
    }

    /// Moves the instruction pointer; a pre-handler that does this returns
    /// [`Action::Skip`] so that the probed instruction does not run.
    pub fn set_ip(&mut self, ip: usize) {
        self.0.ip = ip as _;
    }

    /// The stack pointer.
    pub fn sp(&self) -> usize {
        self.0.sp
    }

    /// The flags register.
    pub fn flags(&self) -> u64 {
        self.0.flags as u64
    }

    /// `rax`: the return value after a function returned.
    pub fn ax(&self) -> u64 {
        self.0.ax as u64
    }

    /// Sets `rax`, e.g. to make a skipped function return a value.
    pub fn set_ax(&mut self, v: u64) {
        self.0.ax = v as _;
    }

    /// Argument `n` (0-based) of a function probed at its entry, by the
    /// x86-64 calling convention (`rdi`, `rsi`, `rdx`, `rcx`, `r8`, `r9`);
    /// `None` beyond the sixth.
    pub fn arg(&self, n: usize) -> Option<u64> {
        let r = &self.0;
        let v = match n {
            0 => r.di,
            1 => r.si,
            2 => r.dx,
            3 => r.cx,
            4 => r.r8,
            5 => r.r9,
            _ => return None,
        };
        Some(v as u64)
    }

    /// For a pre-handler at a function's entry: makes the function return
    /// `value` to its caller without running (fault injection). The handler
    /// then returns [`Action::Skip`].
    ///
    /// As the kernel's `override_function_with_return()`, this moves `ip`
    /// to a function that only returns and leaves the stack alone, which
    /// works both for int3 probes and for probes through ftrace (whose
    /// return path cannot change the stack pointer).
    pub fn override_return(&mut self, value: u64) {
        self.0.ax = value as _;
        self.0.ip = rkp_just_return as *const () as _;
    }
}

/// The landing place of [`Regs::override_return`]: returns at once.
#[inline(never)]
extern "C" fn rkp_just_return() {
    // Keeps the function from being merged with another empty one.
    core::hint::black_box(());
}

/// Reads a `T` from kernel memory at `addr`; `EFAULT` instead of a fault when
/// it is not readable. `T` is any type that every bit pattern makes valid
/// (the kernel crate's `FromBytes`: the integer types and arrays of them).
/// Any context, including probe handlers.
pub fn read_kernel<T: FromBytes>(addr: usize) -> Result<T> {
    let mut v = core::mem::MaybeUninit::<T>::uninit();
    // SAFETY: `v` is a valid destination of `size_of::<T>()` bytes, and the
    // copy checks the source without faulting.
    let ret = unsafe {
        bindings::copy_from_kernel_nofault(
            v.as_mut_ptr().cast(),
            addr as *const _,
            core::mem::size_of::<T>(),
        )
    };
    if ret == 0 {
        // SAFETY: the copy wrote all of `v`, and every bit pattern is a
        // valid `T` (`FromBytes`).
        Ok(unsafe { v.assume_init() })
    } else {
        Err(EFAULT)
    }
}

/// What a pre-handler asks for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Run the probed instruction and continue.
    Continue,
    /// The handler changed `ip`; do not run the probed instruction.
    Skip,
}

/// Where to probe.
pub enum Target {
    /// A symbol (`"sym"` or `"module:sym"`) plus an offset.
    Symbol(&'static CStr, u32),
    /// An address.
    Addr(usize),
}

impl Target {
    /// A `struct rkp_kprobe` at this target, without handlers.
    fn raw_kprobe(&self) -> RkpKprobe {
        match *self {
            Target::Symbol(s, off) => {
                RkpKprobe::new(core::ptr::null_mut(), s.as_char_ptr(), off, 0)
            }
            Target::Addr(a) => RkpKprobe::new(a as *mut _, core::ptr::null(), 0, 0),
        }
    }
}

/// Maps an address of a stack trace of the current task that is the return
/// stub of a probed frame back to the real return address; other addresses
/// come back unchanged. Call it with preemption off, e.g. from a handler.
pub fn kretprobe_find_ret_addr(addr: usize) -> usize {
    // SAFETY: a pure lookup; the caller's context keeps the answer stable.
    unsafe { rkp_kretprobe_find_ret_addr(addr as c_ulong) as usize }
}

/// Saves a stack trace of the current task into `buf`, seeing through frames
/// whose return address a kretprobe replaced (where the kernel's own
/// `stack_trace_save()` stops); returns the number of entries. Call it with
/// preemption off, e.g. from a handler.
pub fn stack_trace(buf: &mut [usize]) -> usize {
    let len = buf.len().min(u32::MAX as usize) as u32;
    // SAFETY: `buf` has room for `len` entries; `usize` is `unsigned long`.
    unsafe { rkp_stack_trace_save(buf.as_mut_ptr().cast(), len, 0) as usize }
}

mod batch;
mod kprobe;
mod kretprobe;
pub mod param;

pub use batch::Batch;
pub use kprobe::{register_kprobes, unregister_kprobes, Kprobe, KprobeHandler, ProbeInfo};
pub use kretprobe::{
    register_kretprobes, unregister_kretprobes, Kretprobe, KretprobeHandler, RetInfo,
};
