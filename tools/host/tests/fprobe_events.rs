// SPDX-License-Identifier: GPL-2.0

//! fprobe (`f`) and tracepoint probe (`t`) commands as 6.12's
//! `dynamic_events` takes them (`kernel/trace/trace_fprobe.c`).
//!
//! The error cases are the kernel's own: `fprobe_syntax_errors.tc` and
//! `tprobe_syntax_errors.tc` are read from the kernel source
//! (`RKPROBES_KSRC`) and every `check_error` in them is run, with the
//! state the script's `echo ... > dynamic_events` lines set up, on a
//! kernel with BTF arguments (the test kernel's BTF, `RKPROBES_VMLINUX`)
//! and on one without, each taking the branches of the script the
//! kernel's README selects. The caret must be where the script puts it,
//! checked as `ftrace_errlog_check` checks it; the message is the one its
//! comment names, but where 6.12 says something else (the scripts check
//! positions only), which [`expected_codes`] lists with the reason.

mod btf_support;
mod probe_events_support;

use btf_support::{test_btf, VecStore as IndexStore};
use probe_events_support::*;
use rkprobes_host::pure::btf::{Btf, Sections};
use rkprobes_host::pure::probe_events::{
    error::ErrorCode as E,
    fprobe::{glob_match, FilterMatch},
    parse_command, parse_dyn_command_in,
    print::write_print_fmt,
    program::FetchInsn as I,
    Command, Errno, FuncEntry, FunctionFilter, ParseError, ProbeDef, ProbeEnv, ProbeKind,
    ProbeLocation, SymbolCheck, SyntaxOnlyEnv, TracepointCheck, EXPANDED_ARGS_LEN, FPROBE_GROUP,
    TPROBE_GROUP,
};
use std::path::PathBuf;

/// [`MockEnv`]'s kernel, with or without BTF.
struct Env<'a> {
    btf: Option<Btf<'a>>,
}

impl ProbeEnv for Env<'_> {
    fn check_symbol(&self, module: Option<&[u8]>, symbol: &[u8]) -> SymbolCheck {
        MockEnv.check_symbol(module, symbol)
    }

    fn func_entry(&self, symbol: &[u8], offset: u64) -> FuncEntry {
        MockEnv.func_entry(symbol, offset)
    }

    fn tracepoint(&self, name: &[u8]) -> TracepointCheck {
        tracepoint(name)
    }

    fn btf(&self, _func: &[u8]) -> Option<Btf<'_>> {
        self.btf
    }
}

const NO_BTF: Env<'static> = Env { btf: None };

/// Runs `body` with the test kernel's BTF.
fn with_btf(body: impl FnOnce(&Env<'_>)) {
    let data = test_btf();
    let s = Sections::new(&data).unwrap();
    let mut idx = IndexStore(Vec::new());
    s.index(&mut idx).unwrap();
    body(&Env {
        btf: Some(Btf::new(s, &idx.0, None)),
    });
}

/// Parses `cmd` as `dynamic_events` does. The room for `$arg*` is leaked
/// (a definition borrows it, and a test parses a few dozen commands), as
/// are the command texts the tests format.
fn dyn_parse<'a>(env: &'a Env<'a>, cmd: &'a str) -> Result<Command<'a>, ParseError> {
    let buf = Box::leak(vec![0u8; EXPANDED_ARGS_LEN].into_boxed_slice());
    parse_dyn_command_in(cmd.as_bytes(), env, buf)
}

#[track_caller]
fn def<'a>(env: &'a Env<'a>, cmd: &'a str) -> ProbeDef<'a> {
    match dyn_parse(env, cmd) {
        Ok(Command::Probe(d)) => d,
        other => panic!("{cmd:?}: {other:?}"),
    }
}

/// `cat dynamic_events` for the probe `cmd` makes, without the newline.
#[track_caller]
fn listed(env: &Env<'_>, cmd: &str) -> String {
    listing(&def(env, cmd))
}

/// The error_log entries of a failed command, each as the kernel writes
/// it (without the timestamp).
fn error_log_entries(env: &Env<'_>, cmd: &str, err: &ParseError) -> Vec<String> {
    let kind = ProbeKind::of_command(cmd.as_bytes()).unwrap();
    err.entries()
        .map(|e| {
            let mut b = Buf::default();
            rkprobes_host::pure::probe_events::write_error_log(
                &mut b,
                kind.subsystem(),
                cmd.as_bytes(),
                &e,
                env,
            )
            .unwrap();
            b.text()
        })
        .collect()
}

/// The errno 6.12 fails with for an error_log message of these commands.
fn errno_of(code: E) -> Errno {
    match code {
        E::ArgTooLong => Errno::E2BIG,
        E::NoBtfarg | E::NoRetval | E::NoBtfField | E::NoBtfEntry => Errno::ENOENT,
        E::NosupBtfarg | E::NosupDatArg => Errno::EOPNOTSUPP,
        E::DiffProbeType | E::DiffArgType | E::SameProbe | E::EventExist => Errno::EEXIST,
        _ => Errno::EINVAL,
    }
}

/// What the tests' `dynamic_events` holds, and what writing a command to
/// it does, as the module is to do it: parse, check against an event of
/// the same name ([`Layout::check_append`], [`Spec::same_probe`]), then
/// register, where an fprobe's symbol must match a function as the ftrace
/// filter it is ([`FunctionFilter`]).
#[derive(Default)]
struct DynEvents {
    probes: Vec<Kept>,
}

impl DynEvents {
    fn write(&mut self, env: &Env<'_>, cmd: &str) -> Result<(), ParseError> {
        let mut buf = vec![0u8; EXPANDED_ARGS_LEN];
        let def = match parse_dyn_command_in(cmd.as_bytes(), env, &mut buf)? {
            Command::Probe(d) => d,
            other => panic!("{cmd:?}: {other:?}"),
        };
        let same_name = |k: &&Kept| k.group == def.group && k.event == def.event.as_bytes();
        if let Some(first) = self.probes.iter().find(same_name) {
            first.layout().check_append(&def)?;
            if self
                .probes
                .iter()
                .filter(same_name)
                .any(|k| k.spec().same_probe(&def))
            {
                return Err(ParseError::same_probe());
            }
        }
        register(&def)?;
        self.probes.push(Kept::new(&def));
        Ok(())
    }
}

