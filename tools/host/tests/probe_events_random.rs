// SPDX-License-Identifier: GPL-2.0

//! Seeded random tests of the kprobe_events parser: accepted commands list
//! in a form that parses back to the same probe, and no input panics, nor
//! do the fetch programs of accepted commands on arbitrary memory, nor the
//! trace output of arbitrary records of any length. The same for the `f`
//! and `t` commands of `dynamic_events`, whose parser takes `p` and `r`
//! commands as kprobe_events' does.
//!
//! `RKPROBES_PE_ITERS` sets the number of random inputs of `no_input_panics`
//! (default 100000 in release builds; the long run, `make
//! probe-events-long`, uses 10000000).

mod probe_events_support;

use probe_events_support::*;
use rkprobes_host::pure::probe_events::{
    argtext::is_good_name,
    error::Errno,
    error_log::write_error_log,
    exec::{data_size, store_args, ArgLayout, FetchEnv},
    kstr::c_str,
    parse_command, parse_dyn_command,
    print::{
        record_extent, write_arg_value, write_print_fmt, write_record_args, Element, NoSymbols,
    },
    program::FetchInsn,
    regs::Register,
    Command, FetchArg, ParseError, ProbeDef, ProbeKind, WriteLines, WRITE_BUFSIZE,
};

const NAMES: &[&str] = &["a", "b_1", "_x", "foo", "Bar9", "arg1", "arg3", "ptr", "é"];

fn gen_name(rng: &mut Rng) -> String {
    let mut s = rng.pick(NAMES).to_string();
    if rng.chance(30) {
        s.push_str(&rng.below(100).to_string());
    }
    s
}

fn gen_number(rng: &mut Rng, max: u64) -> String {
    let v = rng.next_u64() % (max + 1);
    match rng.below(3) {
        0 => format!("{v}"),
        1 => format!("0x{v:x}"),
        _ => format!("0{v:o}"),
    }
}

/// A fetcharg's innermost part; `regs` false for fprobes, which take no
/// registers (`$stackN` instead, drawing the same numbers).
fn gen_base(rng: &mut Rng, is_return: bool, regs: bool) -> String {
    const REGS: &[&str] = &[
        "ax", "bx", "cx", "dx", "si", "di", "bp", "sp", "ip", "flags", "r8", "r15", "cs", "ss",
        "orig_ax",
    ];
    let reg = |rng: &mut Rng| {
        let r = rng.pick(REGS);
        if regs {
            format!("%{r}")
        } else {
            format!("$stack{}", r.len())
        }
    };
    match rng.below(12) {
        0 => reg(rng),
        1 => format!("$stack{}", rng.below(3000)),
        2 => "$stack".into(),
        3 => "$comm".into(),
        4 => format!("@{}", gen_number(rng, 0xffff_ffff_ffff)),
        5 => format!(
            "@{}{}",
            rng.pick(&["jiffies", "_sdata", "x.y"]),
            rng.pick(&["", "+8", "-0x10"])
        ),
        6 => format!(
            "\\{}{}",
            rng.pick(&["", "-", "+"]),
            gen_number(rng, 1 << 40)
        ),
        7 => format!("\\\"{}\"", rng.pick(&["", "hi", "a_b", "x\"y"])),
        8 => format!("$arg{}", rng.below(10)),
        9 if is_return => "$retval".into(),
        _ => reg(rng),
    }
}

fn gen_fetch(rng: &mut Rng, is_return: bool, regs: bool) -> String {
    let mut f = gen_base(rng, is_return, regs);
    for _ in 0..rng.below(4) {
        let sign = if rng.chance(70) { "+" } else { "-" };
        let user = if rng.chance(20) { "u" } else { "" };
        f = format!("{sign}{user}{}({f})", gen_number(rng, 4096));
    }
    f
}

fn gen_type(rng: &mut Rng) -> String {
    const TYPES: &[&str] = &[
        "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "x8", "x16", "x32", "x64", "char",
        "string", "ustring", "symbol", "symstr",
    ];
    let mut t = if rng.chance(15) {
        let size = *rng.pick(&[8u64, 16, 32, 64]);
        let width = 1 + rng.next_u64() % size;
        let off = rng.next_u64() % (size - width + 1);
        format!("b{width}@{off}/{size}")
    } else {
        rng.pick(TYPES).to_string()
    };
    if rng.chance(15) {
        t.push_str(&format!("[{}]", 1 + rng.below(64)));
    }
    t
}

