// SPDX-License-Identifier: GPL-2.0

//! Parsing user input as the kernel's own files do.

use crate::ffi;
use kernel::prelude::*;

/// `kstrtobool()` of `input`: `y`/`n`, `1`/`0`, `on`/`off` and their
/// variants, with a trailing newline; `EINVAL` otherwise. At most the first
/// seven bytes of `input` are parsed. Any context.
pub(crate) fn kstrtobool(input: &[u8]) -> Result<bool> {
    let mut s = [0u8; 8];
    let n = input.len().min(s.len() - 1);
    s.get_mut(..n)
        .ok_or(EINVAL)?
        .copy_from_slice(input.get(..n).ok_or(EINVAL)?);
    let mut on = false;
    // SAFETY: `s` is NUL-terminated and `on` is a valid `bool` to write.
    kernel::error::to_result(unsafe { ffi::kstrtobool(s.as_ptr().cast(), &mut on) })?;
    Ok(on)
}

/// `input` without leading and trailing ASCII whitespace (`<[u8]>::trim_ascii`,
/// stable only since Rust 1.80, above the kernel's minimum).
pub(crate) fn trim_ascii(input: &[u8]) -> &[u8] {
    let start = input
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(input.len());
    let end = input
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    input.get(start..end).unwrap_or(&[])
}
