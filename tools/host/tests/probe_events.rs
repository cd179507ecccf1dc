// SPDX-License-Identifier: GPL-2.0

//! kprobe_events commands: every case of the kernel's ftrace selftests
//! (tools/testing/selftests/ftrace/test.d/kprobe/*.tc) plus the corners the
//! kernel's parser code implies, errors checked with their error_log caret.

mod probe_events_support;

use probe_events_support::*;
use rkprobes_host::pure::probe_events::{
    error::ErrorCode as E,
    error_log::write_command_and_caret,
    parse::{split_symbol_offset, Argv},
    print::{write_arg_value, write_print_fmt, Element, NoSymbols},
    program::FetchInsn as I,
    regs::Register,
    ArgType, Bitfield, Command, DeleteCmd, Errno, FetchType, ParseError, ProbeLocation,
    SyntaxOnlyEnv, WriteLines, DEFAULT_GROUP,
};

/// `ftrace_errlog_check`: `^` marks where the caret must be.
#[track_caller]
fn check_error(marked: &str, code: E) {
    check_error_errno(marked, code, Errno::EINVAL);
}

#[track_caller]
fn check_error_errno(marked: &str, code: E, errno: Errno) {
    let pos = marked.find('^').expect("no caret in test case");
    let cmd = marked.replacen('^', "", 1);
    let err = match parse(&cmd) {
        Err(e) => e,
        Ok(c) => panic!("{cmd:?} was accepted: {c:?}"),
    };
    let log = err
        .log
        .unwrap_or_else(|| panic!("{cmd:?}: no error_log entry: {err:?}"));
    assert_eq!(log.code, code, "{cmd:?}: wrong error");
    assert_eq!(err.errno, errno, "{cmd:?}: wrong errno");
    let text = error_log(cmd.as_bytes(), &err);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(lines[0], format!("trace_kprobe: error: {}", code.text()));
    assert_eq!(lines[1], format!("  Command: {cmd}"));
    // The selftest's check: the caret line is 13 + pos bytes with "\n".
    assert_eq!(
        lines[2].len() + 1,
        13 + pos,
        "{cmd:?}: caret at wrong column\n{text}"
    );
    assert!(lines[2].ends_with('^') && lines[2].trim_start() == "^");
}

#[track_caller]
fn check_silent(cmd: &str, errno: Errno) {
    match parse(cmd) {
        Err(ParseError {
            errno: e,
            log: None,
            ..
        }) => assert_eq!(e, errno, "{cmd:?}"),
        other => panic!("{cmd:?}: expected silent {errno:?}, got {other:?}"),
    }
}

#[track_caller]
fn accept(cmd: &str) -> String {
    listing(&probe(cmd))
}

// kprobe_syntax_errors.tc, case by case.
#[test]
fn selftest_syntax_errors() {
    check_error("p^100 vfs_read", E::BadMaxactType);
    check_error("r^1a111 vfs_read", E::BadMaxact);
    check_error("r^100000 vfs_read", E::MaxactTooBig);

    check_error("p ^non_exist_func", E::BadProbeAddr);
    check_error("p ^hoge-fuga", E::BadProbeAddr);
    check_error("p ^hoge+1000-1000", E::BadProbeAddr);
    check_error("r ^vfs_read+10", E::BadRetprobe);
    check_error("p:^/bar vfs_read", E::NoGroupName);
    check_error(
        "p:^12345678901234567890123456789012345678901234567890123456789012345/bar vfs_read",
        E::GroupTooLong,
    );
    check_error("p:^foo.1/bar vfs_read", E::BadGroupName);
    check_error("p:^ vfs_read", E::NoEventName);
    check_error(
        "p:foo/^12345678901234567890123456789012345678901234567890123456789012345 vfs_read",
        E::EventTooLong,
    );
    check_error("p:foo/^bar.1 vfs_read", E::BadEventName);

    check_error("p vfs_read ^$retval", E::RetvalOnProbe);
    check_error("p vfs_read ^$stack10000", E::BadStackNum);
    check_error("p vfs_read ^$arg10000", E::BadArgNum);
    check_error("p vfs_read ^$none_var", E::BadVar);
    check_error("p vfs_read ^%none_reg", E::BadRegName);
    check_error("p vfs_read ^@12345678abcde", E::BadMemAddr);
    check_error("p vfs_read ^@+10", E::FileOnKprobe);
    check_error("p vfs_read arg1=\\^x", E::BadImm);
    check_error("p vfs_read arg1=\\\"abcd^", E::ImmstrNoClose);
    check_error("p vfs_read ^+0@0)", E::DerefNeedBrace);
    check_error("p vfs_read ^+0ab1(@0)", E::BadDerefOffs);
    check_error("p vfs_read +0(+0(@0^)", E::DerefOpenBrace);
    check_error("p vfs_read +0(^$comm)", E::CommCantDeref);
    check_error("p vfs_read ^&1", E::BadFetchArg);

    check_error(
        "p vfs_read +0(^+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(@0))))))))))))))",
        E::TooManyOps,
    );
    check_error("p vfs_read +0(@11):u8[10^", E::ArrayNoClose);
    check_error("p vfs_read +0(@11):u8[10]^a", E::BadArraySuffix);
    check_error("p vfs_read +0(@11):u8[^10a]", E::BadArrayNum);
    check_error("p vfs_read +0(@11):u8[^256]", E::ArrayTooBig);

    check_error("p vfs_read @11:^unknown_type", E::BadType);
    check_error("p vfs_read $stack0:^string", E::BadString);
    check_error("p vfs_read @11:^b10@a/16", E::BadBitfield);

    check_error(
        "p vfs_read ^arg123456789012345678901234567890=@11",
        E::ArgNameTooLong,
    );
    check_error("p vfs_read ^=@11", E::NoArgName);
    check_error("p vfs_read ^var.1=@11", E::BadArgName);
    check_error("p vfs_read var1=@11 ^var1=@12", E::UsedArgName);
    check_error_errno(
        "p vfs_read ^+1234567(+1234567(+1234567(+1234567(+1234567(+1234567(@1234))))))",
        E::ArgTooLong,
        Errno::E2BIG,
    );
    check_error("p vfs_read arg1=^", E::NoArgBody);

    check_error("p vfs_read^%hoge", E::BadAddrSuffix);
    check_error("p ^vfs_read+10%return", E::BadRetprobe);

    // This kernel has no BTF arguments.
    check_error_errno("p vfs_read ^$arg*", E::NosupBtfarg, Errno::EOPNOTSUPP);
}

