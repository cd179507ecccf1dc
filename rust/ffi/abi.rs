// SPDX-License-Identifier: GPL-2.0

//! `struct rkp_kprobe` of `include/rkprobes.h`, in Rust.
//!
//! This file is compiled into rkprobes and into every Rust client module
//! (through `rust/client/`), so that both sides of the C ABI share one
//! definition. It depends only on `kernel::bindings` and `kernel::ffi`.
//!
//! Under kCFI (`CONFIG_CFI_CLANG`) an indirect call checks the callee's type
//! id, a hash of its type's mangled name. rustc names a `#[repr(C)]` struct
//! by its Rust name and clang by the C one, so a C client's handler would
//! fail every call rkprobes makes; `cfi_encoding` gives each struct its C
//! name (`tools/host/tests/kcfi.rs` compares the ids of both compilers).
//! The feature is enabled for every crate of the build on such a kernel
//! (the top-level Makefile).

use kernel::{
    bindings,
    ffi::{c_char, c_int, c_uint, c_ulong, c_void},
};

/// `rkp_pre_handler_t`.
pub type PreHandler = unsafe extern "C" fn(*mut RkpKprobe, *mut bindings::pt_regs) -> c_int;
/// `rkp_post_handler_t`.
pub type PostHandler = unsafe extern "C" fn(*mut RkpKprobe, *mut bindings::pt_regs, c_ulong);
/// `rkp_fault_handler_t`.
pub type FaultHandler =
    unsafe extern "C" fn(*mut RkpKprobe, *mut bindings::pt_regs, c_int) -> c_int;

/// `struct rkp_kprobe`.
#[repr(C)]
#[cfg_attr(CONFIG_CFI_CLANG, cfi_encoding = "10rkp_kprobe")]
pub struct RkpKprobe {
    /// Probed address (input, or output of a symbol lookup).
    pub addr: *mut c_void,
    /// Symbol to probe, or NULL.
    pub symbol_name: *const c_char,
    /// Offset from `symbol_name` (or from `addr`).
    pub offset: c_uint,
    /// Before the probed instruction.
    pub pre_handler: Option<PreHandler>,
    /// After the probed instruction.
    pub post_handler: Option<PostHandler>,
    /// On a fault in a handler or the step.
    pub fault_handler: Option<FaultHandler>,
    /// `RKP_FLAG_*`.
    pub flags: c_uint,
    /// Missed hits.
    pub nmissed: c_ulong,
    /// rkprobes' own: the probe point while registered.
    pub rkp_private: *mut c_void,
    /// rkprobes' own: the next probe at the same point.
    pub rkp_next: *mut RkpKprobe,
}

/// `rkp_kretprobe_handler_t`.
pub type KretprobeHandler =
    unsafe extern "C" fn(*mut RkpKretprobeInstance, *mut bindings::pt_regs) -> c_int;

/// `struct rkp_kretprobe`.
#[repr(C)]
#[cfg_attr(CONFIG_CFI_CLANG, cfi_encoding = "13rkp_kretprobe")]
pub struct RkpKretprobe {
    /// The entry probe; its handlers are rkprobes'.
    pub kp: RkpKprobe,
    /// At return.
    pub handler: Option<KretprobeHandler>,
    /// At entry; non-zero: no return handler for this call.
    pub entry_handler: Option<KretprobeHandler>,
    /// Instances; 0 for the default (written back).
    pub maxactive: c_int,
    /// Calls that found no free instance.
    pub nmissed: c_int,
    /// Bytes of per-instance data.
    pub data_size: usize,
    /// rkprobes' own: the instance pool.
    pub rkp_private: *mut c_void,
}

/// `struct rkp_kretprobe_instance`, followed by `data_size` bytes of data.
#[repr(C)]
#[cfg_attr(CONFIG_CFI_CLANG, cfi_encoding = "22rkp_kretprobe_instance")]
pub struct RkpKretprobeInstance {
    /// The kretprobe.
    pub rp: *mut RkpKretprobe,
    /// The real return address.
    pub ret_addr: c_ulong,
    /// Where the return address is on the stack.
    pub fp: *mut c_ulong,
    /// rkprobes' own: the task, referenced while the frame is out.
    pub rkp_task: *mut c_void,
    /// rkprobes' own: free-list link.
    pub rkp_next: c_uint,
    /// rkprobes' own: index in the pool.
    pub rkp_index: c_uint,
    /// Reserved.
    pub rkp_reserved: c_ulong,
    /// The handlers' data (a flexible array member in C).
    pub data: [u64; 0],
}

impl RkpKprobe {
    /// A probe at `addr`, or at `symbol_name` (NUL-terminated, or null) plus
    /// `offset`, with `flags` (`RKP_FLAG_DISABLED` or 0) and no handlers:
    /// every field of the C struct, rkprobes' own ones zeroed, as a C client
    /// initializes it with a designated initializer.
    pub const fn new(
        addr: *mut c_void,
        symbol_name: *const c_char,
        offset: c_uint,
        flags: c_uint,
    ) -> Self {
        RkpKprobe {
            addr,
            symbol_name,
            offset,
            pre_handler: None,
            post_handler: None,
            fault_handler: None,
            flags,
            nmissed: 0,
            rkp_private: core::ptr::null_mut(),
            rkp_next: core::ptr::null_mut(),
        }
    }
}

impl RkpKretprobe {
    /// A kretprobe on `kp` (a probe from [`RkpKprobe::new`] without
    /// handlers: rkprobes installs its own), with the return handler
    /// `handler`, the entry handler `entry_handler`, `maxactive` instances
    /// (0 for the default) and `data_size` bytes of data per instance;
    /// rkprobes' own fields zeroed.
    pub const fn new(
        kp: RkpKprobe,
        handler: Option<KretprobeHandler>,
        entry_handler: Option<KretprobeHandler>,
        maxactive: c_int,
        data_size: usize,
    ) -> Self {
        RkpKretprobe {
            kp,
            handler,
            entry_handler,
            maxactive,
            nmissed: 0,
            data_size,
            rkp_private: core::ptr::null_mut(),
        }
    }
}

/// `RKP_ABI_VERSION`: the version of the C ABI that this file mirrors, which
/// a client passes at registration.
pub const RKP_ABI_VERSION: u32 = 1;

/// `RKP_KRETPROBE_MAXACTIVE_MAX`.
pub const KRETPROBE_MAXACTIVE_MAX: usize = 4096;
/// `RKP_KRETPROBE_MAX_DATA_SIZE`, the kernel's `KRETPROBE_MAX_DATA_SIZE`.
pub const KRETPROBE_MAX_DATA_SIZE: usize = 4096;

/// `RKP_FLAG_*` of `include/rkprobes.h`, the values of the kernel's `KPROBE_FLAG_*`.
pub mod flags {
    /// The probed code was unloaded.
    pub const GONE: u32 = 1;
    /// Registered but not armed.
    pub const DISABLED: u32 = 2;
    /// Replaced by a jump.
    pub const OPTIMIZED: u32 = 4;
    /// Through ftrace at a function entry.
    pub const FTRACE: u32 = 8;
}
