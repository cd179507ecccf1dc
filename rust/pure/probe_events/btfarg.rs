// SPDX-License-Identifier: GPL-2.0

//! Typed probe arguments from BTF: what the kernel's `parse_btf_arg()`,
//! `parse_btf_field()`, `fetch_type_from_btf_type()`,
//! `check_prepare_btf_string_fetch()` and `parse_btf_bitfield()`
//! (`kernel/trace/trace_probe.c` of 6.12) decide for an argument written
//! by name, `file`, `file->f_path.dentry`, `$retval`, at a function's entry
//! or return: which function argument (or the return value) it starts
//! from, the dereferences that follow its `->`, the type of what it ends
//! at, the type the kernel records it as when none is given, how a string
//! is read from it, and the shifts of a bitfield. Errors are the kernel's
//! error_log entries, at the kernel's offsets.

use super::error::ErrorCode;
use crate::pure::btf::{Btf, IntInfo, Kind, Type};

/// The most dereferences one argument can have (the kernel's
/// `FETCH_INSN_MAX`; the caller says how many it has room for).
pub const MAX_DEREFS: usize = 16;

/// Where a named argument starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    /// The function's argument of this index (0 is the first), at entry.
    Arg(u32),
    /// The function's argument of this index as it was at entry, in a
    /// return probe (the kernel's `FETCH_OP_EDATA`, stored at entry).
    EntryArg(u32),
    /// The return value.
    Retval,
    /// What the operand of a typecast (`(STRUCT)X->...`) or `$current`
    /// evaluates to, emitted by the caller.
    Operand,
}

/// The type an argument ends at, and the bits of it a bitfield takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Last {
    /// The type, typedefs and qualifiers looked through.
    pub type_id: u32,
    /// The bit offset of the value in the byte the last dereference reads.
    pub bitoffs: u32,
    /// A bitfield's size in bits, else 0.
    pub bitsize: u32,
}

/// A named argument, resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// Where it starts.
    pub base: Base,
    /// The byte offsets of its dereferences, in order (`FETCH_OP_DEREF`):
    /// each loads a pointer-sized value at that offset from the last one
    /// (negative only for a typecast's container).
    derefs: [i32; MAX_DEREFS],
    nderefs: usize,
    /// Its type, when BTF gives one (`$retval` of a function without
    /// BTF has none: it is the plain return value).
    pub last: Option<Last>,
    /// Where the last member name starts in the argument (0 without
    /// members): where the kernel's later errors on this argument point.
    pub end_offset: usize,
}

impl Resolved {
    /// The dereferences, in order.
    pub fn derefs(&self) -> &[i32] {
        &self.derefs[..self.nderefs]
    }
}

/// An error, and where in the argument the kernel's error_log points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BtfArgError {
    /// The message.
    pub code: ErrorCode,
    /// The byte offset from the argument's start (the caller adds where
    /// the argument is in its command word).
    pub offset: usize,
}

fn err(code: ErrorCode, offset: usize) -> BtfArgError {
    BtfArgError { code, offset }
}

/// What follows the first `.` or `->` of a name.
#[derive(Clone, Copy)]
struct Field<'a> {
    /// The text after the separator.
    rest: &'a [u8],
    /// The separator was `->`.
    arrow: bool,
    /// Where `rest` starts.
    at: usize,
}

/// The kernel's `split_next_field()`: the name before the first `.` or
/// `->`, and what follows it. A single `-` is an error at its position.
fn split_field(s: &[u8]) -> Result<(&[u8], Option<Field<'_>>), usize> {
    let field = |i: usize, arrow: bool| {
        let at = i + 1 + usize::from(arrow);
        Some(Field {
            rest: s.get(at..).unwrap_or(&[]),
            arrow,
            at,
        })
    };
    match s.iter().position(|&c| c == b'.' || c == b'-') {
        None => Ok((s, None)),
        Some(i) if s[i] == b'.' => Ok((&s[..i], field(i, false))),
        Some(i) if s.get(i + 1) == Some(&b'>') => Ok((&s[..i], field(i, true))),
        Some(i) => Err(i),
    }
}

