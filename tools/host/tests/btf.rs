// SPDX-License-Identifier: GPL-2.0

//! The BTF reader (`rust/pure/btf.rs`) against `bpftool`, on the test
//! kernel's types.
//!
//! The BTF is made from the vmlinux of `RKPROBES_VMLINUX` (`make check`
//! sets it to the test kernel's) by `pahole --btf_encode_detached`, as the
//! kernel's own build makes `.BTF` (Rust units excluded, as
//! `scripts/Makefile.btf` does for 6.12), and cached under
//! `$RKPROBES_CACHE/btf/` by the vmlinux's size and time. The reader prints
//! every type in `bpftool btf dump`'s raw format and the lines must be
//! bpftool's, type for type; member lookups through anonymous structures
//! and unions, and type sizes, are checked against what bpftool's lines
//! say, for every structure; then the same for the machine's own
//! `/sys/kernel/btf/vmlinux` when it has one (another kernel, another
//! pahole). The test fails, never skips, when pahole, bpftool or the
//! vmlinux is missing (tools/setup installs them).

mod btf_support;

use btf_support::{bpftool_dump, parse_dump, test_btf, test_btf_path, VecStore};
use rkprobes_host::pure::btf::{Btf, BtfError, Kind, Sections, Type};
use std::fmt::Write;
use std::path::PathBuf;

fn quoted(name: &[u8]) -> String {
    if name.is_empty() {
        "'(anon)'".into()
    } else {
        format!("'{}'", String::from_utf8_lossy(name))
    }
}

/// `t` as `bpftool btf dump` prints it (`dump_btf_type()` of bpftool 7).
fn dump_type(btf: &Btf<'_>, t: &Type<'_>, out: &mut String) {
    let name = quoted(btf.name(t));
    let _ = write!(out, "[{}] {} {}", t.id, t.kind.name(), name);
    match t.kind {
        Kind::Int => {
            let i = t.int_info().unwrap();
            let enc = match i.encoding {
                0 => "(none)",
                1 => "SIGNED",
                2 => "CHAR",
                4 => "BOOL",
                _ => "UNKN",
            };
            let _ = write!(
                out,
                " size={} bits_offset={} nr_bits={} encoding={enc}",
                t.size_or_type(),
                i.offset,
                i.bits
            );
        }
        Kind::Ptr
        | Kind::Typedef
        | Kind::Volatile
        | Kind::Const
        | Kind::Restrict
        | Kind::TypeTag => {
            let _ = write!(out, " type_id={}", t.size_or_type());
        }
        Kind::Array => {
            let a = t.array().unwrap();
            let _ = write!(
                out,
                " type_id={} index_type_id={} nr_elems={}",
                a.elem, a.index, a.nelems
            );
        }
        Kind::Struct | Kind::Union => {
            let _ = write!(out, " size={} vlen={}", t.size_or_type(), t.vlen());
            for m in t.members() {
                let _ = write!(
                    out,
                    "\n\t{} type_id={} bits_offset={}",
                    quoted(btf.str_at(m.name_off)),
                    m.type_id,
                    m.bit_offset
                );
                if m.bitfield_size != 0 {
                    let _ = write!(out, " bitfield_size={}", m.bitfield_size);
                }
            }
        }
        Kind::Enum | Kind::Enum64 => {
            let enc = if t.kind_flag() { "SIGNED" } else { "UNSIGNED" };
            let _ = write!(
                out,
                " encoding={enc} size={} vlen={}",
                t.size_or_type(),
                t.vlen()
            );
            for (n, v) in t.enum_values() {
                let suffix = match (t.kind, t.kind_flag()) {
                    (Kind::Enum, _) => "",
                    (_, true) => "LL",
                    (_, false) => "ULL",
                };
                let _ = write!(out, "\n\t{} val={v}{suffix}", quoted(btf.str_at(n)));
            }
        }
        Kind::Fwd => {
            let k = if t.kind_flag() { "union" } else { "struct" };
            let _ = write!(out, " fwd_kind={k}");
        }
        Kind::Func => {
            let linkage = ["static", "global", "extern"]
                .get(t.vlen())
                .copied()
                .unwrap_or("(unknown)");
            let _ = write!(out, " type_id={} linkage={linkage}", t.size_or_type());
        }
        Kind::FuncProto => {
            let _ = write!(out, " ret_type_id={} vlen={}", t.size_or_type(), t.vlen());
            for p in t.params() {
                let _ = write!(
                    out,
                    "\n\t{} type_id={}",
                    quoted(btf.str_at(p.name_off)),
                    p.type_id
                );
            }
        }
        Kind::Var => {
            let linkage = ["static", "global", "extern"]
                .get(t.extra_word().unwrap() as usize)
                .copied()
                .unwrap_or("(unknown)");
            let _ = write!(out, " type_id={}, linkage={linkage}", t.size_or_type());
        }
        Kind::Datasec => {
            let _ = write!(out, " size={} vlen={}", t.size_or_type(), t.vlen());
            for (ty, off, size) in t.secinfo() {
                let var = btf
                    .get(ty)
                    .map(|v| quoted(btf.name(&v)))
                    .unwrap_or_default();
                let _ = write!(out, "\n\ttype_id={ty} offset={off} size={size} (VAR {var})");
            }
        }
        Kind::Float => {
            let _ = write!(out, " size={}", t.size_or_type());
        }
        Kind::DeclTag => {
            let _ = write!(
                out,
                " type_id={} component_idx={}",
                t.size_or_type(),
                t.extra_word().unwrap() as i32
            );
        }
        Kind::Void => {}
    }
    out.push('\n');
}

