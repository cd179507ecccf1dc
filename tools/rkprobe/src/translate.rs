// SPDX-License-Identifier: GPL-2.0

//! A variable's DWARF location and type at one address, as a fetcharg.
//!
//! The rules are perf's (`convert_variable_location()`,
//! `convert_variable_fields()`, `convert_variable_type()` in
//! `tools/perf/util/probe-finder.c`), with one deliberate difference: perf
//! reads only the first operation of a location expression, so that
//! `DW_OP_breg5 16; DW_OP_stack_value` (the value *is* `%di + 16`) becomes
//! `+16(%di)` (the memory there) and `DW_OP_reg5; DW_OP_piece 8; ...` (a
//! variable split over registers) becomes `%di` alone. Both record a wrong
//! value without a word; here they are refused with a message that names
//! the operation.

use gimli::{DwOp, Operation};

use crate::debuginfo::{Cfa, Debuginfo, DieRef, LocationAt, R};
use crate::fetcharg::{Deref, Features, TraceArg};
use crate::regs;
use crate::spec::{ArgSpec, Field};

/// perf's placeholder for an argument one of a probe's addresses lacks.
pub const MAGIC_NUM: u64 = 0xdead_e12d;

/// Why a variable cannot be fetched; the variants stand for the errno perf
/// uses, which decides what happens next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LocError {
    /// `-ENOENT`: no location at this address (optimized out here).
    NotHere,
    /// `-EINVAL`: the DIE has no location at all.
    Broken,
    /// `-ENOTSUP`: a location this tool cannot express as a fetcharg.
    Unsupported(String),
}

/// A frame base at the probe address, from `DW_AT_frame_base` (with
/// `DW_OP_call_frame_cfa` resolved through the CFI), as a register and an
/// offset to add.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameBase {
    /// No frame base at this address.
    None,
    /// Register + offset.
    Reg(u16, i64),
    /// Memory at (register + offset): the CFA of a function that realigns
    /// its stack.
    Deref(u16, i64),
    /// A frame base expression that is not a register or register+offset.
    Other(String),
}

/// Where a variable is, before its type is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    /// `%reg`, `@symbol` or `\imm`.
    pub value: String,
    /// Dereferences, innermost first (for `@symbol`, the symbol's offset).
    pub derefs: Vec<Deref>,
}

fn op_name(op: &Operation<R<'_>>) -> String {
    let name = |o: DwOp| o.static_string().unwrap_or("DW_OP_?").to_string();
    match op {
        Operation::StackValue => name(gimli::DW_OP_stack_value),
        Operation::Piece {
            bit_offset: None, ..
        } => name(gimli::DW_OP_piece),
        Operation::Piece { .. } => name(gimli::DW_OP_bit_piece),
        Operation::Deref { .. } => name(gimli::DW_OP_deref),
        Operation::EntryValue { .. } => name(gimli::DW_OP_entry_value),
        Operation::ImplicitValue { .. } => name(gimli::DW_OP_implicit_value),
        Operation::ImplicitPointer { .. } => name(gimli::DW_OP_implicit_pointer),
        Operation::UnsignedConstant { .. } | Operation::SignedConstant { .. } => {
            "a constant".into()
        }
        Operation::CallFrameCFA => name(gimli::DW_OP_call_frame_cfa),
        other => format!("{other:?}")
            .split([' ', '{', '('])
            .next()
            .unwrap_or("?")
            .to_string(),
    }
}

/// A value being computed by a location expression, in fetcharg terms.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Val {
    /// A register's content.
    Reg(u16),
    /// The address of the variable's symbol.
    SymAddr,
    /// Memory at (value + offset).
    Mem(Box<Val>, i64),
}

fn unsupported<T>(op: &Operation<R<'_>>, why: &str) -> Result<T, LocError> {
    Err(LocError::Unsupported(format!("{} ({why})", op_name(op))))
}

