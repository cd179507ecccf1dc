// SPDX-License-Identifier: GPL-2.0

//! Event probe (`e`) commands as 6.12's `dynamic_events` takes them
//! (`kernel/trace/trace_eprobe.c`), and their fetchargs run against
//! records of the attached event.
//!
//! The error cases are the kernel's own: `eprobes_syntax_errors.tc` is
//! read from the kernel source (`RKPROBES_KSRC`) and every `check_error`
//! in it is run against a kernel that has the events the script uses. The
//! caret must be where the script puts it; the message is 6.12's, which
//! differs from the script's comment in three cases (the script checks
//! positions only): [`expected_codes`] lists them with the reason.

mod btf_support;
mod probe_events_support;

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;

use btf_support::{test_btf, VecStore as IndexStore};
use probe_events_support::*;
use rkprobes_host::pure::btf::{Btf, Sections};
use rkprobes_host::pure::probe_events::{
    error::ErrorCode as E,
    exec::{data_size, event_field, store_args, ArgLayout, FetchEnv},
    layout::EPROBE_HEADER_SIZE,
    parse_dyn_command,
    print::{write_eprobe_record, write_print_fmt, NoSymbols},
    program::FetchInsn as I,
    Command, Errno, EventField, EventFields, EventFilter, FieldString, FuncEntry, ParseError,
    ProbeDef, ProbeEnv, ProbeKind, ProbeLocation, Register, SymbolCheck, SyntaxOnlyEnv,
    EPROBE_GROUP, MAX_TRACE_ARGS,
};

/// A field of the pretend kernel's events.
const fn f(offset: u32, size: u32, signed: bool, string: FieldString) -> EventField {
    EventField {
        offset,
        size,
        signed,
        string,
    }
}

use FieldString::{Dynamic, None as Num, Pointer, RelDynamic, Static};

/// The pretend kernel's trace events an event probe can attach to, with
/// their own fields as x86-64 6.12 lays them out (after the 8-byte common
/// header), and one of each string kind and number size in `test.fields`.
/// A trace event: its system, its name and its fields.
type Event = (
    &'static str,
    &'static str,
    &'static [(&'static str, EventField)],
);

const EVENTS: &[Event] = &[
    (
        "syscalls",
        "sys_enter_openat",
        &[
            ("__syscall_nr", f(8, 4, true, Num)),
            ("dfd", f(16, 8, false, Num)),
            ("filename", f(24, 8, false, Pointer)),
            ("flags", f(32, 8, false, Num)),
            ("mode", f(40, 8, false, Num)),
        ],
    ),
    (
        "syscalls",
        "sys_enter_chdir",
        &[
            ("__syscall_nr", f(8, 4, true, Num)),
            ("filename", f(16, 8, false, Pointer)),
        ],
    ),
    (
        "sched",
        "sched_switch",
        &[
            ("prev_comm", f(8, 16, false, Static)),
            ("prev_pid", f(24, 4, true, Num)),
            ("prev_prio", f(28, 4, true, Num)),
            ("prev_state", f(32, 8, true, Num)),
            ("next_comm", f(40, 16, false, Static)),
            ("next_pid", f(56, 4, true, Num)),
            ("next_prio", f(60, 4, true, Num)),
        ],
    ),
    (
        "test",
        "fields",
        &[
            ("dl", f(8, 4, false, Dynamic)),
            ("rl", f(12, 4, false, RelDynamic)),
            ("st", f(16, 8, false, Static)),
            ("ptr", f(24, 8, false, Pointer)),
            ("u1", f(32, 1, false, Num)),
            ("s1", f(33, 1, true, Num)),
            ("u2", f(34, 2, false, Num)),
            ("s2", f(36, 2, true, Num)),
            ("u4", f(40, 4, false, Num)),
            ("s4", f(44, 4, true, Num)),
            ("u8", f(48, 8, false, Num)),
            ("s8", f(56, 8, true, Num)),
            ("odd", f(64, 3, true, Num)),
            ("comm", f(72, 8, false, Num)),
        ],
    ),
];

/// The kernel for these tests: [`MockEnv`]'s symbols, [`EVENTS`], and a
/// filter parser that refuses a filter with the word `bad`; it keeps the
/// filters it was asked about.
#[derive(Default)]
struct Env<'b> {
    btf: Option<Btf<'b>>,
    filters: RefCell<Vec<String>>,
}

impl EventFields for Env<'_> {
    fn field(&self, system: &[u8], event: &[u8], name: &[u8]) -> Option<EventField> {
        let (_, _, fields) = EVENTS
            .iter()
            .find(|(s, e, _)| s.as_bytes() == system && e.as_bytes() == event)?;
        fields
            .iter()
            .find(|(n, _)| n.as_bytes() == name)
            .map(|&(_, f)| f)
    }
}

impl ProbeEnv for Env<'_> {
    fn check_symbol(&self, module: Option<&[u8]>, symbol: &[u8]) -> SymbolCheck {
        MockEnv.check_symbol(module, symbol)
    }

    fn func_entry(&self, symbol: &[u8], offset: u64) -> FuncEntry {
        MockEnv.func_entry(symbol, offset)
    }

    fn btf(&self, _func: &[u8]) -> Option<Btf<'_>> {
        self.btf
    }

    fn trace_event(&self, system: &[u8], event: &[u8]) -> Option<&dyn EventFields> {
        EVENTS
            .iter()
            .any(|(s, e, _)| s.as_bytes() == system && e.as_bytes() == event)
            .then_some(self as &dyn EventFields)
    }

    fn check_event_filter(
        &self,
        system: &[u8],
        event: &[u8],
        filter: &EventFilter<'_>,
    ) -> Result<(), Errno> {
        assert!(self.trace_event(system, event).is_some());
        let mut b = Buf::default();
        filter.write_to(&mut b).unwrap();
        assert_eq!(b.0.len(), filter.len());
        assert!(filter.eq_bytes(&b.0));
        let text = b.text();
        self.filters.borrow_mut().push(text.clone());
        if text.split(' ').any(|w| w == "bad") {
            Err(Errno::EINVAL)
        } else {
            Ok(())
        }
    }
}

