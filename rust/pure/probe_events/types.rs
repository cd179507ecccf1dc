// SPDX-License-Identifier: GPL-2.0

//! Fetcharg types: the `:TYPE` suffix of a fetcharg.
//!
//! The kernel's table (`probe_fetch_types[]`) names the basic types; a
//! `b<width>@<offset>/<size>` bitfield is looked up as the unsigned type of
//! its container, and `TYPE[N]` makes an array. What each type stores and how
//! trace output prints it follows from the table, so it lives here too.

use super::error::{Errno, ErrorCode, ParseError};
use super::kstr::{at, find, head, kstrtoull, simple_strtoul, tail};
use super::MAX_ARRAY_LEN;

/// A basic fetch type (the kernel's `struct fetch_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FetchType {
    /// NUL-terminated kernel string, stored as a `__data_loc`.
    String,
    /// NUL-terminated user-space string.
    UString,
    /// `symbol+offset/size` text of an address, stored as a string.
    SymStr,
    /// Unsigned 8-bit, printed in decimal.
    U8,
    /// Unsigned 16-bit, printed in decimal.
    U16,
    /// Unsigned 32-bit, printed in decimal.
    U32,
    /// Unsigned 64-bit, printed in decimal.
    U64,
    /// Signed 8-bit, printed in decimal.
    S8,
    /// Signed 16-bit, printed in decimal.
    S16,
    /// Signed 32-bit, printed in decimal.
    S32,
    /// Signed 64-bit, printed in decimal.
    S64,
    /// 8-bit, printed as `0x..`.
    X8,
    /// 16-bit, printed as `0x..`.
    X16,
    /// 32-bit, printed as `0x..`.
    X32,
    /// 64-bit, printed as `0x..`: the default type on x86-64.
    X64,
    /// 8-bit, printed as a quoted character.
    Char,
    /// An address, printed as `%pS`.
    Symbol,
}

impl FetchType {
    /// Every type, in the kernel's table order.
    pub const ALL: [FetchType; 17] = [
        FetchType::String,
        FetchType::UString,
        FetchType::SymStr,
        FetchType::U8,
        FetchType::U16,
        FetchType::U32,
        FetchType::U64,
        FetchType::S8,
        FetchType::S16,
        FetchType::S32,
        FetchType::S64,
        FetchType::X8,
        FetchType::X16,
        FetchType::X32,
        FetchType::X64,
        FetchType::Char,
        FetchType::Symbol,
    ];

    /// The default type of a fetcharg without `:TYPE` (`x64` on 64-bit).
    pub const DEFAULT: FetchType = FetchType::X64;