/// Translates one location expression into a fetcharg base and its
/// dereferences.
///
/// The expression is evaluated over values a fetcharg can express: a
/// register (`DW_OP_reg*`, `DW_OP_regx`), a register plus an offset
/// (`DW_OP_breg*`, `DW_OP_bregx`, `DW_OP_fbreg` over the frame base), the
/// variable's symbol (`DW_OP_addr`), offsets added (`DW_OP_plus_uconst`)
/// and memory read (`DW_OP_deref`). Without `DW_OP_stack_value` the result
/// is the address of the variable, whose value is read there; with it, the
/// result is the value, which must then be a register or a memory read, not
/// a sum. Pieces, arithmetic, entry values and implicit values are refused.
///
/// With `perf_quirks`, only the first operation counts, as in perf (which
/// turns `DW_OP_breg5 16; DW_OP_stack_value` into `+16(%di)`).
pub fn translate_expr(
    expr: &[u8],
    encoding: gimli::Encoding,
    frame_base: &FrameBase,
    name: &str,
    perf_quirks: bool,
) -> Result<Located, LocError> {
    let mut input = R::new(expr, gimli::RunTimeEndian::Little);
    let mut ops = Vec::new();
    while !gimli::Reader::is_empty(&input) {
        match Operation::parse(&mut input, encoding) {
            Ok(op) => ops.push(op),
            // libdw cannot read it either, and perf takes that as no
            // location here.
            Err(_) if perf_quirks => return Err(LocError::NotHere),
            Err(e) => return Err(LocError::Unsupported(format!("malformed expression: {e}"))),
        }
    }
    if perf_quirks {
        ops.truncate(1);
    }
    let Some((first, rest)) = ops.split_first() else {
        return Err(LocError::NotHere);
    };
    // (value, offset added to it)
    let (mut val, mut add) = match *first {
        Operation::Register { register } => {
            if let Some(op) = rest.first() {
                return unsupported(op, "the variable is split or computed");
            }
            return located(Val::Reg(register.0), name);
        }
        Operation::Address { .. } => (Val::SymAddr, 0i64),
        Operation::FrameOffset { offset } => match frame_base {
            FrameBase::Reg(r, o) => (Val::Reg(*r), offset.wrapping_add(*o)),
            FrameBase::Deref(r, o) => (Val::Mem(Box::new(Val::Reg(*r)), *o), offset),
            FrameBase::None => {
                return Err(LocError::Unsupported(
                    "DW_OP_fbreg without a frame base".into(),
                ))
            }
            FrameBase::Other(what) => {
                return Err(LocError::Unsupported(format!("frame base {what}")))
            }
        },
        Operation::RegisterOffset {
            register,
            offset,
            base_type,
        } if base_type.0 == 0 => (Val::Reg(register.0), offset),
        ref op => return Err(LocError::Unsupported(op_name(op))),
    };
    let mut ops = rest.iter().peekable();
    while let Some(op) = ops.next() {
        match *op {
            Operation::Deref {
                base_type,
                size: 8,
                space: false,
            } if base_type.0 == 0 => {
                val = Val::Mem(Box::new(val), add);
                add = 0;
            }
            Operation::PlusConstant { value } => {
                add = add.wrapping_add(value as i64);
            }
            Operation::StackValue if ops.peek().is_none() => {
                if add != 0 || val == Val::SymAddr {
                    return unsupported(op, "the value is computed, not stored");
                }
                return located(val, name);
            }
            Operation::Piece { .. } => return unsupported(op, "the variable is split in pieces"),
            ref op => return unsupported(op, "an operation a fetcharg cannot do"),
        }
    }
    located(Val::Mem(Box::new(val), add), name)
}

/// The fetcharg of a value.
fn located(val: Val, name: &str) -> Result<Located, LocError> {
    let mut derefs = Vec::new();
    let mut cur = val;
    loop {
        match cur {
            Val::Mem(inner, off) => {
                derefs.push(Deref::kernel(off));
                cur = *inner;
            }
            Val::Reg(reg) => {
                let Some(r) = regs::name(reg) else {
                    return Err(LocError::Unsupported(format!(
                        "Mapping for the register number {reg} missing on this architecture."
                    )));
                };
                derefs.reverse();
                return Ok(Located {
                    value: r.to_string(),
                    derefs,
                });
            }
            Val::SymAddr => {
                // `@sym+off` reads memory: the innermost read is the symbol's.
                if derefs.is_empty() {
                    return Err(LocError::Unsupported(
                        "the address of a symbol is not a fetcharg".into(),
                    ));
                }
                derefs.reverse();
                return Ok(Located {
                    value: format!("@{name}"),
                    derefs,
                });
            }
        }
    }
}