// The BTF cases of kprobe_syntax_errors.tc, on a kernel without BTF.
#[test]
fn btf_forms_without_btf() {
    check_error("p vfs_read args=^$arg*", E::BadVar);
    check_error("p vfs_read +0(^$arg*)", E::BadVar);
    check_error("p vfs_read $arg* ^$arg*", E::DoubleArgs);
    check_error("r vfs_read $arg* ^$arg*", E::DoubleArgs);
    check_error("p vfs_read+20 ^$arg*", E::NofentryArgs);
    check_error("p vfs_read+20 ^$arg1", E::NofentryArgs);
    check_error("p vfs_read+20 a=^$arg1", E::NofentryArgs);
    check_error("p 0x1000 ^$arg1", E::NofentryArgs);
    // A kretprobe on an address is not "on return" for its fetchargs.
    check_error("r 0x1000 ^$retval", E::RetvalOnProbe);
    check_error("r 0x1000 ^$arg1", E::NofentryArgs);
    check_error("p vfs_read ^$argx", E::BadVar);
    check_error("p vfs_read ^$arg", E::BadVar);
    check_error_errno("p vfs_read $arg1 ^$arg*", E::NosupBtfarg, Errno::EOPNOTSUPP);
    // The kernel reports the last "$arg" argument, not the "$arg*" one.
    check_error_errno("p vfs_read $arg* ^$arg2", E::NosupBtfarg, Errno::EOPNOTSUPP);
    check_error_errno("p vfs_read ^hoge", E::NosupBtfarg, Errno::EOPNOTSUPP);
    check_error_errno(
        "p vfs_read a=^file->f_pos",
        E::NosupBtfarg,
        Errno::EOPNOTSUPP,
    );
    check_error("p vfs_read+8 ^hoge", E::NosupBtfarg);
    check_error("p 0x1000 ^_x", E::NosupBtfarg);
    // Without BTF these are accepted.
    accept("p kfree $arg10");
    accept("r kfree $retval");
    accept("r kfree $retval_whatever");
    accept("r vfs_read $arg1 $arg2:u32");
}

#[test]
fn header_errors() {
    check_silent("a:myprobeaccept inet_csk_accept", Errno::EINVAL);
    check_silent("p", Errno::EINVAL);
    check_silent("r:foo", Errno::EINVAL);
    check_silent("  -:foo", Errno::EINVAL);
    // A uprobe-looking target.
    check_silent("p /bin/sh:0x10", Errno::EINVAL);
    check_error("r^1000000:myprobeaccept inet_csk_accept", E::MaxactTooBig);
    check_error("r^10fuzz:myprobeaccept inet_csk_accept", E::BadMaxact);
    check_error("r^0 vfs_read", E::BadMaxact);
    check_error("r^4294967296 vfs_read", E::BadMaxact);
    check_error(
        "r^1000000000000000000000000000000000000000000000000000000000000000 vfs_read",
        E::BadMaxact,
    );
    check_error("p^1:foo vfs_read", E::BadMaxactType);
    check_error("p ^dup_sym", E::NonUniqSymbol);
    check_error("p ^ext4:no_such", E::BadProbeAddr);
    check_error("p ^-5", E::BadProbeAddr);
    check_error("p ^vfs_read+4294967296", E::BadProbeAddr);
    check_error("p vfs_read^%return%return", E::BadAddrSuffix);
    check_error("p:foo/^ba-r vfs_read", E::BadEventName);
    check_error("p:^x.y/bar vfs_read", E::BadGroupName);
    check_error("p:^x+y/bar vfs_read", E::BadGroupName);
    assert_eq!(accept("p:-x/bar vfs_read"), "p:-x/bar vfs_read");
    check_error("p:^.x vfs_read", E::NoGroupName);
    check_error("p:foo/^bar:baz vfs_read", E::BadEventName);
    check_error("p:^1abc vfs_read", E::BadEventName);
    check_error("r16:^ vfs_read", E::NoEventName);
    // The symbol is checked before the event name.
    check_error("p:bad.na.me ^nosuch", E::BadProbeAddr);
    check_silent(&format!("p vfs_read{}", " %ax".repeat(129)), Errno::E2BIG);
    accept(&format!("p vfs_read{}", " %ax".repeat(128)));
}

#[test]
fn empty_lines() {
    assert_eq!(parse(""), Ok(Command::Empty));
    assert_eq!(parse(" \t "), Ok(Command::Empty));
    assert_eq!(
        rkprobes_host::pure::probe_events::parse_command(b"\xa0 \xa0", &MockEnv),
        Ok(Command::Empty)
    );
    // U+00A0 in UTF-8 starts with 0xc2, a Latin-1 letter to the kernel.
    check_silent("\u{a0}", Errno::EINVAL);
}