/// 6.12's registration of what the parser accepted: an fprobe is put on
/// every function its symbol matches as an ftrace filter, `EINVAL` (from
/// `ftrace_set_filter()`) when none does.
fn register(def: &ProbeDef<'_>) -> Result<(), ParseError> {
    if def.kind != ProbeKind::Fprobe {
        return Ok(());
    }
    let ProbeLocation::Symbol { symbol, offset: 0 } = def.location else {
        panic!("an fprobe at {:?}", def.location);
    };
    let filter = FunctionFilter::new(symbol);
    if VMLINUX.iter().any(|f| filter.matches(f.as_bytes())) {
        Ok(())
    } else {
        Err(ParseError::registration(Errno::EINVAL))
    }
}

// The selftest scripts.

/// A step of a selftest script.
#[derive(Debug)]
enum Step {
    /// `check_error CMD # CODE`: the command (caret removed), the caret's
    /// byte position, the comment's code.
    Check {
        cmd: String,
        pos: usize,
        code: String,
    },
    /// `echo CMD > dynamic_events`: the file holds only what CMD makes.
    Reset(String),
}

/// `$VAR` of the scripts, as ftracetest sets them on x86-64.
fn var(name: &str) -> &'static str {
    match name {
        "REG" => "%ax",
        "FUNCTION_FORK" => "kernel_clone",
        other => panic!("unknown variable ${other}"),
    }
}

/// Reads one shell word at the start of `s`: quotes removed, `\` escapes
/// and variables expanded. Returns the word and the rest of `s`.
fn shell_word(s: &str) -> (String, &str) {
    let s = s.trim_start();
    let b = s.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    let take_var = |i: &mut usize, out: &mut String| {
        let start = *i;
        while *i < b.len() && (b[*i].is_ascii_alphanumeric() || b[*i] == b'_') {
            *i += 1;
        }
        out.push_str(var(&s[start..*i]));
    };
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' => break,
            b'\'' => {
                let end = s[i + 1..].find('\'').expect("unclosed '") + i + 1;
                out.push_str(&s[i + 1..end]);
                i = end + 1;
            }
            b'"' => {
                i += 1;
                while b[i] != b'"' {
                    match b[i] {
                        b'\\' if matches!(b[i + 1], b'$' | b'`' | b'"' | b'\\') => {
                            out.push(b[i + 1] as char);
                            i += 2;
                        }
                        b'$' => {
                            i += 1;
                            take_var(&mut i, &mut out);
                        }
                        c => {
                            out.push(c as char);
                            i += 1;
                        }
                    }
                }
                i += 1;
            }
            b'\\' => {
                out.push(b[i + 1] as char);
                i += 2;
            }
            b'$' => {
                i += 1;
                take_var(&mut i, &mut out);
            }
            c => {
                out.push(c as char);
                i += 1;
            }
        }
    }
    (out, &s[i..])
}

/// Whether 6.12's README (`tracing/README`) has `pattern`, as the scripts
/// grep it: everything they look for is there, the BTF argument syntax
/// only with BTF arguments (`CONFIG_PROBE_EVENTS_BTF_ARGS`).
fn readme_has(pattern: &str, btf: bool) -> bool {
    !pattern.contains("<argname>") || btf
}

/// A script's condition: `[!]grep ... PATTERN README [| ...]`, joined by
/// `&&`.
fn condition(text: &str, btf: bool) -> bool {
    text.split("&&").all(|part| {
        let part = part.trim();
        let negated = part.starts_with('!');
        let quote = part.find(['\'', '"']).expect("a grep pattern");
        let q = &part[quote..quote + 1];
        let end = part[quote + 1..].find(q).unwrap() + quote + 1;
        readme_has(&part[quote + 1..end], btf) != negated
    })
}

/// The steps of the script `name`, on a kernel with BTF arguments or not.
fn script(name: &str, btf: bool) -> Vec<Step> {
    let ksrc = std::env::var("RKPROBES_KSRC").expect("RKPROBES_KSRC is not set (hostenv sets it)");
    let path = PathBuf::from(ksrc)
        .join("tools/testing/selftests/ftrace/test.d/dynevent")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let mut steps = Vec::new();
    let mut taken: Vec<bool> = Vec::new();
    let mut next_line_if = true;
    for line in text.lines() {
        let line = line.trim();
        let active = taken.iter().all(|&t| t) && std::mem::replace(&mut next_line_if, true);
        if let Some(cond) = line.strip_prefix("if ") {
            let cond = cond.trim_end_matches("then").trim().trim_end_matches(';');
            taken.push(condition(cond, btf));
        } else if line == "else" {
            let t = taken.last_mut().expect("else without if");
            *t = !*t;
        } else if line == "fi" {
            taken.pop().expect("fi without if");
        } else if let Some(cond) = line.strip_suffix("&& \\") {
            next_line_if = condition(cond, btf);
        } else if !active {
        } else if let Some(rest) = line.strip_prefix("check_error ") {
            let (marked, comment) = shell_word(rest);
            let pos = marked.find('^').expect("no caret");
            let code = comment
                .trim()
                .strip_prefix('#')
                .expect("no code comment")
                .split_whitespace()
                .next()
                .unwrap()
                .trim_end_matches('?')
                .to_string();
            steps.push(Step::Check {
                cmd: marked.replacen('^', "", 1),
                pos,
                code,
            });
        } else if line.ends_with("> dynamic_events") {
            let mut rest = line.strip_suffix("> dynamic_events").unwrap();
            let cmd = if let Some(r) = rest.strip_prefix("echo ") {
                shell_word(r).0
            } else {
                rest = rest.strip_prefix("printf ").expect("echo or printf");
                let (format, r) = shell_word(rest);
                assert_eq!(format, "%s");
                shell_word(r).0
            };
            steps.push(Step::Reset(cmd));
        }
    }
    assert!(taken.is_empty(), "{name}: unbalanced if");
    steps
}

