// SPDX-License-Identifier: GPL-2.0

//! A reader of BTF, the kernel's compact type format
//! (`Documentation/bpf/btf.rst`, `include/uapi/linux/btf.h`): the types of
//! `/sys/kernel/btf/vmlinux`, or of a module's split BTF on top of it.
//!
//! Typed probe arguments need four questions answered from it: a
//! function's prototype (its parameters' names and types), what a type is
//! once typedefs and qualifiers are looked through, its size, and where a
//! named member is in a structure (through anonymous structures and unions
//! too). The reader answers them over the raw bytes, without copying them:
//! the only memory it needs is an index of where each type's record
//! starts, built once into storage the caller owns ([`Store`]), so that
//! the module (a `KVec`) and the host tests (a `Vec`) share the code.
//!
//! Malformed input is an error, never a panic or a read out of bounds:
//! every access is checked, as for any data that comes from outside.

use crate::pure::store::{NoMemory, Store};

/// `BTF_MAGIC`, in the byte order of the machine that wrote it.
const MAGIC: u16 = 0xeb9f;
/// The fixed part of the header (`struct btf_header`).
const HEADER_LEN: usize = 24;
/// `struct btf_type`: name offset, info, size or type.
const TYPE_LEN: usize = 12;

/// Why BTF cannot be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BtfError {
    /// Not BTF, or of the other byte order.
    BadMagic,
    /// A version other than 1.
    BadVersion,
    /// The header or a section lies outside the data, or a record runs
    /// past its section.
    Truncated,
    /// A kind this reader does not know (a newer kernel's).
    UnknownKind(u32),
    /// More types than type ids.
    TooMany,
    /// No memory for the index.
    NoMemory,
}

impl From<NoMemory> for BtfError {
    fn from(_: NoMemory) -> Self {
        BtfError::NoMemory
    }
}

/// A type's kind (`BTF_KIND_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// `void` (type id 0 only).
    Void = 0,
    /// An integer.
    Int = 1,
    /// A pointer.
    Ptr = 2,
    /// An array.
    Array = 3,
    /// A structure.
    Struct = 4,
    /// A union.
    Union = 5,
    /// An enumeration of 32-bit values.
    Enum = 6,
    /// A forward declaration.
    Fwd = 7,
    /// A typedef.
    Typedef = 8,
    /// `volatile`.
    Volatile = 9,
    /// `const`.
    Const = 10,
    /// `restrict`.
    Restrict = 11,
    /// A function (its name and linkage; the prototype is its type).
    Func = 12,
    /// A function prototype.
    FuncProto = 13,
    /// A variable.
    Var = 14,
    /// A data section's variables.
    Datasec = 15,
    /// A floating-point type.
    Float = 16,
    /// A declaration tag.
    DeclTag = 17,
    /// A type tag.
    TypeTag = 18,
    /// An enumeration of 64-bit values.
    Enum64 = 19,
}

impl Kind {
    fn from_raw(k: u32) -> Option<Kind> {
        Some(match k {
            1 => Kind::Int,
            2 => Kind::Ptr,
            3 => Kind::Array,
            4 => Kind::Struct,
            5 => Kind::Union,
            6 => Kind::Enum,
            7 => Kind::Fwd,
            8 => Kind::Typedef,
            9 => Kind::Volatile,
            10 => Kind::Const,
            11 => Kind::Restrict,
            12 => Kind::Func,
            13 => Kind::FuncProto,
            14 => Kind::Var,
            15 => Kind::Datasec,
            16 => Kind::Float,
            17 => Kind::DeclTag,
            18 => Kind::TypeTag,
            19 => Kind::Enum64,
            _ => return None,
        })
    }

