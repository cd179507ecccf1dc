// SPDX-License-Identifier: GPL-2.0

//! Layer 2: small safe abstractions over `crate::ffi`, in the style of the
//! kernel crate, kept here until they can move to it (as Nova's
//! `nova-core` stages its own).
//!
//! Each type states its invariants, undoes what it did when dropped, and
//! says in which context it may be used: process context (may sleep),
//! atomic context (may not sleep), or exception/NMI-like context (the probe
//! hit path: may not sleep, allocate, or take a lock the interrupted code
//! could hold). Where the 6.12 kernel crate already has something
//! (`Ktime`, `PAGE_SIZE`, `from_result`, `static_assert!`, `Mutex`), rkprobes
//! uses it instead.

pub(crate) mod cpu;
pub(crate) mod debugfs;
pub(crate) mod execmem;
pub(crate) mod kprobe_blacklist;
// Its items are `pub` for the host crate, which compiles the file as its
// own public module to test it.
#[allow(unreachable_pub)]
pub(crate) mod list;
pub(crate) mod module;
pub(crate) mod mutex;
pub(crate) mod nofault;
pub(crate) mod notifier;
pub(crate) mod objpool;
pub(crate) mod owned;
pub(crate) mod race;
pub(crate) mod rcu_list;
pub(crate) mod slots;
pub(crate) mod str;
pub(crate) mod sync;
pub(crate) mod task;
pub(crate) mod text;
pub(crate) mod text_sites;
pub(crate) mod vec;
pub(crate) mod work;

use crate::ffi;
use kernel::prelude::*;

/// `EILSEQ`, which the 6.12 kernel crate does not name: not an instruction
/// boundary, or an instruction that raises an exception (int3, ud2, ...).
pub(crate) fn eilseq() -> Error {
    Error::from_errno(-(ffi::EILSEQ as i32))
}

/// `EOPNOTSUPP`, which the 6.12 kernel crate does not name: an instruction
/// that cannot be run out of line or emulated.
pub(crate) fn eopnotsupp() -> Error {
    Error::from_errno(-(ffi::EOPNOTSUPP as i32))
}

/// `security_locked_down(LOCKDOWN_KPROBES)`: `EPERM` while the kernel's
/// lockdown forbids new kprobes (confidentiality). Process context.
pub(crate) fn locked_down_kprobes() -> Result {
    // SAFETY: no preconditions.
    kernel::error::to_result(unsafe { ffi::rkp_locked_down_kprobes() })
}