    /// The type's name as written after `:`.
    pub fn name(self) -> &'static str {
        match self {
            FetchType::String => "string",
            FetchType::UString => "ustring",
            FetchType::SymStr => "symstr",
            FetchType::U8 => "u8",
            FetchType::U16 => "u16",
            FetchType::U32 => "u32",
            FetchType::U64 => "u64",
            FetchType::S8 => "s8",
            FetchType::S16 => "s16",
            FetchType::S32 => "s32",
            FetchType::S64 => "s64",
            FetchType::X8 => "x8",
            FetchType::X16 => "x16",
            FetchType::X32 => "x32",
            FetchType::X64 => "x64",
            FetchType::Char => "char",
            FetchType::Symbol => "symbol",
        }
    }

    /// Bytes the type takes in the event record (4 for a string's
    /// `__data_loc`).
    pub fn size(self) -> u32 {
        match self {
            FetchType::String | FetchType::UString | FetchType::SymStr => 4,
            FetchType::U8 | FetchType::S8 | FetchType::X8 | FetchType::Char => 1,
            FetchType::U16 | FetchType::S16 | FetchType::X16 => 2,
            FetchType::U32 | FetchType::S32 | FetchType::X32 => 4,
            FetchType::U64 | FetchType::S64 | FetchType::X64 | FetchType::Symbol => 8,
        }
    }

    /// Whether the type is signed (strings count as signed, as in the kernel,
    /// which matters only for the format file).
    pub fn is_signed(self) -> bool {
        matches!(
            self,
            FetchType::S8
                | FetchType::S16
                | FetchType::S32
                | FetchType::S64
                | FetchType::String
                | FetchType::UString
                | FetchType::SymStr
        )
    }

    /// Whether the value is a string stored out of line.
    pub fn is_string(self) -> bool {
        matches!(
            self,
            FetchType::String | FetchType::UString | FetchType::SymStr
        )
    }

    /// The type's printf format in the event's `print fmt`.
    pub fn print_fmt(self) -> &'static str {
        match self {
            FetchType::U8 | FetchType::U16 | FetchType::U32 => "%u",
            FetchType::U64 => "%Lu",
            FetchType::S8 | FetchType::S16 | FetchType::S32 => "%d",
            FetchType::S64 => "%Ld",
            FetchType::X8 | FetchType::X16 | FetchType::X32 => "0x%x",
            FetchType::X64 => "0x%Lx",
            FetchType::Char => "'%c'",
            FetchType::Symbol => "%pS",
            FetchType::String | FetchType::UString | FetchType::SymStr => "\\\"%s\\\"",
        }
    }

    /// The type's name in the event's format file.
    pub fn format_type(self) -> &'static str {
        match self {
            FetchType::String | FetchType::UString | FetchType::SymStr => "__data_loc char[]",
            FetchType::U8 | FetchType::X8 | FetchType::Char => "u8",
            FetchType::U16 | FetchType::X16 => "u16",
            FetchType::U32 | FetchType::X32 => "u32",
            FetchType::U64 | FetchType::X64 | FetchType::Symbol => "u64",
            FetchType::S8 => "s8",
            FetchType::S16 => "s16",
            FetchType::S32 => "s32",
            FetchType::S64 => "s64",
        }
    }

    /// Looks a type up as `find_fetch_type()` does (kprobe flavour: symbol
    /// types allowed). A name starting with `b` is a bitfield and resolves
    /// to the unsigned type of its `/size`.
    pub fn find(name: &[u8]) -> Option<FetchType> {
        if at(name, 0) == b'b' {
            let slash = find(name, b'/')?;
            return match kstrtoull(tail(name, slash + 1), 0).ok()? {
                8 => Some(FetchType::U8),
                16 => Some(FetchType::U16),
                32 => Some(FetchType::U32),
                64 => Some(FetchType::U64),
                _ => None,
            };
        }
        FetchType::ALL
            .iter()
            .copied()
            .find(|t| t.name().as_bytes() == name)
    }
}

/// A bitfield modifier (`FETCH_OP_MOD_BF`): the stored container is shifted
/// left by `lshift`, then right by `rshift`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bitfield {
    /// Container size in bytes.
    pub basesize: u8,
    /// Left shift that drops the bits above the field.
    pub lshift: u8,
    /// Right shift that drops the bits below the field.
    pub rshift: u8,
}

impl Bitfield {
    /// `__parse_bitfield_probe_arg()`'s syntax part: `b<width>@<offset>/`.
    ///
    /// `None` for a malformed bitfield, as the kernel rejects it. The shifts
    /// are computed modulo 256 as the kernel's `unsigned char` fields store
    /// them; the bounds check uses the kernel's wrapping `unsigned long`.
    pub(crate) fn parse(bf: &[u8], ty: FetchType) -> Result<Bitfield, ()> {
        let (bw, end) = simple_strtoul(tail(bf, 1), 0);
        let end = end + 1;
        if bw == 0 || at(bf, end) != b'@' {
            return Err(());
        }
        let start = end + 1;
        let (bo, n) = simple_strtoul(tail(bf, start), 0);
        if n == 0 || at(bf, start + n) != b'/' {
            return Err(());
        }
        let bits = u64::from(ty.size()) * 8;
        let sum = bw.wrapping_add(bo);
        let field = Bitfield {
            basesize: ty.size() as u8,
            lshift: bits.wrapping_sub(sum) as u8,
            rshift: bits.wrapping_sub(bw) as u8,
        };
        if bits < sum {
            Err(())
        } else {
            Ok(field)
        }
    }
}