fn env() -> Env<'static> {
    Env::default()
}

/// Runs `body` with the test kernel's BTF, which names a fetcharg
/// without `NAME=` by its text.
fn with_btf(body: impl FnOnce(&Env<'_>)) {
    let data = test_btf();
    let s = Sections::new(&data).unwrap();
    let mut idx = IndexStore(Vec::new());
    s.index(&mut idx).unwrap();
    body(&Env {
        btf: Some(Btf::new(s, &idx.0, None)),
        ..Env::default()
    });
}

#[track_caller]
fn def<'a>(env: &'a Env<'_>, cmd: &'a str) -> ProbeDef<'a> {
    match parse_dyn_command(cmd.as_bytes(), env) {
        Ok(Command::Probe(d)) => d,
        other => panic!("{cmd:?}: {other:?}"),
    }
}

#[track_caller]
fn error(env: &Env<'_>, cmd: &str) -> ParseError {
    match parse_dyn_command(cmd.as_bytes(), env) {
        Err(e) => e,
        Ok(c) => panic!("{cmd:?}: accepted as {c:?}"),
    }
}

/// The error_log entries of a failed command, each as the kernel writes
/// it (without the timestamp).
fn entries(env: &Env<'_>, cmd: &str, err: &ParseError) -> Vec<String> {
    err.entries()
        .map(|e| {
            let mut b = Buf::default();
            rkprobes_host::pure::probe_events::write_error_log(
                &mut b,
                ProbeKind::Eprobe.subsystem(),
                cmd.as_bytes(),
                &e,
                env,
            )
            .unwrap();
            b.text()
        })
        .collect()
}

/// Checks that `marked` (the command with `^` where the caret goes) fails
/// with `errno` and exactly the error_log entries `codes`, each with its
/// caret at the `^` unless `carets` says otherwise.
#[track_caller]
fn check_error_at(env: &Env<'_>, marked: &str, errno: Errno, codes: &[E], carets: &[usize]) {
    let pos = marked.find('^').expect("no caret");
    let cmd = marked.replacen('^', "", 1);
    let err = error(env, &cmd);
    assert_eq!(err.errno, errno, "{cmd:?}: {err:?}");
    let got = entries(env, &cmd, &err);
    let heads: Vec<String> = got
        .iter()
        .map(|e| e.lines().next().unwrap().to_string())
        .collect();
    let want: Vec<String> = codes
        .iter()
        .map(|c| format!("event_probe: error: {}", c.text()))
        .collect();
    assert_eq!(heads, want, "{cmd:?}");
    for (i, e) in got.iter().enumerate() {
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(lines.len(), 3, "{cmd:?}");
        // The kernel rebuilds the command from its words.
        let words: Vec<&str> = cmd.split_whitespace().collect();
        assert_eq!(
            lines[1],
            format!("  Command: {}", words.join(" ")),
            "{cmd:?}"
        );
        // ftrace_errlog_check: the caret line, newline included, is 13 +
        // pos bytes.
        let at = carets.get(i).copied().unwrap_or(pos);
        assert_eq!(lines[2].len() + 1, 13 + at, "{cmd:?}\n{e}");
        assert_eq!(lines[2].trim_start(), "^", "{cmd:?}");
    }
}

#[track_caller]
fn check_error(env: &Env<'_>, marked: &str, code: E) {
    check_error_at(env, marked, Errno::EINVAL, &[code], &[]);
}

#[track_caller]
fn check_silent(env: &Env<'_>, cmd: &str, errno: Errno) {
    let e = error(env, cmd);
    assert_eq!(
        (e.errno, e.log, e.preceding),
        (errno, None, None),
        "{cmd:?}"
    );
}

// The selftest script.

/// The `check_error` cases of `eprobes_syntax_errors.tc`: the command
/// with its caret and the code its comment names. Its one condition
/// (`[if <filter>]` in the README) holds on 6.12.
fn script_cases() -> Vec<(String, String)> {
    let ksrc = std::env::var("RKPROBES_KSRC").expect("RKPROBES_KSRC is not set (hostenv sets it)");
    let path = PathBuf::from(ksrc)
        .join("tools/testing/selftests/ftrace/test.d/dynevent/eprobes_syntax_errors.tc");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let mut cases = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("check_error '") else {
            assert!(!line.starts_with("check_error "), "{line}");
            continue;
        };
        let end = rest.find('\'').expect("unclosed quote");
        let code = rest[end + 1..]
            .trim()
            .strip_prefix('#')
            .expect("no code comment")
            .trim()
            .to_string();
        cases.push((rest[..end].to_string(), code));
    }
    cases
}

