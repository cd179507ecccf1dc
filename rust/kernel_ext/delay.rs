// SPDX-License-Identifier: GPL-2.0

//! Sleeping waits (the later kernel crate's `time::delay`).

use crate::ffi;

/// Sleeps for at least `ms` milliseconds (`msleep()`). Process context.
pub(crate) fn msleep(ms: u32) {
    // SAFETY: process context is the caller's (documented) contract; the
    // call has no other precondition.
    unsafe { ffi::msleep(ms) };
}
