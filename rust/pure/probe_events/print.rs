// SPDX-License-Identifier: GPL-2.0

//! What users read back: the `kprobe_events` listing and trace output values.
//!
//! `cat kprobe_events` prints each probe in a canonical form
//! (`trace_kprobe_show()`) that scripts parse and that can be written back;
//! trace output prints each fetched value with its type's printf format
//! (`print_type_*()`, `trace_probe_print_args()`). Both are reproduced here.
//! Command text and strings are bytes, not UTF-8, so output goes to a
//! [`ByteWrite`]; [`FmtWriter`] adapts a `core::fmt::Write`.

use core::fmt;

use super::super::ksym::SymbolAddr;
use super::bytes::{ByteWrite, Fmt};
use super::layout::{FieldRef, Layout, Spec};
use super::parse::write_location;
use super::types::FetchType;
use super::{ProbeEnv, ProbeKind};

/// Writes one line of `cat kprobe_events` for the probe `spec` of the
/// event `GROUP/EVENT` of `layout`, newline included:
/// `p:GRP/EVENT SYM+OFFS NAME=ARG...`, `r16:...` with a maxactive. An
/// fprobe's is `f:GRP/EVENT FUNC NAME=ARG...`, `f16:GRP/EVENT
/// FUNC%return ...` on a function's exit (`%return` whether the command
/// said it or a `$retval` made it an exit probe), a tracepoint probe's
/// `t:GRP/EVENT TRACEPOINT ...` (`trace_fprobe_show()`), an event
/// probe's `e:GRP/EVENT SYSTEM.EVENT ...` (`eprobe_dyn_event_show()`,
/// which shows no filter).
///
/// `maxactive` is the kretprobe's: the command's, or once registered the
/// default it got (as the kernel's listing shows `r10:` for `r:`). An
/// fprobe's is the command's: 6.12 lists none for `f:`.
pub fn write_listing<W: ByteWrite + ?Sized, E: ProbeEnv + ?Sized>(
    w: &mut W,
    (group, event): (&[u8], &[u8]),
    layout: &Layout<'_>,
    spec: &Spec<'_>,
    maxactive: u32,
    env: &E,
) -> fmt::Result {
    use fmt::Write as _;
    w.write_bytes(match (layout.kind, layout.is_return) {
        (ProbeKind::Kprobe, false) => b"p",
        (ProbeKind::Kprobe, true) => b"r",
        (ProbeKind::Fprobe, _) => b"f",
        (ProbeKind::Tprobe, _) => b"t",
        (ProbeKind::Eprobe, _) => b"e",
    })?;
    if layout.is_return && maxactive != 0 {
        write!(Fmt(w), "{maxactive}")?;
    }
    w.write_bytes(b":")?;
    w.write_bytes(group)?;
    w.write_bytes(b"/")?;
    w.write_bytes(event)?;
    w.write_bytes(b" ")?;
    write_location(w, &spec.location(), env)?;
    if layout.kind == ProbeKind::Fprobe && layout.is_return {
        w.write_bytes(b"%return")?;
    }
    for (field, comm) in layout.fields().zip(spec.comms()) {
        w.write_bytes(b" ")?;
        w.write_bytes(field.name)?;
        w.write_bytes(b"=")?;
        w.write_bytes(comm)?;
    }
    w.write_bytes(b"\n")
}

/// Finds the symbol around an address, for `%pS` and `symstr`.
pub trait SymbolResolver {
    /// The symbol containing `addr`, as `kallsyms_lookup()` reports it.
    fn lookup(&self, addr: u64) -> Option<SymbolAddr<'_>>;
}

/// A resolver that knows no symbol: `%pS` prints bare addresses.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoSymbols;

impl SymbolResolver for NoSymbols {
    fn lookup(&self, _addr: u64) -> Option<SymbolAddr<'_>> {
        None
    }
}