fn index(data: &[u8]) -> (Sections<'_>, Vec<u32>) {
    let s = Sections::new(data).expect("BTF header");
    let mut idx = VecStore(Vec::new());
    s.index(&mut idx).expect("BTF types");
    (s, idx.0)
}

/// Compares one BTF file with bpftool's reading of it; returns the number
/// of types compared.
fn compare_with_bpftool(path: &std::path::Path, data: &[u8]) -> usize {
    let (sections, offsets) = index(data);
    let btf = Btf::new(sections, &offsets, None);
    let mut ours = String::new();
    for t in btf.types() {
        dump_type(&btf, &t, &mut ours);
    }
    let theirs = bpftool_dump(path);
    let mut bad = Vec::new();
    for (n, (a, b)) in ours.lines().zip(theirs.lines()).enumerate() {
        if a != b && bad.len() < 10 {
            bad.push(format!("line {}: ours {a:?}\n  bpftool {b:?}", n + 1));
        }
    }
    assert!(
        bad.is_empty(),
        "{}: differs from bpftool:\n{}",
        path.display(),
        bad.join("\n")
    );
    assert_eq!(
        ours.lines().count(),
        theirs.lines().count(),
        "{}: line counts",
        path.display()
    );

    // Member lookups and sizes, for every structure and union, against
    // what the text says.
    let text = parse_dump(&theirs);
    let (mut members, mut sizes) = (0usize, 0usize);
    for t in btf.types() {
        let want = text.size(t.id);
        let got = btf.size_of(t.id);
        if want.is_some()
            && matches!(
                t.kind,
                Kind::Struct
                    | Kind::Union
                    | Kind::Array
                    | Kind::Typedef
                    | Kind::Int
                    | Kind::Enum
                    | Kind::Ptr
            )
        {
            assert_eq!(got, want, "size of type {}", t.id);
            sizes += 1;
        }
        if !matches!(t.kind, Kind::Struct | Kind::Union) {
            continue;
        }
        let mut reach = Vec::new();
        text.reachable(t.id, &mut reach);
        reach.sort();
        reach.dedup();
        for name in reach {
            let want = text.member(t.id, &name);
            let got = btf.member(t.id, name.as_bytes()).unwrap();
            assert_eq!(
                got.map(|m| u64::from(m.bit_offset)),
                want,
                "type {} member {name}",
                t.id
            );
            members += 1;
        }
        assert_eq!(btf.member(t.id, b"no_such_member_anywhere"), Ok(None));
    }
    eprintln!(
        "{}: {} types equal to bpftool's, {members} member lookups, {sizes} sizes",
        path.display(),
        offsets.len()
    );
    assert!(
        members > 1000 && sizes > 1000,
        "too few checks: {members} members, {sizes} sizes"
    );
    offsets.len()
}