/// The error_log messages 6.12 writes for a case of the script, the last
/// one with the caret: the one the comment names, except where 6.12
/// differs from the comment.
fn expected_codes(marked: &str, comment: &str) -> Vec<E> {
    let named = *E::ALL
        .iter()
        .find(|e| e.ident() == comment)
        .unwrap_or_else(|| panic!("{marked:?}: unknown code {comment}"));
    let at_caret = &marked[marked.find('^').unwrap() + 1..];
    match named {
        // 6.12 logs BAD_ATTACH_ARG nowhere: `$foo`, no field of the event,
        // is an invalid $-variable (`parse_probe_vars()`).
        E::BadAttachArg if at_caret.starts_with('$') => vec![E::BadVar],
        // A word without `$` is a BTF parameter name, which an event probe
        // has none of (`parse_probe_arg()`): "BTF is not available".
        E::BadAttachArg | E::BadFetchArg => vec![E::NosupBtfarg],
        // `traceprobe_parse_event_name()` logs its own error first.
        E::NoEventInfo if at_caret.starts_with('.') => vec![E::NoGroupName, E::NoEventInfo],
        c => vec![c],
    }
}

#[test]
fn eprobe_syntax_errors() {
    let env = env();
    let cases = script_cases();
    // The 13 cases of 6.12's script.
    assert_eq!(cases.len(), 13);
    for (marked, comment) in &cases {
        let codes = expected_codes(marked, comment);
        let errno = if codes == [E::BadAttachEvent] {
            Errno::ENODEV
        } else {
            Errno::EINVAL
        };
        check_error_at(&env, marked, errno, &codes, &[]);
    }
}

#[test]
fn order_of_checks_and_errnos() {
    let env = env();
    // Too few words: every dynamic event type declines.
    check_silent(&env, "e", Errno::EINVAL);
    check_silent(&env, "e:foo/bar", Errno::EINVAL);
    // The event name of the first word comes first.
    check_error(&env, "e:^ no.such", E::NoEventName);
    check_error(&env, "e:foo/^b-r no.such", E::BadEventName);
    // SYSTEM.EVENT, after what its own check logged.
    check_error(&env, "e ^syscalls", E::NoEventInfo);
    check_error(&env, "e ^syscalls/", E::NoEventInfo);
    let long = "x".repeat(64);
    check_error_at(
        &env,
        &format!("e ^a/{long}"),
        Errno::EINVAL,
        &[E::EventTooLong, E::NoEventInfo],
        &[4, 2],
    );
    check_error_at(
        &env,
        "e ^1a.c",
        Errno::EINVAL,
        &[E::BadGroupName, E::NoEventInfo],
        &[],
    );
    // Then the count of fetchargs, before the event is looked up.
    let many: Vec<String> = (0..=MAX_TRACE_ARGS).map(|i| format!("a{i}=$dfd")).collect();
    let cmd = format!("e no.such {}", many.join(" "));
    check_silent(&env, &cmd, Errno::E2BIG);
    let cmd = format!("e syscalls.sys_enter_openat {} if x", many.join(" "));
    check_silent(&env, &cmd, Errno::E2BIG);
    // 128 are enough; what follows `if` does not count.
    let cmd = format!(
        "e syscalls.sys_enter_openat {} if a b c",
        many[..MAX_TRACE_ARGS].join(" ")
    );
    assert_eq!(def(&env, &cmd).nr_args, MAX_TRACE_ARGS);
    // Then the event: not one an event probe attaches to.
    check_error_at(
        &env,
        "e:foo/bar ^kprobes.myprobe %ax",
        Errno::ENODEV,
        &[E::BadAttachEvent],
        &[],
    );
    // Then the filter, before the fetchargs.
    check_error(
        &env,
        "e:foo/bar syscalls.sys_enter_openat %ax if ^",
        E::NoEpFilter,
    );
    check_silent(
        &env,
        "e:foo/bar syscalls.sys_enter_openat %ax if dfd == bad",
        Errno::EINVAL,
    );
    assert_eq!(env.filters.borrow().last().unwrap(), "dfd == bad");
    // Then each fetcharg, with its `@SYM` looked up right after it.
    check_error_at(
        &env,
        "e syscalls.sys_enter_openat ^%ax a=@no_such_symbol",
        Errno::EINVAL,
        &[E::BadVar, E::BadFetchArg],
        &[],
    );
    check_silent(
        &env,
        "e syscalls.sys_enter_openat a=@no_such_symbol %ax",
        Errno::ENOENT,
    );
    check_silent(
        &env,
        "e syscalls.sys_enter_openat a=+0(@no_such_symbol):u8",
        Errno::ENOENT,
    );
    def(&env, "e syscalls.sys_enter_openat a=@jiffies+8");
    // Whatever follows the `e` up to `:` is ignored.
    let d = def(&env, "e1:foo/bar syscalls.sys_enter_openat");
    assert_eq!((d.group, d.event.as_bytes()), (&b"foo"[..], &b"bar"[..]));
    let d = def(&env, "eprobe syscalls.sys_enter_openat");
    assert_eq!(d.event.as_bytes(), b"sys_enter_openat");
}