/// Resolves `arg` (a name with `.`/`->` fields, or `$retval` with `->`
/// fields) at the entry (`ret` false) or return of `func`, whose
/// prototype `btf` may have; at most `max_derefs` dereferences fit.
///
/// A function with a prototype but no parameters is `NO_BTF_ENTRY`, as
/// for the first argument of a command the kernel parses; for a later one
/// the kernel, which looked the prototype up already, says `NO_BTFARG`
/// (the caller maps it).
pub fn resolve(
    btf: &Btf<'_>,
    func: &[u8],
    ret: bool,
    arg: &[u8],
    max_derefs: usize,
) -> Result<Resolved, BtfArgError> {
    resolve_in(btf, btf.func_proto(func), ret, arg, max_derefs)
}

/// [`resolve`] with the function's prototype looked up already (`None`
/// when BTF has no function of that name).
pub fn resolve_in(
    btf: &Btf<'_>,
    proto: Option<Type<'_>>,
    ret: bool,
    arg: &[u8],
    max_derefs: usize,
) -> Result<Resolved, BtfArgError> {
    resolve_params(btf, proto, 0, ret, arg, max_derefs)
}

/// [`resolve_in`] where the first `hidden` parameters of the prototype
/// have no names for fetchargs: a tracepoint's stub function, whose first
/// argument is the tracepoint's data (6.12's `query_btf_context()` skips
/// it for `TPARG_FL_TPOINT`). A parameter's [`Base::Arg`] is its index in
/// the whole prototype, the argument the function is called with.
pub fn resolve_params(
    btf: &Btf<'_>,
    proto: Option<Type<'_>>,
    hidden: usize,
    ret: bool,
    arg: &[u8],
    max_derefs: usize,
) -> Result<Resolved, BtfArgError> {
    let (var, field) = split_field(arg).map_err(|at| err(ErrorCode::BadHyphen, at))?;
    if let Some(Field {
        arrow: false, at, ..
    }) = field
    {
        // A dot on the argument itself: the argument would be a structure.
        return Err(err(ErrorCode::NosupDatArg, at));
    }
    let mut out = Resolved {
        base: Base::Retval,
        derefs: [0; MAX_DEREFS],
        nderefs: 0,
        last: None,
        end_offset: 0,
    };
    let tid = if ret && var == b"$retval" {
        match proto {
            Some(p) if p.size_or_type() == 0 => return Err(err(ErrorCode::NoRetval, 0)),
            Some(p) => p.size_or_type(),
            None => {
                if let Some(f) = field {
                    return Err(err(ErrorCode::NoBtfEntry, f.at));
                }
                return Ok(out);
            }
        }
    } else {
        let proto = proto
            .filter(|p| p.vlen() > hidden)
            .ok_or(err(ErrorCode::NoBtfEntry, 0))?;
        let (i, p) = proto
            .params()
            .enumerate()
            .skip(hidden)
            .find(|(_, p)| btf.str_at(p.name_off) == var)
            .ok_or(err(ErrorCode::NoBtfarg, 0))?;
        out.base = if ret {
            Base::EntryArg(i as u32)
        } else {
            Base::Arg(i as u32)
        };
        p.type_id
    };
    let t = btf.resolve(tid).ok_or(err(ErrorCode::BadBtfTid, 0))?;
    out.last = Some(Last {
        type_id: t.id,
        bitoffs: 0,
        bitsize: 0,
    });
    if let Some(f) = field {
        fields(
            btf,
            t,
            false,
            0,
            f.rest,
            f.at,
            &mut out,
            max_derefs.min(MAX_DEREFS),
        )?;
    }
    Ok(out)
}