fn gen_arg(rng: &mut Rng, is_return: bool, regs: bool, used: &mut Vec<String>) -> String {
    let mut a = String::new();
    if rng.chance(50) {
        let n = gen_name(rng);
        if !used.contains(&n) {
            a = format!("{n}=");
            used.push(n);
        }
    }
    a.push_str(&gen_fetch(rng, is_return, regs));
    if rng.chance(10) {
        a.push_str(rng.pick::<&str>(&[":%pd", ":%pD"]));
    } else if rng.chance(60) {
        a.push(':');
        a.push_str(&gen_type(rng));
    }
    a
}

/// A command from the kprobe_events grammar, valid more often than not.
fn gen_command(rng: &mut Rng) -> String {
    let mut is_return = rng.chance(40);
    let mut cmd = String::from(if is_return { "r" } else { "p" });
    if is_return && rng.chance(30) {
        cmd.push_str(&(1 + rng.below(4096)).to_string());
    }
    if rng.chance(60) {
        cmd.push(':');
        if rng.chance(50) {
            cmd.push_str(rng.pick::<&str>(&["grp", "my-grp", "kprobes", "_g2"]));
            cmd.push('/');
        }
        if rng.chance(90) {
            cmd.push_str(&gen_name(rng));
        }
    }
    cmd.push(' ');
    match rng.below(10) {
        0 => cmd.push_str(&format!("0x{:x}", rng.next_u64())),
        1 => cmd.push_str("ext4:ext4_sync_fs"),
        2 => cmd.push_str(&format!("notloaded:fn{}", rng.below(9))),
        _ => {
            cmd.push_str(rng.pick::<&str>(VMLINUX));
            if rng.chance(25) {
                cmd.push_str(&format!("+{}", gen_number(rng, 200)));
            }
            if !is_return && rng.chance(15) {
                cmd.push_str("%return");
                is_return = true;
            }
        }
    }
    let mut used = Vec::new();
    for _ in 0..rng.below(7) {
        cmd.push(' ');
        cmd.push_str(&gen_arg(rng, is_return, true, &mut used));
    }
    cmd
}

/// An `f` or `t` command from the grammar of `dynamic_events`, valid more
/// often than not.
fn gen_dyn_command(rng: &mut Rng) -> String {
    let tracepoint = rng.chance(40);
    let mut is_return = !tracepoint && rng.chance(40);
    let mut cmd = String::from(if tracepoint { "t" } else { "f" });
    if is_return && rng.chance(30) {
        cmd.push_str(&(1 + rng.below(4096)).to_string());
    }
    if rng.chance(60) {
        cmd.push(':');
        if rng.chance(50) {
            cmd.push_str(rng.pick::<&str>(&["grp", "my-grp", "fprobes", "_g2"]));
            cmd.push('/');
        }
        if rng.chance(90) {
            cmd.push_str(&gen_name(rng));
        }
    }
    cmd.push(' ');
    if tracepoint {
        cmd.push_str(rng.pick::<&str>(TRACEPOINTS));
        if rng.chance(10) {
            cmd.push_str("_mod9");
        }
    } else {
        match rng.below(10) {
            0 => cmd.push_str("ext4:ext4_sync_fs"),
            1 => cmd.push_str(rng.pick::<&str>(&["vfs_*", "*_read", "k?ree", "12"])),
            _ => cmd.push_str(rng.pick::<&str>(VMLINUX)),
        }
        if is_return {
            cmd.push_str("%return");
        }
    }
    let mut used = Vec::new();
    for _ in 0..rng.below(7) {
        cmd.push(' ');
        // Now and then a `$retval` that makes an fprobe an exit probe,
        // and a register, which fprobes refuse.
        is_return |= !tracepoint && rng.chance(10);
        let regs = rng.chance(3);
        cmd.push_str(&gen_arg(rng, is_return, regs, &mut used));
    }
    cmd
}

fn arg_text(a: &FetchArg<'_>) -> Vec<u8> {
    let mut b = Buf::default();
    a.comm.write_to(&mut b).unwrap();
    b.0
}