/// Writes `addr` as `sprint_symbol()` (`%pS`) does: `NAME+0xOFF/0xSIZE`,
/// then ` [MODULE]` for a module, or `0xADDR` when no symbol covers it.
/// This is also the text a `symstr` fetcharg stores.
pub fn write_symbol<W: ByteWrite + ?Sized, R: SymbolResolver + ?Sized>(
    w: &mut W,
    addr: u64,
    resolver: &R,
) -> fmt::Result {
    use fmt::Write as _;
    match resolver.lookup(addr) {
        None => write!(Fmt(w), "{addr:#x}"),
        Some(sym) => {
            w.write_bytes(sym.name.as_bytes())?;
            write!(Fmt(w), "+{:#x}/{:#x}", sym.offset, sym.size)?;
            if let Some(m) = sym.module {
                w.write_bytes(b" [")?;
                w.write_bytes(m.as_bytes())?;
                w.write_bytes(b"]")?;
            }
            Ok(())
        }
    }
}

/// What trace output prints for a string that could not be fetched.
pub const FAULT_STRING: &str = "(fault)";

/// What trace output prints for a field that the record does not hold
/// (the kernel's `print_event_fields()` says the same).
pub const OVERFLOW_STRING: &str = "<OVERFLOW>";

/// One stored element of a fetcharg's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Element<'d> {
    /// A fixed-size value: its little-endian bytes (at least the type's
    /// size; extra bytes are ignored).
    Scalar(&'d [u8]),
    /// A string's stored bytes (they end at the first NUL), or `None` for
    /// a fault (a zero-length `__data_loc`).
    Str(Option<&'d [u8]>),
    /// A field, or string data, beyond the end of the record.
    Overflow,
}

fn le_u64(b: &[u8], size: u32) -> u64 {
    let mut v = 0u64;
    for (i, byte) in b.iter().take(size as usize).enumerate() {
        v |= u64::from(*byte) << (8 * i);
    }
    v
}

/// Writes one element of type `ty` as the kernel's `print_type_*()` does.
/// Elements of the wrong kind for the type print as [`FAULT_STRING`].
pub fn write_element<W: ByteWrite + ?Sized, R: SymbolResolver + ?Sized>(
    w: &mut W,
    ty: FetchType,
    elem: Element<'_>,
    resolver: &R,
) -> fmt::Result {
    use fmt::Write as _;
    let bytes = match elem {
        Element::Overflow => return w.write_bytes(OVERFLOW_STRING.as_bytes()),
        Element::Str(s) => {
            return match (ty.is_string(), s) {
                (true, Some(s)) => {
                    let s = super::kstr::c_str(s);
                    w.write_bytes(b"\"")?;
                    w.write_bytes(s)?;
                    w.write_bytes(b"\"")
                }
                _ => w.write_bytes(FAULT_STRING.as_bytes()),
            };
        }
        Element::Scalar(b) if !ty.is_string() => b,
        Element::Scalar(_) => return w.write_bytes(FAULT_STRING.as_bytes()),
    };
    let v = le_u64(bytes, ty.size());
    let mut f = Fmt(w);
    match ty {
        FetchType::U8 | FetchType::U16 | FetchType::U32 | FetchType::U64 => write!(f, "{v}"),
        FetchType::S8 => write!(f, "{}", v as u8 as i8),
        FetchType::S16 => write!(f, "{}", v as u16 as i16),
        FetchType::S32 => write!(f, "{}", v as u32 as i32),
        FetchType::S64 => write!(f, "{}", v as i64),
        FetchType::X8 | FetchType::X16 | FetchType::X32 | FetchType::X64 => write!(f, "0x{v:x}"),
        FetchType::Char => {
            f.0.write_bytes(b"'")?;
            f.0.write_bytes(&[v as u8])?;
            f.0.write_bytes(b"'")
        }
        FetchType::Symbol => write_symbol(f.0, v, resolver),
        FetchType::String | FetchType::UString | FetchType::SymStr => Ok(()),
    }
}

/// Writes ` NAME=VALUE` for one fetcharg, as `trace_probe_print_args()`
/// does: arrays as `{a,b,c}`. `elems` yields the stored elements (one for a
/// scalar, the array's count otherwise).
pub fn write_arg_value<'d, W, R, I>(
    w: &mut W,
    arg: &FieldRef<'_>,
    elems: I,
    resolver: &R,
) -> fmt::Result
where
    W: ByteWrite + ?Sized,
    R: SymbolResolver + ?Sized,
    I: IntoIterator<Item = Element<'d>>,
{
    w.write_bytes(b" ")?;
    w.write_bytes(arg.name)?;
    w.write_bytes(b"=")?;
    let mut elems = elems.into_iter();
    if arg.ty.count == 0 {
        let e = elems.next().unwrap_or(Element::Str(None));
        if arg.ty.symbolic {
            if let Element::Scalar(b) = e {
                return write_symbolic(w, arg, le_u64(b, arg.ty.base.size()));
            }
        }
        return write_element(w, arg.ty.base, e, resolver);
    }
    w.write_bytes(b"{")?;
    for j in 0..arg.ty.count {
        let e = elems.next().unwrap_or(Element::Str(None));
        write_element(w, arg.ty.base, e, resolver)?;
        w.write_bytes(if j + 1 == arg.ty.count { b"}" } else { b"," })?;
    }
    Ok(())
}