#[test]
fn argument_errors() {
    check_error("p vfs_read ^$stackp", E::BadVar);
    check_error("p vfs_read ^$stack0+10", E::BadVar);
    check_error("p vfs_read ^$stack1-10", E::BadVar);
    check_error("p vfs_read ^$stack0x10", E::BadVar);
    check_error("p vfs_read ^$stack2049", E::BadStackNum);
    accept("p vfs_read $stack2048");
    check_error("p vfs_read ^$arg0", E::BadArgNum);
    check_error("p vfs_read ^$arg2049", E::BadArgNum);
    check_error("p vfs_read a=^$arg0", E::BadArgNum);
    check_error("p vfs_read ^%ex", E::BadRegName);
    check_error("p vfs_read ^%AX", E::BadRegName);
    check_error("p vfs_read ^%eax", E::BadRegName);
    check_error("p vfs_read ^%", E::BadRegName);
    check_error_errno(
        "p vfs_read ^@0x1ffffffffffffffff",
        E::BadMemAddr,
        Errno::ERANGE,
    );
    check_error("p vfs_read ^+(%ax)", E::BadDerefOffs);
    check_error("p vfs_read ^-(%ax)", E::BadDerefOffs);
    check_error("p vfs_read ^(%ax+10)", E::BadFetchArg);
    check_error("p vfs_read ^(%ax)", E::BadFetchArg);
    check_error("p vfs_read +10(^$comm)", E::CommCantDeref);
    check_error("p vfs_read +0(^\\\"x\")", E::CommCantDeref);
    check_error("p vfs_read +0(^)", E::BadFetchArg);
    check_error_errno(
        "p vfs_read varname=^varname2=%ax",
        E::NosupBtfarg,
        Errno::EOPNOTSUPP,
    );
    check_error("p vfs_read %ax:^:x16", E::BadType);
    check_error("p vfs_read %ax:^y16", E::BadType);
    check_error("p vfs_read x16:^%ax", E::BadType);
    check_error_errno("p vfs_read ^x16:u8", E::NosupBtfarg, Errno::EOPNOTSUPP);
    check_error("p vfs_read+1 ^x16:u8", E::NosupBtfarg);
    check_error("p vfs_read %ax:^", E::BadType);
    check_error("p vfs_read $comm:^x64", E::NeedStringType);
    check_error("p vfs_read $comm:^string[2]", E::NeedStringType);
    check_error("p vfs_read \\\"a\":^u8", E::NeedStringType);
    check_error("p vfs_read $stack:^string", E::BadString);
    check_error("p vfs_read %ax:^string", E::BadString);
    check_error("p vfs_read %ax:^ustring", E::BadString);
    check_error("p vfs_read %ax:^u8[2]", E::BadString);
    check_error("p vfs_read $comm:^symstr", E::NeedStringType);
    check_error("p vfs_read \\1:^symstr", E::BadSymstring);
    check_error("p vfs_read %ax:^b4@4/8[2]", E::BadString);
    accept("p vfs_read +0(%ax):b4@4/8[2]");
    check_error("p vfs_read %ax:^b0@0/8", E::BadBitfield);
    check_error("p vfs_read %ax:^b8@1/8", E::BadBitfield);
    check_error("p vfs_read %ax:^b4@4/12", E::BadType);
    check_error("p vfs_read %ax:^bar", E::BadType);
    check_error("p vfs_read %ax:u8[^0]", E::BadArrayNum);
    check_error("p vfs_read %ax:u8[^]", E::BadArrayNum);
    check_error("p vfs_read %ax:u8[^65]", E::ArrayTooBig);
    check_error("p vfs_read ^common_pid=%ax", E::UsedArgName);
    check_error("p vfs_read ^__probe_ip=%ax", E::UsedArgName);
    check_error("p vfs_read arg2=%ax ^%bx", E::UsedArgName);
    check_error("p vfs_read %ax ^arg1=%bx", E::UsedArgName);
    check_error("p vfs_read ^a-b=%ax", E::BadArgName);
    check_error_errno(
        "p vfs_read \\^0x1ffffffffffffffff",
        E::BadImm,
        Errno::ERANGE,
    );
    check_error("p vfs_read \\^", E::BadImm);
    check_error("p vfs_read \\^abc", E::BadImm);
    check_error("p vfs_read \\\"^", E::ImmstrNoClose);
    check_error("p vfs_read x=\\\"a:^b\":string", E::NeedStringType);
    check_error("p vfs_read \\\"a^", E::ImmstrNoClose);
    // Errors inside dereferences, at the kernel's positions.
    check_error("p vfs_read +0(+8(^%bad))", E::BadRegName);
    check_error("p vfs_read -8(^$foo)", E::BadVar);
    // "+u" is one byte wider than the kernel accounts for.
    check_error("p vfs_read +u8^(%bad)", E::BadRegName);
    check_error("p vfs_read -u8^(%bad)", E::BadRegName);
    check_error("p vfs_read +u8(+u^8(%bad))", E::BadRegName);
    // After a dereference, type errors are offset by the inner position.
    check_error("p vfs_read +0(%ax):b20^@0/16", E::BadBitfield);
    check_error("p vfs_read +0(%ax):^b4@4/16:x", E::BadType);
}

/// Without a caret, from code paths the selftests do not cover.
#[test]
fn errors_on_ops_and_event_size() {
    // A register and 14 dereferences fill the 16 slots with the end.
    let deep = "+0(".repeat(15) + "%ax" + &")".repeat(15);
    assert_eq!(deep.len(), 63);
    let cmd = format!("p vfs_read {deep}");
    let err = parse(&cmd).unwrap_err();
    assert_eq!(
        (err.errno, err.log.unwrap().code),
        (Errno::EINVAL, E::TooManyOps)
    );
    let deep = "+0(".repeat(14) + "%ax" + &")".repeat(14);
    let cmd = format!("p vfs_read {deep}");
    let a = probe(&cmd).arg(0).unwrap();
    assert_eq!(a.program.insns().len(), 16);
    // No slot left for the array loop: E2BIG.
    let deep = "+0(".repeat(13) + "@0" + &")".repeat(13) + ":u8[2]";
    let err = parse(&format!("p vfs_read {deep}")).unwrap_err();
    assert_eq!(
        (err.errno, err.log.unwrap().code),
        (Errno::E2BIG, E::TooManyOps)
    );
    let deep = "+0(".repeat(13) + "@0" + &")".repeat(13) + ":u8";
    accept(&format!("p vfs_read {deep}"));
    // 3072 bytes of fields at most.
    let many = " +0(%ax):u64[64]".repeat(6);
    accept(&format!("p vfs_read{many}"));
    let err = parse(&format!("p vfs_read{many} %ax:u8")).unwrap_err();
    assert_eq!(err.errno, Errno::E2BIG);
    assert_eq!(err.log.unwrap().code, E::EventTooBig);
    assert_eq!(err.log.unwrap().index, 8);
}