    /// The kind's name as `bpftool btf dump` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Void => "VOID",
            Kind::Int => "INT",
            Kind::Ptr => "PTR",
            Kind::Array => "ARRAY",
            Kind::Struct => "STRUCT",
            Kind::Union => "UNION",
            Kind::Enum => "ENUM",
            Kind::Fwd => "FWD",
            Kind::Typedef => "TYPEDEF",
            Kind::Volatile => "VOLATILE",
            Kind::Const => "CONST",
            Kind::Restrict => "RESTRICT",
            Kind::Func => "FUNC",
            Kind::FuncProto => "FUNC_PROTO",
            Kind::Var => "VAR",
            Kind::Datasec => "DATASEC",
            Kind::Float => "FLOAT",
            Kind::DeclTag => "DECL_TAG",
            Kind::TypeTag => "TYPE_TAG",
            Kind::Enum64 => "ENUM64",
        }
    }

    /// The bytes that follow the common record for `vlen` entries.
    fn extra_len(self, vlen: usize) -> Option<usize> {
        Some(match self {
            Kind::Int | Kind::Var | Kind::DeclTag => 4,
            Kind::Array => 12,
            Kind::Struct | Kind::Union | Kind::Datasec | Kind::Enum64 => vlen.checked_mul(12)?,
            Kind::Enum | Kind::FuncProto => vlen.checked_mul(8)?,
            _ => 0,
        })
    }

    /// Whether the kind only qualifies or names another type.
    fn is_modifier(self) -> bool {
        matches!(
            self,
            Kind::Typedef | Kind::Volatile | Kind::Const | Kind::Restrict | Kind::TypeTag
        )
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let w = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_ne_bytes([w[0], w[1], w[2], w[3]]))
}

/// Where the type and string sections of a BTF blob are.
#[derive(Clone, Copy, Debug)]
pub struct Sections<'a> {
    types: &'a [u8],
    strs: &'a [u8],
}

impl<'a> Sections<'a> {
    /// Reads the header of `data`.
    pub fn new(data: &'a [u8]) -> Result<Sections<'a>, BtfError> {
        let magic = data.get(..2).ok_or(BtfError::Truncated)?;
        if u16::from_ne_bytes([magic[0], magic[1]]) != MAGIC {
            return Err(BtfError::BadMagic);
        }
        if data.get(2) != Some(&1) {
            return Err(BtfError::BadVersion);
        }
        let field = |i: usize| u32_at(data, 4 + 4 * i).ok_or(BtfError::Truncated);
        let hdr_len = field(0)? as usize;
        if hdr_len < HEADER_LEN {
            return Err(BtfError::Truncated);
        }
        let body = data.get(hdr_len..).ok_or(BtfError::Truncated)?;
        let section = |off: u32, len: u32| {
            let (off, len) = (off as usize, len as usize);
            off.checked_add(len)
                .and_then(|end| body.get(off..end))
                .ok_or(BtfError::Truncated)
        };
        Ok(Sections {
            types: section(field(1)?, field(2)?)?,
            strs: section(field(3)?, field(4)?)?,
        })
    }

    /// Stores where each type's record starts in the type section, in id
    /// order (the first is type id 1 of a base BTF, or the first id after
    /// the base's of a split one). Checks every record's kind and length.
    pub fn index<S: Store<u32> + ?Sized>(&self, store: &mut S) -> Result<(), BtfError> {
        let mut at = 0usize;
        while at < self.types.len() {
            let info = u32_at(self.types, at + 4).ok_or(BtfError::Truncated)?;
            let raw = (info >> 24) & 0x1f;
            let kind = Kind::from_raw(raw).ok_or(BtfError::UnknownKind(raw))?;
            let vlen = (info & 0xffff) as usize;
            let len = kind
                .extra_len(vlen)
                .and_then(|e| e.checked_add(TYPE_LEN))
                .ok_or(BtfError::Truncated)?;
            let end = at.checked_add(len).ok_or(BtfError::Truncated)?;
            if end > self.types.len() {
                return Err(BtfError::Truncated);
            }
            store.try_push(u32::try_from(at).map_err(|_| BtfError::TooMany)?)?;
            at = end;
        }
        Ok(())
    }
}

/// BTF, with the index of its types ([`Sections::index`]).
#[derive(Clone, Copy)]
pub struct Btf<'a> {
    sections: Sections<'a>,
    offsets: &'a [u32],
    base: Option<&'a Btf<'a>>,
}