#[test]
fn fetchargs_of_event_probes() {
    let env = env();
    let e = |m: &str, c| check_error(&env, &format!("e syscalls.sys_enter_openat {m}"), c);
    // No registers, arguments, return value or stack.
    check_error_at(
        &env,
        "e syscalls.sys_enter_openat a=^%di",
        Errno::EINVAL,
        &[E::BadVar, E::BadFetchArg],
        &[],
    );
    e("a=^$arg1", E::BadVar);
    e("^$arg*", E::BadVar);
    e("a=^$retval", E::BadVar);
    e("a=^$stack", E::BadVar);
    e("a=^$stack0", E::BadVar);
    e("a=^$current", E::BadVar);
    e("a=^$common_pid", E::BadVar);
    e("a=^filename", E::NosupBtfarg);
    e("a=^@+10", E::FileOnKprobe);
    e("a=+0(^$comm)", E::CommCantDeref);
    // `%pd` is no type here: nothing is expanded.
    e("a=$filename:^%pd", E::BadType);
    // `$comm` takes any type, but an array only of a stored memory.
    e("a=$comm:^u32[2]", E::BadString);
    e("a=$dfd:^u8[4]", E::BadString);
    e("a=$dfd:^symbol[2]", E::BadString);
    // Names as usual.
    e("^$dfd=1", E::BadArgName);
    e("a=$dfd ^a=$flags", E::UsedArgName);
    e("^common_pid=$dfd", E::UsedArgName);
    e("a=^", E::NoArgBody);

    // The programs, their texts owned.
    let insns = |cmd: &str, i: usize| -> Vec<I<Vec<u8>>> {
        let d = def(&env, cmd);
        let a = d.arg(i).unwrap();
        a.program
            .insns()
            .iter()
            .map(|x| x.map(<[u8]>::to_vec))
            .collect()
    };
    let dfd = f(16, 8, false, Num);
    let filename = f(24, 8, false, Pointer);
    assert_eq!(
        insns("e syscalls.sys_enter_openat $dfd", 0),
        [I::TpArg(dfd), I::StRaw(8), I::End]
    );
    assert_eq!(
        insns("e syscalls.sys_enter_openat $dfd:s16", 0),
        [I::TpArg(dfd), I::StRaw(2), I::End]
    );
    assert_eq!(
        insns("e syscalls.sys_enter_openat $dfd:b4@2/8", 0),
        [
            I::TpArg(dfd),
            I::StRaw(1),
            I::ModBitfield(rkprobes_host::pure::probe_events::Bitfield {
                basesize: 1,
                lshift: 2,
                rshift: 4
            }),
            I::End
        ]
    );
    // A string field's value is the string's address: stored from it.
    assert_eq!(
        insns("e syscalls.sys_enter_openat $filename:string", 0),
        [I::TpArg(filename), I::StString { offset: 0 }, I::End]
    );
    assert_eq!(
        insns("e syscalls.sys_enter_openat $filename:ustring", 0),
        [I::TpArg(filename), I::StUString { offset: 0 }, I::End]
    );
    assert_eq!(
        insns("e syscalls.sys_enter_openat $filename:symstr", 0),
        [I::TpArg(filename), I::StSymStr { offset: 0 }, I::End]
    );
    assert_eq!(
        insns("e syscalls.sys_enter_openat +0($filename):ustring", 0),
        [I::TpArg(filename), I::StUString { offset: 0 }, I::End]
    );
    assert_eq!(
        insns("e syscalls.sys_enter_openat +8(+0($filename)):u32", 0),
        [
            I::TpArg(filename),
            I::Deref(0),
            I::StMem { offset: 8, size: 4 },
            I::End
        ]
    );
    assert_eq!(
        insns("e syscalls.sys_enter_openat $filename:string[2]", 0),
        [
            I::TpArg(filename),
            I::StString { offset: 0 },
            I::LoopArray(2),
            I::End
        ]
    );
    // `$comm` and immediates: any type, x64 by default.
    assert_eq!(
        insns("e syscalls.sys_enter_openat $comm", 0),
        [I::Comm, I::StRaw(8), I::End]
    );
    assert_eq!(
        insns("e syscalls.sys_enter_openat $COMM:string", 0),
        [I::Comm, I::StString { offset: 0 }, I::End]
    );
    assert_eq!(
        insns("e syscalls.sys_enter_openat \\\"ab\"", 0),
        [I::Data(b"ab".to_vec()), I::StRaw(8), I::End]
    );
    // A field named `comm` is the field.
    assert_eq!(
        insns("e test.fields $comm", 0),
        [I::TpArg(f(72, 8, false, Num)), I::StRaw(8), I::End]
    );
    // Record offsets and sizes as any probe's.
    let d = def(
        &env,
        "e test.fields a=$u1:u8 b=$dl:string c=$s8:s64 d=+0($st):u16[3]",
    );
    let offs: Vec<u32> = d.args().map(|a| a.unwrap().offset).collect();
    assert_eq!(offs, [0, 1, 5, 13]);
    assert_eq!(d.size, 19);
}

#[test]
fn arg_names_with_and_without_btf() {
    // Unnamed fetchargs are argN: no text of an accepted one is a name.
    let env = env();
    let d = def(
        &env,
        "e syscalls.sys_enter_openat $dfd +0($filename):ustring",
    );
    assert_eq!(
        listing(&d),
        "e:eprobes/sys_enter_openat syscalls.sys_enter_openat arg1=$dfd \
         arg2=+0($filename):ustring"
    );
    check_error(
        &env,
        "e syscalls.sys_enter_openat foo=$dfd ^foo",
        E::NosupBtfarg,
    );
    // With BTF arguments 6.12 names it by its text first, which is taken.
    with_btf(|env| {
        check_error(
            env,
            "e syscalls.sys_enter_openat foo=$dfd ^foo",
            E::UsedArgName,
        );
        let d = def(env, "e syscalls.sys_enter_openat $dfd");
        assert_eq!(d.arg(0).unwrap().name.as_bytes(), b"arg1");
    });
}