/// The kernel's `parse_btf_field()`: `rest` follows an arrow from a value
/// of type `t`, at `offset` in the argument; with `cast`, `t` is the
/// structure the value points into, `adjust` bytes after its start.
#[allow(clippy::too_many_arguments)]
fn fields<'a>(
    btf: &Btf<'a>,
    mut t: Type<'a>,
    mut cast: bool,
    adjust: u32,
    mut rest: &[u8],
    mut offset: usize,
    out: &mut Resolved,
    max_derefs: usize,
) -> Result<(), BtfArgError> {
    loop {
        if !core::mem::take(&mut cast) {
            // Each arrow: the value must point to a structure or union.
            if t.kind != Kind::Ptr {
                return Err(err(ErrorCode::NoPtrStrct, offset));
            }
            t = btf
                .resolve(t.size_or_type())
                .ok_or(err(ErrorCode::BadBtfTid, offset))?;
        }
        let adjust = if out.nderefs == 0 { adjust } else { 0 };
        let mut bitoffs = 0u32;
        let mut bitsize;
        let arrow = loop {
            // Each dot, within one structure.
            let (name, next) =
                split_field(rest).map_err(|at| err(ErrorCode::BadHyphen, offset + at))?;
            let m = btf
                .member(t.id, name)
                .map_err(|_| err(ErrorCode::BadBtfTid, offset))?
                .ok_or(err(ErrorCode::NoBtfField, offset))?;
            bitoffs = bitoffs.wrapping_add(m.bit_offset);
            bitsize = m.bitfield_size;
            t = btf
                .resolve(m.type_id)
                .ok_or(err(ErrorCode::BadBtfTid, offset))?;
            match next {
                None => break None,
                Some(f) => {
                    offset += f.at;
                    rest = f.rest;
                    if f.arrow {
                        break Some(());
                    }
                }
            }
        };
        if out.nderefs >= max_derefs {
            return Err(err(ErrorCode::TooManyOps, offset));
        }
        out.derefs[out.nderefs] = (bitoffs / 8).wrapping_sub(adjust) as i32;
        out.nderefs += 1;
        out.end_offset = offset;
        out.last = Some(Last {
            type_id: t.id,
            bitoffs: bitoffs % 8,
            bitsize,
        });
        if arrow.is_none() {
            return Ok(());
        }
    }
}

/// A typecast of Linux 7.3, `(STRUCT[,ASGN])X->MEMBERS`, and `$current->`
/// (a cast to `task_struct`): the value X points into a `STRUCT`, at its
/// member `ASGN` (dot-separated) when given (the container_of form), else
/// at its start; `members` follow the arrow. `name_at`, `assign_at` and
/// `at` are where the structure's name, `ASGN` and `members` start in the
/// argument. The first member is looked up in `STRUCT` itself; later
/// arrows need pointers, as after a parameter.
pub fn resolve_cast(
    btf: &Btf<'_>,
    (name, name_at): (&[u8], usize),
    assign: Option<(&[u8], usize)>,
    (members, at): (&[u8], usize),
    max_derefs: usize,
) -> Result<Resolved, BtfArgError> {
    let t = btf
        .find(name, Kind::Struct)
        .ok_or(err(ErrorCode::NoPtrStrct, name_at))?;
    let mut adjust = 0u32;
    if let Some((path, path_at)) = assign {
        let mut bits = 0u32;
        let mut id = t.id;
        let mut rest = path;
        let mut off = path_at;
        loop {
            let (m, next) = split_field(rest).map_err(|i| err(ErrorCode::BadHyphen, off + i))?;
            let member = btf
                .member(id, m)
                .map_err(|_| err(ErrorCode::NoPtrStrct, off))?
                .ok_or(err(ErrorCode::NoBtfField, off))?;
            bits = bits.wrapping_add(member.bit_offset);
            if member.bitfield_size != 0 || bits & 7 != 0 {
                return Err(err(ErrorCode::TypecastNotAligned, off));
            }
            id = member.type_id;
            match next {
                None => break,
                Some(f) if f.arrow => {
                    return Err(err(ErrorCode::TypecastBadArrow, off + m.len()));
                }
                Some(f) => {
                    off += f.at;
                    rest = f.rest;
                }
            }
        }
        adjust = bits / 8;
    }
    let mut out = Resolved {
        base: Base::Operand,
        derefs: [0; MAX_DEREFS],
        nderefs: 0,
        last: None,
        end_offset: at,
    };
    fields(
        btf,
        t,
        true,
        adjust,
        members,
        at,
        &mut out,
        max_derefs.min(MAX_DEREFS),
    )?;
    Ok(out)
}