/// The frame base of `sp_die` at `addr` (perf's `call_probe_finder()`):
/// `Err` when it is `DW_OP_call_frame_cfa`, the file has CFI and the CFI does
/// not cover `addr` (perf then fails the probe point).
pub fn frame_base(
    di: &Debuginfo<'_>,
    sp_die: DieRef,
    addr: u64,
    perf_quirks: bool,
) -> Result<FrameBase, String> {
    let LocationAt::Expr(e) = di.location_at(sp_die, gimli::DW_AT_frame_base, addr) else {
        return Ok(FrameBase::None);
    };
    let mut input = e.0;
    let enc = di.encoding(sp_die);
    let Ok(first) = Operation::parse(&mut input, enc) else {
        return Ok(FrameBase::None);
    };
    let single = gimli::Reader::is_empty(&input);
    Ok(match first {
        Operation::CallFrameCFA if single && di.has_cfi() => match di.cfa_at(addr) {
            Some(Cfa::RegOffset(r, o)) => FrameBase::Reg(r, o),
            Some(Cfa::Expr(e)) => cfa_expression(e.0.slice(), enc, perf_quirks),
            None => return Err(format!("Failed to get call frame on {addr:#x}")),
        },
        Operation::RegisterOffset {
            register,
            offset,
            base_type,
        } if base_type.0 == 0 => FrameBase::Reg(register.0, offset),
        Operation::Register { register } => FrameBase::Reg(register.0, 0),
        ref op => FrameBase::Other(op_name(op)),
    })
}

/// A CFA given as an expression: `DW_OP_breg* N` (register + N) and
/// `DW_OP_breg* N; DW_OP_deref` (memory there) are frame bases; perf reads
/// the first operation only.
fn cfa_expression(expr: &[u8], enc: gimli::Encoding, perf_quirks: bool) -> FrameBase {
    let mut input = R::new(expr, gimli::RunTimeEndian::Little);
    let mut ops = Vec::new();
    while !gimli::Reader::is_empty(&input) {
        match Operation::parse(&mut input, enc) {
            Ok(op) => ops.push(op),
            Err(_) => return FrameBase::Other("a malformed CFA expression".into()),
        }
    }
    if perf_quirks {
        ops.truncate(1);
    }
    match ops.as_slice() {
        [Operation::RegisterOffset {
            register,
            offset,
            base_type,
        }] if base_type.0 == 0 => FrameBase::Reg(register.0, *offset),
        [Operation::RegisterOffset {
            register,
            offset,
            base_type,
        }, Operation::Deref {
            base_type: b2,
            size: 8,
            space: false,
        }] if base_type.0 == 0 && b2.0 == 0 => FrameBase::Deref(register.0, *offset),
        _ => FrameBase::Other("a CFA expression".into()),
    }
}

/// Where the probe is: the address, the real function around it and its
/// frame base.
#[derive(Clone, Debug)]
pub struct Site {
    /// The probe address.
    pub addr: u64,
    /// The out-of-line function (`DW_TAG_subprogram`) holding it.
    pub sp_die: DieRef,
    /// The frame base there.
    pub frame_base: FrameBase,
}

