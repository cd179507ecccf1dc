// SPDX-License-Identifier: GPL-2.0

//! The kernel's character classes and number parsers, byte for byte.
//!
//! What kprobe_events accepts is decided by `lib/ctype.c` (whose classes
//! cover Latin-1, so `isalpha(0xe9)` holds and byte 0xa0 is a space) and by
//! `lib/kstrtox.c` (`kstrtoul()` and friends take a leading `+`, a base-0
//! prefix, one trailing newline) and `simple_strtoul()`. Rust's own parsers
//! differ on each of these points, so the probe parser uses these instead.
//! Every function reads a byte slice as the C code reads a NUL-terminated
//! string: a position past the end reads as NUL.

use super::error::Errno;

const C: u8 = 0x20; // control
const S: u8 = 0x08; // white space
const P: u8 = 0x10; // punctuation
const D: u8 = 0x04; // digit
const U: u8 = 0x01; // upper case
const L: u8 = 0x02; // lower case
const X: u8 = 0x40; // hex digit
const SP: u8 = 0x80; // hard space

/// `lib/ctype.c`'s `_ctype[]`.
#[rustfmt::skip]
static CTYPE: [u8; 256] = [
    C, C, C, C, C, C, C, C,
    C, C | S, C | S, C | S, C | S, C | S, C, C,
    C, C, C, C, C, C, C, C,
    C, C, C, C, C, C, C, C,
    S | SP, P, P, P, P, P, P, P,
    P, P, P, P, P, P, P, P,
    D, D, D, D, D, D, D, D,
    D, D, P, P, P, P, P, P,
    P, U | X, U | X, U | X, U | X, U | X, U | X, U,
    U, U, U, U, U, U, U, U,
    U, U, U, U, U, U, U, U,
    U, U, U, P, P, P, P, P,
    P, L | X, L | X, L | X, L | X, L | X, L | X, L,
    L, L, L, L, L, L, L, L,
    L, L, L, L, L, L, L, L,
    L, L, L, P, P, P, P, C,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    S | SP, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P,
    P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P,
    U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U,
    U, U, U, U, U, U, U, P, U, U, U, U, U, U, U, L,
    L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L,
    L, L, L, L, L, L, L, P, L, L, L, L, L, L, L, L,
];

fn class(c: u8) -> u8 {
    CTYPE.get(usize::from(c)).copied().unwrap_or(0)
}

/// The kernel's `isspace()`: also true for 0xa0.
pub fn is_space(c: u8) -> bool {
    class(c) & S != 0
}

/// The kernel's `isalpha()`: also true for Latin-1 letters.
pub fn is_alpha(c: u8) -> bool {
    class(c) & (U | L) != 0
}

/// The kernel's `isdigit()`.
pub fn is_digit(c: u8) -> bool {
    c.is_ascii_digit()
}

/// The kernel's `isalnum()`: also true for Latin-1 letters.
pub fn is_alnum(c: u8) -> bool {
    is_alpha(c) || is_digit(c)
}

/// The kernel's `isxdigit()`.
pub fn is_xdigit(c: u8) -> bool {
    class(c) & (D | X) != 0
}

/// Byte `i` of a C string held in `s`: NUL past the end.
pub fn at(s: &[u8], i: usize) -> u8 {
    s.get(i).copied().unwrap_or(0)
}

/// The part of `s` before its first NUL, as C string functions see it.
pub fn c_str(s: &[u8]) -> &[u8] {
    match s.iter().position(|&c| c == 0) {
        Some(n) => s.get(..n).unwrap_or(s),
        None => s,
    }
}

/// Position of the first `c` in `s` (`strchr()`; never finds NUL).
pub fn find(s: &[u8], c: u8) -> Option<usize> {
    s.iter().position(|&b| b == c)
}

/// Position of the last `c` in `s` (`strrchr()`).
pub fn rfind(s: &[u8], c: u8) -> Option<usize> {
    s.iter().rposition(|&b| b == c)
}

/// `s[from..]`, empty when `from` is past the end.
pub fn tail(s: &[u8], from: usize) -> &[u8] {
    s.get(from..).unwrap_or(&[])
}

/// `s[..to]`, all of `s` when `to` is past the end.
pub fn head(s: &[u8], to: usize) -> &[u8] {
    s.get(..to).unwrap_or(s)
}

/// `_parse_integer_fixup_radix()`: the base and where the digits start.
fn fixup_radix(s: &[u8], base: u32) -> (usize, u32) {
    let mut base = base;
    if base == 0 {
        base = if at(s, 0) == b'0' {
            if at(s, 1) | 0x20 == b'x' && is_xdigit(at(s, 2)) {
                16
            } else {
                8
            }
        } else {
            10
        };
    }
    if base == 16 && at(s, 0) == b'0' && at(s, 1) | 0x20 == b'x' {
        (2, base)
    } else {
        (0, base)
    }
}

/// What `_parse_integer_limit()` found.
struct Digits {
    value: u64,
    count: usize,
    overflow: bool,
}

/// `_parse_integer_limit()`: value, digits consumed, overflow seen.
fn parse_digits(s: &[u8], base: u32, max: usize) -> Digits {
    let mut res: u64 = 0;
    let mut count = 0;
    let mut overflow = false;
    for &c in s.iter().take(max) {
        let lc = c | 0x20;
        let val = if c.is_ascii_digit() {
            u32::from(c - b'0')
        } else if (b'a'..=b'f').contains(&lc) {
            u32::from(lc - b'a') + 10
        } else {
            break;
        };
        if val >= base {
            break;
        }
        let (mul, o1) = res.overflowing_mul(u64::from(base));
        let (sum, o2) = mul.overflowing_add(u64::from(val));
        overflow |= o1 || o2;
        res = sum;
        count += 1;
    }
    Digits {
        value: res,
        count,
        overflow,
    }
}