fn assert_same_probe(a: &ProbeDef<'_>, b: &ProbeDef<'_>, what: &str) {
    assert_eq!(a.kind, b.kind, "{what}");
    assert_eq!(a.is_return, b.is_return, "{what}");
    assert_eq!(a.maxactive, b.maxactive, "{what}");
    assert_eq!(a.group, b.group, "{what}");
    assert_eq!(a.event.as_bytes(), b.event.as_bytes(), "{what}");
    assert_eq!(a.location, b.location, "{what}");
    assert_eq!(a.context, b.context, "{what}");
    assert_eq!(a.nr_args, b.nr_args, "{what}");
    assert_eq!(a.size, b.size, "{what}");
    for (x, y) in a.args().zip(b.args()) {
        let (x, y) = (x.unwrap(), y.unwrap());
        assert_eq!(x.name.as_bytes(), y.name.as_bytes(), "{what}");
        assert_eq!(arg_text(&x), arg_text(&y), "{what}");
        assert_eq!(x.ty, y.ty, "{what}");
        assert_eq!(x.offset, y.offset, "{what}");
        assert_eq!(x.program, y.program, "{what}");
    }
}

#[test]
fn listing_parses_back_to_the_same_probe() {
    let mut rng = Rng::new(0x6b70_726f_6265);
    let mut accepted = 0;
    let total = 20_000;
    for _ in 0..total {
        let cmd = gen_command(&mut rng);
        let Ok(Command::Probe(def)) = parse(&cmd) else {
            continue;
        };
        accepted += 1;
        let listed = listing(&def);
        let again = match parse(&listed) {
            Ok(Command::Probe(d)) => d,
            other => panic!("{cmd:?} lists as {listed:?}, which gives {other:?}"),
        };
        assert_same_probe(&def, &again, &format!("{cmd:?} -> {listed:?}"));
        run_and_print(&def, rng.next_u64());
        assert_eq!(listing(&again), listed, "{cmd:?}");
        // The listing also deletes it, by name and by full definition.
        let del = format!("-:{}", &listed[listed.find(':').unwrap() + 1..]);
        match parse(&del) {
            Ok(Command::Delete(d)) => assert!(Kept::new(&def).deleted_by(&d), "{del:?}"),
            other => panic!("{del:?}: {other:?}"),
        }
    }
    // The generator must exercise the accepting paths, not just errors.
    assert!(accepted > total / 4, "only {accepted} of {total} accepted");
}

#[test]
fn dyn_listing_parses_back_to_the_same_probe() {
    let mut rng = Rng::new(0x6670_726f_6265);
    let mut accepted = 0;
    let total = 20_000;
    for _ in 0..total {
        let cmd = gen_dyn_command(&mut rng);
        let Ok(Command::Probe(def)) = parse_dyn(&cmd) else {
            continue;
        };
        // Generated names are not checked: `f 12` is event `12__entry`,
        // which no command can name.
        if !is_good_name(def.event.as_bytes(), false) {
            continue;
        }
        accepted += 1;
        let listed = listing(&def);
        let again = match parse_dyn(&listed) {
            Ok(Command::Probe(d)) => d,
            other => panic!("{cmd:?} lists as {listed:?}, which gives {other:?}"),
        };
        assert_same_probe(&def, &again, &format!("{cmd:?} -> {listed:?}"));
        run_and_print(&def, rng.next_u64());
        assert_eq!(listing(&again), listed, "{cmd:?}");
        // The listing deletes it, by name and by its definition without
        // `%return` (as `trace_fprobe_match()` compares it).
        let del = format!("-:{}", &listed[listed.find(':').unwrap() + 1..]).replace("%return", "");
        match parse_dyn(&del) {
            Ok(Command::Delete(d)) => assert!(Kept::new(&def).deleted_by(&d), "{del:?}"),
            other => panic!("{del:?}: {other:?}"),
        }
    }
    assert!(accepted > total / 4, "only {accepted} of {total} accepted");
}

/// Memory where every address holds bytes derived from it, a zero byte
/// now and then, and where some addresses fault: whatever a program asks.
struct Chaos(u64);

