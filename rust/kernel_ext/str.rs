// SPDX-License-Identifier: GPL-2.0

//! Parsing user input as the kernel's own files do.

use crate::ffi;
use kernel::{prelude::*, str::CString};

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

/// The concatenation of `parts` as a C string, byte for byte: names in
/// commands are bytes (Latin-1 letters are letters to the kernel), not
/// UTF-8, and the tracing core must get the very bytes the listing shows.
/// `None` without memory or with a NUL inside. Process context.
pub(crate) fn cstring(parts: &[&[u8]]) -> Option<CString> {
    let len = parts.iter().map(|p| p.len()).sum::<usize>();
    let mut v = KVec::with_capacity(len + 1, GFP_KERNEL).ok()?;
    for p in parts {
        v.extend_from_slice(p, GFP_KERNEL).ok()?;
    }
    v.push(0, GFP_KERNEL).ok()?;
    let c = kernel::str::CStr::from_bytes_with_nul(&v).ok()?;
    CString::try_from(c).ok()
}