/// The type the kernel records an argument as when the command gives none
/// (`fetch_type_from_btf_type()`): `None` for the kinds it has no type for
/// (the default type then). An unsigned integer of an odd width is a
/// bitfield of that width: `last` is updated as the kernel updates it.
pub fn default_type(btf: &Btf<'_>, last: &mut Last) -> Option<&'static str> {
    let t = btf.get(last.type_id)?;
    match t.kind {
        Kind::Enum => Some("s32"),
        Kind::Enum64 => Some("s64"),
        Kind::Ptr => Some("x64"),
        Kind::Int => {
            let i = t.int_info()?;
            if i.encoding & IntInfo::SIGNED != 0 {
                match i.bits {
                    8 => Some("s8"),
                    16 => Some("s16"),
                    32 => Some("s32"),
                    64 => Some("s64"),
                    _ => None,
                }
            } else {
                Some(match i.bits {
                    8 => "u8",
                    16 => "u16",
                    32 => "u32",
                    64 => "u64",
                    bits => {
                        last.bitsize = u32::from(bits);
                        last.bitoffs += u32::from(i.offset);
                        "u64"
                    }
                })
            }
        }
        _ => None,
    }
}

/// How a string is read from an argument of type `last`
/// (`check_prepare_btf_string_fetch()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StringFrom {
    /// A `char` array: the string is where the value is.
    InPlace,
    /// A `char` pointer: one more dereference, of offset 0.
    Pointer,
}

/// Whether `id` is an 8-bit integer without the signed encoding, typedefs
/// and qualifiers looked through: the kernel's test for `char` (BTF gives
/// plain `char` no encoding, so it passes; `signed char` does not).
fn is_char(btf: &Btf<'_>, id: u32) -> bool {
    btf.resolve(id)
        .and_then(|t| t.int_info())
        .is_some_and(|i| i.encoding & IntInfo::SIGNED == 0 && i.bits == 8)
}

/// How a string type reads an argument of type `last`; `BAD_TYPE4STR`
/// for any other type.
pub fn string_from(btf: &Btf<'_>, last: &Last) -> Result<StringFrom, ErrorCode> {
    let t = btf.get(last.type_id).ok_or(ErrorCode::BadType4str)?;
    if let Some(a) = t.array() {
        if is_char(btf, a.elem) {
            return Ok(StringFrom::InPlace);
        }
    }
    if t.kind == Kind::Ptr && is_char(btf, t.size_or_type()) {
        return Ok(StringFrom::Pointer);
    }
    Err(ErrorCode::BadType4str)
}

/// The shifts that take a bitfield out of the 64 bits read at its byte
/// (`FETCH_OP_MOD_BF`: left, then right), when `last` is one: not when it
/// is whole bytes at a byte boundary. A field that does not fit in those
/// 64 bits (only malformed BTF has one) is `BAD_BITFIELD`.
pub fn bitfield(last: &Last) -> Result<Option<(u32, u32)>, ErrorCode> {
    if last.bitsize & 7 == 0 && last.bitoffs == 0 {
        return Ok(None);
    }
    let left = last
        .bitsize
        .checked_add(last.bitoffs)
        .and_then(|bits| 64u32.checked_sub(bits));
    match (left, 64u32.checked_sub(last.bitsize)) {
        (Some(l), Some(r)) => Ok(Some((l, r))),
        _ => Err(ErrorCode::BadBitfield),
    }
}