// kprobe_args_syntax.tc's good arguments, and its bad ones which the kernel
// really rejects.
#[test]
fn selftest_args_syntax() {
    for good in [
        "%ax",
        "@_sdata",
        "@0xffffffff82000000",
        "@_sdata+10",
        "@_sdata-10",
        "$stack",
        "$stack0",
        "$stack1",
        "$comm",
        "+0(%ax)",
        "-0(%ax)",
        "+10($stack)",
        "+0($stack1)",
        "+10(@_sdata-10)",
        "+0(+10(+20($stack)))",
        "varname=%ax",
        "%ax:x16",
        "$comm:string",
        "+0($stack):string",
    ] {
        accept(&format!("p vfs_read {good}"));
    }
    // @SYM text is only resolved at registration.
    for late in ["@", "@deaqswdefr", "@_sdata*10", "@_sdata/10", "@_sdata%10"] {
        accept(&format!("p vfs_read {late}"));
    }
    for bad in [
        "%ex",
        "$stackp",
        "$stack0+10",
        "$stack1-10",
        "+(%ax)",
        "(%ax+10)",
        "-(%ax)",
        "(%ax)",
        "+10($comm)",
        "varname=varname2=%ax",
        "%ax::x16",
        "%ax:y16",
        "x16:%ax",
        "$comm:x64",
        "$stack:string",
        "%ax:string",
    ] {
        assert!(parse(&format!("p vfs_read {bad}")).is_err(), "{bad}");
    }
    assert!(parse("p vfs_read $retval").is_err());
    accept("r vfs_read $retval");
    // Text after the last ')' is ignored by the kernel.
    assert_eq!(
        accept("p vfs_read +0(%ax)+10"),
        "p:rkprobes/p_vfs_read_0 vfs_read arg1=+0(%ax)+10"
    );
}

// kprobe_args_type.tc, kprobe_args_char.tc, kprobe_args_string.tc,
// kprobe_args_symbol.tc, kprobe_args_user.tc, kprobe_args_comm.tc.
#[test]
fn selftest_arg_types() {
    for w in [64, 32, 16, 8] {
        let l = accept(&format!(
            "p:testprobe kernel_clone $stack0:s{w} $stack0:u{w} $stack0:x{w} $stack0:b4@4/{w}"
        ));
        assert_eq!(
            l,
            format!(
                "p:rkprobes/testprobe kernel_clone arg1=$stack0:s{w} arg2=$stack0:u{w} \
                 arg3=$stack0:x{w} arg4=$stack0:b4@4/{w}"
            )
        );
    }
    let def = probe("p:testprobe tracefs_create_dir arg1=+0(%di):char");
    assert_eq!(def.arg(0).unwrap().ty.base, FetchType::Char);
    accept("p:testprobe tracefs_create_dir arg1=+0(%di):char[4]");
    accept("p:testprobe tracefs_create_dir arg1=+0(%di):string arg2=+0(%di):ustring");
    accept("p:testprobe tracefs_create_dir arg1=+0(%di):string[1]");
    check_error(
        "p:testprobe tracefs_create_dir arg1=%di:^string[1]",
        E::BadString,
    );
    accept("p:testprobe vfs_read arg1=%di:symbol arg2=%di:symstr");
    accept("p:testprobe vfs_read arg1=+0(%di):symstr arg2=$stack1:symstr");
    accept("r:testprobe vfs_read arg1=$retval:symstr");
    accept("p:myevent do_sys_open path=+0(+u0(%si)):string");
    accept("p:myevent do_sys_open path=+u0(%si):string path2=+u0(%si):u8");
    accept("p:testprobe kernel_clone comm=$comm");
    accept("p:testprobe kernel_clone comm=$COMM content=\\\"hello\"");
    accept("p:testprobe kernel_clone imm=\\1 imm2=\\-1 imm3=\\+0x10 imm4=\\0x7f:u8");
    accept("p:testprobe kernel_clone a=\\\"a\":string b=\\\"\"");
}

#[test]
fn fetch_programs() {
    let def = probe("p vfs_read +u8(%si):u16 -4(+u0(%di)):string @jiffies:x32 +0(%ax):string[2]");
    let progs: Vec<Vec<I<&[u8]>>> = def
        .args()
        .map(|a| a.unwrap().program.insns().to_vec())
        .collect();
    assert_eq!(
        progs[0],
        [
            I::Reg(Register::Si),
            I::StUMem { offset: 8, size: 2 },
            I::End
        ]
    );
    assert_eq!(
        progs[1],
        [
            I::Reg(Register::Di),
            I::UDeref(0),
            I::StString { offset: -4 },
            I::End
        ]
    );
    assert_eq!(
        progs[2],
        [
            I::Symbol(&b"jiffies"[..]),
            I::Imm(0),
            I::StMem { offset: 0, size: 4 },
            I::End
        ]
    );
    assert_eq!(
        progs[3],
        [
            I::Reg(Register::Ax),
            I::Deref(0),
            I::StString { offset: 0 },
            I::LoopArray(2),
            I::End
        ]
    );
    let def = probe("r vfs_read $arg2 $retval:b3@2/32 \\\"str\" $comm +0(%ax):ustring");
    let progs: Vec<Vec<I<&[u8]>>> = def
        .args()
        .map(|a| a.unwrap().program.insns().to_vec())
        .collect();
    assert_eq!(progs[0], [I::EntryArg(1), I::StRaw(8), I::End]);
    assert_eq!(
        progs[1],
        [
            I::Retval,
            I::StRaw(4),
            I::ModBitfield(Bitfield {
                basesize: 4,
                lshift: 27,
                rshift: 29
            }),
            I::End
        ]
    );
    assert_eq!(
        progs[2],
        [I::Data(&b"str"[..]), I::StString { offset: 0 }, I::End]
    );
    assert_eq!(progs[3], [I::Comm, I::StString { offset: 0 }, I::End]);
    assert_eq!(
        progs[4],
        [I::Reg(Register::Ax), I::StUString { offset: 0 }, I::End]
    );
    let a = def.arg(1).unwrap();
    assert_eq!(
        a.ty,
        ArgType {
            base: FetchType::U32,
            count: 0,
            bitfield: Some(Bitfield {
                basesize: 4,
                lshift: 27,
                rshift: 29
            }),
            symbolic: false,
        }
    );
    assert_eq!(def.size, 8 + 4 + 4 + 4 + 4);
    let offsets: Vec<u32> = def.args().map(|a| a.unwrap().offset).collect();
    assert_eq!(offsets, [0, 8, 12, 16, 20]);
    // The kernel keeps dereference offsets in an int.
    let def = probe("p vfs_read +0x100000004(%ax):u8 \\-1");
    assert_eq!(
        def.arg(0).unwrap().program.insns()[1],
        I::StMem { offset: 4, size: 1 }
    );
    assert_eq!(def.arg(1).unwrap().program.insns()[0], I::Imm(u64::MAX));
    // On function entry $argN reads the argument, after entry it is refused.
    let def = probe("p vfs_read $arg3");
    assert_eq!(def.arg(0).unwrap().program.insns()[0], I::Arg(2));
    // Odd but accepted by the kernel.
    accept("p vfs_read ++4(%ax)");
    accept("p vfs_read +-4(%ax)");
    accept("p vfs_read \\++5");
    accept("p vfs_read @0x10:b1@0/0x40");
}