/// perf's `convert_variable_location()` for variable DIE `var` at `site`.
pub fn locate(
    di: &Debuginfo<'_>,
    var: DieRef,
    site: &Site,
    features: Features,
) -> Result<Located, LocError> {
    let name = di.name(var).unwrap_or_default();
    if di.has_attr(var, gimli::DW_AT_external) {
        return Ok(Located {
            value: format!("@{name}"),
            derefs: vec![Deref::kernel(0)],
        });
    }
    if features.immediates && di.has_attr(var, gimli::DW_AT_const_value) {
        let v = di.sdata(var, gimli::DW_AT_const_value).unwrap_or(0);
        return Ok(Located {
            value: format!("\\{v}"),
            derefs: Vec::new(),
        });
    }
    let expr = match di.location_at(var, gimli::DW_AT_location, site.addr) {
        LocationAt::Missing => return Err(LocError::Broken),
        LocationAt::Expr(e) => e,
        LocationAt::NotHere => {
            // At a function's entry a parameter's location may start a few
            // bytes later (after the fentry call): take the earliest one.
            let entry = di.entrypc(site.sp_die).ok_or(LocError::NotHere)?;
            if entry != site.addr || di.tag(var) != gimli::DW_TAG_formal_parameter {
                return Err(LocError::NotHere);
            }
            let high = di.highpc(site.sp_die).ok_or(LocError::NotHere)?;
            let from = site.addr.saturating_add(1);
            di.location_entries(var, gimli::DW_AT_location)
                .into_iter()
                .filter_map(|(b, e, x)| {
                    let start = b.max(from);
                    (start < e && start <= high).then_some((start, x))
                })
                .min_by_key(|(start, _)| *start)
                .map(|(_, x)| x)
                .ok_or(LocError::NotHere)?
        }
    };
    translate_expr(
        expr.0.slice(),
        di.encoding(var),
        &site.frame_base,
        &name,
        features.perf_quirks,
    )
}

/// An argument that cannot be translated, with perf's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgError(pub String);

impl std::fmt::Display for ArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn fail<T>(msg: impl Into<String>) -> Result<T, ArgError> {
    Err(ArgError(msg.into()))
}

/// The message perf prints for a variable with no location here.
pub fn not_found_message(var: &str) -> String {
    format!(
        "Failed to find the location of the '{var}' variable at this address.\n \
         Perhaps it has been optimized out.\n \
         Use -V with the --range option to show '{var}' location range."
    )
}

/// perf's `__die_get_real_type()` then typedefs: the type of `d` without
/// `const`, `volatile`, `restrict`, `shared` and typedefs.
pub fn real_type(di: &Debuginfo<'_>, d: DieRef) -> Option<DieRef> {
    let mut cur = d;
    for _ in 0..64 {
        let t = di.attr_die(cur, gimli::DW_AT_type)?;
        match di.tag(t) {
            gimli::DW_TAG_const_type
            | gimli::DW_TAG_volatile_type
            | gimli::DW_TAG_restrict_type
            | gimli::DW_TAG_shared_type
            | gimli::DW_TAG_typedef => cur = t,
            _ => return Some(t),
        }
    }
    None
}

/// perf's `die_find_member()`: the member called `name`, looking through
/// unnamed members (anonymous structs and unions); returns the unnamed
/// member itself when the name is inside one.
fn find_member(di: &Debuginfo<'_>, st: DieRef, name: &str) -> Option<DieRef> {
    for m in di.children(st) {
        if di.tag(m) != gimli::DW_TAG_member {
            continue;
        }
        match di.name(m) {
            Some(n) if n == name => return Some(m),
            Some(_) => {}
            None => {
                if let Some(t) = di.attr_die(m, gimli::DW_AT_type) {
                    if find_member(di, t, name).is_some() {
                        return Some(m);
                    }
                }
            }
        }
    }
    None
}

/// A member's byte offset; for a DWARF 5 bitfield (`DW_AT_data_bit_offset`),
/// the offset of its storage unit, with the bit position inside it.
fn member_offset(di: &Debuginfo<'_>, m: DieRef, perf_quirks: bool) -> Option<(u64, Option<u64>)> {
    match di.attr(m, gimli::DW_AT_data_member_location) {
        Some(gimli::AttributeValue::Exprloc(e)) => {
            let mut input = e.0;
            match Operation::parse(&mut input, di.encoding(m)).ok()? {
                Operation::PlusConstant { value } if gimli::Reader::is_empty(&input) => {
                    Some((value, None))
                }
                _ => None,
            }
        }
        Some(v) => Some((crate::debuginfo::udata_of(&v)?, None)),
        None if perf_quirks => None,
        None => {
            let bits = di.udata(m, gimli::DW_AT_data_bit_offset)?;
            let unit_bytes = byte_size(di, m)?.max(1);
            let unit_bits = unit_bytes.checked_mul(8)?;
            Some(((bits / unit_bits) * unit_bytes, Some(bits % unit_bits)))
        }
    }
}