/// The error_log messages 6.12 writes for a case of the scripts, the last
/// one with the caret: the one the comment names, except where 6.12
/// differs from the comment.
fn expected_codes(cmd: &str, comment: &str, btf: bool) -> Vec<E> {
    let named = match comment {
        "MAXACT_NO_KPROBE" => E::BadMaxactType,
        "ARG_NAME_TOO_LOG" => E::ArgNameTooLong,
        c => *E::ALL
            .iter()
            .find(|e| e.ident() == c)
            .unwrap_or_else(|| panic!("{cmd:?}: unknown code {c}")),
    };
    let body = cmd.split_whitespace().nth(2).unwrap_or("");
    match named {
        // The symbol is not looked up: registration fails, the ftrace
        // filter it is matching nothing (`-EINVAL`, not `-ENOENT`).
        E::BadProbeAddr => vec![E::FailRegProbe],
        // Never logged by 6.12: `NAME=$arg*` and `+0($arg*)` are no `$arg`
        // fetchargs to expand, and `$arg*` is no `$argN`.
        E::BadVarArgs => vec![E::BadVar],
        // A register: "Invalid $-variable", then, nothing having been
        // parsed, "Invalid fetch argument" too.
        E::BadVar if body.starts_with('%') => vec![E::BadVar, E::BadFetchArg],
        // With BTF arguments `$argN` is the Nth parameter's name first.
        E::BadArgNum if btf => vec![E::NoBtfarg],
        c => vec![c],
    }
}

/// Runs every case of the script `name`; returns how many ran.
fn run_script(name: &str, env: &Env<'_>) -> usize {
    let btf = env.btf.is_some();
    let mut events = DynEvents::default();
    let mut checked = 0;
    for step in script(name, btf) {
        match step {
            Step::Reset(cmd) => {
                events = DynEvents::default();
                events
                    .write(env, &cmd)
                    .unwrap_or_else(|e| panic!("{name}: {cmd:?}: {e:?}"));
            }
            Step::Check { cmd, pos, code } => {
                let what = format!("{name} (btf {btf}): {cmd:?}");
                let err = match events.write(env, &cmd) {
                    Err(e) => e,
                    Ok(()) => panic!("{what}: accepted"),
                };
                let codes = expected_codes(&cmd, &code, btf);
                let entries = error_log_entries(env, &cmd, &err);
                let got: Vec<String> = entries
                    .iter()
                    .map(|e| e.lines().next().unwrap().to_string())
                    .collect();
                let want: Vec<String> = codes
                    .iter()
                    .map(|c| format!("trace_fprobe: error: {}", c.text()))
                    .collect();
                assert_eq!(got, want, "{what}");
                let last = codes.last().unwrap();
                assert_eq!(err.errno, errno_of(*last), "{what}");
                for e in &entries {
                    let lines: Vec<&str> = e.lines().collect();
                    assert_eq!(lines.len(), 3, "{what}");
                    assert_eq!(lines[1], format!("  Command: {cmd}"), "{what}");
                    // ftrace_errlog_check: the caret line, newline
                    // included, is 13 + pos bytes.
                    assert_eq!(lines[2].len() + 1, 13 + pos, "{what}\n{e}");
                    assert_eq!(lines[2].trim_start(), "^", "{what}");
                }
                checked += 1;
            }
        }
    }
    checked
}

#[test]
fn fprobe_syntax_errors_without_btf() {
    // 58 cases; without BTF not the 11 of BTF arguments but the 2 of
    // "BTF is not available", and not the one for a kernel without
    // entry arguments at exit.
    let n = run_script("fprobe_syntax_errors.tc", &NO_BTF);
    assert_eq!(n, 46);
}

#[test]
fn fprobe_syntax_errors_with_btf() {
    with_btf(|env| {
        // Not the 2 for a kernel without BTF, nor the 2 for one without
        // entry arguments at exit.
        let n = run_script("fprobe_syntax_errors.tc", env);
        assert_eq!(n, 54);
    });
}

#[test]
fn tprobe_syntax_errors_without_btf() {
    let n = run_script("tprobe_syntax_errors.tc", &NO_BTF);
    assert_eq!(n, 40);
}

#[test]
fn tprobe_syntax_errors_with_btf() {
    with_btf(|env| {
        let n = run_script("tprobe_syntax_errors.tc", env);
        assert_eq!(n, 40);
    });
}

// Cases of our own, each a rule of `__trace_fprobe_create()`.

/// Checks that `marked` (`^` where the caret goes) fails with the
/// error_log messages `codes`, all at the caret, with the last one's errno.
#[track_caller]
fn check_errors(env: &Env<'_>, marked: &str, codes: &[E]) {
    let pos = marked.find('^').expect("no caret");
    let cmd = marked.replacen('^', "", 1);
    let err = match dyn_parse(env, Box::leak(cmd.clone().into_boxed_str())) {
        Err(e) => e,
        Ok(c) => panic!("{cmd:?} was accepted: {c:?}"),
    };
    let entries = error_log_entries(env, &cmd, &err);
    let kind = ProbeKind::of_command(cmd.as_bytes()).unwrap();
    let want: Vec<String> = codes
        .iter()
        .map(|c| format!("{}: error: {}", kind.subsystem(), c.text()))
        .collect();
    let got: Vec<&str> = entries.iter().map(|e| e.lines().next().unwrap()).collect();
    assert_eq!(got, want, "{cmd:?}");
    assert_eq!(err.errno, errno_of(*codes.last().unwrap()), "{cmd:?}");
    for e in &entries {
        let caret = e.lines().nth(2).unwrap();
        assert_eq!(caret.len() + 1, 13 + pos, "{cmd:?}: caret\n{e}");
    }
}

#[track_caller]
fn check_error(marked: &str, code: E) {
    check_errors(&NO_BTF, marked, &[code]);
}

#[track_caller]
fn check_silent(cmd: &str, errno: Errno) {
    match parse_dyn(cmd) {
        Err(e) => {
            assert_eq!(e.errno, errno, "{cmd:?}");
            assert!(e.log.is_none(), "{cmd:?}: logged {e:?}");
        }
        Ok(c) => panic!("{cmd:?} was accepted: {c:?}"),
    }
}

/// The fetch program of fetcharg `i` of `cmd`.
#[track_caller]
fn program<'a>(env: &'a Env<'a>, cmd: &'a str, i: usize) -> Vec<I<&'a [u8]>> {
    def(env, cmd).arg(i).unwrap().program.insns().to_vec()
}

/// `NAME=TEXT TYPE` of each fetcharg.
fn args(def: &ProbeDef<'_>) -> Vec<String> {
    def.args()
        .map(|a| {
            let a = a.unwrap();
            let mut b = Buf::default();
            a.comm.write_to(&mut b).unwrap();
            format!(
                "{}={} {}",
                String::from_utf8_lossy(a.name.as_bytes()),
                b.text(),
                a.ty.base.name()
            )
        })
        .collect()
}