// kprobe_eventname.tc, and generated names in general.
#[test]
fn event_names() {
    assert_eq!(accept("p vfs_read"), "p:rkprobes/p_vfs_read_0 vfs_read");
    assert_eq!(accept("p:event1 vfs_read"), "p:rkprobes/event1 vfs_read");
    assert_eq!(
        accept("p:kprobes2/event2 vfs_read"),
        "p:kprobes2/event2 vfs_read"
    );
    assert_eq!(
        accept("p foo.isra.0"),
        "p:rkprobes/p_foo_isra_0_0 foo.isra.0"
    );
    assert_eq!(
        accept("p foo.isra.0+8"),
        "p:rkprobes/p_foo_isra_0_8 foo.isra.0+8"
    );
    assert_eq!(accept("r vfs_read"), "r:rkprobes/r_vfs_read_0 vfs_read");
    assert_eq!(
        accept("p vfs_read%return"),
        "r:rkprobes/r_vfs_read_0 vfs_read"
    );
    assert_eq!(
        accept("p vfs_read+0%return"),
        "r:rkprobes/r_vfs_read_0 vfs_read"
    );
    assert_eq!(
        accept("p ext4:ext4_sync_fs"),
        "p:rkprobes/p_ext4_ext4_sync_fs_0 ext4:ext4_sync_fs"
    );
    assert_eq!(
        accept("p notloaded:some_func+4"),
        "p:rkprobes/p_notloaded_some_func_4 notloaded:some_func+4"
    );
    assert_eq!(
        accept("p 0xffffffff81000000"),
        "p:rkprobes/p_0xffffffff81000000 0xffffffff81000000"
    );
    assert_eq!(
        accept("p 4096"),
        "p:rkprobes/p_0x0000000000001000 0x0000000000001000"
    );
    assert_eq!(
        accept("p +4096"),
        "p:rkprobes/p_0x0000000000001000 0x0000000000001000"
    );
    assert_eq!(
        accept("r 0x1000"),
        "r:rkprobes/r_0x0000000000001000 0x0000000000001000"
    );
    // "GRP/" and "GRP." keep the generated name; '.' separates like '/'.
    assert_eq!(accept("p:grp/ vfs_read"), "p:grp/p_vfs_read_0 vfs_read");
    assert_eq!(accept("p:grp.ev vfs_read"), "p:grp/ev vfs_read");
    assert_eq!(accept("p:grp. vfs_read"), "p:grp/p_vfs_read_0 vfs_read");
    assert_eq!(accept("p:my-grp/ev vfs_read"), "p:my-grp/ev vfs_read");
    assert_eq!(accept("p:_/_ vfs_read"), "p:_/_ vfs_read");
    // Anything after the command letter that is not a digit or ':' is ignored.
    assert_eq!(accept("pfoo vfs_read"), "p:rkprobes/p_vfs_read_0 vfs_read");
    assert_eq!(accept("rfoo:ev vfs_read"), "r:rkprobes/ev vfs_read");
    // Lengths: 63 bytes is the longest name.
    let n63 = "e".repeat(63);
    accept(&format!("p:{n63}/{n63} vfs_read"));
    check_error(&format!("p:^{n63}e/x vfs_read"), E::GroupTooLong);
    check_error(&format!("p:^{n63}e vfs_read"), E::EventTooLong);
    // Generated names are cut at 63 bytes, like the kernel's snprintf.
    let long = "a".repeat(70);
    let cmd = format!("p notloaded:{long}");
    let def = probe(&cmd);
    assert_eq!(def.event.as_bytes().len(), 63);
    assert!(def.event.as_bytes().starts_with(b"p_notloaded_aaa"));
    // Latin-1 letters are letters to the kernel.
    let cmd = b"p:caf\xe9 vfs_read";
    match rkprobes_host::pure::probe_events::parse_command(cmd, &MockEnv) {
        Ok(Command::Probe(d)) => assert_eq!(d.event.as_bytes(), b"caf\xe9"),
        other => panic!("{other:?}"),
    }
    assert_eq!(DEFAULT_GROUP, "rkprobes");
}

