// SPDX-License-Identifier: GPL-2.0

//! The kernel's lockdown.

use crate::ffi;
use kernel::prelude::*;

/// `security_locked_down(LOCKDOWN_KPROBES)`: `EPERM` while the kernel's
/// lockdown forbids new kprobes (confidentiality). Process context.
pub(crate) fn locked_down_kprobes() -> Result {
    // SAFETY: no preconditions.
    kernel::error::to_result(unsafe { ffi::rkp_locked_down_kprobes() })
}