/// `dwarf_bytesize()` of a member's type, or the member's own byte size.
fn byte_size(di: &Debuginfo<'_>, d: DieRef) -> Option<u64> {
    if let Some(s) = di.udata(d, gimli::DW_AT_byte_size) {
        return Some(s);
    }
    let t = real_type(di, d)?;
    di.udata(t, gimli::DW_AT_byte_size)
}

/// What walking the fields carries along.
struct FieldState {
    /// The fields are in user memory.
    user: bool,
    /// Bit position of a DWARF 5 bitfield member, when the last field is one.
    bit: Option<u64>,
    /// Reproduce perf's mistakes.
    perf_quirks: bool,
}

/// Walks `fields` from variable (or member) `cur`, extending `arg`'s
/// dereferences (perf's `convert_variable_fields()`). Returns the DIE whose
/// type the value finally has.
fn convert_fields(
    di: &Debuginfo<'_>,
    cur: DieRef,
    varname: &str,
    fields: &[Field],
    arg: &mut TraceArg,
    st: &mut FieldState,
) -> Result<DieRef, ArgError> {
    let user = st.user;
    let quirks = st.perf_quirks;
    let Some(field) = fields.first() else {
        return Ok(cur);
    };
    let Some(ty) = real_type(di, cur) else {
        return fail(format!("Failed to get the type of {varname}."));
    };
    let tag = di.tag(ty);
    let is_ptr = tag == gimli::DW_TAG_pointer_type;
    let is_aggr = tag == gimli::DW_TAG_structure_type || tag == gimli::DW_TAG_union_type;
    match field {
        Field::Index(index) if tag == gimli::DW_TAG_array_type || is_ptr => {
            let Some(elem) = real_type(di, ty) else {
                return fail(format!("Failed to get the type of {varname}."));
            };
            if is_ptr {
                arg.derefs.push(Deref { offset: 0, user });
            }
            let size = di.udata(elem, gimli::DW_AT_byte_size).unwrap_or(0);
            let Some(last) = arg.derefs.last_mut() else {
                return fail("Sorry, we don't support this variable location yet.");
            };
            let add = i64::try_from(size)
                .ok()
                .and_then(|s| s.checked_mul(*index))
                .ok_or_else(|| ArgError("Array index is too big.".into()))?;
            last.offset = last.offset.wrapping_add(add);
            last.user = user;
            // The array (or pointer) type's own type is the element's.
            let rest = fields.get(1..).unwrap_or(&[]);
            convert_fields(di, ty, &format!("{varname}[{index}]"), rest, arg, st)
        }
        Field::Index(_) => {
            if !is_aggr {
                return fail(format!("{varname} is not a data structure nor a union."));
            }
            fail(format!(
                "Semantic error: {varname} is not a pointer nor array."
            ))
        }
        Field::Member { name, arrow } => {
            let aggr = if is_ptr {
                if !arrow {
                    return fail(format!("Semantic error: {name} must be referred by '->'"));
                }
                let Some(pointee) = real_type(di, ty) else {
                    return fail(format!("Failed to get the type of {varname}."));
                };
                let t = di.tag(pointee);
                if t != gimli::DW_TAG_structure_type && t != gimli::DW_TAG_union_type {
                    return fail(format!("{varname} is not a data structure nor a union."));
                }
                arg.derefs.push(Deref { offset: 0, user });
                pointee
            } else {
                if !is_aggr {
                    return fail(format!("{varname} is not a data structure nor a union."));
                }
                if *arrow && di.name(cur).is_some() {
                    return fail(format!("Semantic error: {name} must be referred by '.'"));
                }
                if arg.derefs.is_empty() {
                    return fail("Structure on a register is not supported yet.");
                }
                ty
            };
            let Some(m) = find_member(di, aggr, name) else {
                let tname = di.name(aggr).unwrap_or_else(|| "(unnamed)".into());
                return fail(format!("{varname}(type:{tname}) has no member {name}."));
            };
            let off = if di.tag(aggr) == gimli::DW_TAG_union_type {
                0
            } else {
                match member_offset(di, m, quirks) {
                    Some((o, b)) => {
                        if di.name(m).is_some() {
                            st.bit = b;
                        }
                        o
                    }
                    None => return fail(format!("Failed to get the offset of {name}.")),
                }
            };
            if let Some(last) = arg.derefs.last_mut() {
                last.offset = last.offset.wrapping_add(off as i64);
                last.user = user;
            }
            if di.name(m).is_none() {
                // Inside an anonymous struct/union: look again from it.
                return convert_fields(di, m, varname, fields, arg, st);
            }
            convert_fields(di, m, name, fields.get(1..).unwrap_or(&[]), arg, st)
        }
    }
}