/// Commands and how `dynamic_events` lists them; each listing parses
/// back to the same probe.
#[test]
fn listing_round_trips() {
    let env = env();
    let cases = [
        (
            "e:eprobe_chdir syscalls/sys_enter_chdir file=+0($filename):ustring",
            "e:eprobes/eprobe_chdir syscalls.sys_enter_chdir file=+0($filename):ustring",
        ),
        (
            "e:mygroup/ syscalls/sys_enter_chdir file=+0($filename):ustring",
            "e:mygroup/sys_enter_chdir syscalls.sys_enter_chdir file=+0($filename):ustring",
        ),
        (
            "e sched.sched_switch",
            "e:eprobes/sched_switch sched.sched_switch",
        ),
        (
            " e:g/e \t sched/sched_switch  prev=$prev_comm:string n=$next_pid:s32 \
             c=$comm:string p=$prev_state:b2@1/64 x=\\\"hi\":string",
            "e:g/e sched.sched_switch prev=$prev_comm:string n=$next_pid:s32 \
             c=$comm:string p=$prev_state:b2@1/64 x=\\\"hi\":string",
        ),
        (
            "e:a/b syscalls.sys_enter_openat f=$filename:string[2] s=@jiffies:u32 i=\\-3:s8",
            "e:a/b syscalls.sys_enter_openat f=$filename:string[2] s=@jiffies:u32 i=\\-3:s8",
        ),
        // The filter is kept, but not listed (`eprobe_dyn_event_show()`).
        (
            "e:a/b syscalls.sys_enter_openat d=$dfd if dfd  ==  -100 &&\tflags != 0",
            "e:a/b syscalls.sys_enter_openat d=$dfd",
        ),
    ];
    for (cmd, want) in cases {
        let d = def(&env, cmd);
        assert_eq!(d.kind, ProbeKind::Eprobe);
        let kept = Kept::new(&d);
        let shown = listing(&d);
        assert_eq!(shown, want, "{cmd:?}");
        let again = def(&env, &shown);
        assert_eq!(listing(&again), shown);
        assert_eq!(again.location, d.location);
        assert_eq!(again.nr_args, d.nr_args);
        assert_eq!(again.size, d.size);
        for (a, b) in again.args().zip(d.args()) {
            let (a, b) = (a.unwrap(), b.unwrap());
            assert_eq!((a.name, a.ty, a.offset), (b.name, b.ty, b.offset));
            assert_eq!(a.program, b.program);
        }
        assert!(again.filter().is_none());
        assert_eq!(kept.spec().filter().is_some(), d.filter().is_some());
    }
    let d = def(
        &env,
        "e:a/b syscalls.sys_enter_openat d=$dfd if dfd  ==  -100 &&\tflags != 0",
    );
    let spec = Kept::new(&d);
    assert_eq!(
        spec.spec().filter(),
        Some(&b"dfd == -100 && flags != 0"[..])
    );
    assert_eq!(
        env.filters.borrow().last().unwrap(),
        "dfd == -100 && flags != 0"
    );
    // A fetcharg named `if` is none: the filter starts there.
    let d = def(&env, "e syscalls.sys_enter_openat $dfd if if");
    assert_eq!(d.nr_args, 1);
    assert!(d.filter().unwrap().eq_bytes(b"if"));
    let ProbeLocation::Event(ev) = d.location else {
        panic!("{:?}", d.location);
    };
    assert_eq!(
        (ev.system(), ev.event()),
        (&b"syscalls"[..], &b"sys_enter_openat"[..])
    );
}

#[test]
fn kinds_groups_and_events() {
    let env = env();
    assert_eq!(ProbeKind::Eprobe.subsystem(), "event_probe");
    assert_eq!(env.default_group_of(ProbeKind::Eprobe), b"eprobes");
    assert_eq!(EPROBE_GROUP, "eprobes");
    assert!(ProbeKind::Eprobe.same_event_type(ProbeKind::Eprobe));
    for k in [ProbeKind::Kprobe, ProbeKind::Fprobe, ProbeKind::Tprobe] {
        assert!(!ProbeKind::Eprobe.same_event_type(k));
        assert!(!k.same_event_type(ProbeKind::Eprobe));
        assert!(k.appends());
    }
    assert!(!ProbeKind::Eprobe.appends());
    // An event probe joins no event: its name is taken, whatever the
    // event's kind.
    let first = Kept::new(&def(&env, "e:g/e syscalls.sys_enter_openat a=$dfd"));
    let second = def(&env, "e:g/e syscalls.sys_enter_openat a=$dfd");
    assert_eq!(
        first.layout().check_append(&second),
        Err(ParseError::event_exists())
    );
    let kprobe = parse_dyn_command(b"p:g/e vfs_read", &env).unwrap();
    let Command::Probe(kprobe) = kprobe else {
        panic!()
    };
    assert_eq!(
        first.layout().check_append(&kprobe),
        Err(ParseError::event_exists())
    );
    assert_eq!(
        Kept::new(&kprobe).layout().check_append(&second),
        Err(ParseError::event_exists())
    );
    // SyntaxOnlyEnv knows every event and field.
    let d = parse_dyn_command(b"e a.b x=$anything:u32 if whatever", &SyntaxOnlyEnv).unwrap();
    assert!(matches!(d, Command::Probe(p) if p.kind == ProbeKind::Eprobe));
    // MockEnv, as any environment by default, knows none.
    let e = parse_dyn_command(b"e sched.sched_switch", &MockEnv).unwrap_err();
    assert_eq!(e.errno, Errno::ENODEV);
}

