// SPDX-License-Identifier: GPL-2.0

//! Architecture-specific probing: preparing an instruction, arming, and the
//! exception handlers of the hit path. Only x86-64 is supported.

#[cfg(target_arch = "x86_64")]
mod x86;
#[cfg(target_arch = "x86_64")]
pub(crate) use x86::*;