impl Chaos {
    fn byte(&self, addr: u64) -> Option<u8> {
        let h = (addr ^ self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        if h >> 60 == 0 {
            return None;
        }
        let b = (h >> 32) as u8;
        Some(if b < 24 { 0 } else { b })
    }

    fn read(&self, addr: u64, buf: &mut [u8]) -> bool {
        for (i, b) in buf.iter_mut().enumerate() {
            match self.byte(addr.wrapping_add(i as u64)) {
                Some(v) => *b = v,
                None => return false,
            }
        }
        true
    }

    fn strncpy(&self, addr: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let n = buf.len();
        for (i, slot) in buf.iter_mut().enumerate() {
            let c = self.byte(addr.wrapping_add(i as u64)).ok_or(Errno(14))?;
            *slot = c;
            if c == 0 {
                return Ok(i + 1);
            }
        }
        if let Some(last) = buf.last_mut() {
            *last = 0;
        }
        Ok(n)
    }
}

impl FetchEnv for Chaos {
    fn register(&self, r: Register) -> u64 {
        self.0.rotate_left(u32::from(r.pt_regs_offset()))
    }
    fn stack_nth(&self, n: u32) -> u64 {
        self.0.wrapping_add(u64::from(n))
    }
    fn stack_pointer(&self) -> u64 {
        self.0 | 0xffff_c900_0000_0000
    }
    fn return_value(&self) -> u64 {
        !self.0
    }
    fn argument(&self, n: u32) -> u64 {
        self.0.wrapping_mul(u64::from(n) + 3)
    }
    fn entry_argument(&self, n: u32) -> u64 {
        self.0.wrapping_mul(u64::from(n) + 5)
    }
    fn comm_address(&self) -> u64 {
        0xffff_8880_0000_0000 | (self.0 & 0xffff)
    }
    fn current_task(&self) -> u64 {
        0xffff_8880_0100_0000 | (self.0 & 0xfff0)
    }
    fn this_cpu_ptr(&self, addr: u64) -> u64 {
        // One CPU, whose per-CPU area starts 1 GiB above the variables'.
        addr.wrapping_add(1 << 30)
    }
    fn read_kernel(&self, addr: u64, buf: &mut [u8]) -> bool {
        self.read(addr, buf)
    }
    fn read_user(&self, addr: u64, buf: &mut [u8]) -> bool {
        self.read(!addr, buf)
    }
    fn strncpy_kernel(&self, addr: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.strncpy(addr, buf)
    }
    fn strncpy_user(&self, addr: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.strncpy(!addr, buf)
    }
    fn strnlen_user(&self, addr: u64, max: usize) -> Result<usize, Errno> {
        for i in 0..max {
            match self.byte((!addr).wrapping_add(i as u64)) {
                Some(0) => return Ok(i + 1),
                Some(_) => {}
                None => return Err(Errno(14)),
            }
        }
        Ok(max)
    }
    fn symbol_string(&self, addr: u64, room: &mut [u8]) -> usize {
        let len = (addr % 700) as usize;
        if let Some(last) = room.len().checked_sub(1) {
            let n = len.min(last);
            room[..n].fill(b's');
            room[n] = 0;
        }
        len
    }
    fn task_size(&self) -> u64 {
        0x0000_7fff_ffff_f000
    }
}

/// Runs the programs of `def` as a hit would, with records capped as the
/// module caps them, and prints the record back whole and cut short.
fn run_and_print(def: &ProbeDef<'_>, seed: u64) {
    const HDR: usize = 16;
    const MAX_RECORD: usize = 4000;
    let progs: Vec<(Vec<FetchInsn<u64>>, u32, bool)> = def
        .args()
        .map(|a| {
            let a = a.unwrap();
            let code = a.program.insns().iter().map(|i| i.map(|_| seed)).collect();
            (code, a.offset, a.ty.base.is_string())
        })
        .collect();
    let layout: Vec<ArgLayout<'_>> = progs
        .iter()
        .map(|(c, o, d)| ArgLayout {
            code: c,
            offset: *o,
            dynamic: *d,
        })
        .collect();
    let env = Chaos(seed);
    let fixed = def.size as usize;
    let dsize = data_size(&layout, &env).min(MAX_RECORD.saturating_sub(HDR + fixed));
    let mut rec = vec![0u8; HDR + fixed + dsize];
    store_args(&layout, &env, &mut rec, HDR, fixed, dsize);
    let kept = Kept::new(def);
    let layout = kept.layout();
    let extent = record_extent(&layout, &rec, HDR, MAX_RECORD);
    assert!(extent <= rec.len(), "{extent} > {}", rec.len());
    let mut b = Buf::default();
    write_record_args(&mut b, &layout, &rec, HDR, &NoSymbols).unwrap();
    let cut = (seed as usize) % (rec.len() + 1);
    write_record_args(&mut b, &layout, &rec[..cut], HDR, &NoSymbols).unwrap();
    // Arbitrary bytes, as a stale record of another event would hold.
    let junk: Vec<u8> = (0..cut).map(|i| (seed >> (i % 57)) as u8).collect();
    write_record_args(&mut b, &layout, &junk, HDR, &NoSymbols).unwrap();
}

/// Parses `input` as kprobe_events and as dynamic_events do and checks
/// everything that follows from the answers; returns how many were
/// probe commands.
fn exercise(input: &[u8]) -> usize {
    let line = c_str(input);
    let dynamic = parse_dyn_command(input, &MockEnv);
    let theirs = line.first() == Some(&b'!')
        || matches!(
            ProbeKind::of_command(line),
            Some(ProbeKind::Fprobe | ProbeKind::Tprobe | ProbeKind::Eprobe)
        );
    if !theirs {
        // The same command, the same answer.
        assert_eq!(dynamic, parse_command(input, &MockEnv));
    }
    let mut n = usize::from(check_answer(input, parse_command(input, &MockEnv)));
    if theirs {
        n += usize::from(check_answer(input, dynamic));
    }
    n
}

/// Checks everything that follows from the answer to `input`; returns
/// whether it was a probe command.
fn check_answer(input: &[u8], answer: Result<Command<'_>, ParseError>) -> bool {
    match answer {
        Err(e) => {
            let kind = ProbeKind::of_command(c_str(input)).unwrap_or(ProbeKind::Kprobe);
            for entry in e.entries() {
                let mut b = Buf::default();
                write_error_log(&mut b, kind.subsystem(), input, &entry, &MockEnv).unwrap();
                assert_eq!(b.0.iter().filter(|&&c| c == b'\n').count(), 3);
            }
            assert_eq!(
                e.entries().count(),
                usize::from(e.log.is_some()) + usize::from(e.preceding.is_some())
            );
        }
        Ok(Command::Probe(def)) => {
            let kept = Kept::new(&def);
            let mut b = Buf::default();
            b.0.extend_from_slice(kept.listing().as_bytes());
            write_print_fmt(&mut b, &kept.layout()).unwrap();
            let data = [0xa5u8; 8];
            let mut n = 0;
            for (a, f) in def.args().zip(kept.layout().fields()) {
                let a = a.expect("validated argument failed to parse");
                assert!(a.program.insns().len() <= 16);
                assert_eq!(
                    (f.name, f.ty, f.offset),
                    (a.name.as_bytes(), a.ty, a.offset)
                );
                let elems = (0..a.ty.count.max(1)).map(|i| {
                    if a.ty.base.is_string() {
                        Element::Str((i % 2 == 0).then_some(&b"s\0"[..]))
                    } else {
                        Element::Scalar(&data)
                    }
                });
                write_arg_value(&mut b, &f, elems, &NoSymbols).unwrap();
                n += 1;
            }
            assert_eq!(n, def.nr_args);
            let seed = input.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &c| {
                (h ^ u64::from(c)).wrapping_mul(0x100_0000_01b3)
            });
            run_and_print(&def, seed);
            return true;
        }
        Ok(Command::Delete(d)) => {
            let cmd = "p:e vfs_read+8 a=%ax";
            let _ = Kept::new(&probe(cmd)).deleted_by(&d);
            let cmd = "f:e vfs_read%return a=$retval";
            match parse_dyn(cmd) {
                Ok(Command::Probe(def)) => {
                    let _ = Kept::new(&def).deleted_by(&d);
                }
                other => panic!("{other:?}"),
            }
        }
        Ok(Command::Empty) => {}
    }
    false
}

