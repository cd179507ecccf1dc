// SPDX-License-Identifier: GPL-2.0

//! Typed fetchargs through the command parser, on the test kernel's BTF:
//! parameter names, `$arg*` and `$argN` expansion, member chains, typed
//! `$retval`, strings of `char *` and `char []`, and the kernel's errors.
//! The expected names, types, listing texts and error_log positions are
//! what the kernel's own kprobe_events answered for the same commands on
//! the test kernel (88-btf-args.sh compares the two files for hundreds of
//! generated commands in the guest); member offsets are checked against
//! bpftool's reading of the same BTF.

mod btf_support;

use btf_support::{
    bpftool_dump, parse_dump, test_btf, test_btf_path, text_offset, TextTypes, VecStore,
};
use rkprobes_host::pure::btf::{Btf, Sections};
use rkprobes_host::pure::probe_events::{
    parse_command, parse_command_in, Command, Errno, ErrorCode, FetchInsn, FuncEntry, ParseError,
    ProbeDef, ProbeEnv, SymbolCheck, SyntaxOnlyEnv, EXPANDED_ARGS_LEN,
};

/// [`SyntaxOnlyEnv`] (every symbol exists once, offset 0 is a function's
/// entry), with the test kernel's BTF.
struct Env<'a> {
    btf: Option<Btf<'a>>,
}

impl ProbeEnv for Env<'_> {
    fn check_symbol(&self, module: Option<&[u8]>, symbol: &[u8]) -> SymbolCheck {
        SyntaxOnlyEnv.check_symbol(module, symbol)
    }

    fn func_entry(&self, symbol: &[u8], offset: u64) -> FuncEntry {
        SyntaxOnlyEnv.func_entry(symbol, offset)
    }

    fn btf(&self, _func: &[u8]) -> Option<Btf<'_>> {
        self.btf
    }
}