impl<'a> Btf<'a> {
    /// The BTF of `sections`, indexed by `offsets`; split BTF (a module's)
    /// on top of `base`, whose type ids and strings come first.
    pub fn new(sections: Sections<'a>, offsets: &'a [u32], base: Option<&'a Btf<'a>>) -> Self {
        Btf {
            sections,
            offsets,
            base,
        }
    }

    /// Whether this is split BTF (a module's, on vmlinux's).
    pub fn is_split(&self) -> bool {
        self.base.is_some()
    }

    /// The base BTF.
    fn base(&self) -> Option<&'a Btf<'a>> {
        self.base
    }

    /// The first type id of this BTF's own types.
    fn first_id(&self) -> u32 {
        match self.base() {
            Some(b) => b.end_id(),
            None => 1,
        }
    }

    /// One past the last type id.
    pub fn end_id(&self) -> u32 {
        self.first_id()
            .saturating_add(u32::try_from(self.offsets.len()).unwrap_or(u32::MAX))
    }

    /// The length of the strings before this BTF's own.
    fn base_strs(&self) -> usize {
        self.base
            .map_or(0, |b| b.base_strs() + b.sections.strs.len())
    }

    /// The NUL-terminated string at `off` of the string sections, without
    /// its NUL; empty for an offset outside them.
    pub fn str_at(&self, off: u32) -> &'a [u8] {
        let off = off as usize;
        let base = self.base_strs();
        if off < base {
            return self.base().map_or(&[], |b| b.str_at(off as u32));
        }
        let s = self.sections.strs.get(off - base..).unwrap_or(&[]);
        let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
        &s[..end]
    }

    /// The type `id` (0 is `void`).
    pub fn get(&self, id: u32) -> Option<Type<'a>> {
        if id == 0 {
            return Some(Type {
                id: 0,
                kind: Kind::Void,
                name_off: 0,
                info: 0,
                size_type: 0,
                extra: &[],
            });
        }
        let first = self.first_id();
        if id < first {
            return self.base()?.get(id);
        }
        let at = *self.offsets.get((id - first) as usize)? as usize;
        let t = self.sections.types;
        let info = u32_at(t, at + 4)?;
        let kind = Kind::from_raw((info >> 24) & 0x1f)?;
        let vlen = (info & 0xffff) as usize;
        let extra_at = at + TYPE_LEN;
        let extra = t.get(extra_at..extra_at + kind.extra_len(vlen)?)?;
        Some(Type {
            id,
            kind,
            name_off: u32_at(t, at)?,
            info,
            size_type: u32_at(t, at + 8)?,
            extra,
        })
    }

    /// Every type, in id order, this BTF's own (not the base's).
    pub fn types(&self) -> impl Iterator<Item = Type<'a>> + '_ {
        (self.first_id()..self.end_id()).filter_map(move |id| self.get(id))
    }

    /// The name of `t`.
    pub fn name(&self, t: &Type<'a>) -> &'a [u8] {
        self.str_at(t.name_off)
    }

    /// The first type of `kind` named `name`, here or in the base.
    pub fn find(&self, name: &[u8], kind: Kind) -> Option<Type<'a>> {
        if let Some(t) = self.base().and_then(|b| b.find(name, kind)) {
            return Some(t);
        }
        self.types()
            .find(|t| t.kind == kind && self.name(t) == name)
    }

    /// `id` with typedefs and qualifiers looked through (a bounded walk: a
    /// loop of typedefs in malformed BTF ends in `None`).
    pub fn resolve(&self, id: u32) -> Option<Type<'a>> {
        let mut t = self.get(id)?;
        for _ in 0..32 {
            if !t.kind.is_modifier() {
                return Some(t);
            }
            t = self.get(t.size_type)?;
        }
        None
    }

    /// The size in bytes of a value of type `id`, as `btf_type_size()`
    /// resolves it; `None` for `void`, functions and forward declarations.
    pub fn size_of(&self, id: u32) -> Option<u64> {
        let mut t = self.resolve(id)?;
        let mut count = 1u64;
        for _ in 0..32 {
            match t.kind {
                Kind::Int
                | Kind::Struct
                | Kind::Union
                | Kind::Enum
                | Kind::Enum64
                | Kind::Float
                | Kind::Datasec => return count.checked_mul(u64::from(t.size_type)),
                Kind::Ptr => return count.checked_mul(8),
                Kind::Array => {
                    let a = t.array()?;
                    count = count.checked_mul(u64::from(a.nelems))?;
                    t = self.resolve(a.elem)?;
                }
                _ => return None,
            }
        }
        None
    }

    /// The member `name` of the structure or union `id` (typedefs and
    /// qualifiers looked through), searched as the kernel's
    /// `btf_find_struct_member()` searches (`kernel/trace/trace_btf.c`):
    /// the named members of a structure first, then, last seen first, the
    /// anonymous structures and unions in it, at most 16 of them pending.
    /// Its offset is from the start of `id`, in bits. `Err` when `id` is not
    /// a structure or union, `Ok(None)` when no member has the name.
    pub fn member(&self, id: u32, name: &[u8]) -> Result<Option<Member>, NotStruct> {
        const STACK: usize = 16;
        let mut t = self.resolve(id).ok_or(NotStruct)?;
        if !matches!(t.kind, Kind::Struct | Kind::Union) {
            return Err(NotStruct);
        }
        let mut stack = [(0u32, 0u32); STACK];
        let mut top = 0;
        let mut base = 0u32;
        let mut pops = 0u32;
        loop {
            for m in t.members() {
                if m.name_off == 0 {
                    let inner = self.resolve(m.type_id);
                    if let Some(inner) = inner {
                        if matches!(inner.kind, Kind::Struct | Kind::Union) && top < STACK {
                            stack[top] = (inner.id, base.wrapping_add(m.bit_offset));
                            top += 1;
                        }
                    }
                } else if self.str_at(m.name_off) == name {
                    return Ok(Some(Member {
                        bit_offset: base.wrapping_add(m.bit_offset),
                        ..m
                    }));
                }
            }
            // Malformed BTF could make an anonymous member contain itself:
            // the walk is bounded, as well-formed BTF never needs to be.
            pops += 1;
            if top == 0 || pops > 1024 {
                return Ok(None);
            }
            top -= 1;
            let (tid, off) = stack[top];
            base = off;
            t = self.get(tid).ok_or(NotStruct)?;
        }
    }

    /// The prototype of the function `name`: its `FUNC_PROTO` type.
    pub fn func_proto(&self, name: &[u8]) -> Option<Type<'a>> {
        let f = self.find(name, Kind::Func)?;
        let p = self.get(f.size_type)?;
        (p.kind == Kind::FuncProto).then_some(p)
    }
}