/// A `:enum` value: the name of its enumerator, else the value in hex, as
/// the tracing core's `__print_symbolic()` prints it.
fn write_symbolic<W: ByteWrite + ?Sized>(w: &mut W, arg: &FieldRef<'_>, v: u64) -> fmt::Result {
    use fmt::Write as _;
    let bits = arg.ty.base.size() * 8;
    let mask = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    match arg.symbols().find(|&(e, _)| e as u64 & mask == v & mask) {
        Some((_, name)) => w.write_bytes(name),
        None => {
            // The value sign-extended from the field, as the record's C
            // type gives it to `__print_symbolic()`.
            let shift = 64 - bits.min(64);
            let ext = ((v << shift) as i64 >> shift) as u64;
            write!(Fmt(w), "0x{ext:x}")
        }
    }
}

/// The `__data_loc` word at `at` in `rec`, if the record holds it.
fn data_loc_at(rec: &[u8], at: usize) -> Option<u32> {
    let b = rec.get(at..at.checked_add(4)?)?;
    Some(u32::from_ne_bytes([
        *b.first()?,
        *b.get(1)?,
        *b.get(2)?,
        *b.get(3)?,
    ]))
}

/// The stored element `j` of `arg` in `rec` (the whole record, its header
/// of `header_size` bytes included): whatever the record's bytes say, only
/// bytes of `rec` are read, and a field or string data outside it is
/// [`Element::Overflow`].
pub fn record_element<'r>(
    rec: &'r [u8],
    header_size: usize,
    arg: &FieldRef<'_>,
    j: u32,
) -> Element<'r> {
    let esize = arg.ty.base.size() as usize;
    let at = header_size
        .checked_add(arg.offset as usize)
        .and_then(|b| b.checked_add((j as usize).checked_mul(esize)?));
    let Some(at) = at else {
        return Element::Overflow;
    };
    if !arg.ty.base.is_string() {
        return match at.checked_add(esize).and_then(|end| rec.get(at..end)) {
            Some(b) => Element::Scalar(b),
            None => Element::Overflow,
        };
    }
    let Some(loc) = data_loc_at(rec, at) else {
        return Element::Overflow;
    };
    let len = (loc >> 16) as usize;
    let off = (loc & 0xffff) as usize;
    if len == 0 {
        return Element::Str(None);
    }
    match rec.get(off..off + len) {
        Some(s) => Element::Str(Some(s)),
        None => Element::Overflow,
    }
}