fn with_env(body: impl FnOnce(&Env<'_>, &TextTypes)) {
    let data = test_btf();
    let text = parse_dump(&bpftool_dump(&test_btf_path()));
    let s = Sections::new(&data).unwrap();
    let mut idx = VecStore(Vec::new());
    s.index(&mut idx).unwrap();
    let env = Env {
        btf: Some(Btf::new(s, &idx.0, None)),
    };
    body(&env, &text);
}

fn probe<'a>(env: &'a Env<'a>, cmd: &'a str, buf: &'a mut [u8]) -> ProbeDef<'a> {
    match parse_command_in(cmd.as_bytes(), env, buf) {
        Ok(Command::Probe(p)) => p,
        other => panic!("{cmd}: {other:?}"),
    }
}

/// `name=text type` of each fetcharg: the listing's text, the format's type.
fn args(def: &ProbeDef<'_>) -> Vec<String> {
    def.args()
        .map(|a| {
            let a = a.unwrap();
            let comm = match a.comm {
                rkprobes_host::pure::probe_events::ArgText::Plain(p) => {
                    String::from_utf8_lossy(p).into_owned()
                }
                other => format!("{other:?}"),
            };
            format!(
                "{}={} {}",
                String::from_utf8_lossy(a.name.as_bytes()),
                comm,
                a.ty.base.name()
            )
        })
        .collect()
}

fn error(env: &Env<'_>, cmd: &str) -> ParseError {
    let mut buf = vec![0u8; EXPANDED_ARGS_LEN];
    match parse_command_in(cmd.as_bytes(), env, &mut buf) {
        Err(e) => e,
        Ok(c) => panic!("{cmd}: accepted as {c:?}"),
    }
}

fn expect_err(env: &Env<'_>, cmd: &str, errno: Errno, code: ErrorCode, index: u16, offset: u16) {
    let e = error(env, cmd);
    assert_eq!(e.errno, errno, "{cmd}");
    let log = e.log.unwrap_or_else(|| panic!("{cmd}: not logged"));
    assert_eq!(
        (log.code, log.index, log.offset),
        (code, index, offset),
        "{cmd}"
    );
}

#[test]
fn names_types_and_expansion() {
    with_env(|env, _| {
        let mut buf = vec![0u8; EXPANDED_ARGS_LEN];
        let d = probe(env, "p:g/e vfs_read file count", &mut buf);
        assert_eq!(args(&d), ["file=file x64", "count=count u64"]);
        assert!(!d.names_expanded);
        let mut buf = vec![0u8; EXPANDED_ARGS_LEN];
        let d = probe(env, "p:g/e vfs_read $arg*", &mut buf);
        assert!(d.names_expanded);
        assert_eq!(
            args(&d),
            [
                "file=file x64",
                "buf=buf x64",
                "count=count u64",
                "pos=pos x64"
            ]
        );
        let mut buf = vec![0u8; EXPANDED_ARGS_LEN];
        let d = probe(env, "p:g/e vfs_read $arg1 $arg2:x32", &mut buf);
        assert_eq!(args(&d), ["file=file x64", "buf=buf:x32 x32"]);
        // The return value typed from the prototype, an entry argument
        // saved at entry.
        let mut buf = vec![0u8; EXPANDED_ARGS_LEN];
        let d = probe(env, "r:g/e vfs_read $retval file", &mut buf);
        assert_eq!(args(&d), ["arg1=$retval s64", "file=file x64"]);
        assert_eq!(d.arg(1).unwrap().program.insns()[0], FetchInsn::EntryArg(0));
        let mut buf = vec![0u8; EXPANDED_ARGS_LEN];
        let d = probe(env, "r:g/e wake_up_process $retval", &mut buf);
        assert_eq!(args(&d), ["arg1=$retval s32"]);
        // Members: an unsigned short, a bitfield-free u32 in an embedded
        // structure, a signed pid.
        let mut buf = vec![0u8; EXPANDED_ARGS_LEN];
        let d = probe(
            env,
            "p:g/e vfs_read file->f_inode->i_mode file->f_ra.mmap_miss",
            &mut buf,
        );
        assert_eq!(
            args(&d),
            [
                "arg1=file->f_inode->i_mode u16",
                "arg2=file->f_ra.mmap_miss u32"
            ]
        );
    });
}

#[test]
fn member_chains_and_strings() {
    with_env(|env, text| {
        let off = |s: &str, path: &[&str]| text_offset(text, s, path) as i32;
        // `char *` at the end: one more dereference, then the string.
        let mut buf = vec![0u8; EXPANDED_ARGS_LEN];
        let d = probe(
            env,
            "p:g/e vfs_read file->f_path.dentry->d_name.name:string",
            &mut buf,
        );
        assert_eq!(
            d.arg(0).unwrap().program.insns(),
            &[
                FetchInsn::Arg(0),
                FetchInsn::Deref(off("file", &["f_path", "dentry"])),
                FetchInsn::Deref(off("dentry", &["d_name", "name"])),
                FetchInsn::StString { offset: 0 },
                FetchInsn::End
            ]
        );
        // `char []`: the string is in the structure.
        let mut buf = vec![0u8; EXPANDED_ARGS_LEN];
        let d = probe(env, "p:g/e wake_up_process p->comm:string p->pid", &mut buf);
        assert_eq!(args(&d), ["arg1=p->comm:string string", "arg2=p->pid s32"]);
        assert_eq!(
            d.arg(0).unwrap().program.insns(),
            &[
                FetchInsn::Arg(0),
                FetchInsn::StString {
                    offset: off("task_struct", &["comm"])
                },
                FetchInsn::End
            ]
        );
    });
}

#[test]
fn errors_where_the_kernel_puts_them() {
    with_env(|env, _| {
        use ErrorCode as C;
        expect_err(
            env,
            "p:g/e vfs_read nosuch",
            Errno::ENOENT,
            C::NoBtfarg,
            2,
            0,
        );
        expect_err(
            env,
            "p:g/e vfs_read file.x",
            Errno::EOPNOTSUPP,
            C::NosupDatArg,
            2,
            5,
        );
        expect_err(
            env,
            "r:g/e schedule $retval",
            Errno::ENOENT,
            C::NoRetval,
            2,
            0,
        );
        expect_err(
            env,
            "p:g/e vfs_read count->x",
            Errno::EINVAL,
            C::NoPtrStrct,
            2,
            7,
        );
        expect_err(
            env,
            "p:g/e vfs_read file->nosuch",
            Errno::ENOENT,
            C::NoBtfField,
            2,
            6,
        );
        expect_err(
            env,
            "p:g/e vfs_read file-x",
            Errno::EINVAL,
            C::BadHyphen,
            2,
            4,
        );
        expect_err(
            env,
            "p:g/e vfs_read+4 file",
            Errno::EINVAL,
            C::NosupBtfarg,
            2,
            0,
        );
        expect_err(
            env,
            "p:g/e vfs_read $arg2:u32 $arg9",
            Errno::ENOENT,
            C::NoBtfarg,
            3,
            0,
        );
        expect_err(
            env,
            "p:g/e vfs_read $arg0",
            Errno::EINVAL,
            C::BadArgNum,
            2,
            0,
        );
        expect_err(env, "p:g/e vfs_read $arg1x", Errno::ENOENT, C::BadVar, 2, 0);
        expect_err(
            env,
            "p:g/e vfs_read $arg* $arg*",
            Errno::EINVAL,
            C::DoubleArgs,
            3,
            0,
        );
        // A string of what is no char pointer or array (see
        // Documentation/kprobe-events.rst for the kernel's quirk).
        expect_err(
            env,
            "p:g/e vfs_read file:string",
            Errno::EINVAL,
            C::BadType4str,
            2,
            0,
        );
        // A variadic function's `...` is an unnamed parameter: `$arg*`
        // makes it an empty fetcharg (the kernel answered this for
        // slab_err on the test kernel).
        expect_err(
            env,
            "p:g/e slab_err $arg*",
            Errno::EINVAL,
            C::NoArgBody,
            5,
            0,
        );
        // An error after `$arg*` is counted in the expanded fetchargs, and
        // error_log shows the command as written.
        let e = error(env, "p:g/e vfs_read $arg* nosuch");
        assert_eq!(e.log.unwrap().index, 6);
        assert!(!e.expanded);
    });
}

#[test]
fn without_btf_names_are_refused() {
    let env = Env { btf: None };
    let e = match parse_command(b"p:g/e vfs_read file", &env) {
        Err(e) => e,
        Ok(c) => panic!("{c:?}"),
    };
    assert_eq!(e.errno, Errno::EOPNOTSUPP);
    assert_eq!(e.log.unwrap().code, ErrorCode::NosupBtfarg);
    // `$argN` stays the register of the calling convention.
    match parse_command(b"p:g/e vfs_read $arg2", &env) {
        Ok(Command::Probe(d)) => {
            assert_eq!(d.arg(0).unwrap().program.insns()[0], FetchInsn::Arg(1))
        }
        other => panic!("{other:?}"),
    }
}

/// Linux 7.3's forms: typecasts (and their container_of form), `$current`,
/// `this_cpu_ptr()` and `this_cpu_read()`.
#[test]
fn typecasts_current_and_per_cpu() {
    with_env(|env, text| {
        let off = |s: &str, path: &[&str]| text_offset(text, s, path) as i32;
        let insns = |cmd: &str| {
            let mut buf = vec![0u8; EXPANDED_ARGS_LEN];
            let d = probe(env, cmd, &mut buf);
            let a = d.arg(0).unwrap();
            (
                a.program
                    .insns()
                    .iter()
                    .map(|i| i.map(|_| ()))
                    .collect::<Vec<_>>(),
                a.ty.base.name(),
            )
        };
        // A cast gives the operand the structure's type: the same program
        // and type as the typed parameter.
        assert_eq!(
            insns("p:g/e vfs_read (file)$arg1->f_inode->i_mode"),
            insns("p:g/e vfs_read file->f_inode->i_mode")
        );
        assert_eq!(insns("p:g/e vfs_read (file)file->f_inode->i_mode").1, "u16");
        // container_of: the operand points at f_pos inside a file.
        let (p, _) = insns("p:g/e vfs_read (file,f_pos)pos->f_inode");
        assert_eq!(
            p[1],
            FetchInsn::StMem {
                offset: off("file", &["f_inode"]) - off("file", &["f_pos"]),
                size: 8
            }
        );
        // $current, typed task_struct.
        let (p, ty) = insns("p:g/e vfs_read $current->pid");
        assert_eq!(ty, "s32");
        assert_eq!(
            &p[..3],
            &[
                FetchInsn::Current,
                FetchInsn::StMem {
                    offset: off("task_struct", &["pid"]),
                    size: 4
                },
                FetchInsn::End
            ]
        );
        assert_eq!(insns("p:g/e vfs_read $current").0[0], FetchInsn::Current);
        // this_cpu_read(@SYM) reads this CPU's copy; this_cpu_ptr(@SYM) is
        // its address, which a cast can type.
        let (p, ty) = insns("p:g/e vfs_read this_cpu_read(@cpu_number):u32");
        assert_eq!(ty, "u32");
        assert_eq!(
            &p[..5],
            &[
                FetchInsn::Symbol(()),
                FetchInsn::Imm(0),
                FetchInsn::CpuPtr,
                FetchInsn::StMem { offset: 0, size: 4 },
                FetchInsn::End
            ]
        );
        let (p, ty) = insns("p:g/e vfs_read (rq)this_cpu_ptr(@runqueues)->cpu");
        assert_eq!(ty, "s32");
        assert_eq!(
            p[3],
            FetchInsn::StMem {
                offset: off("rq", &["cpu"]),
                size: 4
            }
        );
        use ErrorCode as C;
        expect_err(
            env,
            "p:g/e vfs_read (nosuch)file->f_mode",
            Errno::EINVAL,
            C::NoPtrStrct,
            2,
            1,
        );
        expect_err(
            env,
            "p:g/e vfs_read (file)file",
            Errno::EINVAL,
            C::TypecastReqField,
            2,
            10,
        );
        expect_err(
            env,
            "p:g/e vfs_read (file,f_path->dentry)file->f_inode",
            Errno::EINVAL,
            C::TypecastBadArrow,
            2,
            12,
        );
        expect_err(
            env,
            "p:g/e vfs_read+4 (file)file->f_mode",
            Errno::EINVAL,
            C::NosupBtfarg,
            2,
            0,
        );
        expect_err(
            env,
            "p:g/e vfs_read $current.pid",
            Errno::EOPNOTSUPP,
            C::NosupDatArg,
            2,
            8,
        );
        expect_err(
            env,
            "p:g/e vfs_read (file)file->nosuch",
            Errno::ENOENT,
            C::NoBtfField,
            2,
            12,
        );
    });
}

/// Storage for what an event keeps.
struct Kept<T>(Vec<T>);

impl<T> rkprobes_host::pure::store::Store<T> for Kept<T> {
    fn try_push(&mut self, v: T) -> Result<(), rkprobes_host::pure::store::NoMemory> {
        self.0.push(v);
        Ok(())
    }

    fn items(&self) -> &[T] {
        &self.0
    }
}

/// `:enum`, past the kernel: a BTF enum recorded as the kernel records it
/// (s32) and printed by its enumerators' names, in the trace and through
/// `__print_symbolic()` in the format for perf and trace-cmd.
#[test]
fn enum_names() {
    use rkprobes_host::pure::probe_events::layout::EventLayout;
    use rkprobes_host::pure::probe_events::print::{write_print_fmt, write_record_args, NoSymbols};
    with_env(|env, text| {
        let mut buf = vec![0u8; EXPANDED_ARGS_LEN];
        let d = probe(env, "p:g/e hrtimer_start_range_ns mode:enum", &mut buf);
        let a = d.arg(0).unwrap();
        assert_eq!((a.ty.base.name(), a.ty.symbolic), ("s32", true));
        let layout = EventLayout::new(&d, Kept(Vec::new()), Kept(Vec::new())).unwrap();
        let layout = layout.get();
        // The enumerators, from bpftool's reading of the same BTF.
        let want: Vec<(i64, String)> = text
            .enum_values("hrtimer_mode")
            .into_iter()
            .map(|(n, v)| (v, n))
            .collect();
        assert!(want.len() >= 4, "{want:?}");
        let f = layout.fields().next().unwrap();
        let got: Vec<(i64, String)> = f
            .symbols()
            .map(|(v, n)| (v, String::from_utf8_lossy(n).into_owned()))
            .collect();
        assert_eq!(got, want);
        let mut out = Vec::new();
        struct W<'a>(&'a mut Vec<u8>);
        impl rkprobes_host::pure::probe_events::ByteWrite for W<'_> {
            fn write_bytes(&mut self, b: &[u8]) -> core::fmt::Result {
                self.0.extend_from_slice(b);
                Ok(())
            }
        }
        write_print_fmt(&mut W(&mut out), &layout).unwrap();
        let fmt = String::from_utf8(out).unwrap();
        assert!(
            fmt.starts_with("\"(%lx) mode=%s\", REC->__probe_ip, __print_symbolic(REC->mode, { "),
            "{fmt}"
        );
        assert!(
            fmt.contains(&format!("{{ {}, \"{}\" }}", want[1].0, want[1].1)),
            "{fmt}"
        );
        // A record holding the second enumerator's value, and one holding
        // none: the name, else the value in hex.
        for (v, expect) in [
            (want[1].0 as i32, want[1].1.clone()),
            (77, "0x4d".to_string()),
        ] {
            let mut rec = vec![0u8; 16 + 4];
            rec[16..20].copy_from_slice(&v.to_le_bytes());
            let mut out = Vec::new();
            write_record_args(&mut W(&mut out), &layout, &rec, 16, &NoSymbols).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), format!(" mode={expect}"));
        }
        // What is no enum cannot be `:enum`: the kernel's "Unknown type".
        expect_err(
            env,
            "p:g/e vfs_read count:enum",
            Errno::EINVAL,
            ErrorCode::BadType,
            2,
            6,
        );
    });
}
