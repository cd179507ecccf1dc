// SPDX-License-Identifier: GPL-2.0

//! Typed arguments (`rust/pure/probe_events/btfarg.rs`) on the test
//! kernel's BTF: which argument a name is, the offsets of a member chain,
//! the recorded type, strings and bitfields, and the kernel's errors.
//! Offsets are checked against bpftool's reading of the same BTF, walked
//! in the kernel's search order by code of the test's own.

mod btf_support;

use btf_support::{
    bpftool_dump, parse_dump, struct_id, test_btf, test_btf_path, text_offset, TextTypes, VecStore,
};
use rkprobes_host::pure::btf::{Btf, Kind, Sections};
use rkprobes_host::pure::probe_events::btfarg::{
    bitfield, default_type, resolve, string_from, Base, BtfArgError, Last, StringFrom,
};
use rkprobes_host::pure::probe_events::error::ErrorCode;

struct Fixture {
    data: Vec<u8>,
    text: TextTypes,
}

fn fixture() -> Fixture {
    let data = test_btf();
    let text = parse_dump(&bpftool_dump(&test_btf_path()));
    Fixture { data, text }
}

fn with_btf<R>(f: &Fixture, body: impl FnOnce(&Btf<'_>) -> R) -> R {
    let s = Sections::new(&f.data).unwrap();
    let mut idx = VecStore(Vec::new());
    s.index(&mut idx).unwrap();
    let btf = Btf::new(s, &idx.0, None);
    body(&btf)
}

fn type_of(btf: &Btf<'_>, last: Option<Last>) -> Option<&'static str> {
    let mut l = last?;
    default_type(btf, &mut l)
}

#[test]
fn arguments_by_name() {
    let f = fixture();
    with_btf(&f, |btf| {
        // vfs_read(struct file *file, char *buf, size_t count, loff_t *pos)
        let r = resolve(btf, b"vfs_read", false, b"file", 16).unwrap();
        assert_eq!((r.base, r.derefs()), (Base::Arg(0), &[][..]));
        assert_eq!(type_of(btf, r.last), Some("x64"));
        let r = resolve(btf, b"vfs_read", false, b"count", 16).unwrap();
        assert_eq!(r.base, Base::Arg(2));
        assert_eq!(type_of(btf, r.last), Some("u64"), "size_t");
        // In a return probe, an argument is the value it had at entry.
        let r = resolve(btf, b"vfs_read", true, b"count", 16).unwrap();
        assert_eq!(r.base, Base::EntryArg(2));
        let r = resolve(btf, b"vfs_read", true, b"$retval", 16).unwrap();
        assert_eq!(r.base, Base::Retval);
        assert_eq!(type_of(btf, r.last), Some("s64"), "ssize_t");
    });
}

#[test]
fn member_chains_have_the_structures_offsets() {
    let f = fixture();
    with_btf(&f, |btf| {
        let r = resolve(btf, b"vfs_read", false, b"file->f_path.dentry", 16).unwrap();
        let want = text_offset(&f.text, "file", &["f_path", "dentry"]);
        assert_eq!(r.derefs(), &[want as i32]);
        assert_eq!(type_of(btf, r.last), Some("x64"));

        let r = resolve(
            btf,
            b"vfs_read",
            false,
            b"file->f_path.dentry->d_name.name",
            16,
        )
        .unwrap();
        let second = text_offset(&f.text, "dentry", &["d_name", "name"]);
        assert_eq!(r.derefs(), &[want as i32, second as i32]);
        // const unsigned char *: read as a string through the pointer.
        assert_eq!(string_from(btf, &r.last.unwrap()), Ok(StringFrom::Pointer));

        let r = resolve(btf, b"vfs_read", false, b"file->f_inode->i_mode", 16).unwrap();
        let a = text_offset(&f.text, "file", &["f_inode"]);
        let b = text_offset(&f.text, "inode", &["i_mode"]);
        assert_eq!(r.derefs(), &[a as i32, b as i32]);
        assert_eq!(type_of(btf, r.last), Some("u16"), "umode_t");

        // A char array is a string where it is: the task's comm.
        let r = resolve(btf, b"wake_up_process", false, b"p->comm", 16).unwrap();
        assert_eq!(
            r.derefs(),
            &[text_offset(&f.text, "task_struct", &["comm"]) as i32]
        );
        assert_eq!(string_from(btf, &r.last.unwrap()), Ok(StringFrom::InPlace));
        // An integer is no string.
        let r = resolve(btf, b"wake_up_process", false, b"p->pid", 16).unwrap();
        assert_eq!(type_of(btf, r.last), Some("s32"));
        assert_eq!(
            string_from(btf, &r.last.unwrap()),
            Err(ErrorCode::BadType4str)
        );
        // One dereference too many for the room left.
        assert_eq!(
            resolve(
                btf,
                b"vfs_read",
                false,
                b"file->f_path.dentry->d_name.name",
                1
            )
            .unwrap_err()
            .code,
            ErrorCode::TooManyOps
        );
    });
}

#[test]
fn bitfields_are_shifted_out() {
    let f = fixture();
    with_btf(&f, |btf| {
        // struct sk_buff's pkt_type:3, inside its anonymous members, as
        // ip_rcv(skb, ...) sees it.
        let r = resolve(btf, b"ip_rcv", false, b"skb->pkt_type", 16).unwrap();
        let bits = f
            .text
            .member(struct_id(&f.text, "sk_buff"), "pkt_type")
            .unwrap();
        assert_eq!(r.derefs(), &[(bits / 8) as i32]);
        let mut last = r.last.unwrap();
        assert_eq!((last.bitoffs, last.bitsize), ((bits % 8) as u32, 3));
        assert_eq!(default_type(btf, &mut last), Some("u8"));
        let (l, rs) = bitfield(&last).unwrap().unwrap();
        assert_eq!((l, rs), (64 - (3 + (bits % 8) as u32), 61));
        // A whole-byte member at a byte boundary needs no shifts.
        let r = resolve(btf, b"vfs_read", false, b"file->f_inode->i_mode", 16).unwrap();
        assert_eq!(bitfield(&r.last.unwrap()), Ok(None));
        // A field wider than the 64 bits read (malformed BTF) is refused,
        // not shifted by a wrapped count.
        let wide = Last {
            type_id: 0,
            bitoffs: 3,
            bitsize: 63,
        };
        assert_eq!(bitfield(&wide), Err(ErrorCode::BadBitfield));
    });
}

#[test]
fn errors_are_the_kernels_at_the_kernels_offsets() {
    let f = fixture();
    with_btf(&f, |btf| {
        let e = |func: &[u8], ret: bool, arg: &[u8]| resolve(btf, func, ret, arg, 16).unwrap_err();
        let at = |code, offset| BtfArgError { code, offset };
        assert_eq!(e(b"vfs_read", false, b"nosuch"), at(ErrorCode::NoBtfarg, 0));
        assert_eq!(
            e(b"vfs_read", false, b"file.f_path"),
            at(ErrorCode::NosupDatArg, 5)
        );
        assert_eq!(
            e(b"vfs_read", false, b"file-f_path"),
            at(ErrorCode::BadHyphen, 4)
        );
        assert_eq!(
            e(b"vfs_read", false, b"count->x"),
            at(ErrorCode::NoPtrStrct, 7)
        );
        assert_eq!(
            e(b"vfs_read", false, b"file->nosuch"),
            at(ErrorCode::NoBtfField, 6)
        );
        assert_eq!(
            e(b"vfs_read", false, b"file->f_path-x"),
            at(ErrorCode::BadHyphen, 12)
        );
        assert_eq!(
            e(b"no_such_function", false, b"x"),
            at(ErrorCode::NoBtfEntry, 0)
        );
        assert_eq!(
            e(b"no_such_function", true, b"$retval->x"),
            at(ErrorCode::NoBtfEntry, 9)
        );
        // A function returning void has no $retval to type.
        let void_fn = btf
            .types()
            .filter(|t| t.kind == Kind::Func)
            .find(|t| {
                btf.get(t.size_or_type())
                    .is_some_and(|p| p.kind == Kind::FuncProto && p.size_or_type() == 0)
            })
            .map(|t| btf.name(&t).to_vec())
            .unwrap();
        assert_eq!(e(&void_fn, true, b"$retval"), at(ErrorCode::NoRetval, 0));
        // Without a prototype, $retval is the plain return value.
        let r = resolve(btf, b"no_such_function", true, b"$retval", 16).unwrap();
        assert_eq!((r.base, r.last), (Base::Retval, None));
    });
}