#[test]
fn default_groups_and_event_names() {
    let e = &NO_BTF;
    assert_eq!(
        listed(e, "f vfs_read"),
        "f:fprobes/vfs_read__entry vfs_read"
    );
    assert_eq!(
        listed(e, "f vfs_read%return"),
        "f:fprobes/vfs_read__exit vfs_read%return"
    );
    // A `$retval` anywhere makes an fprobe an exit probe.
    assert_eq!(
        listed(e, "f vfs_read $retval"),
        "f:fprobes/vfs_read__exit vfs_read%return arg1=$retval"
    );
    assert_eq!(
        listed(e, "f vfs_read n=+8($retval):u32"),
        "f:fprobes/vfs_read__exit vfs_read%return n=+8($retval):u32"
    );
    assert_eq!(listed(e, "t kfree"), "t:tracepoints/kfree kfree");
    assert_eq!(
        listed(e, "t 9p_client_req"),
        "t:tracepoints/_9p_client_req 9p_client_req"
    );
    assert_eq!(
        listed(e, "f:grp/ vfs_read"),
        "f:grp/vfs_read__entry vfs_read"
    );
    assert_eq!(listed(e, "t:grp.ev kfree"), "t:grp/ev kfree");
    assert_eq!(listed(e, "f:ev vfs_read"), "f:fprobes/ev vfs_read");
    // The symbol is not looked up: `MOD:`, globs and any text name events
    // too, sanitised as kprobes' generated names.
    assert_eq!(
        listed(e, "f ext4:ext4_sync_fs"),
        "f:fprobes/ext4_ext4_sync_fs__entry ext4:ext4_sync_fs"
    );
    assert_eq!(
        listed(e, "f vfs_*%return"),
        "f:fprobes/vfs____exit vfs_*%return"
    );
    assert_eq!(listed(e, "f x.y"), "f:fprobes/x_y__entry x.y");
    assert_eq!(
        listed(e, "f no_such_fn"),
        "f:fprobes/no_such_fn__entry no_such_fn"
    );
    // Cut at 63 bytes, as `snprintf()` into the kernel's buffer.
    let long = "a".repeat(60);
    let d = def(e, Box::leak(format!("f {long}").into_boxed_str()));
    assert_eq!(d.event.as_bytes(), format!("{long}__e").as_bytes());
    let long = "b".repeat(70);
    let d = def(e, Box::leak(format!("t {long}").into_boxed_str()));
    assert_eq!(d.event.as_bytes(), &long.as_bytes()[..63]);
    // The kinds, and the kernel's groups whatever the kprobes' one is.
    let d = def(e, "f vfs_read");
    assert_eq!(
        (d.kind, d.group),
        (ProbeKind::Fprobe, FPROBE_GROUP.as_bytes())
    );
    let d = def(e, "t kfree");
    assert_eq!(
        (d.kind, d.group),
        (ProbeKind::Tprobe, TPROBE_GROUP.as_bytes())
    );
    let d = def(e, "p vfs_read");
    assert_eq!((d.kind, d.group), (ProbeKind::Kprobe, &b"rkprobes"[..]));
    assert_eq!(d.event.as_bytes(), b"p_vfs_read_0");
    // Only the first byte names the command, as for kprobes.
    assert_eq!(
        listed(e, "ffoo vfs_read"),
        "f:fprobes/vfs_read__entry vfs_read"
    );
    assert_eq!(listed(e, "tfoo:x kfree"), "t:tracepoints/x kfree");
}

#[test]
fn maxactive() {
    let e = &NO_BTF;
    assert_eq!(
        listed(e, "f16 vfs_read%return"),
        "f16:fprobes/vfs_read__exit vfs_read%return"
    );
    assert_eq!(
        listed(e, "f0x10:e vfs_read%return"),
        "f16:fprobes/e vfs_read%return"
    );
    assert_eq!(
        listed(e, "f4096 vfs_read $retval"),
        "f4096:fprobes/vfs_read__exit vfs_read%return arg1=$retval"
    );
    assert_eq!(def(e, "f020 vfs_read%return").maxactive, 16);
    check_error("f^4097 vfs_read%return", E::MaxactTooBig);
    check_error("f^0 vfs_read%return", E::BadMaxact);
    check_error("f^1a vfs_read%return", E::BadMaxact);
    check_error(
        &format!("f^{} vfs_read%return", "1".repeat(64)),
        E::BadMaxact,
    );
    // The number is read whatever the probe, and then found to be an
    // entry's.
    check_error("f^16:e vfs_read", E::BadMaxactType);
    check_error("t^5 kfree", E::BadMaxactType);
    check_error("t^1a kfree", E::BadMaxact);
    check_error("t^99999 kfree", E::MaxactTooBig);
}

#[test]
fn order_of_checks() {
    // The symbol before the maxactive's kind, both before the event name.
    check_error("f100 vfs_read^%hoge", E::BadAddrSuffix);
    check_error("f^100:/x vfs_read", E::BadMaxactType);
    check_error("t:/x kfree^%return", E::BadAddrSuffix);
    check_error("t:/x kfree^+1 $retval", E::BadTpName);
    check_error("t:/x kfree ^$retval", E::RetvalOnProbe);
    check_error("t5:/x kfree ^$retval", E::RetvalOnProbe);
    check_error("t:^/x kfree", E::NoGroupName);
    // A `$retval` is found where `strstr()` finds it, only when no name
    // character follows.
    check_error("t kfree x=+0(^$retval)", E::RetvalOnProbe);
    check_error("t kfree ^$retval1", E::RetvalOnProbe);
    check_error("t kfree x=^$retval_x", E::RetvalOnProbe);
    check_error("f vfs_read ^$retval_x", E::RetvalOnProbe);
    check_error("f vfs_read \\1 ^$retvalx", E::RetvalOnProbe);
    // Anything after `$retval` is ignored without BTF.
    assert_eq!(
        listed(&NO_BTF, "f vfs_read%return $retval1"),
        "f:fprobes/vfs_read__exit vfs_read%return arg1=$retval1"
    );
    // Tracepoint names are `[A-Za-z0-9_]`, letters as the kernel's
    // `isalnum()` says (Latin-1 too).
    check_error("t k^-free", E::BadTpName);
    check_error("t ^.kfree", E::BadTpName);
    check_error("t kfree^%x", E::BadAddrSuffix);
    assert!(matches!(
        rkprobes_host::pure::probe_events::parse_dyn_command(b"t kfre\xe9", &MockEnv),
        Ok(Command::Probe(_))
    ));
    // Not every offset or address is refused by the parser: the symbol is
    // an ftrace filter, which matches no function (registration's error).
    assert_eq!(
        listed(&NO_BTF, "f vfs_read+4"),
        "f:fprobes/vfs_read+4__entry vfs_read+4"
    );
    assert_eq!(
        listed(&NO_BTF, "f 0x1000"),
        "f:fprobes/0x1000__entry 0x1000"
    );
    assert_eq!(
        register(&def(&NO_BTF, "f vfs_read+4")),
        Err(ParseError::registration(Errno::EINVAL))
    );
}