/// `_kstrtoull()`: no sign accepted.
fn kstrtoull_nosign(s: &[u8], base: u32) -> Result<u64, Errno> {
    let s = c_str(s);
    let (start, base) = fixup_radix(s, base);
    let digits = tail(s, start);
    let d = parse_digits(digits, base, usize::MAX);
    if d.overflow {
        return Err(Errno::ERANGE);
    }
    if d.count == 0 {
        return Err(Errno::EINVAL);
    }
    let mut rest = tail(digits, d.count);
    if at(rest, 0) == b'\n' {
        rest = tail(rest, 1);
    }
    if !rest.is_empty() {
        return Err(Errno::EINVAL);
    }
    Ok(d.value)
}

/// `kstrtoull()` (and `kstrtoul()` on 64-bit): a leading `+` is allowed.
pub fn kstrtoull(s: &[u8], base: u32) -> Result<u64, Errno> {
    let s = c_str(s);
    let s = if at(s, 0) == b'+' { tail(s, 1) } else { s };
    kstrtoull_nosign(s, base)
}

/// `kstrtoll()` (and `kstrtol()` on 64-bit).
pub fn kstrtoll(s: &[u8], base: u32) -> Result<i64, Errno> {
    let s = c_str(s);
    if at(s, 0) == b'-' {
        kstrtoll_negated(tail(s, 1), base)
    } else {
        let tmp = kstrtoull(s, base)?;
        i64::try_from(tmp).map_err(|_| Errno::ERANGE)
    }
}

/// `kstrtoll()` of `-` followed by `s`, without building that string.
pub fn kstrtoll_negated(s: &[u8], base: u32) -> Result<i64, Errno> {
    let tmp = kstrtoull_nosign(c_str(s), base)?;
    let neg = (tmp as i64).wrapping_neg();
    if neg > 0 {
        return Err(Errno::ERANGE);
    }
    Ok(neg)
}

/// `kstrtouint()`.
pub fn kstrtouint(s: &[u8], base: u32) -> Result<u32, Errno> {
    let v = kstrtoull(s, base)?;
    u32::try_from(v).map_err(|_| Errno::ERANGE)
}

/// `simple_strtoul()`: the (wrapped) value and the index where parsing stopped.
pub fn simple_strtoul(s: &[u8], base: u32) -> (u64, usize) {
    let s = c_str(s);
    let (start, base) = fixup_radix(s, base);
    let d = parse_digits(tail(s, start), base, usize::MAX);
    (d.value, start + d.count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_follow_latin1_table() {
        assert!(is_space(b' ') && is_space(b'\t') && is_space(0xa0));
        assert!(!is_space(0x85) && !is_space(b'a'));
        assert!(is_alpha(b'a') && is_alpha(b'Z') && is_alpha(0xe9) && is_alpha(0xc0));
        assert!(!is_alpha(0xd7) && !is_alpha(0xf7) && !is_alpha(b'_') && !is_alpha(0x80));
        assert!(is_xdigit(b'F') && !is_xdigit(b'g'));
    }

    #[test]
    fn kstrtoull_like_kernel() {
        assert_eq!(kstrtoull(b"10", 0), Ok(10));
        assert_eq!(kstrtoull(b"010", 0), Ok(8));
        assert_eq!(kstrtoull(b"0x10", 0), Ok(16));
        assert_eq!(kstrtoull(b"0X1f", 0), Ok(31));
        assert_eq!(kstrtoull(b"+7", 0), Ok(7));
        assert_eq!(kstrtoull(b"7\n", 0), Ok(7));
        assert_eq!(kstrtoull(b"7\n\n", 0), Err(Errno::EINVAL));
        assert_eq!(kstrtoull(b"0x", 0), Err(Errno::EINVAL));
        assert_eq!(kstrtoull(b"", 0), Err(Errno::EINVAL));
        assert_eq!(kstrtoull(b"-1", 0), Err(Errno::EINVAL));
        assert_eq!(kstrtoull(b"08", 0), Err(Errno::EINVAL));
        assert_eq!(kstrtoull(b"0x10", 10), Err(Errno::EINVAL));
        assert_eq!(kstrtoull(b"18446744073709551615", 0), Ok(u64::MAX));
        assert_eq!(kstrtoull(b"18446744073709551616", 0), Err(Errno::ERANGE));
        assert_eq!(kstrtoull(b"0x1ffffffffffffffff", 0), Err(Errno::ERANGE));
    }

    #[test]
    fn kstrtoll_like_kernel() {
        assert_eq!(kstrtoll(b"-10", 0), Ok(-10));
        assert_eq!(kstrtoll(b"-0", 0), Ok(0));
        assert_eq!(kstrtoll(b"+-1", 0), Err(Errno::EINVAL));
        assert_eq!(kstrtoll(b"-+1", 0), Err(Errno::EINVAL));
        assert_eq!(kstrtoll(b"-9223372036854775808", 0), Ok(i64::MIN));
        assert_eq!(kstrtoll(b"-9223372036854775809", 0), Err(Errno::ERANGE));
        assert_eq!(kstrtoll(b"9223372036854775808", 0), Err(Errno::ERANGE));
        assert_eq!(kstrtouint(b"4294967296", 0), Err(Errno::ERANGE));
    }

    #[test]
    fn simple_strtoul_stops_at_junk() {
        assert_eq!(simple_strtoul(b"10@4", 0), (10, 2));
        assert_eq!(simple_strtoul(b"0x4@", 0), (4, 3));
        assert_eq!(simple_strtoul(b"@", 0), (0, 0));
        assert_eq!(simple_strtoul(b"0xg", 0), (0, 1));
    }
}