/// One type's record.
#[derive(Clone, Copy, Debug)]
pub struct Type<'a> {
    /// Its id.
    pub id: u32,
    /// Its kind.
    pub kind: Kind,
    name_off: u32,
    info: u32,
    size_type: u32,
    extra: &'a [u8],
}

/// The type a member was looked up in is not a structure or union.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotStruct;

/// A member of a structure or union.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// Its name's offset in the strings ([`Btf::str_at`]).
    pub name_off: u32,
    /// Its type.
    pub type_id: u32,
    /// Its offset in bits from the start of the structure.
    pub bit_offset: u32,
    /// Its size in bits if it is a bitfield, else 0.
    pub bitfield_size: u32,
}

/// A parameter of a function prototype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    /// Its name's offset in the strings (0: unnamed, or `...` when it is
    /// the last and its type is 0).
    pub name_off: u32,
    /// Its type.
    pub type_id: u32,
}

/// An array's element type, index type and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Array {
    /// The element type.
    pub elem: u32,
    /// The index type.
    pub index: u32,
    /// The number of elements.
    pub nelems: u32,
}

/// An integer's encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntInfo {
    /// `BTF_INT_SIGNED` (1), `BTF_INT_CHAR` (2), `BTF_INT_BOOL` (4).
    pub encoding: u8,
    /// The bit offset of the value in its bytes.
    pub offset: u8,
    /// Its width in bits.
    pub bits: u8,
}