#[test]
fn no_tracepoint_without_modules() {
    /// A kernel without modules, where an unknown tracepoint is refused.
    struct NoModules;
    impl ProbeEnv for NoModules {
        fn check_symbol(&self, _: Option<&[u8]>, _: &[u8]) -> SymbolCheck {
            SymbolCheck::Unique
        }
        fn func_entry(&self, _: &[u8], _: u64) -> FuncEntry {
            FuncEntry::Entry
        }
        fn tracepoint(&self, _: &[u8]) -> TracepointCheck {
            TracepointCheck::NotFound
        }
    }
    let e = rkprobes_host::pure::probe_events::parse_dyn_command(b"t:e/f nosuch", &NoModules)
        .unwrap_err();
    let log = e.log.unwrap();
    assert_eq!((log.code, log.index, log.offset), (E::NoTracepoint, 1, 0));
    // After the event name's checks.
    let e = rkprobes_host::pure::probe_events::parse_dyn_command(b"t:/f nosuch", &NoModules)
        .unwrap_err();
    assert_eq!(e.log.unwrap().code, E::NoGroupName);
    // Any tracepoint, for a kernel with modules: one may come.
    assert_eq!(listed(&NO_BTF, "t nosuch"), "t:tracepoints/nosuch nosuch");
}

#[test]
fn fetchargs() {
    let e = &NO_BTF;
    assert_eq!(program(e, "f vfs_read $arg2", 0)[0], I::Arg(1));
    assert_eq!(program(e, "f vfs_read%return $arg2", 0)[0], I::EntryArg(1));
    assert_eq!(program(e, "f vfs_read%return $retval", 0)[0], I::Retval);
    // A tracepoint's stub's first argument is the tracepoint's data.
    assert_eq!(program(e, "t kfree $arg1", 0)[0], I::Arg(1));
    assert_eq!(program(e, "t kfree $arg2048", 0)[0], I::Arg(2048));
    assert_eq!(program(e, "f vfs_read $stack3", 0)[0], I::Stack(3));
    assert_eq!(program(e, "t kfree $stack", 0)[0], I::StackPointer);
    assert_eq!(
        program(e, "f vfs_read @jiffies", 0)[0],
        I::Symbol(&b"jiffies"[..])
    );
    assert_eq!(
        program(e, "t kfree c=$comm", 0)[0..2],
        [I::Comm, I::StString { offset: 0 }]
    );
    // Registers are no fetchargs: two entries, at the register.
    check_errors(e, "f vfs_read ^%di", &[E::BadVar, E::BadFetchArg]);
    check_errors(e, "f vfs_read +0(^%di)", &[E::BadVar, E::BadFetchArg]);
    check_errors(e, "t kfree a=^%nosuch:u32", &[E::BadVar, E::BadFetchArg]);
    check_errors(
        e,
        "f vfs_read%return a=+0(+8(^%ax))",
        &[E::BadVar, E::BadFetchArg],
    );
    // After a `%pd` expansion, in the expanded text as for kprobes.
    let cmd = "f vfs_read x=%di:%pd";
    let err = parse_dyn(cmd).unwrap_err();
    let entries = error_log_entries(e, cmd, &err);
    assert_eq!(entries.len(), 2);
    assert_eq!(
        entries[1],
        "trace_fprobe: error: Invalid fetch argument\n  \
         Command: f vfs_read x=+0x0(+0x28(%di)):string\n                                   ^\n"
    );
    check_error("f vfs_read ^@+10", E::FileOnKprobe);
    check_error("f vfs_read%return $arg1:^symstr", E::BadSymstring);
    assert_eq!(
        program(e, "f vfs_read $arg1:symstr", 0)[1],
        I::StSymStr { offset: 0 }
    );
    check_error("f vfs_read ^$arg0", E::BadArgNum);
    check_error("t kfree ^$arg2049", E::BadArgNum);
    check_error("f vfs_read ^$argx", E::BadVar);
    // Without BTF a name is no fetcharg.
    check_errors(e, "t kfree ^ptr", &[E::NosupBtfarg]);
    check_errors(e, "f vfs_read%return ^$arg*", &[E::NosupBtfarg]);
    // `%pd`/`%pD` as for kprobes (fprobe_args_vfs.tc's commands).
    assert_eq!(
        listed(e, "f:testprobe dput name=$arg1:%pd"),
        "f:fprobes/testprobe dput name=+0x0(+0x28($arg1)):string"
    );
    assert_eq!(
        listed(e, "f:testprobe vfs_read $arg1:%pD"),
        "f:fprobes/testprobe vfs_read arg1=+0x0(+0x28(+0x48($arg1))):string"
    );
    assert_eq!(
        listed(e, "f:tests/myevent2 vfs_open%return arg=$arg1"),
        "f:tests/myevent2 vfs_open%return arg=$arg1"
    );
}

/// Fetchargs the grammar shares between kprobes and fprobes: no
/// registers, no names.
fn gen_fetcharg(rng: &mut Rng, tracepoint: bool, is_return: bool) -> String {
    let mut f = match rng.below(9) {
        0 => format!("$stack{}", rng.below(40)),
        1 => "$stack".into(),
        2 => format!("$arg{}", 1 + rng.below(8)),
        3 => format!("@{}", rng.pick(&["jiffies", "_sdata", "0x1000", "12"])),
        4 => format!("\\{}", rng.below(1000)),
        5 if is_return && !tracepoint => "$retval".into(),
        6 => "$comm".into(),
        7 => "\\\"str\"".into(),
        _ => format!("$arg{}", 1 + rng.below(3)),
    };
    let plain = !f.starts_with("$comm") && !f.starts_with("\\\"");
    if plain {
        for _ in 0..rng.below(3) {
            let user = if rng.chance(20) { "u" } else { "" };
            f = format!("+{user}{}({f})", rng.below(64));
        }
        if rng.chance(50) {
            f.push(':');
            f.push_str(rng.pick::<&str>(&[
                "u8", "s16", "x32", "u64", "string", "ustring", "symbol", "symstr", "char",
                "b3@2/8", "x8[4]",
            ]));
        } else if rng.chance(10) {
            f.push_str(rng.pick::<&str>(&[":%pd", ":%pD"]));
        }
    } else if rng.chance(50) {
        f.push_str(":string");
    }
    f
}