/// `-:` commands of `add_remove_eprobe.tc`, and the rest of
/// `eprobe_dyn_event_match()`.
#[test]
fn delete_matching() {
    let env = env();
    let opts = "file=+0($filename):ustring";
    let kept = Kept::new(&def(
        &env,
        &format!("e:eprobe_chdir syscalls/sys_enter_chdir {opts}"),
    ));
    let deletes = |cmd: &str| {
        let Ok(Command::Delete(d)) = parse_dyn_command(cmd.as_bytes(), &env) else {
            panic!("{cmd:?}")
        };
        kept.deleted_by(&d)
    };
    for cmd in [
        "-:eprobe_chdir".to_string(),
        "-:eprobes/eprobe_chdir".to_string(),
        "-:eprobes/eprobe_chdir syscalls/sys_enter_chdir".to_string(),
        "-:eprobe_chdir syscalls/sys_enter_chdir".to_string(),
        format!("-:eprobe_chdir syscalls/sys_enter_chdir {opts}"),
        format!("-:eprobes/eprobe_chdir syscalls/sys_enter_chdir {opts}"),
        "-:eprobes/".to_string(),
        "-:eprobe_chdir syscalls.sys_enter_chdir".to_string(),
        "!e:eprobes/eprobe_chdir".to_string(),
        // The listed line with `-` for `e`, as the script makes it.
        format!("-:eprobes/eprobe_chdir syscalls.sys_enter_chdir {opts}"),
    ] {
        assert!(deletes(&cmd), "{cmd:?}");
    }
    for cmd in [
        "-:other",
        "-:kprobes/eprobe_chdir",
        "-:eprobe_chdir syscalls",
        "-:eprobe_chdir syscalls/sys_enter_openat",
        "-:eprobe_chdir sys/sys_enter_chdir",
        "-:eprobe_chdir syscalls.sys_enter_chdir file=$filename",
        "-:eprobe_chdir syscalls.sys_enter_chdir file=+0($filename):ustring x=1",
    ] {
        assert!(!deletes(cmd), "{cmd:?}");
    }
    let kept = Kept::new(&def(&env, "e:mygroup/ syscalls/sys_enter_chdir"));
    let Ok(Command::Delete(d)) = parse_dyn_command(b"-:mygroup/", &env) else {
        panic!()
    };
    assert!(kept.deleted_by(&d));
}

#[test]
fn print_fmt_and_trace_line() {
    let env = env();
    let d = def(
        &env,
        "e:g/ev test.fields a=$u4:u32 s=$dl:string c=+0($st):s8[2]",
    );
    let kept = Kept::new(&d);
    let layout = kept.layout();
    assert_eq!(layout.header_size(), EPROBE_HEADER_SIZE);
    assert_eq!(EPROBE_HEADER_SIZE, 8);
    let mut b = Buf::default();
    write_print_fmt(&mut b, &layout).unwrap();
    assert_eq!(
        b.text(),
        "\" a=%u s=\\\"%s\\\" c={%d,%d}\", REC->a, __get_str(s), REC->c[0], REC->c[1]"
    );
    // A record: the 8-byte common header, the fields, the string.
    let mut rec = vec![0u8; 8];
    rec.extend_from_slice(&7u32.to_ne_bytes());
    rec.extend_from_slice(&((3u32 << 16) | 18).to_ne_bytes());
    rec.extend_from_slice(&[0xff, 2]);
    rec.extend_from_slice(b"hi\0");
    let mut b = Buf::default();
    write_eprobe_record(
        &mut b,
        b"ev",
        Some((b"test", b"fields")),
        77,
        &layout,
        &rec,
        &NoSymbols,
    )
    .unwrap();
    assert_eq!(b.text(), "ev: (test.fields) a=7 s=\"hi\" c={-1,2}\n");
    let mut b = Buf::default();
    write_eprobe_record(&mut b, b"ev", None, 77, &layout, &rec[..10], &NoSymbols).unwrap();
    assert_eq!(
        b.text(),
        "ev: (77) a=<OVERFLOW> s=<OVERFLOW> c={<OVERFLOW>,<OVERFLOW>}\n"
    );
}

// Running programs against records.

/// Where the attached event's record is, and a user string.
const REC_ADDR: u64 = 0xffff_8880_0010_0000;
const USER_STR: u64 = 0x7fff_0000_1000;
const KERNEL_STR: u64 = 0xffff_8880_0020_0000;

/// A hit of an event probe: the attached event's record at [`REC_ADDR`],
/// a kernel string at [`KERNEL_STR`] and a user one at [`USER_STR`].
struct Hit {
    rec: Vec<u8>,
    mem: HashMap<u64, u8>,
}

impl Hit {
    fn new(rec: Vec<u8>) -> Hit {
        let mut mem = HashMap::new();
        for (i, &c) in rec.iter().enumerate() {
            mem.insert(REC_ADDR + i as u64, c);
        }
        for (base, s) in [
            (KERNEL_STR, &b"/etc/kernel\0"[..]),
            (USER_STR, b"/home/user\0"),
        ] {
            for (i, &c) in s.iter().enumerate() {
                mem.insert(base + i as u64, c);
            }
        }
        Hit { rec, mem }
    }

    fn copy(&self, addr: u64, buf: &mut [u8]) -> bool {
        for (i, b) in buf.iter_mut().enumerate() {
            match self.mem.get(&(addr + i as u64)) {
                Some(&c) => *b = c,
                None => return false,
            }
        }
        true
    }