/// The extent of a record of `layout` that rkprobes itself wrote, from its
/// own layout: the header and fixed fields, and the string data their
/// `__data_loc` words describe, at most `max`. `head` holds at least the
/// header and the fixed fields. For printing a record whose size the
/// tracing core does not say (`tp_printk` prints as the record is
/// committed), never for records read back from a ring buffer.
pub fn record_extent(layout: &Layout<'_>, head: &[u8], header_size: usize, max: usize) -> usize {
    let fixed_end = header_size.saturating_add(layout.size as usize);
    let mut extent = fixed_end.min(max);
    for a in layout.fields() {
        if !a.ty.base.is_string() {
            continue;
        }
        for j in 0..a.ty.count.max(1) {
            let at = header_size
                .saturating_add(a.offset as usize)
                .saturating_add(j as usize * 4);
            if at.saturating_add(4) > fixed_end {
                continue;
            }
            if let Some(loc) = data_loc_at(head, at) {
                let end = (loc & 0xffff) as usize + (loc >> 16) as usize;
                extent = extent.max(end.min(max));
            }
        }
    }
    extent
}

/// Writes ` NAME=VALUE` for every field of `layout` from the record `rec`
/// (the kernel's `trace_probe_print_args()`), reading only bytes of `rec`:
/// a record shorter than the layout (a stale record of an earlier
/// event with the same id, say) prints [`OVERFLOW_STRING`] for what it
/// does not hold.
pub fn write_record_args<W: ByteWrite + ?Sized, R: SymbolResolver + ?Sized>(
    w: &mut W,
    layout: &Layout<'_>,
    rec: &[u8],
    header_size: usize,
    resolver: &R,
) -> fmt::Result {
    for a in layout.fields() {
        let elems = (0..a.ty.count.max(1)).map(|j| record_element(rec, header_size, &a, j));
        write_arg_value(w, &a, elems, resolver)?;
    }
    Ok(())
}

/// Writes the line trace output shows for a record `rec` of an event
/// probe event `event` (`print_eprobe_event()`), newline included:
/// `EVENT: (SYSTEM.EVENT) NAME=VALUE...`. `attached` is the system and
/// name of the event the probe is attached to, as the tracing core finds
/// it by its type `attached_type`; when it finds none, the type's number
/// is shown instead. Reads only bytes of `rec`, as
/// [`write_record_args`].
pub fn write_eprobe_record<W: ByteWrite + ?Sized, R: SymbolResolver + ?Sized>(
    w: &mut W,
    event: &[u8],
    attached: Option<(&[u8], &[u8])>,
    attached_type: u32,
    layout: &Layout<'_>,
    rec: &[u8],
    resolver: &R,
) -> fmt::Result {
    use fmt::Write as _;
    w.write_bytes(event)?;
    w.write_bytes(b": (")?;
    match attached {
        Some((system, name)) => {
            w.write_bytes(system)?;
            w.write_bytes(b".")?;
            w.write_bytes(name)?;
        }
        None => write!(Fmt(w), "{attached_type}")?,
    }
    w.write_bytes(b")")?;
    write_record_args(w, layout, rec, layout.header_size(), resolver)?;
    w.write_bytes(b"\n")
}