// kretprobe_maxactive.tc and kretprobe_return_suffix.tc.
#[test]
fn maxactive() {
    assert_eq!(
        accept("r:myprobeaccept inet_csk_accept"),
        "r:rkprobes/myprobeaccept inet_csk_accept"
    );
    assert_eq!(
        accept("r10:myprobeaccept inet_csk_accept"),
        "r10:rkprobes/myprobeaccept inet_csk_accept"
    );
    assert_eq!(
        accept("r10 inet_csk_accept"),
        "r10:rkprobes/r_inet_csk_accept_0 inet_csk_accept"
    );
    assert_eq!(
        accept("r0x10 vfs_read"),
        "r16:rkprobes/r_vfs_read_0 vfs_read"
    );
    assert_eq!(accept("r010 vfs_read"), "r8:rkprobes/r_vfs_read_0 vfs_read");
    assert_eq!(
        accept("r4096 vfs_read"),
        "r4096:rkprobes/r_vfs_read_0 vfs_read"
    );
    check_error("r^4097 vfs_read", E::MaxactTooBig);
    assert_eq!(probe("r16 vfs_read").maxactive, 16);
    check_error("r ^vfs_read+8%return", E::BadRetprobe);
    // A retprobe on an unresolvable symbol is left to registration.
    accept("r notloaded:fn+8");
}

// probepoint.tc.
#[test]
fn probe_points() {
    accept("p:testprobe tracefs_create_dir");
    accept("p:testprobe 0xffffffff81234560");
    accept("p:testprobe tracefs_create_dir+160");
    check_error("p:testprobe ^tracefs_create_dir-160", E::BadProbeAddr);
    check_error(
        "p:testprobe ^tracefs_create_dir+0x100000000",
        E::BadProbeAddr,
    );
    assert_eq!(accept("p vfs_read-0"), "p:rkprobes/p_vfs_read_0 vfs_read");
    let def = probe("p:testprobe tracefs_create_dir+0x10");
    assert_eq!(
        def.location,
        ProbeLocation::Symbol {
            symbol: b"tracefs_create_dir",
            offset: 16
        }
    );
    let def = probe("p ext4:ext4_file_open+4");
    assert_eq!(def.location.module(), Some(&b"ext4"[..]));
    assert_eq!(def.location.symbol_name(), Some(&b"ext4_file_open"[..]));
    assert!(!def.context.on_entry);
    assert!(probe("p ext4:ext4_file_open").context.on_entry);
    assert_eq!(split_symbol_offset(b"sym-0x10"), Ok((&b"sym"[..], -16)));
    assert_eq!(split_symbol_offset(b"sym*10"), Ok((&b"sym*10"[..], 0)));
    assert_eq!(split_symbol_offset(b"sym+x"), Err(Errno::EINVAL));
}

// kprobe_args_vfs.tc: %pd and %pD.
#[test]
fn dentry_args() {
    assert_eq!(
        accept("p:testprobe dput name=$arg1:%pd"),
        "p:rkprobes/testprobe dput name=+0x0(+0x28($arg1)):string"
    );
    assert_eq!(
        accept("p:testprobe dput $arg1:%pd"),
        "p:rkprobes/testprobe dput arg1=+0x0(+0x28($arg1)):string"
    );
    assert_eq!(
        accept("p:testprobe vfs_read name=$arg1:%pD"),
        "p:rkprobes/testprobe vfs_read name=+0x0(+0x28(+0x48($arg1))):string"
    );
    let def = probe("p:testprobe vfs_read $arg1:%pD");
    assert_eq!(
        def.arg(0).unwrap().program.insns(),
        [
            I::Arg(0),
            I::Deref(0x48),
            I::Deref(0x28),
            I::StString { offset: 0 },
            I::End
        ]
    );
    // Errors point into the expanded text, which error_log shows.
    let cmd = "p vfs_read x=%bad:%pd";
    let err = parse(cmd).unwrap_err();
    assert_eq!(err.log.unwrap().code, E::BadRegName);
    assert_eq!(
        error_log(cmd.as_bytes(), &err),
        "trace_kprobe: error: Invalid register name\n  \
         Command: p vfs_read x=+0x0(+0x28(%bad)):string\n                                   ^\n"
    );
    // The expansion makes the body too long.
    let body = format!("+0({})", "+0(".repeat(8) + "%ax" + &")".repeat(8));
    assert!(body.len() < 64);
    let err = parse(&format!("p vfs_read {body}:%pD")).unwrap_err();
    assert_eq!(err.log.unwrap().code, E::ArgTooLong);
    // All expansions share 256 bytes, else -ENOMEM without a log.
    let many = " $arg1:%pD".repeat(7);
    accept(&format!("p vfs_read{many}"));
    let many = " $arg1:%pD".repeat(8);
    check_silent(&format!("p vfs_read{many}"), Errno::ENOMEM);
    // "%pd" not at the end is just an unknown type.
    check_error("p vfs_read $arg1:^%pd[2]", E::BadType);
}

// kprobe_multiprobe.tc and deletion.
#[test]
fn deletion() {
    let def1 = Kept::new(&probe("p:kprobes/testevent kernel_clone"));
    let def2 = Kept::new(&probe("p:kprobes/testevent do_exit"));
    fn del(s: &str) -> DeleteCmd<'_> {
        match parse(s) {
            Ok(Command::Delete(d)) => d,
            other => panic!("{s:?}: {other:?}"),
        }
    }
    let d = del("-:kprobes/testevent");
    assert!(def1.deleted_by(&d) && def2.deleted_by(&d));
    let d = del("-:kprobes/testevent kernel_clone");
    assert!(def1.deleted_by(&d) && !def2.deleted_by(&d));
    let d = del("-:testevent");
    assert_eq!(
        d,
        DeleteCmd {
            group: None,
            event: b"testevent",
            args: b""
        }
    );
    assert!(def1.deleted_by(&d));
    assert!(def1.deleted_by(&del("-:kprobes/")));
    assert!(!def1.deleted_by(&del("-:other/")));
    assert!(!def1.deleted_by(&del("-:/testevent")));
    assert!(!def1.deleted_by(&del("-:testevent2")));
    check_silent("-:", Errno::EINVAL);
    check_silent("-", Errno::EINVAL);
    check_silent("-foo", Errno::EINVAL);
    check_silent("-x:foo", Errno::EINVAL);

    // Arguments must match the listing, as a prefix of the probe's args.
    let def = Kept::new(&probe("p:ev vfs_read+8 a=%ax b=+0(%si):u32"));
    assert!(def.deleted_by(&del("-:ev vfs_read+8")));
    assert!(def.deleted_by(&del("-:ev vfs_read+8 a=%ax")));
    assert!(def.deleted_by(&del("-:ev vfs_read+8 a=%ax b=+0(%si):u32")));
    assert!(!def.deleted_by(&del("-:ev vfs_read+8 a=%ax b=+0(%si):u32 c=%bx")));
    assert!(!def.deleted_by(&del("-:ev vfs_read+0x8")));
    assert!(!def.deleted_by(&del("-:ev vfs_read+8 %ax")));
    assert!(!def.deleted_by(&del("-:ev vfs_read+8 a=%bx")));
    let def = Kept::new(&probe("p:ev 0x1000"));
    assert!(def.deleted_by(&del("-:ev 0x0000000000001000")));
    assert!(!def.deleted_by(&del("-:ev 0x1000")));
    let def = Kept::new(&probe("p:ev dput $arg1:%pd"));
    assert!(def.deleted_by(&del("-:ev dput arg1=+0x0(+0x28($arg1)):string")));
    assert!(!def.deleted_by(&del("-:ev dput arg1=$arg1:%pd")));
}