    fn strncpy(&self, addr: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        for (i, b) in buf.iter_mut().enumerate() {
            let Some(&c) = self.mem.get(&(addr + i as u64)) else {
                return Err(Errno::EFAULT);
            };
            *b = c;
            if c == 0 {
                return Ok(i + 1);
            }
        }
        if let Some(last) = buf.last_mut() {
            *last = 0;
        }
        Ok(buf.len())
    }
}

impl FetchEnv for Hit {
    fn register(&self, _r: Register) -> u64 {
        panic!("an event probe reads no register")
    }
    fn stack_nth(&self, _n: u32) -> u64 {
        panic!("an event probe reads no stack")
    }
    fn stack_pointer(&self) -> u64 {
        panic!("an event probe reads no stack")
    }
    fn return_value(&self) -> u64 {
        panic!("an event probe has no return value")
    }
    fn argument(&self, _n: u32) -> u64 {
        panic!("an event probe has no arguments")
    }
    fn entry_argument(&self, _n: u32) -> u64 {
        panic!("an event probe has no arguments")
    }
    fn comm_address(&self) -> u64 {
        KERNEL_STR
    }
    fn current_task(&self) -> u64 {
        0
    }
    fn this_cpu_ptr(&self, addr: u64) -> u64 {
        addr
    }
    fn read_kernel(&self, addr: u64, buf: &mut [u8]) -> bool {
        addr >= self.task_size() && self.copy(addr, buf)
    }
    fn read_user(&self, addr: u64, buf: &mut [u8]) -> bool {
        addr < self.task_size() && self.copy(addr, buf)
    }
    fn strncpy_kernel(&self, addr: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.strncpy(addr, buf)
    }
    fn strncpy_user(&self, addr: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.strncpy(addr, buf)
    }
    fn strnlen_user(&self, addr: u64, max: usize) -> Result<usize, Errno> {
        let mut buf = vec![0u8; max];
        self.strncpy(addr, &mut buf)
    }
    fn symbol_string(&self, addr: u64, room: &mut [u8]) -> usize {
        let s = format!("sym+{:#x}/0x10", addr & 0xf);
        let n = s.len().min(room.len().saturating_sub(1));
        room[..n].copy_from_slice(&s.as_bytes()[..n]);
        if let Some(z) = room.get_mut(n) {
            *z = 0;
        }
        s.len()
    }
    fn task_size(&self) -> u64 {
        0x7fff_ffff_f000
    }
    fn record(&self) -> &[u8] {
        &self.rec
    }
    fn record_address(&self) -> u64 {
        REC_ADDR
    }
}

/// A record of `test.fields`: every field set, `__data_loc` and
/// `__rel_loc` strings after the fixed part.
fn fields_record() -> Vec<u8> {
    let mut r = vec![0u8; 80];
    let put = |r: &mut Vec<u8>, at: usize, b: &[u8]| r[at..at + b.len()].copy_from_slice(b);
    // dl: "dynamic" at 80.
    put(&mut r, 8, &((8u32 << 16) | 80).to_ne_bytes());
    // rl: "relative" at 88, 76 bytes after the field's start (12).
    put(&mut r, 12, &((9u32 << 16) | 76).to_ne_bytes());
    put(&mut r, 16, b"static\0\0");
    put(&mut r, 24, &USER_STR.to_ne_bytes());
    put(&mut r, 32, &[0xfe, 0xfe]);
    put(&mut r, 34, &0xfffeu16.to_ne_bytes());
    put(&mut r, 36, &0xfffeu16.to_ne_bytes());
    put(&mut r, 40, &0xffff_fffeu32.to_ne_bytes());
    put(&mut r, 44, &0xffff_fffeu32.to_ne_bytes());
    put(&mut r, 48, &u64::MAX.to_ne_bytes());
    put(&mut r, 56, &(-2i64).to_ne_bytes());
    put(
        &mut r,
        64,
        &[0xfe, 0xff, 0x7f, 0x11, 0x22, 0x33, 0x44, 0x55],
    );
    put(&mut r, 72, &KERNEL_STR.to_ne_bytes());
    r.extend_from_slice(b"dynamic\0relative\0");
    r
}

#[test]
fn event_field_reads_each_kind_and_size() {
    let hit = Hit::new(fields_record());
    let env = env();
    let field = |name: &str| env.field(b"test", b"fields", name.as_bytes()).unwrap();
    let v = |name: &str| event_field(&field(name), &hit);
    assert_eq!(v("dl"), REC_ADDR + 80);
    // From the field's start, as `get_event_field()` computes it.
    assert_eq!(v("rl"), REC_ADDR + 12 + 76);
    assert_eq!(v("st"), REC_ADDR + 16);
    assert_eq!(v("ptr"), USER_STR);
    assert_eq!(v("u1"), 0xfe);
    assert_eq!(v("s1") as i64, -2);
    assert_eq!(v("u2"), 0xfffe);
    assert_eq!(v("s2") as i64, -2);
    assert_eq!(v("u4"), 0xffff_fffe);
    assert_eq!(v("s4") as i64, -2);
    assert_eq!(v("u8"), u64::MAX);
    assert_eq!(v("s8") as i64, -2);
    // Any other size reads a `long`.
    assert_eq!(v("odd"), 0x5544_3322_117f_fffe);
    // A record too short for the field reads 0.
    let short = Hit::new(vec![0xffu8; 44]);
    assert_eq!(event_field(&field("u8"), &short), 0);
    assert_eq!(event_field(&field("dl"), &Hit::new(vec![0u8; 10])), 0);
    assert_eq!(event_field(&field("u4"), &short), 0xffff_ffff);
}