/// Shifts `$argN` to `$arg(N+1)`: a tracepoint's `$argN` is its stub's
/// `N+1`th argument.
fn shift_args(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find("$arg") {
        out.push_str(&rest[..at + 4]);
        rest = &rest[at + 4..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let n: u32 = rest[..digits].parse().unwrap();
        out.push_str(&(n + 1).to_string());
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

/// The same fetchargs compile to the same programs, types and record on
/// an fprobe as on a kprobe at the function's entry or a kretprobe, and
/// on a tracepoint as on a kprobe whose `$argN` are one further.
#[test]
fn fetchargs_as_on_kprobes() {
    let mut rng = Rng::new(0x6670_726f_6265);
    let mut compared = 0;
    for _ in 0..4000 {
        let kind = rng.below(3);
        let is_return = kind == 1;
        let tracepoint = kind == 2;
        let fetchargs: Vec<String> = (0..1 + rng.below(4))
            .map(|i| format!("a{i}={}", gen_fetcharg(&mut rng, tracepoint, is_return)))
            .collect();
        let list = fetchargs.join(" ");
        let (ours, theirs) = match kind {
            0 => (format!("f vfs_read {list}"), format!("p vfs_read {list}")),
            1 => (
                format!("f vfs_read%return {list}"),
                format!("r vfs_read {list}"),
            ),
            _ => (
                format!("t kfree {list}"),
                format!("p kfree {}", shift_args(&list)),
            ),
        };
        let ours_r = parse_dyn(&ours);
        let theirs_r = parse_command(theirs.as_bytes(), &MockEnv);
        let (a, b) = match (ours_r, theirs_r) {
            (Ok(Command::Probe(a)), Ok(Command::Probe(b))) => (a, b),
            (Err(x), Err(y)) => {
                let (lx, ly) = (x.log.unwrap(), y.log.unwrap());
                assert_eq!(
                    (x.errno, lx.code, lx.index),
                    (y.errno, ly.code, ly.index),
                    "{ours}"
                );
                if !tracepoint {
                    assert_eq!(lx.offset, ly.offset, "{ours}");
                }
                continue;
            }
            (x, y) => panic!("{ours:?}: {x:?}\n{theirs:?}: {y:?}"),
        };
        assert_eq!(
            (a.is_return, a.nr_args, a.size),
            (b.is_return, b.nr_args, b.size)
        );
        for (x, y) in a.args().zip(b.args()) {
            let (x, y) = (x.unwrap(), y.unwrap());
            assert_eq!((x.name, x.ty, x.offset), (y.name, y.ty, y.offset), "{ours}");
            assert_eq!(x.program, y.program, "{ours}");
            if !tracepoint {
                assert_eq!(x.comm, y.comm, "{ours}");
            }
        }
        compared += 1;
    }
    assert!(compared > 2000, "only {compared} accepted");
}

#[test]
fn typed_fetchargs() {
    with_btf(|e| {
        let d = def(e, "t kfree $arg*");
        assert_eq!(
            listing(&d),
            "t:tracepoints/kfree kfree call_site=call_site ptr=ptr"
        );
        assert_eq!(args(&d), ["call_site=call_site u64", "ptr=ptr x64"]);
        assert_eq!(d.arg(0).unwrap().program.insns()[0], I::Arg(1));
        assert_eq!(d.arg(1).unwrap().program.insns()[0], I::Arg(2));
        let d = def(e, "t sched_switch $arg*");
        assert_eq!(
            args(&d),
            [
                "preempt=preempt u8",
                "prev=prev x64",
                "next=next x64",
                "prev_state=prev_state u32"
            ]
        );
        let d = def(e, "t sched_switch $arg1 $arg4:x32");
        assert_eq!(
            args(&d),
            ["preempt=preempt u8", "prev_state=prev_state:x32 x32"]
        );
        assert_eq!(d.arg(1).unwrap().program.insns()[0], I::Arg(4));
        let d = def(e, "t sched_switch pid=prev->pid next->comm:string");
        assert_eq!(
            args(&d),
            ["pid=prev->pid s32", "arg2=next->comm:string string"]
        );
        let p = d.arg(0).unwrap().program.insns().to_vec();
        assert_eq!(p[0], I::Arg(2));
        assert!(matches!(p[1], I::StMem { size: 4, .. }), "{p:?}");
        assert_eq!(d.arg(1).unwrap().program.insns()[0], I::Arg(3));
        // The data pointer is no parameter.
        check_errors(e, "t sched_switch ^$arg5", &[E::NoBtfarg]);
        check_errors(e, "t sched_switch ^__data", &[E::NoBtfarg]);
        // kfree()'s parameter is not the tracepoint's.
        check_errors(e, "t kfree ^object", &[E::NoBtfarg]);
        check_errors(e, "t kfree ptr ^object", &[E::NoBtfarg]);
        check_errors(e, "t kfree ^$retval", &[E::RetvalOnProbe]);

        let d = def(e, "f vfs_read $arg*");
        assert_eq!(
            listing(&d),
            "f:fprobes/vfs_read__entry vfs_read file=file buf=buf count=count pos=pos"
        );
        assert_eq!(d.arg(3).unwrap().program.insns()[0], I::Arg(3));
        let d = def(e, "f vfs_read $retval count");
        assert_eq!(
            listing(&d),
            "f:fprobes/vfs_read__exit vfs_read%return arg1=$retval count=count"
        );
        assert_eq!(args(&d), ["arg1=$retval s64", "count=count u64"]);
        assert_eq!(d.arg(1).unwrap().program.insns()[0], I::EntryArg(2));
        check_errors(e, "f kfree%return ^$retval", &[E::NoRetval]);
        check_errors(e, "f kfree ^$retval", &[E::NoRetval]);
        // A glob or `MOD:FUNC` is no function of BTF: its `$argN` stay
        // argument registers.
        check_errors(e, "f vfs_* ^file", &[E::NoBtfEntry]);
        check_errors(e, "f vfs_* ^$arg*", &[E::NosupBtfarg]);
        assert_eq!(args(&def(e, "f vfs_* $arg1")), ["arg1=$arg1 x64"]);
        check_errors(e, "f ext4:ext4_sync_fs ^sb", &[E::NoBtfEntry]);
        // A tracepoint not loaded is typed as 6.12 types it, from the
        // function of its name (none here: `$argN` stay registers, one
        // further for the data), ...
        assert_eq!(program(e, "t nosuch_tp $arg1", 0)[0], I::Arg(1));
        check_errors(e, "t nosuch_tp ^x", &[E::NoBtfEntry]);
        // ... whose first parameter is hidden as a tracepoint's data.
        let d = def(e, "t vfs_read $arg*");
        assert_eq!(args(&d), ["buf=buf x64", "count=count u64", "pos=pos x64"]);
        assert_eq!(d.arg(0).unwrap().program.insns()[0], I::Arg(1));
    });
}

#[test]
fn print_formats_and_records() {
    let fmt = |cmd: &str| {
        let kept = Kept::new(&def(&NO_BTF, Box::leak(cmd.to_string().into_boxed_str())));
        let mut b = Buf::default();
        write_print_fmt(&mut b, &kept.layout()).unwrap();
        (kept.layout().kind, kept.layout().is_return, b.text())
    };
    // As fprobetrace.rst shows it.
    assert_eq!(
        fmt("f:myprobe vfs_read count=$arg3:u64 pos=$arg4"),
        (
            ProbeKind::Fprobe,
            false,
            "\"(%lx) count=%Lu pos=0x%Lx\", REC->__probe_ip, REC->count, REC->pos".into()
        )
    );
    assert_eq!(
        fmt("f:e vfs_read%return $retval:s32").2,
        "\"(%lx <- %lx) arg1=%d\", REC->__probe_func, REC->__probe_ret_ip, REC->arg1"
    );
    assert_eq!(
        fmt("t:e kfree ptr=$arg2 s=+0($arg1):string"),
        (
            ProbeKind::Tprobe,
            false,
            "\"(%lx) ptr=0x%Lx s=\\\"%s\\\"\", REC->__probe_ip, REC->ptr, __get_str(s)".into()
        )
    );
    // The same record as a kprobe's: fields at the same offsets.
    let f = Kept::new(&def(
        &NO_BTF,
        "f vfs_read a=$arg1:u8 b=$arg2 c=+0($arg3):string",
    ));
    let p = Kept::new(&probe("p vfs_read a=$arg1:u8 b=$arg2 c=+0($arg3):string"));
    assert_eq!(f.layout().size, p.layout().size);
    let fields = |k: &Kept| {
        k.layout()
            .fields()
            .map(|f| (f.name.to_vec(), f.ty, f.offset))
            .collect::<Vec<_>>()
    };
    assert_eq!(fields(&f), fields(&p));
}

#[test]
fn deletion() {
    let exit = Kept::new(&def(
        &NO_BTF,
        "f:fprobes/vfs_read__exit vfs_read%return a=$retval",
    ));
    let deletes = |cmd: &str| match parse_dyn(cmd) {
        Ok(Command::Delete(d)) => exit.deleted_by(&d),
        other => panic!("{cmd:?}: {other:?}"),
    };
    assert!(deletes("-:fprobes/vfs_read__exit"));
    assert!(deletes("-:vfs_read__exit"));
    assert!(deletes("-:fprobes/"));
    // The probe point is the symbol alone, as `trace_fprobe_show()` has
    // it before `%return`.
    assert!(deletes("-:vfs_read__exit vfs_read"));
    assert!(deletes("-:vfs_read__exit vfs_read a=$retval"));
    assert!(!deletes("-:vfs_read__exit vfs_read%return"));
    assert!(!deletes("-:tracepoints/"));
    // dynamic_events' `!` form: the event after the first `:`.
    assert!(deletes("!f:fprobes/vfs_read__exit"));
    assert!(deletes("!anything:vfs_read__exit vfs_read"));
    assert!(!deletes("!f:x/vfs_read__exit"));
    check_silent("!f", Errno::EINVAL);
    check_silent("!:", Errno::EINVAL);
    check_silent("!", Errno::EINVAL);
    let tp = Kept::new(&def(&NO_BTF, "t kfree a=$arg1"));
    match parse_dyn("-:tracepoints/kfree kfree a=$arg1") {
        Ok(Command::Delete(d)) => assert!(tp.deleted_by(&d)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn appending_to_events() {
    let e = &NO_BTF;
    let f = Kept::new(&def(e, "f:g/ev vfs_read a=\\1"));
    let check = |cmd: &str| f.layout().check_append(&def(e, Box::leak(cmd.into())));
    assert_eq!(check("f:g/ev vfs_write a=\\1"), Ok(()));
    assert!(!f.spec().same_probe(&def(e, "f:g/ev vfs_write a=\\1")));
    assert!(f.spec().same_probe(&def(e, "f:g/ev vfs_read a=\\1")));
    assert_eq!(
        check("f:g/ev vfs_read%return a=\\1"),
        Err(ParseError::diff_probe_type())
    );
    assert_eq!(
        check("t:g/ev kfree a=\\1"),
        Err(ParseError::diff_probe_type())
    );
    assert_eq!(
        check("f:g/ev vfs_read b=\\1"),
        Err(ParseError::diff_arg_type(1))
    );
    // A kprobe event's name is taken for an fprobe, and back: the kernel
    // finds no event of its own type to join.
    assert_eq!(
        check("p:g/ev vfs_read a=\\1"),
        Err(ParseError::event_exists())
    );
    let p = Kept::new(&probe("p:g/ev vfs_read a=\\1"));
    assert_eq!(
        p.layout().check_append(&def(e, "f:g/ev vfs_read a=\\1")),
        Err(ParseError::event_exists())
    );
    assert_eq!(
        p.layout().check_append(&probe("r:g/ev vfs_read a=\\1")),
        Err(ParseError::diff_probe_type())
    );
    assert_eq!(
        p.layout().check_append(&probe("p:g/ev vfs_write a=\\1")),
        Ok(())
    );
}

#[test]
fn kinds_and_the_kprobe_events_parser() {
    assert_eq!(ProbeKind::of_command(b"f x"), Some(ProbeKind::Fprobe));
    assert_eq!(ProbeKind::of_command(b" \tt x"), Some(ProbeKind::Tprobe));
    assert_eq!(ProbeKind::of_command(b"r2:x y"), Some(ProbeKind::Kprobe));
    assert_eq!(ProbeKind::of_command(b"-:x"), None);
    assert_eq!(ProbeKind::of_command(b"  "), None);
    assert_eq!(ProbeKind::of_command(b"e:x y"), Some(ProbeKind::Eprobe));
    assert_eq!(ProbeKind::of_command(b"s:x y"), None);
    assert_eq!(ProbeKind::Fprobe.subsystem(), "trace_fprobe");
    assert_eq!(ProbeKind::Tprobe.subsystem(), "trace_fprobe");
    assert_eq!(ProbeKind::Kprobe.subsystem(), "trace_kprobe");
    // kprobe_events takes no `f`, `t` or `e`.
    for cmd in ["f vfs_read", "t kfree", "f", "t", "e sched.sched_switch"] {
        let e = parse_command(cmd.as_bytes(), &SyntaxOnlyEnv).unwrap_err();
        assert_eq!((e.errno, e.log), (Errno::EINVAL, None), "{cmd}");
    }
    // dynamic_events: a command needs its symbol.
    check_silent("f", Errno::EINVAL);
    check_silent("t:x", Errno::EINVAL);
    check_silent("x vfs_read", Errno::EINVAL);
    assert!(matches!(parse_dyn(""), Ok(Command::Empty)));
    // More than 128 fetchargs.
    check_silent(&format!("f vfs_read{}", " \\1".repeat(129)), Errno::E2BIG);
    listed(
        &NO_BTF,
        Box::leak(format!("f vfs_read{}", " \\1".repeat(128)).into()),
    );
}

#[test]
fn function_filters() {
    let f = |s: &'static str| FunctionFilter::new(s.as_bytes());
    let names = ["vfs_read", "vfs_readv", "do_vfs_read", "kfree", "vfs_write"];
    let matched = |s: &'static str| -> Vec<&str> {
        let filter = f(s);
        names
            .iter()
            .copied()
            .filter(|n| filter.matches(n.as_bytes()))
            .collect()
    };
    assert_eq!(f("vfs_read").how(), FilterMatch::Full);
    assert_eq!(matched("vfs_read"), ["vfs_read"]);
    assert_eq!(f("vfs_read*").how(), FilterMatch::Prefix);
    assert_eq!(matched("vfs_read*"), ["vfs_read", "vfs_readv"]);
    assert_eq!(f("*_read").how(), FilterMatch::Suffix);
    assert_eq!(matched("*_read"), ["vfs_read", "do_vfs_read"]);
    assert_eq!(f("*fs_re*").how(), FilterMatch::Contains);
    assert_eq!(matched("*fs_re*"), ["vfs_read", "vfs_readv", "do_vfs_read"]);
    assert_eq!(matched("*").len(), names.len());
    assert_eq!(matched("**").len(), names.len());
    assert_eq!(f("v*_read").how(), FilterMatch::Glob);
    assert_eq!(matched("v*_read"), ["vfs_read"]);
    assert_eq!(matched("vfs_[rw]*"), ["vfs_read", "vfs_readv", "vfs_write"]);
    assert_eq!(matched("k?ree"), ["kfree"]);
    assert_eq!(matched("*_read?"), ["vfs_readv"]);
    // `MOD:FUNC`, offsets: no function is called so.
    assert!(matched("ext4:ext4_sync_fs").is_empty());
    assert!(matched("vfs_read+4").is_empty());
    // Numbers are ftrace record indexes, from 1.
    assert_eq!(
        (f("12").how(), f("12").index()),
        (FilterMatch::Index, Some(12))
    );
    assert_eq!(f("0x10").index(), Some(16));
    assert_eq!(f("0").index(), None);
    assert_eq!(f("1x").index(), None);
    assert!(!f("12").matches(b"12"));
    // `!`: what matches is taken out of nothing.
    assert!(f("!vfs_read").negated() && f("!vfs_read").matches(b"vfs_read"));
    assert!(!f("vfs_read").negated());
}

/// `fnmatch(pat, s, 0)` as `glob_match()` documents itself, written as a
/// plain recursive matcher: the oracle for [`glob_match`].
fn fnmatch(p: &[u8], s: &[u8]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some(b'*') => (0..=s.len()).any(|i| fnmatch(&p[1..], &s[i..])),
        Some(b'?') => !s.is_empty() && fnmatch(&p[1..], &s[1..]),
        Some(b'[') => match bracket(&p[1..]) {
            Some((set, rest)) => match s.split_first() {
                Some((c, s)) => set(*c) && fnmatch(rest, s),
                None => false,
            },
            None => s.first() == Some(&b'[') && fnmatch(&p[1..], &s[1..]),
        },
        Some(b'\\') => match p.get(1) {
            Some(c) => s.first() == Some(c) && fnmatch(&p[2..], &s[1..]),
            None => s.is_empty(),
        },
        Some(c) => s.first() == Some(c) && fnmatch(&p[1..], &s[1..]),
    }
}

/// A bracket expression after its `[`: its test and the pattern after
/// its `]`, or `None` when it is not closed.
fn bracket(p: &[u8]) -> Option<(impl Fn(u8) -> bool, &[u8])> {
    let (inverted, body) = match p.first() {
        Some(b'!') => (true, &p[1..]),
        _ => (false, p),
    };
    let mut spans = Vec::new();
    let mut i = 0;
    loop {
        let a = *body.get(i)?;
        if i > 0 && a == b']' {
            break;
        }
        if body.get(i + 1) == Some(&b'-') && body.get(i + 2).is_some_and(|&b| b != b']') {
            spans.push((a, body[i + 2]));
            i += 3;
        } else {
            spans.push((a, a));
            i += 1;
        }
    }
    let rest = &body[i + 1..];
    Some((
        move |c: u8| spans.iter().any(|&(a, b)| a <= c && c <= b) != inverted,
        rest,
    ))
}

#[test]
fn glob_match_is_fnmatch() {
    let mut rng = Rng::new(0x676c_6f62);
    const PAT: &[u8] = b"ab*?[]!-\\";
    const STR: &[u8] = b"ab-]![";
    for _ in 0..200_000 {
        let p: Vec<u8> = (0..rng.below(8)).map(|_| *rng.pick(PAT)).collect();
        let s: Vec<u8> = (0..rng.below(8)).map(|_| *rng.pick(STR)).collect();
        assert_eq!(
            glob_match(&p, &s),
            fnmatch(&p, &s),
            "{:?} on {:?}",
            String::from_utf8_lossy(&p),
            String::from_utf8_lossy(&s)
        );
    }
}