const ALPHABET: &[u8] = b"pr-:/.+%$@\\\"()[]=_0123456789abcdefxu ,\t\n#*&\xa0\xe9\x00";

/// The bytes of `f`, `t` and `!` commands, for their own random inputs.
const DYN_ALPHABET: &[u8] = b"ft!-:/.+%$@\\\"()[]=_0123456789abcdefxu ,\t\n#*?&\xa0\xe9\x00";

fn mutate(rng: &mut Rng, mut v: Vec<u8>) -> Vec<u8> {
    for _ in 0..1 + rng.below(4) {
        let pos = if v.is_empty() {
            0
        } else {
            rng.below(v.len() + 1)
        };
        let byte = if rng.chance(80) {
            *rng.pick(ALPHABET)
        } else {
            rng.next_u64() as u8
        };
        match rng.below(3) {
            0 if pos < v.len() => v[pos] = byte,
            1 if pos < v.len() => {
                v.remove(pos);
            }
            _ => v.insert(pos, byte),
        }
    }
    v
}

#[test]
fn no_input_panics() {
    let mut rng = Rng::new(42);
    let default = if cfg!(debug_assertions) {
        20_000
    } else {
        100_000
    };
    let iterations = std::env::var("RKPROBES_PE_ITERS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(default);
    let start = std::time::Instant::now();
    let mut probes = 0usize;
    for i in 0..iterations {
        let input: Vec<u8> = match i % 4 {
            0 => {
                let len = if rng.chance(2) {
                    rng.below(WRITE_BUFSIZE + 10)
                } else {
                    rng.below(120)
                };
                (0..len).map(|_| *rng.pick(ALPHABET)).collect()
            }
            1 => {
                let len = rng.below(200);
                (0..len).map(|_| rng.next_u64() as u8).collect()
            }
            _ => {
                let cmd = gen_command(&mut rng).into_bytes();
                mutate(&mut rng, cmd)
            }
        };
        probes += exercise(&input);
        for line in WriteLines::new(&input) {
            match line {
                Ok(l) => probes += exercise(l),
                Err(_) => break,
            }
        }
    }
    eprintln!(
        "no_input_panics: {iterations} inputs ({probes} probe commands run and printed) in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    // The mutated commands must reach the fetch interpreter and the
    // printer, not only the parser's errors.
    assert!(probes > iterations / 40, "only {probes} probes");
}

#[test]
fn no_dyn_input_panics() {
    let mut rng = Rng::new(43);
    let iterations = std::env::var("RKPROBES_PE_ITERS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(if cfg!(debug_assertions) {
            5_000
        } else {
            30_000
        });
    let mut probes = 0usize;
    for i in 0..iterations {
        let input: Vec<u8> = match i % 3 {
            0 => {
                let len = rng.below(120);
                let mut v: Vec<u8> = (0..len).map(|_| *rng.pick(DYN_ALPHABET)).collect();
                v.insert(0, *rng.pick(b"ft!"));
                v
            }
            _ => {
                let cmd = gen_dyn_command(&mut rng).into_bytes();
                mutate(&mut rng, cmd)
            }
        };
        for line in WriteLines::new(&input) {
            match line {
                Ok(l) => probes += exercise(l),
                Err(_) => break,
            }
        }
    }
    assert!(probes > iterations / 20, "only {probes} probes");
}

#[test]
fn long_and_deep_inputs() {
    let long = format!("p vfs_read {}", "+0(".repeat(1400));
    exercise(long.as_bytes());
    let long = format!("p vfs_read {}%ax{}", "+0(".repeat(21), ")".repeat(21));
    exercise(long.as_bytes());
    let many = format!("p vfs_read{}", " %ax".repeat(1000));
    exercise(many.as_bytes());
    let many = format!("p vfs_read{}", " +0(%ax):u64[64]".repeat(128));
    exercise(many.as_bytes());
    let names: String = (0..128).map(|i| format!(" n{i}=%ax")).collect();
    exercise(format!("p vfs_read{names}").as_bytes());
    exercise(&[b'p', b' ', 0xff, 0xfe]);
    exercise(&vec![b'x'; 70_000]);
    exercise(format!("t {}", "k".repeat(4000)).as_bytes());
    exercise(format!("f {}%return $retval", "*a".repeat(2000)).as_bytes());
    exercise(format!("f vfs_read{}", " +0(%ax)".repeat(200)).as_bytes());
}