#[test]
fn reads_the_test_kernels_btf_as_bpftool() {
    let data = test_btf();
    let path = test_btf_path();
    assert!(compare_with_bpftool(&path, &data) > 10_000);

    // A prototype, by name: vfs_read(file, buf, count, pos) returning
    // ssize_t, as the kernel's source declares it.
    let (sections, offsets) = index(&data);
    let btf = Btf::new(sections, &offsets, None);
    let proto = btf.func_proto(b"vfs_read").expect("vfs_read's prototype");
    let names: Vec<_> = proto
        .params()
        .map(|p| btf.str_at(p.name_off).to_vec())
        .collect();
    assert_eq!(names, [&b"file"[..], b"buf", b"count", b"pos"]);
    let ret = btf.get(proto.size_or_type()).unwrap();
    assert_eq!((ret.kind, btf.name(&ret)), (Kind::Typedef, &b"ssize_t"[..]));
    assert_eq!(btf.size_of(proto.size_or_type()), Some(8));
    assert!(btf.func_proto(b"no_such_function_anywhere").is_none());

    // The machine's own kernel's BTF, when it has one: another kernel's
    // types, made by another pahole.
    let own = PathBuf::from("/sys/kernel/btf/vmlinux");
    match std::fs::read(&own) {
        Ok(data) => {
            compare_with_bpftool(&own, &data);
        }
        Err(e) => eprintln!(
            "{}: {e}; only the test kernel's BTF compared",
            own.display()
        ),
    }
    // A member of what is not a structure is the kernel's error, not "none".
    let int = btf.find(b"int", Kind::Int).unwrap();
    assert!(btf.member(int.id, b"x").is_err());
}

#[test]
fn malformed_btf_is_an_error_not_a_panic() {
    let data = test_btf();
    assert_eq!(Sections::new(&data[..10]).unwrap_err(), BtfError::Truncated);
    let mut bad = data.clone();
    bad[0] ^= 0xff;
    assert_eq!(Sections::new(&bad).unwrap_err(), BtfError::BadMagic);
    let mut bad = data.clone();
    bad[2] = 2;
    assert_eq!(Sections::new(&bad).unwrap_err(), BtfError::BadVersion);

    // Random corruption of the header and of the first types: every
    // outcome is an error or a reader whose every query returns.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut errors = 0;
    for _ in 0..300 {
        let mut bad = data.clone();
        for _ in 0..1 + rand() % 8 {
            let at = (rand() % 4096) as usize;
            bad[at] = rand() as u8;
        }
        let Ok(s) = Sections::new(&bad) else {
            errors += 1;
            continue;
        };
        let mut idx = VecStore(Vec::new());
        if s.index(&mut idx).is_err() {
            errors += 1;
            continue;
        }
        let btf = Btf::new(s, &idx.0, None);
        let _ = btf.func_proto(b"vfs_read");
        for _ in 0..2000 {
            let id = (rand() % (u64::from(btf.end_id()) + 10)) as u32;
            if let Some(t) = btf.get(id) {
                let _ = btf.name(&t);
                let _ = t.members().count() + t.params().count() + t.enum_values().count();
            }
            let _ = btf.size_of(id);
            let _ = btf.resolve(id);
            let _ = btf.member(id, b"f_path");
        }
    }
    eprintln!("{errors} of 300 corrupted copies refused");
}