/// Writes the event's `print fmt` line as `__set_print_fmt()` builds it
/// (without the `print fmt: ` prefix): an event probe's has no head
/// (`PROBE_PRINT_EVENT`).
pub fn write_print_fmt<W: ByteWrite + ?Sized>(w: &mut W, layout: &Layout<'_>) -> fmt::Result {
    use fmt::Write as _;
    let (fmt_head, fmt_args) = if layout.kind == ProbeKind::Eprobe {
        ("", "")
    } else if layout.is_return {
        ("(%lx <- %lx)", ", REC->__probe_func, REC->__probe_ret_ip")
    } else {
        ("(%lx)", ", REC->__probe_ip")
    };
    write!(Fmt(w), "\"{fmt_head}")?;
    for arg in layout.fields() {
        w.write_bytes(b" ")?;
        w.write_bytes(arg.name)?;
        w.write_bytes(b"=")?;
        let f = if arg.ty.symbolic {
            "%s"
        } else {
            arg.ty.base.print_fmt()
        };
        if arg.ty.count != 0 {
            write!(Fmt(w), "{{{f}")?;
            for _ in 1..arg.ty.count {
                write!(Fmt(w), ",{f}")?;
            }
            w.write_bytes(b"}")?;
        } else {
            w.write_bytes(f.as_bytes())?;
        }
    }
    write!(Fmt(w), "\"{fmt_args}")?;
    for arg in layout.fields() {
        let (pre, post) = if arg.ty.base.is_string() {
            (", __get_str(", ")")
        } else {
            (", REC->", "")
        };
        let count = arg.ty.count;
        if arg.ty.symbolic {
            // What perf and trace-cmd print the names with.
            w.write_bytes(b", __print_symbolic(REC->")?;
            w.write_bytes(arg.name)?;
            for (v, name) in arg.symbols() {
                write!(Fmt(w), ", {{ {v}, \"")?;
                w.write_bytes(name)?;
                w.write_bytes(b"\" }")?;
            }
            w.write_bytes(b")")?;
        } else if count == 0 {
            w.write_bytes(pre.as_bytes())?;
            w.write_bytes(arg.name)?;
            w.write_bytes(post.as_bytes())?;
        } else {
            for j in 0..count {
                w.write_bytes(pre.as_bytes())?;
                w.write_bytes(arg.name)?;
                write!(Fmt(w), "[{j}]{post}")?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Buf(std::vec::Vec<u8>);

    impl ByteWrite for Buf {
        fn write_bytes(&mut self, b: &[u8]) -> fmt::Result {
            self.0.extend_from_slice(b);
            Ok(())
        }
    }

    fn elem(ty: FetchType, e: Element<'_>) -> std::string::String {
        let mut b = Buf(std::vec::Vec::new());
        write_element(&mut b, ty, e, &NoSymbols).unwrap();
        std::string::String::from_utf8_lossy(&b.0).into_owned()
    }

    #[test]
    fn scalars_print_like_the_kernel() {
        let m1 = (-1i64).to_le_bytes();
        assert_eq!(elem(FetchType::U8, Element::Scalar(&m1)), "255");
        assert_eq!(elem(FetchType::S8, Element::Scalar(&m1)), "-1");
        assert_eq!(elem(FetchType::S16, Element::Scalar(&m1)), "-1");
        assert_eq!(elem(FetchType::X16, Element::Scalar(&m1)), "0xffff");
        assert_eq!(
            elem(FetchType::U64, Element::Scalar(&m1)),
            "18446744073709551615"
        );
        assert_eq!(elem(FetchType::X32, Element::Scalar(&[0, 0, 0, 0])), "0x0");
        assert_eq!(elem(FetchType::Char, Element::Scalar(b"A")), "'A'");
        assert_eq!(
            elem(FetchType::Symbol, Element::Scalar(&0x1234u64.to_le_bytes())),
            "0x1234"
        );
    }

    #[test]
    fn strings_print_quoted_or_fault() {
        assert_eq!(
            elem(FetchType::String, Element::Str(Some(b"bash\0junk"))),
            "\"bash\""
        );
        assert_eq!(elem(FetchType::String, Element::Str(None)), "(fault)");
        assert_eq!(elem(FetchType::UString, Element::Str(Some(b""))), "\"\"");
    }

    struct OneSym;

    impl SymbolResolver for OneSym {
        fn lookup(&self, addr: u64) -> Option<SymbolAddr<'_>> {
            (0x1000..0x1100).contains(&addr).then_some(SymbolAddr {
                name: "vfs_read",
                offset: addr - 0x1000,
                size: 0x100,
                module: if addr == 0x1000 { None } else { Some("ext4") },
            })
        }
    }

    #[test]
    fn symbols_print_like_sprint_symbol() {
        let mut b = Buf(std::vec::Vec::new());
        write_symbol(&mut b, 0x1000, &OneSym).unwrap();
        assert_eq!(b.0, b"vfs_read+0x0/0x100");
        let mut b = Buf(std::vec::Vec::new());
        write_symbol(&mut b, 0x1010, &OneSym).unwrap();
        assert_eq!(b.0, b"vfs_read+0x10/0x100 [ext4]");
    }
}
