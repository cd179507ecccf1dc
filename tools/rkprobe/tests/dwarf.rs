// SPDX-License-Identifier: GPL-2.0

//! Location-and-type translation and probe point resolution on DWARF built by
//! hand with gimli's writer: one CU (types, a function with parameters and
//! locals in registers, in location lists, on the stack through
//! `DW_OP_fbreg` and the CFA, split in pieces, computed, constant; globals;
//! an inlined function), its line table and `.debug_frame`. Every expected
//! string is what perf writes for the same DWARF.

use gimli::write::{
    Address, AttributeValue, CallFrameInstruction, CommonInformationEntry, DwarfUnit, EndianVec,
    Expression, FrameDescriptionEntry, FrameTable, LineProgram, LineString, Location, LocationList,
    Range, RangeList, Sections, UnitEntryId,
};
use gimli::{Encoding, Format, LineEncoding, LittleEndian, Register};

use rkprobe::control::Defined;
use rkprobe::debuginfo::{Binding, Debuginfo, DieRef, Sections as DiSections, Symbol};
use rkprobe::event;
use rkprobe::fetcharg::{Features, TraceArg};
use rkprobe::finder;
use rkprobe::show;
use rkprobe::spec;
use rkprobe::strfilter::Filter;
use rkprobe::translate::{self, FrameBase, Site, Translated};

const FUNC: u64 = 0x1000;
const FUNC_LEN: u64 = 0x100;
const INLINE_AT: u64 = 0x1020;
const TWICE_AT: u64 = 0x1060;

struct Builder {
    dw: DwarfUnit,
}

impl Builder {
    fn add(
        &mut self,
        parent: UnitEntryId,
        tag: gimli::DwTag,
        attrs: Vec<(gimli::DwAt, AttributeValue)>,
    ) -> UnitEntryId {
        let id = self.dw.unit.add(parent, tag);
        let e = self.dw.unit.get_mut(id);
        for (a, v) in attrs {
            e.set(a, v);
        }
        id
    }
}

fn name(s: &str) -> (gimli::DwAt, AttributeValue) {
    (
        gimli::DW_AT_name,
        AttributeValue::String(s.as_bytes().to_vec()),
    )
}
fn ty(id: UnitEntryId) -> (gimli::DwAt, AttributeValue) {
    (gimli::DW_AT_type, AttributeValue::UnitRef(id))
}
fn udata(a: gimli::DwAt, v: u64) -> (gimli::DwAt, AttributeValue) {
    (a, AttributeValue::Udata(v))
}
fn loc(e: Expression) -> (gimli::DwAt, AttributeValue) {
    (gimli::DW_AT_location, AttributeValue::Exprloc(e))
}
fn expr(f: impl FnOnce(&mut Expression)) -> Expression {
    let mut e = Expression::new();
    f(&mut e);
    e
}

/// Sections as (name, bytes, address).
type Parts = Vec<(String, Vec<u8>, u64)>;