/// perf's `convert_variable_type()`: the type suffix for the value of DIE
/// `d` (a variable or member), with an optional cast.
fn convert_type(
    di: &Debuginfo<'_>,
    d: DieRef,
    arg: &mut TraceArg,
    cast: Option<&str>,
    user: bool,
    bit: Option<u64>,
    features: Features,
) -> Result<(), ArgError> {
    let name = di.name(d).unwrap_or_default();
    if let Some(c) = cast {
        if !matches!(c, "string" | "ustring" | "x" | "s" | "u") {
            arg.ty = Some(c.to_string());
            return Ok(());
        }
    }
    if let Some(bits) = di.udata(d, gimli::DW_AT_bit_size).filter(|&b| b > 0) {
        let total = byte_size(di, d).unwrap_or(0);
        let offset = match bit {
            Some(b) => b,
            None => match di.udata(d, gimli::DW_AT_bit_offset) {
                Some(b) => b,
                None => return fail(format!("Failed to get the offset of {name}.")),
            },
        };
        arg.ty = Some(format!("b{bits}@{offset}/{}", total * 8));
        return Ok(());
    }
    let Some(ty) = real_type(di, d) else {
        return fail(format!("Failed to get a type information of {name}."));
    };
    if let Some(c @ ("string" | "ustring")) = cast {
        let tag = di.tag(ty);
        if tag != gimli::DW_TAG_pointer_type && tag != gimli::DW_TAG_array_type {
            let tname = di.name(ty).unwrap_or_default();
            return fail(format!(
                "Failed to cast into string: {name}({tname}) is not a pointer nor array."
            ));
        }
        let Some(elem) = real_type(di, ty) else {
            return fail("Failed to get a type information.");
        };
        if tag == gimli::DW_TAG_pointer_type {
            arg.derefs.push(Deref { offset: 0, user });
        }
        if !matches!(di.name(elem).as_deref(), Some("char" | "unsigned char")) {
            return fail(format!(
                "Failed to cast into string: {name} is not (unsigned) char *."
            ));
        }
        arg.ty = Some(c.to_string());
        return Ok(());
    }
    let signed = matches!(
        di.udata(ty, gimli::DW_AT_encoding)
            .map(|e| gimli::DwAte(e as u8)),
        Some(gimli::DW_ATE_signed | gimli::DW_ATE_signed_char | gimli::DW_ATE_signed_fixed)
    );
    let prefix = match cast {
        Some("u") => 'u',
        Some("s") => 's',
        Some("x") if features.hex_types => 'x',
        _ if signed => 's',
        _ if features.hex_types => 'x',
        _ => 'u',
    };
    let Some(size) = di.udata(ty, gimli::DW_AT_byte_size).filter(|&s| s > 0) else {
        // No size: the default type.
        return Ok(());
    };
    let bits = size.saturating_mul(8).min(64);
    arg.ty = Some(format!("{prefix}{bits}"));
    Ok(())
}