#[test]
fn appending_to_events() {
    let a = Kept::new(&probe("p:kprobes/testevent kernel_clone abcd=\\1"));
    assert_eq!(
        a.layout()
            .compare_arg_types(&probe("p:kprobes/testevent kernel_clone bcd=\\1")),
        Some(1)
    );
    assert_eq!(
        a.layout()
            .compare_arg_types(&probe("p:kprobes/testevent kernel_clone abcd=\\1:u8")),
        Some(1)
    );
    assert_eq!(
        a.layout()
            .compare_arg_types(&probe("p:kprobes/testevent kernel_clone abcd=\\\"foo\"")),
        Some(1)
    );
    assert_eq!(
        a.layout()
            .compare_arg_types(&probe("p:kprobes/testevent kernel_clone")),
        Some(1)
    );
    assert_eq!(
        a.layout()
            .compare_arg_types(&probe("p:kprobes/testevent do_exit abcd=\\2")),
        None
    );
    assert!(a
        .spec()
        .same_probe(&probe("p:kprobes/testevent kernel_clone abcd=\\1")));
    assert!(!a
        .spec()
        .same_probe(&probe("p:kprobes/testevent kernel_clone abcd=\\2")));
    assert!(!a
        .spec()
        .same_probe(&probe("p:kprobes/testevent do_exit abcd=\\1")));
    // Bitfields compare as their container type.
    let b = Kept::new(&probe("p:e vfs_read x=%ax:b4@4/32"));
    assert_eq!(
        b.layout()
            .compare_arg_types(&probe("p:e vfs_read x=%ax:u32")),
        None
    );
    // The kernel's errors for these cases, with their positions.
    let cmd = b"p:kprobes/testevent kernel_clone bcd=\\1";
    let e = ParseError::diff_arg_type(1);
    assert_eq!(
        error_log(cmd, &e),
        format!(
            "trace_kprobe: error: Argument type or name is different from existing probe\n  \
             Command: p:kprobes/testevent kernel_clone bcd=\\1\n{}^\n",
            " ".repeat(11 + 33)
        )
    );
    let e = ParseError::same_probe();
    assert!(error_log(cmd, &e).ends_with("\n           ^\n"));
    let e = ParseError::diff_probe_type();
    assert_eq!(e.errno, Errno::EEXIST);
    // Registration failures point at the probe point.
    let e = ParseError::registration(Errno::EILSEQ);
    assert_eq!(e.log.unwrap().code, E::BadInsnBndry);
    assert!(error_log(b"p vfs_read+3", &e).ends_with("\n             ^\n"));
    assert_eq!(
        ParseError::registration(Errno::ENOENT).log.unwrap().code,
        E::BadProbeAddr
    );
    assert_eq!(
        ParseError::registration(Errno::EINVAL).log.unwrap().code,
        E::FailRegProbe
    );
    assert_eq!(ParseError::registration(Errno::ENOMEM).log, None);
}

#[test]
fn caret_past_the_last_argument() {
    // An index at or past argc puts the caret after "last argument + space".
    let e = ParseError::diff_arg_type(2);
    let mut b = Buf::default();
    write_command_and_caret(&mut b, b"p:e vfs_read  \t a=%ax", &e, &MockEnv).unwrap();
    assert_eq!(
        b.text(),
        format!("  Command: p:e vfs_read a=%ax\n{}^\n", " ".repeat(11 + 19))
    );
}

#[test]
fn listing_forms() {
    assert_eq!(
        accept("p:myprobe do_sys_open dfd=%ax filename=%dx flags=%cx mode=+4($stack)"),
        "p:rkprobes/myprobe do_sys_open dfd=%ax filename=%dx flags=%cx mode=+4($stack)"
    );
    assert_eq!(
        accept("r:myretprobe do_sys_open $retval"),
        "r:rkprobes/myretprobe do_sys_open arg1=$retval"
    );
    assert_eq!(
        accept("p:testprobe kprobe_trace_selftest_target $stack $stack0 +0($stack)"),
        "p:rkprobes/testprobe kprobe_trace_selftest_target arg1=$stack arg2=$stack0 arg3=+0($stack)"
    );
    // White space of any kind separates arguments.
    assert_eq!(
        accept("  p:e\tvfs_read+0x10\u{b} \u{c}%ax  "),
        "p:rkprobes/e vfs_read+16 arg1=%ax"
    );
}

#[test]
fn print_formats() {
    let def = Kept::new(&probe(
        "p:e vfs_read a=%ax:u8 s=+0(%si):string arr=+0(%di):x16[3]",
    ));
    let mut b = Buf::default();
    write_print_fmt(&mut b, &def.layout()).unwrap();
    assert_eq!(
        b.text(),
        "\"(%lx) a=%u s=\\\"%s\\\" arr={0x%x,0x%x,0x%x}\", REC->__probe_ip, REC->a, \
         __get_str(s), REC->arr[0], REC->arr[1], REC->arr[2]"
    );
    let def = Kept::new(&probe("r:e vfs_read $retval:s32"));
    let mut b = Buf::default();
    write_print_fmt(&mut b, &def.layout()).unwrap();
    assert_eq!(
        b.text(),
        "\"(%lx <- %lx) arg1=%d\", REC->__probe_func, REC->__probe_ret_ip, REC->arg1"
    );
}