/// The CU, written out: (sections, symbols).
fn build() -> (Parts, Vec<Symbol>) {
    let enc = Encoding {
        format: Format::Dwarf32,
        version: 5,
        address_size: 8,
    };
    let mut b = Builder {
        dw: DwarfUnit::new(enc),
    };
    // Line table: t.c in /src, decl lines and rows for walk() and an inlined
    // helper().
    let mut lp = LineProgram::new(
        enc,
        LineEncoding::default(),
        LineString::String(b"/src".to_vec()),
        LineString::String(b"t.c".to_vec()),
        None,
    );
    let dir = lp.default_directory();
    let file = lp.add_file(LineString::String(b"t.c".to_vec()), dir, None);
    lp.begin_sequence(Some(Address::Constant(FUNC)));
    // twice()'s instance at 0x60 starts with a row that is no statement,
    // as GCC writes some.
    for (off, line, is_statement) in [
        (0u64, 10u64, true),
        (4, 11, true),
        (0x10, 12, true),
        (0x20, 4, true),
        (0x30, 14, true),
        (0x60, 14, false),
    ] {
        lp.row().address_offset = off;
        lp.row().line = line;
        lp.row().file = file;
        lp.row().is_statement = is_statement;
        lp.generate_row();
    }
    lp.end_sequence(FUNC_LEN);
    b.dw.unit.line_program = lp;
    let file_idx = 1u64;

    let root = b.dw.unit.root();
    b.dw.unit
        .get_mut(root)
        .set(gimli::DW_AT_name, AttributeValue::String(b"t.c".to_vec()));
    b.dw.unit.get_mut(root).set(
        gimli::DW_AT_comp_dir,
        AttributeValue::String(b"/src".to_vec()),
    );
    b.dw.unit.get_mut(root).set(
        gimli::DW_AT_low_pc,
        AttributeValue::Address(Address::Constant(0)),
    );
    // The unit's code, which --list finds an address's unit by.
    b.dw.unit
        .get_mut(root)
        .set(gimli::DW_AT_high_pc, AttributeValue::Udata(FUNC + FUNC_LEN));

    let base = |b: &mut Builder, n: &str, size: u64, enc: gimli::DwAte| {
        b.add(
            root,
            gimli::DW_TAG_base_type,
            vec![
                name(n),
                udata(gimli::DW_AT_byte_size, size),
                (gimli::DW_AT_encoding, AttributeValue::Encoding(enc)),
            ],
        )
    };
    let int = base(&mut b, "int", 4, gimli::DW_ATE_signed);
    let uint = base(&mut b, "unsigned int", 4, gimli::DW_ATE_unsigned);
    let short = base(&mut b, "short int", 2, gimli::DW_ATE_signed);
    let ch = base(&mut b, "char", 1, gimli::DW_ATE_signed_char);
    let uch = base(&mut b, "unsigned char", 1, gimli::DW_ATE_unsigned_char);
    let long = base(&mut b, "long int", 8, gimli::DW_ATE_signed);
    let boolean = base(&mut b, "_Bool", 1, gimli::DW_ATE_boolean);

    let u32t = b.add(root, gimli::DW_TAG_typedef, vec![name("u32"), ty(uint)]);
    let vol = b.add(root, gimli::DW_TAG_volatile_type, vec![ty(u32t)]);
    let cvu32 = b.add(root, gimli::DW_TAG_const_type, vec![ty(vol)]);
    let cch = b.add(root, gimli::DW_TAG_const_type, vec![ty(ch)]);
    let cchp = b.add(
        root,
        gimli::DW_TAG_pointer_type,
        vec![udata(gimli::DW_AT_byte_size, 8), ty(cch)],
    );
    let chp = b.add(
        root,
        gimli::DW_TAG_pointer_type,
        vec![udata(gimli::DW_AT_byte_size, 8), ty(ch)],
    );
    let intp = b.add(
        root,
        gimli::DW_TAG_pointer_type,
        vec![udata(gimli::DW_AT_byte_size, 8), ty(int)],
    );
    let cint = b.add(root, gimli::DW_TAG_const_type, vec![ty(int)]);

    let arr = |b: &mut Builder, elem: UnitEntryId, n: u64| {
        let a = b.add(root, gimli::DW_TAG_array_type, vec![ty(elem)]);
        b.add(
            a,
            gimli::DW_TAG_subrange_type,
            vec![udata(gimli::DW_AT_upper_bound, n - 1)],
        );
        a
    };
    let uch4 = arr(&mut b, uch, 4);
    let int8 = arr(&mut b, int, 8);
    let ch64 = arr(&mut b, ch, 64);

    let member = |b: &mut Builder, st: UnitEntryId, n: Option<&str>, t: UnitEntryId, off: u64| {
        let mut attrs = vec![ty(t), udata(gimli::DW_AT_data_member_location, off)];
        if let Some(n) = n {
            attrs.push(name(n));
        }
        b.add(st, gimli::DW_TAG_member, attrs)
    };
    let inner = b.add(
        root,
        gimli::DW_TAG_structure_type,
        vec![name("inner"), udata(gimli::DW_AT_byte_size, 16)],
    );
    member(&mut b, inner, Some("s"), short, 0);
    member(&mut b, inner, Some("bytes"), uch4, 2);
    member(&mut b, inner, Some("l"), long, 8);
    let innerp = b.add(
        root,
        gimli::DW_TAG_pointer_type,
        vec![udata(gimli::DW_AT_byte_size, 8), ty(inner)],
    );

    let outer = b.add(
        root,
        gimli::DW_TAG_structure_type,
        vec![name("outer"), udata(gimli::DW_AT_byte_size, 88)],
    );
    let outerp = b.add(
        root,
        gimli::DW_TAG_pointer_type,
        vec![udata(gimli::DW_AT_byte_size, 8), ty(outer)],
    );
    member(&mut b, outer, Some("a"), int, 0);
    member(&mut b, outer, Some("in"), inner, 8);
    member(&mut b, outer, Some("pin"), innerp, 24);
    member(&mut b, outer, Some("name"), chp, 32);
    // DWARF 5 bitfields: DW_AT_data_bit_offset, no data_member_location.
    b.add(
        outer,
        gimli::DW_TAG_member,
        vec![
            name("flag"),
            ty(uint),
            udata(gimli::DW_AT_bit_size, 3),
            udata(gimli::DW_AT_data_bit_offset, 320),
        ],
    );
    b.add(
        outer,
        gimli::DW_TAG_member,
        vec![
            name("mode"),
            ty(uint),
            udata(gimli::DW_AT_bit_size, 5),
            udata(gimli::DW_AT_data_bit_offset, 323),
        ],
    );
    let anon = b.add(
        root,
        gimli::DW_TAG_union_type,
        vec![udata(gimli::DW_AT_byte_size, 4)],
    );
    member(&mut b, anon, Some("ui"), int, 0);
    member(&mut b, anon, Some("uc"), ch, 0);
    member(&mut b, outer, None, anon, 44);
    member(&mut b, outer, Some("arr"), int8, 48);
    member(&mut b, outer, Some("next"), outerp, 80);

    // Globals.
    let addr_expr = |a: u64| expr(|e| e.op_addr(Address::Constant(a)));
    b.add(
        root,
        gimli::DW_TAG_variable,
        vec![
            name("counter"),
            ty(long),
            (gimli::DW_AT_external, AttributeValue::Flag(true)),
            loc(addr_expr(0x5000)),
        ],
    );
    b.add(
        root,
        gimli::DW_TAG_variable,
        vec![
            name("global_outer"),
            ty(outer),
            (gimli::DW_AT_external, AttributeValue::Flag(true)),
            loc(addr_expr(0x5100)),
        ],
    );
    b.add(
        root,
        gimli::DW_TAG_variable,
        vec![name("global_ptr"), ty(outerp), loc(addr_expr(0x5200))],
    );

    // An inline function, abstract.
    let helper = b.add(
        root,
        gimli::DW_TAG_subprogram,
        vec![
            name("helper"),
            ty(int),
            (
                gimli::DW_AT_decl_file,
                AttributeValue::FileIndex(Some(file)),
            ),
            udata(gimli::DW_AT_decl_line, 3),
            (
                gimli::DW_AT_inline,
                AttributeValue::Inline(gimli::DW_INL_declared_inlined),
            ),
        ],
    );
    let helper_k = b.add(
        helper,
        gimli::DW_TAG_formal_parameter,
        vec![name("k"), ty(int)],
    );

    // walk(struct outer *o, int depth, const char *tag, ...).
    let walk = b.add(
        root,
        gimli::DW_TAG_subprogram,
        vec![
            name("walk"),
            ty(int),
            (gimli::DW_AT_external, AttributeValue::Flag(true)),
            (
                gimli::DW_AT_decl_file,
                AttributeValue::FileIndex(Some(file)),
            ),
            udata(gimli::DW_AT_decl_line, 10),
            (
                gimli::DW_AT_low_pc,
                AttributeValue::Address(Address::Constant(FUNC)),
            ),
            udata(gimli::DW_AT_high_pc, FUNC_LEN),
            (
                gimli::DW_AT_frame_base,
                AttributeValue::Exprloc(expr(|e| e.op(gimli::DW_OP_call_frame_cfa))),
            ),
        ],
    );
    let param = |b: &mut Builder, n: &str, t: UnitEntryId, v: AttributeValue| {
        b.add(
            walk,
            gimli::DW_TAG_formal_parameter,
            vec![name(n), ty(t), (gimli::DW_AT_location, v)],
        )
    };
    param(
        &mut b,
        "o",
        outerp,
        AttributeValue::Exprloc(expr(|e| e.op_reg(Register(5)))),
    );
    let depth_ll = b.dw.unit.locations.add(LocationList(vec![
        Location::StartEnd {
            begin: Address::Constant(FUNC),
            end: Address::Constant(FUNC + 0x10),
            data: expr(|e| e.op_reg(Register(4))),
        },
        Location::StartEnd {
            begin: Address::Constant(FUNC + 0x10),
            end: Address::Constant(FUNC + 0x80),
            data: expr(|e| e.op_breg(Register(7), 12)),
        },
    ]));
    param(
        &mut b,
        "depth",
        int,
        AttributeValue::LocationListRef(depth_ll),
    );
    param(
        &mut b,
        "tag",
        cchp,
        AttributeValue::Exprloc(expr(|e| e.op_reg(Register(1)))),
    );
    param(
        &mut b,
        "v",
        cvu32,
        AttributeValue::Exprloc(expr(|e| e.op_reg(Register(2)))),
    );
    param(
        &mut b,
        "st",
        inner,
        AttributeValue::Exprloc(expr(|e| e.op_reg(Register(8)))),
    );
    param(
        &mut b,
        "flagp",
        boolean,
        AttributeValue::Exprloc(expr(|e| e.op_reg(Register(9)))),
    );
    param(
        &mut b,
        "xmm",
        long,
        AttributeValue::Exprloc(expr(|e| e.op_reg(Register(17)))),
    );
    // Only valid after the entry (an fentry call first).
    let late_ll =
        b.dw.unit
            .locations
            .add(LocationList(vec![Location::StartEnd {
                begin: Address::Constant(FUNC + 5),
                end: Address::Constant(FUNC + 0x40),
                data: expr(|e| e.op_reg(Register(3))),
            }]));
    param(
        &mut b,
        "late",
        intp,
        AttributeValue::LocationListRef(late_ll),
    );
    let local =
        |b: &mut Builder, parent: UnitEntryId, n: &str, t: UnitEntryId, v: AttributeValue| {
            b.add(
                parent,
                gimli::DW_TAG_variable,
                vec![name(n), ty(t), (gimli::DW_AT_location, v)],
            )
        };
    local(
        &mut b,
        walk,
        "buf",
        ch64,
        AttributeValue::Exprloc(expr(|e| e.op_fbreg(-80))),
    );
    local(
        &mut b,
        walk,
        "split",
        long,
        AttributeValue::Exprloc(expr(|e| {
            e.op_reg(Register(5));
            e.op_piece(4);
            e.op_reg(Register(4));
            e.op_piece(4);
        })),
    );
    local(
        &mut b,
        walk,
        "computed",
        intp,
        AttributeValue::Exprloc(expr(|e| {
            e.op_breg(Register(5), 16);
            e.op(gimli::DW_OP_stack_value);
        })),
    );
    local(
        &mut b,
        walk,
        "fromentry",
        long,
        AttributeValue::Exprloc(Expression::raw(vec![
            gimli::DW_OP_entry_value.0,
            1,
            gimli::DW_OP_reg5.0,
            gimli::DW_OP_stack_value.0,
        ])),
    );
    b.add(
        walk,
        gimli::DW_TAG_variable,
        vec![
            name("cv"),
            ty(cint),
            (gimli::DW_AT_const_value, AttributeValue::Sdata(42)),
        ],
    );
    let gone_ll =
        b.dw.unit
            .locations
            .add(LocationList(vec![Location::StartEnd {
                begin: Address::Constant(FUNC + 0x40),
                end: Address::Constant(FUNC + 0x50),
                data: expr(|e| e.op_reg(Register(0))),
            }]));
    local(
        &mut b,
        walk,
        "gone",
        int,
        AttributeValue::LocationListRef(gone_ll),
    );
    local(
        &mut b,
        walk,
        "sum",
        int,
        AttributeValue::Exprloc(expr(|e| e.op_reg(Register(0)))),
    );
    // helper() inlined at walk+0x20, called from line 13.
    let inl = b.add(
        walk,
        gimli::DW_TAG_inlined_subroutine,
        vec![
            (
                gimli::DW_AT_abstract_origin,
                AttributeValue::UnitRef(helper),
            ),
            (
                gimli::DW_AT_low_pc,
                AttributeValue::Address(Address::Constant(INLINE_AT)),
            ),
            udata(gimli::DW_AT_high_pc, 0x10),
            (
                gimli::DW_AT_call_file,
                AttributeValue::FileIndex(Some(file)),
            ),
            udata(gimli::DW_AT_call_line, 13),
        ],
    );
    b.add(
        inl,
        gimli::DW_TAG_formal_parameter,
        vec![
            (
                gimli::DW_AT_abstract_origin,
                AttributeValue::UnitRef(helper_k),
            ),
            loc(expr(|e| e.op_reg(Register(12)))),
        ],
    );
    // twice(x) inlined at walk+0x60 as GCC writes some instances: ranges
    // that open with an empty one (where the instance's first view is), and
    // a second instance of itself inside it, at the same address, with its
    // own copy of the parameter.
    let twice = b.add(
        root,
        gimli::DW_TAG_subprogram,
        vec![
            name("twice"),
            (
                gimli::DW_AT_decl_file,
                AttributeValue::FileIndex(Some(file)),
            ),
            udata(gimli::DW_AT_decl_line, 6),
            (
                gimli::DW_AT_inline,
                AttributeValue::Inline(gimli::DW_INL_declared_inlined),
            ),
        ],
    );
    let twice_x = b.add(
        twice,
        gimli::DW_TAG_formal_parameter,
        vec![name("x"), ty(int)],
    );
    let instance = |b: &mut Builder, parent, ranges: Vec<(u64, u64)>| {
        let r = b.dw.unit.ranges.add(RangeList(
            ranges
                .into_iter()
                .map(|(begin, end)| Range::StartEnd {
                    begin: Address::Constant(begin),
                    end: Address::Constant(end),
                })
                .collect(),
        ));
        let i = b.add(
            parent,
            gimli::DW_TAG_inlined_subroutine,
            vec![
                (gimli::DW_AT_abstract_origin, AttributeValue::UnitRef(twice)),
                (gimli::DW_AT_ranges, AttributeValue::RangeListRef(r)),
                (
                    gimli::DW_AT_call_file,
                    AttributeValue::FileIndex(Some(file)),
                ),
                udata(gimli::DW_AT_call_line, 14),
            ],
        );
        b.add(
            i,
            gimli::DW_TAG_formal_parameter,
            vec![
                (
                    gimli::DW_AT_abstract_origin,
                    AttributeValue::UnitRef(twice_x),
                ),
                loc(expr(|e| e.op_reg(Register(13)))),
            ],
        );
        i
    };
    let outer = instance(
        &mut b,
        walk,
        vec![(TWICE_AT, TWICE_AT), (TWICE_AT + 4, TWICE_AT + 0x10)],
    );
    instance(&mut b, outer, vec![(TWICE_AT, TWICE_AT + 8)]);
    let _ = file_idx;

    let mut sections = Sections::new(EndianVec::new(LittleEndian));
    b.dw.write(&mut sections).unwrap();

    // .debug_frame: CFA = rsp+8 at entry, rsp+16 after a push at +1.
    let mut frames = FrameTable::default();
    let cie_enc = Encoding { version: 4, ..enc };
    let mut cie = CommonInformationEntry::new(cie_enc, 1, -8, Register(16));
    cie.add_instruction(CallFrameInstruction::Cfa(Register(7), 8));
    let cie_id = frames.add_cie(cie);
    let mut fde = FrameDescriptionEntry::new(Address::Constant(FUNC), FUNC_LEN as u32);
    fde.add_instruction(1, CallFrameInstruction::CfaOffset(16));
    frames.add_fde(cie_id, fde);
    let mut debug_frame = gimli::write::DebugFrame::from(EndianVec::new(LittleEndian));
    frames.write_debug_frame(&mut debug_frame).unwrap();

    let mut parts = Vec::new();
    sections
        .for_each(|id, data| {
            parts.push((id.name().to_string(), data.slice().to_vec(), 0));
            Ok::<(), gimli::write::Error>(())
        })
        .unwrap();
    parts.push((".debug_frame".into(), debug_frame.slice().to_vec(), 0));
    let syms = vec![
        Symbol {
            name: "walk".into(),
            start: FUNC,
            end: FUNC + FUNC_LEN,
            binding: Binding::Global,
        },
        // An alias perf would not choose (more leading underscores).
        Symbol {
            name: "__walk_alias".into(),
            start: FUNC,
            end: FUNC + FUNC_LEN,
            binding: Binding::Global,
        },
    ];
    (parts, syms)
}