impl IntInfo {
    /// `BTF_INT_SIGNED`.
    pub const SIGNED: u8 = 1;
    /// `BTF_INT_CHAR`.
    pub const CHAR: u8 = 2;
    /// `BTF_INT_BOOL`.
    pub const BOOL: u8 = 4;
}

impl<'a> Type<'a> {
    /// The entries that follow the record (members, parameters, values).
    pub fn vlen(&self) -> usize {
        (self.info & 0xffff) as usize
    }

    /// The kind flag: a structure's members carry bitfield sizes; a
    /// forward declaration is of a union; an enumeration is signed.
    pub fn kind_flag(&self) -> bool {
        self.info >> 31 != 0
    }

    /// The size of an integer, structure, union, enumeration, float or
    /// data section; the referenced type of the other kinds.
    pub fn size_or_type(&self) -> u32 {
        self.size_type
    }

    fn word(&self, i: usize) -> u32 {
        u32_at(self.extra, 4 * i).unwrap_or(0)
    }

    /// An integer's encoding.
    pub fn int_info(&self) -> Option<IntInfo> {
        (self.kind == Kind::Int).then(|| {
            let w = self.word(0);
            IntInfo {
                encoding: ((w >> 24) & 0xf) as u8,
                offset: ((w >> 16) & 0xff) as u8,
                bits: (w & 0xff) as u8,
            }
        })
    }

    /// An array's description.
    pub fn array(&self) -> Option<Array> {
        (self.kind == Kind::Array).then(|| Array {
            elem: self.word(0),
            index: self.word(1),
            nelems: self.word(2),
        })
    }

    /// A structure's or union's members.
    pub fn members(&self) -> impl Iterator<Item = Member> + '_ {
        let n = if matches!(self.kind, Kind::Struct | Kind::Union) {
            self.vlen()
        } else {
            0
        };
        let bitfields = self.kind_flag();
        (0..n).map(move |i| {
            let off = self.word(3 * i + 2);
            Member {
                name_off: self.word(3 * i),
                type_id: self.word(3 * i + 1),
                bit_offset: if bitfields { off & 0xff_ffff } else { off },
                bitfield_size: if bitfields { off >> 24 } else { 0 },
            }
        })
    }

    /// A function prototype's parameters.
    pub fn params(&self) -> impl Iterator<Item = Param> + '_ {
        let n = if self.kind == Kind::FuncProto {
            self.vlen()
        } else {
            0
        };
        (0..n).map(move |i| Param {
            name_off: self.word(2 * i),
            type_id: self.word(2 * i + 1),
        })
    }

    /// An enumeration's values (name offset, value), 32- or 64-bit, sign
    /// extended when the enumeration is signed.
    pub fn enum_values(self) -> impl Iterator<Item = (u32, i128)> + 'a {
        let (n, stride) = match self.kind {
            Kind::Enum => (self.vlen(), 2),
            Kind::Enum64 => (self.vlen(), 3),
            _ => (0, 2),
        };
        let signed = self.kind_flag();
        (0..n).map(move |i| {
            let name = self.word(stride * i);
            let v = if stride == 2 {
                let lo = self.word(stride * i + 1);
                if signed {
                    i128::from(lo as i32)
                } else {
                    i128::from(lo)
                }
            } else {
                let lo = u64::from(self.word(stride * i + 1));
                let hi = u64::from(self.word(stride * i + 2));
                let v = hi << 32 | lo;
                if signed {
                    i128::from(v as i64)
                } else {
                    i128::from(v)
                }
            };
            (name, v)
        })
    }

    /// A variable's linkage, or a declaration tag's component index.
    pub fn extra_word(&self) -> Option<u32> {
        matches!(self.kind, Kind::Var | Kind::DeclTag).then(|| self.word(0))
    }

    /// A data section's variables: (type, offset, size).
    pub fn secinfo(&self) -> impl Iterator<Item = (u32, u32, u32)> + '_ {
        let n = if self.kind == Kind::Datasec {
            self.vlen()
        } else {
            0
        };
        (0..n).map(move |i| (self.word(3 * i), self.word(3 * i + 1), self.word(3 * i + 2)))
    }
}