/// The outcome of translating one argument at one address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Translated {
    /// The fetcharg.
    Arg(TraceArg),
    /// Not available at this address, to be filled from another address of
    /// the same probe (perf's `skip_empty_arg`, when immediates exist).
    Skipped(TraceArg),
}

/// The argument's name as perf gives it: the user's, or the argument
/// written back with its type's `:` turned into `_`.
pub fn arg_name(a: &ArgSpec) -> String {
    match &a.name {
        Some(n) => n.clone(),
        None => a.synthesize().replacen(':', "_", 1),
    }
}

/// perf's `die_find_variable_at()`: the first parameter or variable called
/// `name` with a location, a constant value or external linkage, searching
/// depth first into the scopes that hold `addr`.
pub fn find_variable_at(
    di: &Debuginfo<'_>,
    scope: DieRef,
    name: &str,
    addr: u64,
) -> Option<DieRef> {
    for c in di.children(scope) {
        let tag = di.tag(c);
        if (tag == gimli::DW_TAG_formal_parameter || tag == gimli::DW_TAG_variable)
            && di.name(c).as_deref() == Some(name)
            && (di.has_attr(c, gimli::DW_AT_external)
                || di.has_attr(c, gimli::DW_AT_location)
                || di.has_attr(c, gimli::DW_AT_const_value))
        {
            return Some(c);
        }
        if di.haspc(c, addr) {
            if let Some(v) = find_variable_at(di, c, name, addr) {
                return Some(v);
            }
        }
    }
    None
}

/// Translates the C-variable argument `a` of the scope `sc_die` (perf's
/// `find_variable()` and `convert_variable()`); `cu` is searched for
/// globals.
pub fn translate_var(
    di: &Debuginfo<'_>,
    a: &ArgSpec,
    sc_die: DieRef,
    cu: DieRef,
    site: &Site,
    features: Features,
) -> Result<Translated, ArgError> {
    let mut arg = TraceArg {
        name: Some(arg_name(a)),
        ..TraceArg::default()
    };
    let var = find_variable_at(di, sc_die, &a.var, site.addr)
        .or_else(|| find_variable_at(di, cu, &a.var, 0));
    let Some(var) = var else {
        if features.immediates {
            return Ok(Translated::Skipped(arg));
        }
        return fail(format!("Failed to find '{}' in this function.", a.var));
    };
    translate_located(di, a, var, site, features, arg.name.take())
}

/// Translates argument `a` for the variable DIE `var` (also used by
/// `$vars`/`$params`, which know the DIE already).
pub fn translate_located(
    di: &Debuginfo<'_>,
    a: &ArgSpec,
    var: DieRef,
    site: &Site,
    features: Features,
    name: Option<String>,
) -> Result<Translated, ArgError> {
    let mut arg = TraceArg {
        name,
        ..TraceArg::default()
    };
    match locate(di, var, site, features) {
        Ok(l) => {
            arg.value = l.value;
            arg.derefs = l.derefs;
        }
        Err(LocError::NotHere) if features.immediates => return Ok(Translated::Skipped(arg)),
        Err(LocError::NotHere | LocError::Broken) => return fail(not_found_message(&a.var)),
        Err(LocError::Unsupported(why)) => {
            return fail(format!(
                "Sorry, we don't support this variable location yet ({why}): '{}'.",
                a.var
            ))
        }
    }
    let mut st = FieldState {
        user: a.user_access,
        bit: None,
        perf_quirks: features.perf_quirks,
    };
    let last = convert_fields(di, var, &a.var, &a.fields, &mut arg, &mut st)?;
    convert_type(
        di,
        last,
        &mut arg,
        a.ty.as_deref(),
        a.user_access,
        st.bit,
        features,
    )?;
    Ok(Translated::Arg(arg))
}

/// The placeholder perf writes for an argument missing at some addresses.
pub fn placeholder(name: Option<String>, ty: Option<String>) -> TraceArg {
    TraceArg {
        name,
        value: format!("\\{MAGIC_NUM:x}"),
        derefs: Vec::new(),
        ty,
    }
}