fn walk_die(di: &Debuginfo<'_>) -> DieRef {
    di.functions().get("walk").unwrap()[0]
}

fn site(di: &Debuginfo<'_>, addr: u64) -> Site {
    let sp = walk_die(di);
    Site {
        addr,
        sp_die: sp,
        frame_base: translate::frame_base(di, sp, addr, false).unwrap(),
    }
}

fn arg_at(di: &Debuginfo<'_>, text: &str, addr: u64, f: Features) -> Result<String, String> {
    let a = spec::parse_arg(text).unwrap();
    let sp = walk_die(di);
    let cu = di.cu_die(0).unwrap();
    match translate::translate_var(di, &a, sp, cu, &site(di, addr), f) {
        Ok(Translated::Arg(t)) => Ok(t.render()),
        Ok(Translated::Skipped(_)) => Err("skipped".into()),
        Err(e) => Err(e.0),
    }
}

fn with_di(f: impl FnOnce(&Debuginfo<'_>)) {
    let (parts, syms) = build();
    let sections = DiSections::from_parts(parts, syms);
    let di = Debuginfo::new(&sections).unwrap();
    f(&di);
}

const ALL: Features = Features::LINUX_6_12;

#[test]
fn registers_and_types() {
    with_di(|di| {
        let a = |t: &str| arg_at(di, t, FUNC, ALL).unwrap();
        assert_eq!(a("o"), "o=%di:x64");
        assert_eq!(a("depth"), "depth=%si:s32");
        assert_eq!(a("tag"), "tag=%dx:x64");
        // const volatile typedef'd unsigned int.
        assert_eq!(a("v"), "v=%cx:x32");
        assert_eq!(a("flagp"), "flagp=%r9:x8");
        assert_eq!(a("tag:string"), "tag_string=+0(%dx):string");
        assert_eq!(a("x=o:u64"), "x=%di:u64");
        assert_eq!(a("o:s"), "o_s=%di:s64");
        assert_eq!(a("depth:x"), "depth_x=%si:x32");
    });
}

#[test]
fn without_hex_types_unsigned_stands_in() {
    with_di(|di| {
        let f = Features {
            hex_types: false,
            ..ALL
        };
        assert_eq!(arg_at(di, "o", FUNC, f).unwrap(), "o=%di:u64");
        assert_eq!(arg_at(di, "depth", FUNC, f).unwrap(), "depth=%si:s32");
    });
}

#[test]
fn members_pointers_and_arrays() {
    with_di(|di| {
        let a = |t: &str| arg_at(di, t, FUNC, ALL);
        assert_eq!(a("o->next").unwrap(), "next=+80(%di):x64");
        assert_eq!(a("o->in.s").unwrap(), "s=+8(%di):s16");
        assert_eq!(a("o->in.l").unwrap(), "l=+16(%di):s64");
        assert_eq!(a("o->pin->bytes[2]").unwrap(), "bytes=+4(+24(%di)):x8");
        assert_eq!(a("o->arr[3]").unwrap(), "arr=+60(%di):s32");
        assert_eq!(a("o->next->next->a").unwrap(), "a=+0(+80(+80(%di))):s32");
        assert_eq!(a("o->name:string").unwrap(), "name=+0(+32(%di)):string");
        assert_eq!(a("o->ui").unwrap(), "ui=+44(%di):s32");
        assert_eq!(a("o->uc").unwrap(), "uc=+44(%di):s8");
        assert_eq!(a("late[1]").unwrap(), "late=+4(%bx):s32");
        // An array with no byte size has no type suffix, as in perf.
        assert_eq!(a("o->arr").unwrap(), "arr=+48(%di)");
        assert_eq!(a("o->in").unwrap(), "in=+8(%di):x64");
    });
}

#[test]
fn bitfields_from_data_bit_offset() {
    with_di(|di| {
        let a = |t: &str| arg_at(di, t, FUNC, ALL).unwrap();
        assert_eq!(a("o->flag"), "flag=+40(%di):b3@0/32");
        assert_eq!(a("o->mode"), "mode=+40(%di):b5@3/32");
    });
}

#[test]
fn member_errors() {
    with_di(|di| {
        let a = |t: &str| arg_at(di, t, FUNC, ALL).unwrap_err();
        assert!(
            a("o.a").contains("must be referred by '->'"),
            "{}",
            a("o.a")
        );
        assert!(a("o->nosuch").contains("has no member nosuch"));
        assert!(a("depth->x").contains("is not a data structure nor a union"));
        assert!(a("st.s").contains("Structure on a register"));
        assert!(a("o->a:string").contains("is not a pointer nor array"));
        assert!(a("o->pin:string").contains("is not (unsigned) char *"));
        assert_eq!(a("nosuchvar"), "skipped");
    });
}

#[test]
fn stack_through_frame_base_and_cfa() {
    with_di(|di| {
        // CFA = rsp+8 at the entry, rsp+16 after the push.
        assert_eq!(arg_at(di, "buf", FUNC, ALL).unwrap(), "buf=-72(%sp)");
        assert_eq!(arg_at(di, "buf", FUNC + 4, ALL).unwrap(), "buf=-64(%sp)");
        assert_eq!(
            arg_at(di, "buf:string", FUNC + 4, ALL).unwrap(),
            "buf_string=-64(%sp):string"
        );
        assert_eq!(
            arg_at(di, "buf[3]", FUNC + 4, ALL).unwrap(),
            "buf=-61(%sp):s8"
        );
    });
}

#[test]
fn location_lists_select_the_entry() {
    with_di(|di| {
        assert_eq!(
            arg_at(di, "depth", FUNC + 0xf, ALL).unwrap(),
            "depth=%si:s32"
        );
        assert_eq!(
            arg_at(di, "depth", FUNC + 0x10, ALL).unwrap(),
            "depth=+12(%sp):s32"
        );
        assert_eq!(
            arg_at(di, "gone", FUNC + 0x40, ALL).unwrap(),
            "gone=%ax:s32"
        );
        // Not covered: skipped (filled from another address), or an error
        // when the kernel has no immediates to fill with.
        assert_eq!(arg_at(di, "gone", FUNC + 0x50, ALL).unwrap_err(), "skipped");
        let old = Features {
            immediates: false,
            ..ALL
        };
        let e = arg_at(di, "gone", FUNC + 0x50, old).unwrap_err();
        assert!(
            e.starts_with("Failed to find the location of the 'gone' variable"),
            "{e}"
        );
    });
}

#[test]
fn parameters_at_entry_take_their_first_location() {
    with_di(|di| {
        // At the entry `late` has no location yet: the first one is used.
        assert_eq!(arg_at(di, "late", FUNC, ALL).unwrap(), "late=%bx:x64");
        // Not at the entry: nothing.
        assert_eq!(arg_at(di, "late", FUNC + 0x48, ALL).unwrap_err(), "skipped");
    });
}

#[test]
fn globals_are_symbols() {
    with_di(|di| {
        let a = |t: &str| arg_at(di, t, FUNC, ALL).unwrap();
        assert_eq!(a("counter"), "counter=@counter+0:s64");
        assert_eq!(a("global_outer.in.l"), "l=@global_outer+16:s64");
        assert_eq!(a("global_outer.arr[2]"), "arr=@global_outer+56:s32");
        assert_eq!(a("global_ptr->a"), "a=+0(@global_ptr+0):s32");
        assert_eq!(a("cv"), "cv=\\42:s32");
    });
}

#[test]
fn refused_locations() {
    with_di(|di| {
        let e = arg_at(di, "split", FUNC, ALL).unwrap_err();
        assert!(e.contains("DW_OP_piece"), "{e}");
        let e = arg_at(di, "computed", FUNC, ALL).unwrap_err();
        assert!(e.contains("DW_OP_stack_value"), "{e}");
        let e = arg_at(di, "fromentry", FUNC, ALL).unwrap_err();
        assert!(e.contains("DW_OP_entry_value"), "{e}");
        let e = arg_at(di, "xmm", FUNC, ALL).unwrap_err();
        assert!(e.contains("register number 17"), "{e}");
    });
}

fn raw(bytes: &[u8], fb: &FrameBase) -> Result<String, translate::LocError> {
    raw_mode(bytes, fb, false)
}

fn raw_mode(bytes: &[u8], fb: &FrameBase, quirks: bool) -> Result<String, translate::LocError> {
    let enc = Encoding {
        format: Format::Dwarf32,
        version: 5,
        address_size: 8,
    };
    translate::translate_expr(bytes, enc, fb, "var", quirks).map(|l| {
        TraceArg {
            value: l.value,
            derefs: l.derefs,
            ..TraceArg::default()
        }
        .render()
    })
}

#[test]
fn raw_expressions() {
    use gimli::constants::*;
    let none = FrameBase::None;
    assert_eq!(raw(&[DW_OP_reg5.0], &none).unwrap(), "%di");
    assert_eq!(raw(&[DW_OP_reg0.0 + 15], &none).unwrap(), "%r15");
    assert_eq!(raw(&[DW_OP_regx.0, 6], &none).unwrap(), "%bp");
    assert_eq!(raw(&[DW_OP_breg4.0, 16], &none).unwrap(), "+16(%si)");
    assert_eq!(raw(&[DW_OP_breg7.0, 0x70], &none).unwrap(), "-16(%sp)");
    assert_eq!(raw(&[DW_OP_bregx.0, 3, 8], &none).unwrap(), "+8(%bx)");
    let cfa = FrameBase::Reg(7, 8);
    assert_eq!(raw(&[DW_OP_fbreg.0, 0x6c], &cfa).unwrap(), "-12(%sp)");
    assert_eq!(
        raw(&[DW_OP_fbreg.0, 0x10], &FrameBase::Reg(6, 0)).unwrap(),
        "+16(%bp)"
    );
    assert!(matches!(
        raw(&[DW_OP_fbreg.0, 0x10], &none),
        Err(translate::LocError::Unsupported(_))
    ));
    let mut addr = vec![DW_OP_addr.0];
    addr.extend_from_slice(&0xffff_ffff_8100_0000u64.to_le_bytes());
    assert_eq!(raw(&addr, &none).unwrap(), "@var+0");
    // The address of a variable, not its value: perf would fetch the value.
    addr.push(DW_OP_stack_value.0);
    assert!(matches!(
        raw(&addr, &none),
        Err(translate::LocError::Unsupported(_))
    ));
    assert_eq!(raw(&[], &none), Err(translate::LocError::NotHere));
    for bad in [
        vec![DW_OP_lit0.0, DW_OP_stack_value.0],
        vec![DW_OP_breg5.0, 16, DW_OP_stack_value.0],
        vec![DW_OP_reg5.0, DW_OP_piece.0, 8],
        vec![
            DW_OP_reg5.0,
            DW_OP_piece.0,
            4,
            DW_OP_reg4.0,
            DW_OP_piece.0,
            4,
        ],
        vec![DW_OP_breg5.0, 8, DW_OP_deref_size.0, 4],
        vec![
            DW_OP_breg5.0,
            8,
            DW_OP_lit1.0,
            DW_OP_plus.0,
            DW_OP_stack_value.0,
        ],
        vec![DW_OP_entry_value.0, 1, DW_OP_reg5.0, DW_OP_stack_value.0],
        vec![DW_OP_implicit_value.0, 1, 0],
        vec![DW_OP_call_frame_cfa.0],
    ] {
        assert!(
            matches!(raw(&bad, &none), Err(translate::LocError::Unsupported(_))),
            "{bad:?}"
        );
    }
}

#[test]
fn raw_expressions_of_several_operations() {
    use gimli::constants::*;
    let none = FrameBase::None;
    // The value of a register, said the long way.
    assert_eq!(
        raw(&[DW_OP_breg5.0, 0, DW_OP_stack_value.0], &none).unwrap(),
        "%di"
    );
    // Pointers stored in memory.
    assert_eq!(
        raw(&[DW_OP_breg5.0, 8, DW_OP_deref.0], &none).unwrap(),
        "+0(+8(%di))"
    );
    assert_eq!(
        raw(
            &[DW_OP_breg5.0, 8, DW_OP_deref.0, DW_OP_stack_value.0],
            &none
        )
        .unwrap(),
        "+8(%di)"
    );
    assert_eq!(
        raw(
            &[DW_OP_breg5.0, 8, DW_OP_deref.0, DW_OP_plus_uconst.0, 16],
            &none
        )
        .unwrap(),
        "+16(+8(%di))"
    );
    assert_eq!(
        raw(&[DW_OP_fbreg.0, 0x6c, DW_OP_deref.0], &FrameBase::Reg(7, 8)).unwrap(),
        "+0(-12(%sp))"
    );
    let mut addr = vec![DW_OP_addr.0];
    addr.extend_from_slice(&0xffff_ffff_8100_0000u64.to_le_bytes());
    addr.push(DW_OP_deref.0);
    assert_eq!(raw(&addr, &none).unwrap(), "+0(@var+0)");
}

#[test]
fn perf_quirks_read_the_first_operation_only() {
    use gimli::constants::*;
    let none = FrameBase::None;
    let q = |b: &[u8]| raw_mode(b, &none, true).unwrap();
    assert_eq!(q(&[DW_OP_breg5.0, 16, DW_OP_stack_value.0]), "+16(%di)");
    assert_eq!(q(&[DW_OP_breg5.0, 0, DW_OP_stack_value.0]), "+0(%di)");
    assert_eq!(q(&[DW_OP_reg5.0, DW_OP_piece.0, 8]), "%di");
    assert_eq!(q(&[DW_OP_breg5.0, 8, DW_OP_deref.0]), "+8(%di)");
    let mut addr = vec![DW_OP_addr.0];
    addr.extend_from_slice(&0u64.to_le_bytes());
    addr.push(DW_OP_stack_value.0);
    assert_eq!(q(&addr), "@var+0");
}

fn definitions(di: &Debuginfo<'_>, text: &str) -> Result<Vec<String>, String> {
    definitions_with(di, text, ALL)
}

fn definitions_with(di: &Debuginfo<'_>, text: &str, f: Features) -> Result<Vec<String>, String> {
    let s = spec::parse(text).map_err(|e| e.0)?;
    let (tevs, _) = finder::find_probes(di, &s, &finder::Options::new(f)).map_err(|e| e.0)?;
    let mut taken = Default::default();
    Ok(event::name_events(&s, tevs, &mut taken, f, true)?
        .iter()
        .map(|e| e.command())
        .collect())
}

#[test]
fn probe_points() {
    with_di(|di| {
        let d = |t: &str| definitions(di, t);
        assert_eq!(d("walk").unwrap(), ["p:probe/walk walk+0"]);
        assert_eq!(d("walk+4 o").unwrap(), ["p:probe/walk walk+4 o=%di:x64"]);
        assert_eq!(
            d("ev=walk+0x10 depth").unwrap(),
            ["p:probe/ev walk+16 depth=+12(%sp):s32"]
        );
        assert_eq!(d("grp:ev=walk").unwrap(), ["p:grp/ev walk+0"]);
        // The inlined instance, relative to the function it is in.
        assert_eq!(
            d("helper k").unwrap(),
            ["p:probe/helper walk+32 k=%r12:s32"]
        );
        // Function-relative and absolute lines.
        assert_eq!(
            d("walk:2 sum").unwrap(),
            ["p:probe/walk_L2 walk+16 sum=%ax:s32"]
        );
        assert_eq!(d("t.c:11").unwrap(), ["p:probe/walk walk+4"]);
        assert_eq!(d("t.c:4").unwrap(), ["p:probe/helper walk+32"]);
        // The call site's line shares its address with helper()'s first.
        let e = d("t.c:13").unwrap_err();
        assert!(e.contains("sharing the address"), "{e}");
        assert_eq!(d("walk@t.c").unwrap(), ["p:probe/walk walk+0"]);
        // Return probes come from the symbol table.
        assert_eq!(
            d("walk%return $retval").unwrap(),
            ["r:probe/walk__return walk+0 $retval"]
        );
        // By any of its names, aliases included, as kallsyms has them.
        assert_eq!(
            d("__walk_alias%return").unwrap(),
            ["r:probe/__walk_alias__return __walk_alias+0"]
        );
        // $params and $vars at an address.
        assert_eq!(
            d("walk $params").unwrap(),
            ["p:probe/walk walk+0 o=%di:x64 depth=%si:s32 tag=%dx:x64 v=%cx:x32 st=%r8:x64 flagp=%r9:x8 late=%bx:x64"]
        );
    });
}

/// An inlined instance whose ranges open with an empty one is probed at
/// that one's start, as perf does (libdw's `dwarf_ranges()` returns empty
/// entries); a parameter repeated by an instance of the function inside
/// itself is fetched once, where perf lists it twice (a line the kernel
/// refuses), which the quirks mode reproduces.
#[test]
fn inlined_instances_as_gcc_writes_them() {
    with_di(|di| {
        let d = |t: &str| definitions(di, t);
        assert_eq!(d("twice").unwrap(), ["p:probe/twice walk+96"]);
        assert_eq!(
            d("twice $params").unwrap(),
            ["p:probe/twice walk+96 x=%r13:s32"]
        );
        let quirks = Features {
            perf_quirks: true,
            ..ALL
        };
        assert_eq!(
            definitions_with(di, "twice $params", quirks).unwrap(),
            ["p:probe/twice walk+96 x=%r13:s32 x=%r13:s32"]
        );
    });
}

#[test]
fn probe_point_errors() {
    with_di(|di| {
        let d = |t: &str| definitions(di, t).unwrap_err();
        assert!(d("nosuch").contains("not found"), "{}", d("nosuch"));
        assert!(d("t.c:99").contains("not found"), "{}", d("t.c:99"));
        assert!(
            d("walk nosuchvar").contains("'nosuchvar'"),
            "{}",
            d("walk nosuchvar")
        );
        assert!(d("walk o->nosuch").contains("has no member"));
        assert!(d("walk%return o").contains("kretprobe"));
    });
}

/// `--no-inlines`: an inline function's inlined copies are not searched;
/// a function with code of its own still is.
#[test]
fn no_inlines_skips_inlined_copies() {
    with_di(|di| {
        let opts = finder::Options {
            no_inlines: true,
            ..finder::Options::new(ALL)
        };
        let find = |t: &str| {
            let s = spec::parse(t).unwrap();
            finder::find_probes(di, &s, &opts).map(|(tevs, _)| tevs.len())
        };
        let e = find("helper").unwrap_err();
        assert!(e.0.contains("Probe point 'helper' not found."), "{}", e.0);
        assert!(find("twice").is_err());
        assert_eq!(find("walk").unwrap(), 1);
        // Without it, the inlined copy is found.
        let s = spec::parse("helper").unwrap();
        let (tevs, _) = finder::find_probes(di, &s, &finder::Options::new(ALL)).unwrap();
        assert_eq!(tevs.len(), 1);
    });
}

/// perf's `parse_line_range_desc()`: what a `--line` argument means, and
/// its messages.
#[test]
fn line_range_descriptions() {
    let p = |s: &str| finder::parse_line_range(s);
    let lr = p("vfs_read").unwrap();
    assert_eq!(
        (lr.function.as_deref(), lr.file, lr.start, lr.end),
        (Some("vfs_read"), None, 0, None)
    );
    let lr = p("vfs_read:3-7").unwrap();
    assert_eq!((lr.start, lr.end), (3, Some(7)));
    let lr = p("vfs_read:3+2").unwrap();
    assert_eq!((lr.start, lr.end), (3, Some(4)));
    let lr = p("vfs_read@fs/read_write.c:5").unwrap();
    assert_eq!(lr.file.as_deref(), Some("fs/read_write.c"));
    assert_eq!((lr.start, lr.end), (5, None));
    let lr = p("fs/read_write.c:470-480").unwrap();
    assert_eq!(
        (lr.function, lr.file.as_deref(), lr.start, lr.end),
        (None, Some("fs/read_write.c"), 470, Some(480))
    );
    let lr = p("read_write.c:0x10").unwrap();
    assert_eq!(lr.start, 16);
    assert_eq!(
        p("vfs_read:x").unwrap_err(),
        "Semantic error :'start line' is not a valid number."
    );
    assert_eq!(
        p("vfs_read:3-x").unwrap_err(),
        "Semantic error :'end line' is not a valid number."
    );
    assert_eq!(
        p("vfs_read:7-3").unwrap_err(),
        "Semantic error :Start line must be smaller than end line."
    );
    assert_eq!(
        p("vfs_read:3z").unwrap_err(),
        "Semantic error :Tailing with invalid str 'z'."
    );
    assert_eq!(
        p("vfs_r*").unwrap_err(),
        "Semantic error :'vfs_r*' is not a valid function name."
    );
}

/// `--line`: the probeable lines are those with a statement (or a
/// declaration line, or an inlined call site) that map back to the same
/// line, or to none: walk()'s 13 is helper()'s call site, whose address
/// the table gives to helper()'s line 4, so it is not one.
#[test]
fn line_ranges_from_the_line_table() {
    with_di(|di| {
        let find = |s: &str| {
            let lr = finder::parse_line_range(s).unwrap();
            finder::find_line_range(di, &lr, ALL).unwrap()
        };
        let f = find("walk").unwrap();
        assert_eq!(
            (&*f.path, f.offset, f.start, f.end),
            ("/src/t.c", 10, 10, None)
        );
        assert_eq!(f.lines.into_iter().collect::<Vec<_>>(), [10, 11, 12, 14]);
        let f = find("walk:1-2").unwrap();
        assert_eq!((f.start, f.end), (11, Some(12)));
        assert_eq!(f.lines.into_iter().collect::<Vec<_>>(), [11, 12]);
        // An inline function: the lines of its instances.
        let f = find("helper").unwrap();
        assert_eq!((f.offset, f.start), (3, 3));
        assert_eq!(f.lines.into_iter().collect::<Vec<_>>(), [4]);
        // twice()'s declaration line and the call site of the instance
        // inside it, at an entry without a statement row, map back to no
        // line: they are numbered. perf compares the line an earlier lookup
        // left, and mostly leaves them out, as the quirks mode does.
        let f = find("twice").unwrap();
        assert_eq!(f.lines.into_iter().collect::<Vec<_>>(), [6, 14]);
        let quirks = Features {
            perf_quirks: true,
            ..ALL
        };
        let lr = finder::parse_line_range("twice").unwrap();
        assert_eq!(finder::find_line_range(di, &lr, quirks).unwrap(), None);
        // A file's absolute lines.
        let f = find("t.c:3-6").unwrap();
        assert_eq!((f.offset, f.start, f.end), (0, 3, Some(6)));
        assert_eq!(f.lines.into_iter().collect::<Vec<_>>(), [4, 6]);
        let f = find("walk@t.c").unwrap();
        assert_eq!(f.lines.len(), 4);
        assert!(find("walk@other.c").is_none());
        assert!(find("nosuch").is_none());
        assert!(find("t.c:50-60").is_none());
    });
}

/// A temporary source tree with `/src/t.c`'s 20 lines as `line N`.
fn source_tree(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rkprobe-src-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text: String = (1..=20).map(|n| format!("line {n}\n")).collect();
    std::fs::write(dir.join("t.c"), text).unwrap();
    dir
}

/// The options of `--source DIR`.
fn in_tree(src: &std::path::Path) -> finder::Options {
    finder::Options {
        source_prefix: Some(src.to_path_buf()),
        ..finder::Options::new(ALL)
    }
}

/// `--line` shown as perf shows it, the file found under `--source` (its
/// leading directories dropped until it is there); three lines past the
/// last probeable one for an open range, up to the end for a closed one.
#[test]
fn line_ranges_shown() {
    let src = source_tree("lines");
    with_di(|di| {
        let l = show::line_range(di, "walk", &in_tree(&src)).unwrap();
        let path = src.join("t.c");
        assert_eq!(l.path, path.display().to_string());
        assert_eq!(
            l.text(),
            format!(
                "<walk@{}:0>\n      0  line 10\n      1  line 11\n      2  line 12\n         line 13\n      4  line 14\n         line 15\n         line 16\n         line 17\n",
                path.display()
            )
        );
        let l = show::line_range(di, "t.c:3-6", &in_tree(&src)).unwrap();
        assert_eq!(
            l.text(),
            format!(
                "<{}:3>\n         line 3\n      4  line 4\n         line 5\n      6  line 6\n",
                path.display()
            )
        );
        let e = show::line_range(di, "walk", &finder::Options::new(ALL)).unwrap_err();
        assert!(e.contains("Failed to find source file path."), "{e}");
        let e = show::line_range(di, "nosuch", &in_tree(&src)).unwrap_err();
        assert_eq!(e, "Specified source line is not found.");
    });
    std::fs::remove_dir_all(src).unwrap();
}

/// A lazy pattern reads the source under `--source` too.
#[test]
fn lazy_patterns_read_the_source_prefix() {
    let src = source_tree("lazy");
    with_di(|di| {
        // Lazy patterns ignore white space (and cannot hold any: the
        // words of a probe are split on it, as in perf).
        let s = spec::parse("walk;line1[12]").unwrap();
        let opts = finder::Options {
            source_prefix: Some(src.clone()),
            ..finder::Options::new(ALL)
        };
        let (tevs, _) = finder::find_probes(di, &s, &opts).unwrap();
        let offsets: Vec<u64> = tevs.iter().map(|t| t.offset).collect();
        assert_eq!(offsets, [4, 0x10]);
        let e = finder::find_probes(di, &s, &finder::Options::new(ALL)).unwrap_err();
        assert!(e.0.contains("Failed to find source file path."), "{}", e.0);
        // A function's lines hold the call sites of what is inlined in it
        // (helper() at 13), not the inlined function's own declaration
        // line (helper()'s 3), as perf's __die_walk_funclines_cb() walks.
        let find = |t: &str| {
            let s = spec::parse(t).unwrap();
            finder::find_probes(di, &s, &opts).map(|(tevs, _)| tevs[0].offset)
        };
        assert_eq!(find("walk;line13").unwrap(), 0x20);
        assert!(find("walk;line3").is_err());
    });
    std::fs::remove_dir_all(src).unwrap();
}

fn var_opts(range: bool, externs: bool, filter: &str) -> show::VarsOptions {
    show::VarsOptions {
        range,
        externs,
        filter: Filter::parse(filter).unwrap(),
    }
}

/// `--vars`: what has a location at the address, sorted as perf sorts
/// its lines; variables whose location rkprobe refuses (pieces, computed
/// values, entry values) are left out.
#[test]
fn vars_at_an_address() {
    with_di(|di| {
        let opts = finder::Options::new(ALL);
        let v = show::vars(di, "walk", &opts, &var_opts(false, false, "*")).unwrap();
        assert_eq!(
            v.text(),
            "Available variables at walk\n\t@<walk+0>\n\t\t_Bool\tflagp\n\t\tchar*\ttag\n\t\tchar[]\tbuf\n\t\tint\tcv\n\t\tint\tdepth\n\t\tint\tsum\n\t\tint*\tlate\n\t\tstruct inner\tst\n\t\tstruct outer*\to\n\t\tu32\tv\n"
        );
        let v = show::vars(di, "walk", &opts, &var_opts(false, false, "!*")).unwrap();
        assert_eq!(
            v.text(),
            "Available variables at walk\n\t@<walk+0>\n\t\t(No matched variables)\n"
        );
        let e = show::vars(di, "nosuch", &opts, &var_opts(false, false, "*")).unwrap_err();
        assert_eq!(e, "Failed to find the address of nosuch");
        let e = show::vars(di, "walk o", &opts, &var_opts(false, false, "*")).unwrap_err();
        assert!(e.contains("doesn't accept arguments"), "{e}");
    });
}

/// `--vars --range`: `[INV]` for a variable in scope located only later,
/// and where each is located, from the function's entry: a location
/// list's ranges, or the ranges of the scope a single location holds in.
/// `--externs`: the unit's globals, `[EXT]`, without ranges.
#[test]
fn vars_with_ranges_and_externs() {
    with_di(|di| {
        let opts = finder::Options::new(ALL);
        let v = show::vars(di, "walk", &opts, &var_opts(true, true, "!buf")).unwrap();
        let text = v.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Available variables at walk");
        for want in [
            "\t\t[EXT]\tlong int\tcounter",
            "\t\t[EXT]\tstruct outer\tglobal_outer",
            "\t\t[EXT]\tstruct outer*\tglobal_ptr",
            "\t\t[INV]\tint\tgone\t@<walk+[64-80]>",
            "\t\t[VAL]\tint\tdepth\t@<walk+[0-16,16-128]>",
            "\t\t[VAL]\tstruct outer*\to\t@<walk+[0-256]>",
            "\t\t[VAL]\tint*\tlate\t@<walk+[5-64]>",
        ] {
            assert!(lines.contains(&want), "{want:?} not in\n{text}");
        }
        assert!(!text.contains("\tbuf"), "{text}");
        // perf's order: the lines sorted, [EXT] < [INV] < [VAL].
        let tags: Vec<&str> = lines[2..].iter().map(|l| &l[2..7]).collect();
        let mut sorted = tags.clone();
        sorted.sort();
        assert_eq!(tags, sorted);
        // Past `gone`'s range it is neither.
        let v = show::vars(di, "walk+0x60", &opts, &var_opts(true, false, "*")).unwrap();
        assert!(!v.text().contains("gone"), "{}", v.text());
        // Inside it, it is valid.
        let v = show::vars(di, "walk+0x44", &opts, &var_opts(true, false, "*")).unwrap();
        assert!(
            v.text().contains("[VAL]\tint\tgone\t@<walk+[64-80]>"),
            "{}",
            v.text()
        );
    });
}

/// `--list` maps an event back to its source place through the
/// debuginfo; one it cannot place (another module's) keeps its symbol.
#[test]
fn listed_events_get_their_source_places() {
    with_di(|di| {
        let events: Vec<Defined> = [
            "p:probe/a walk+4 o=%di:x64",
            "r:probe/b walk+0 ret=$retval",
            "p:probe/c walk+0",
            "p:probe/m m:walk+8 +0(%di)",
            "p:other/d 0xffffffff81000000",
        ]
        .iter()
        .map(|l| Defined::parse(l).unwrap())
        .collect();
        let all = Filter::parse("*").unwrap();
        let text: Vec<String> = show::list(Some(di), &events, &all)
            .iter()
            .map(show::Listed::text)
            .collect();
        assert_eq!(
            text,
            [
                "  probe:a              (on walk:1@/src/t.c with o)",
                "  probe:b              (on walk%return@/src/t.c with ret)",
                "  probe:c              (on walk@/src/t.c)",
                "  probe:m              (on walk+8 in m with +0(%di))",
                "  other:d              (on 0xffffffff81000000)",
            ]
        );
        // perf's filter passes an event by its name or by GROUP:EVENT.
        let filter = Filter::parse("probe:*&!probe:a").unwrap();
        let text: Vec<String> = show::list(None, &events, &filter)
            .iter()
            .map(show::Listed::text)
            .collect();
        assert_eq!(
            text,
            [
                "  probe:b              (on walk%return with ret)",
                "  probe:c              (on walk)",
                "  probe:m              (on walk+8 in m with +0(%di))",
            ]
        );
    });
}