/// Each fetcharg of `d`: its program (text resolved to 0), its field's
/// offset and whether it is dynamic.
fn programs(d: &ProbeDef<'_>) -> Vec<(Vec<I<u64>>, u32, bool)> {
    d.args()
        .map(|a| {
            let a = a.unwrap();
            let code = a
                .program
                .insns()
                .iter()
                .map(|i| match *i {
                    I::Data(_) => panic!("no immediate strings here"),
                    other => other.map(|_| 0),
                })
                .collect();
            (code, a.offset, a.ty.base.is_string())
        })
        .collect()
}

/// The argument layouts of [`programs`]' programs.
fn layouts(programs: &[(Vec<I<u64>>, u32, bool)]) -> Vec<ArgLayout<'_>> {
    programs
        .iter()
        .map(|(code, offset, dynamic)| ArgLayout {
            code,
            offset: *offset,
            dynamic: *dynamic,
        })
        .collect()
}

/// Runs `cmd`'s programs against the record of `hit` and prints what the
/// event probe's record holds.
fn run(env: &Env<'_>, cmd: &str, hit: &Hit) -> String {
    let d = def(env, cmd);
    let programs = programs(&d);
    let args = layouts(&programs);
    let hdr = EPROBE_HEADER_SIZE;
    let fixed = d.size as usize;
    let dsize = data_size(&args, hit);
    let mut rec = vec![0u8; hdr + fixed + dsize];
    store_args(&args, hit, &mut rec, hdr, fixed, dsize);
    let kept = Kept::new(&d);
    let mut b = Buf::default();
    write_eprobe_record(
        &mut b,
        d.event.as_bytes(),
        Some((b"test", b"fields")),
        0,
        &kept.layout(),
        &rec,
        &NoSymbols,
    )
    .unwrap();
    b.text()
}

#[test]
fn event_probe_records() {
    let env = env();
    let hit = Hit::new(fields_record());
    let cases = [
        (
            "a=$dl:string b=$rl:string c=$st:string d=$ptr:ustring e=$ptr:string",
            "a=\"dynamic\" b=\"relative\" c=\"static\" d=\"/home/user\" e=\"/home/user\"",
        ),
        (
            "$u1:u8 $s1:s8 $u2:u16 $s2:s16 $u4:u32 $s4:s32 $u8:u64 $s8:s64",
            "arg1=254 arg2=-2 arg3=65534 arg4=-2 arg5=4294967294 arg6=-2 \
             arg7=18446744073709551615 arg8=-2",
        ),
        // Default x64: a signed field sign-extended, a string's address.
        (
            "a=$s1 b=$u1 c=$st",
            "a=0xfffffffffffffffe b=0xfe c=0xffff888000100010",
        ),
        // Through the value: memory at the field's address or value.
        (
            "a=+0($comm):string b=+1($ptr):ustring c=+2($st):u8 d=$comm:x16",
            "a=\"/etc/kernel\" b=\"home/user\" c=97 d=0x0",
        ),
        (
            "c=$comm:string k=+0($comm):u8[2] bf=$u1:b3@1/8",
            "c=\"/etc/kernel\" k={47,101} bf=7",
        ),
        ("s=$dl:symstr", "s=\"sym+0x0/0x10\""),
    ];
    for (args, want) in cases {
        let cmd = format!("e:p/ev test.fields {args}");
        assert_eq!(
            run(&env, &cmd, &hit),
            format!("ev: (test.fields) {want}\n"),
            "{cmd:?}"
        );
    }
    // The field `comm` of `test.fields` holds the kernel string's address.
    assert_eq!(
        run(&env, "e:p/ev test.fields c=$comm", &hit),
        format!("ev: (test.fields) c={KERNEL_STR:#x}\n")
    );
    // A `__data_loc` word pointing past the record: an unreadable string.
    let mut rec = fields_record();
    rec[8..12].copy_from_slice(&((8u32 << 16) | 0x4000).to_ne_bytes());
    assert_eq!(
        run(&env, "e:p/ev test.fields a=$dl:string", &Hit::new(rec)),
        "ev: (test.fields) a=(fault)\n"
    );
}

/// An event probe with strings is staged at a hit (the module stages every
/// probe that reads a kernel string): the staged environment reads the
/// same record, so the fields read the same.
#[test]
fn staged_hit_reads_the_record() {
    use rkprobes_host::pure::probe_events::stage::Staged;
    let env = env();
    let hit = Hit::new(fields_record());
    let d = def(
        &env,
        "e:p/ev test.fields a=$dl:string c=$st:string n=$u4:u32 p=$ptr:ustring",
    );
    let programs = programs(&d);
    let args = layouts(&programs);
    let (hdr, fixed) = (EPROBE_HEADER_SIZE, d.size as usize);
    let plain_dsize = data_size(&args, &hit);
    let mut plain = vec![0u8; hdr + fixed + plain_dsize];
    store_args(&args, &hit, &mut plain, hdr, fixed, plain_dsize);
    let mut scratch = vec![0u8; 4096];
    let staged = Staged::new(&hit, Some(&mut scratch));
    let dsize = data_size(&args, &staged);
    let mut rec = vec![0u8; hdr + fixed + dsize];
    staged.rewind();
    store_args(&args, &staged, &mut rec, hdr, fixed, dsize);
    assert_eq!((dsize, &rec), (plain_dsize, &plain));
    assert!(plain_dsize > 0, "the strings were read");
}