/// A fetcharg's full type: basic type, optional bitfield, array length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArgType {
    /// The basic type (for a bitfield, the container's unsigned type).
    pub base: FetchType,
    /// Array length, 0 for a scalar.
    pub count: u32,
    /// The bitfield modifier, if the type was `b...`.
    pub bitfield: Option<Bitfield>,
    /// Printed as the name of its enum's enumerator of that value (`:enum`
    /// on a BTF-typed enum).
    pub symbolic: bool,
}

impl ArgType {
    /// Bytes the argument takes in the event record.
    pub fn record_size(&self) -> u32 {
        self.base.size().saturating_mul(self.count.max(1))
    }
}

/// The `:TYPE[N]` part of a fetcharg, split as `parse_probe_arg_type()`
/// splits it: positions are relative to the body's start.
pub(crate) struct TypeSpec<'t> {
    /// The body before the `:`.
    pub(crate) body: &'t [u8],
    /// The type name, without `[N]`, and its offset in the body text.
    pub(crate) name: Option<(&'t [u8], usize)>,
    /// The array length, 0 for none.
    pub(crate) count: u32,
}

/// Splits `:TYPE[N]` from a fetcharg body; `base` is the body's offset in
/// its argv entry, for error positions.
pub(crate) fn split_type(
    text: &[u8],
    base: usize,
    index: usize,
) -> Result<TypeSpec<'_>, ParseError> {
    let err = |code, off: usize| Err(ParseError::logged(Errno::EINVAL, code, index, base + off));
    let Some(colon) = find(text, b':') else {
        return Ok(TypeSpec {
            body: text,
            name: None,
            count: 0,
        });
    };
    let t = colon + 1;
    let ty = tail(text, t);
    let mut count = 0;
    let name = match find(ty, b'[') {
        None => ty,
        Some(lb) => {
            let t2 = t + lb + 1;
            let inner = tail(text, t2);
            let Some(rb) = find(inner, b']') else {
                return err(ErrorCode::ArrayNoClose, t2 + inner.len());
            };
            if rb + 1 != inner.len() {
                return err(ErrorCode::BadArraySuffix, t2 + rb + 1);
            }
            match super::kstr::kstrtouint(head(inner, rb), 0) {
                Ok(n) if n != 0 => count = n,
                _ => return err(ErrorCode::BadArrayNum, t2),
            }
            if count > MAX_ARRAY_LEN {
                return err(ErrorCode::ArrayTooBig, t2);
            }
            head(ty, lb)
        }
    };
    Ok(TypeSpec {
        body: head(text, colon),
        name: Some((name, t)),
        count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_types() {
        assert_eq!(FetchType::find(b"x16"), Some(FetchType::X16));
        assert_eq!(FetchType::find(b"y16"), None);
        assert_eq!(FetchType::find(b""), None);
        assert_eq!(FetchType::find(b"b4@4/32"), Some(FetchType::U32));
        assert_eq!(FetchType::find(b"bogus/0x10"), Some(FetchType::U16));
        assert_eq!(FetchType::find(b"b4@4/12"), None);
        assert_eq!(FetchType::find(b"b4@4"), None);
        for t in FetchType::ALL {
            assert_eq!(FetchType::find(t.name().as_bytes()), Some(t));
        }
    }

    #[test]
    fn parses_bitfields() {
        let bf = Bitfield::parse(b"b4@4/32", FetchType::U32).unwrap();
        assert_eq!((bf.basesize, bf.lshift, bf.rshift), (4, 24, 28));
        assert!(Bitfield::parse(b"b10@a/16", FetchType::U16).is_err());
        assert!(Bitfield::parse(b"b0@1/16", FetchType::U16).is_err());
        assert!(Bitfield::parse(b"b10@7/16", FetchType::U16).is_err());
        assert!(Bitfield::parse(b"b10@6/16", FetchType::U16).is_ok());
        assert!(Bitfield::parse(b"b4@/32", FetchType::U32).is_err());
    }
}
