// SPDX-License-Identifier: GPL-2.0

//! Strings read by chunks: non-faulting copies of at most [`STR_CHUNK`]
//! bytes that never cross a page, which fault exactly where the kernel's
//! byte-wise reads would.

use super::super::error::Errno;

/// The most bytes of a string read by one non-faulting copy.
pub const STR_CHUNK: usize = 32;

/// How many bytes of a string at `addr` one non-faulting copy reads, of
/// `left`: at most `STR_CHUNK`, and never across a boundary of `page`
/// bytes (a power of two). Memory is mapped by pages, so such a copy reads
/// all of its bytes or none: a string read by chunks faults exactly where a
/// read byte by byte would, at the first page before its NUL that cannot
/// be read.
pub fn chunk_len(addr: u64, left: usize, page: u64) -> usize {
    let to_page_end = page - (addr & (page - 1));
    left.min(STR_CHUNK)
        .min(usize::try_from(to_page_end).unwrap_or(usize::MAX))
}

/// The index of the first NUL of `b`, found a word at a time as the
/// kernel's `strncpy_from_user()` does (`has_zero()`): in a little-endian
/// word, the lowest byte flagged by `(w - 0x01..01) & !w & 0x80..80` is the
/// first zero byte (a flag above it may be false, one below cannot be).
pub fn find_nul(b: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut words = b.chunks_exact(8);
    let mut at = 0;
    for w in words.by_ref() {
        let mut a = [0u8; 8];
        a.copy_from_slice(w);
        let v = u64::from_le_bytes(a);
        let zero = v.wrapping_sub(ONES) & !v & HIGHS;
        if zero != 0 {
            return Some(at + (zero.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&c| c == 0)
        .map(|i| at + i)
}

/// The kernel's `strncpy_from_*_nofault()` contract over `read`, a
/// non-faulting reader (false: not readable), by chunks (`chunk_len`): the
/// length copied including the NUL, the string cut and NUL-terminated at
/// the end of `buf`; `EFAULT` when a page before the NUL cannot be read.
/// Bytes past the NUL in its chunk are copied too, inside `buf`.
pub fn strncpy_chunked(
    addr: u64,
    buf: &mut [u8],
    page: u64,
    mut read: impl FnMut(u64, &mut [u8]) -> bool,
) -> Result<usize, Errno> {
    let n = buf.len();
    let mut i = 0;
    while i < n {
        let a = addr.wrapping_add(i as u64);
        let len = chunk_len(a, n - i, page);
        let b = buf.get_mut(i..i + len).ok_or(Errno::EFAULT)?;
        if !read(a, b) {
            return Err(Errno::EFAULT);
        }
        if let Some(z) = find_nul(b) {
            return Ok(i + z + 1);
        }
        i += len;
    }
    if let Some(last) = buf.last_mut() {
        *last = 0;
    }
    Ok(n)
}

/// `strnlen_user_nofault()` over `read`, by chunks: the length of the
/// string at `addr` including its NUL, at most `max`; `EFAULT` when a page
/// before the NUL cannot be read.
pub fn strnlen_chunked(
    addr: u64,
    max: usize,
    page: u64,
    mut read: impl FnMut(u64, &mut [u8]) -> bool,
) -> Result<usize, Errno> {
    let mut chunk = [0u8; STR_CHUNK];
    let mut i = 0;
    while i < max {
        let a = addr.wrapping_add(i as u64);
        let b = chunk
            .get_mut(..chunk_len(a, max - i, page))
            .ok_or(Errno::EFAULT)?;
        if !read(a, b) {
            return Err(Errno::EFAULT);
        }
        if let Some(z) = find_nul(b) {
            return Ok(i + z + 1);
        }
        i += b.len();
    }
    Ok(max)
}