#[test]
fn trace_values() {
    let def = Kept::new(&probe(
        "p:e vfs_read arr=+0(%di):x16[3] s=+0(%si):string[2] c=%ax:char",
    ));
    let args: Vec<_> = def.layout().fields().collect();
    let mut b = Buf::default();
    write_arg_value(
        &mut b,
        &args[0],
        [
            Element::Scalar(&[1, 0]),
            Element::Scalar(&[0xff, 0xff]),
            Element::Scalar(&[0, 0x10]),
        ],
        &NoSymbols,
    )
    .unwrap();
    write_arg_value(
        &mut b,
        &args[1],
        [Element::Str(Some(b"a\0")), Element::Str(None)],
        &NoSymbols,
    )
    .unwrap();
    write_arg_value(&mut b, &args[2], [Element::Scalar(b"z")], &NoSymbols).unwrap();
    assert_eq!(b.text(), " arr={0x1,0xffff,0x1000} s={\"a\",(fault)} c='z'");
}

// Writes: lines, comments, limits.
#[test]
fn write_lines() {
    let lines = |buf: &[u8]| -> Vec<Result<Vec<u8>, ParseError>> {
        WriteLines::new(buf)
            .map(|l| l.map(|s| s.to_vec()))
            .collect()
    };
    assert_eq!(
        lines(b"p vfs_read\n# comment\n\nr do_exit # trailing\n-:foo"),
        vec![
            Ok(b"p vfs_read".to_vec()),
            Ok(b"".to_vec()),
            Ok(b"".to_vec()),
            Ok(b"r do_exit ".to_vec()),
            Ok(b"-:foo".to_vec()),
        ]
    );
    assert_eq!(lines(b""), vec![]);
    assert_eq!(lines(b"\n"), vec![Ok(vec![])]);
    // A NUL ends what the kernel can read: the rest fails.
    assert_eq!(
        lines(b"p a\np b\0c\np d"),
        vec![Ok(b"p a".to_vec()), Err(ParseError::silent(Errno::EINVAL))]
    );
    // 4094 bytes and a newline is the longest line; a last line without
    // newline may have 4095.
    let long = "x".repeat(4094);
    assert_eq!(lines(format!("{long}\n").as_bytes()).len(), 1);
    assert!(lines(format!("{long}\n").as_bytes())[0].is_ok());
    assert_eq!(
        lines(format!("{long}x\n").as_bytes()),
        vec![Err(ParseError::silent(Errno::EINVAL))]
    );
    assert!(lines(format!("{long}x").as_bytes())[0].is_ok());
    // Lines that straddle the kernel's 4 KiB chunks are re-read whole.
    let mut buf = Vec::new();
    for i in 0..500 {
        buf.extend_from_slice(format!("p:e{i} vfs_read %ax %bx\n").as_bytes());
    }
    let got = lines(&buf);
    assert_eq!(got.len(), 500);
    for (i, l) in got.iter().enumerate() {
        assert_eq!(
            l.as_ref().unwrap(),
            format!("p:e{i} vfs_read %ax %bx").as_bytes()
        );
    }
    let mut w = WriteLines::new(&buf);
    for _ in w.by_ref() {}
    assert_eq!(w.consumed(), buf.len());
    // A long line after a short one is re-read from its start, then fails.
    let mut buf = b"p vfs_read\n".to_vec();
    buf.extend_from_slice(&[b'y'; 5000]);
    assert_eq!(
        lines(&buf),
        vec![
            Ok(b"p vfs_read".to_vec()),
            Err(ParseError::silent(Errno::EINVAL))
        ]
    );
}

#[test]
fn argv_splitting() {
    let v: Vec<&[u8]> = Argv::new(b" a\tb\xa0c \r\n d ").collect();
    assert_eq!(v, [&b"a"[..], b"b", b"c", b"d"]);
}

#[test]
fn syntax_only_env() {
    use rkprobes_host::pure::probe_events::parse_command;
    assert!(matches!(
        parse_command(b"p anything_at_all $arg1", &SyntaxOnlyEnv),
        Ok(Command::Probe(_))
    ));
}

#[test]
fn every_error_code_has_kernel_text() {
    use rkprobes_host::pure::probe_events::ErrorCode;
    // 6.12's 79, in its order, then 7.3's for typecasts.
    assert_eq!(ErrorCode::ALL.len(), 84);
    assert_eq!(ErrorCode::ALL[78], ErrorCode::EventTooBig);
    assert_eq!(ErrorCode::BadMaxact.text(), "Invalid maxactive number");
    assert_eq!(
        ErrorCode::ImmstrNoClose.text(),
        "String is not closed with '\"'"
    );
    assert_eq!(ErrorCode::EventTooBig.ident(), "EVENT_TOO_BIG");
    assert_eq!(ErrorCode::ALL[9], ErrorCode::BadProbeAddr);
}

/// The parser runs on a 16 KiB kernel stack: keep what it returns small.
#[test]
fn stack_footprint() {
    use rkprobes_host::pure::probe_events::FetchArg;
    use std::mem::size_of;
    assert!(
        size_of::<FetchArg<'_>>() <= 512,
        "{}",
        size_of::<FetchArg<'_>>()
    );
    assert!(
        size_of::<Command<'_>>() <= 256,
        "{}",
        size_of::<Command<'_>>()
    );
    assert!(size_of::<ParseError>() <= 16);
}

#[test]
fn error_log_timestamp() {
    use rkprobes_host::pure::probe_events::error_log::write_error_timestamp;
    let mut b = Buf::default();
    write_error_timestamp(&mut b, 12_345_678_901).unwrap();
    assert_eq!(b.text(), "[   12.345678] ");
}
