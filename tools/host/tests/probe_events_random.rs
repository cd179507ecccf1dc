// SPDX-License-Identifier: GPL-2.0

//! Seeded random tests of the kprobe_events parser: accepted commands list
//! in a form that parses back to the same probe, and no input panics.

mod probe_events_support;

use probe_events_support::*;
use rkprobes_host::pure::probe_events::{
    error::write_error_log,
    parse_command,
    print::{write_arg_value, write_print_fmt, Element, NoSymbols},
    Command, FetchArg, ProbeDef, WriteLines, WRITE_BUFSIZE,
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

fn gen_base(rng: &mut Rng, is_return: bool) -> String {
    const REGS: &[&str] = &[
        "ax", "bx", "cx", "dx", "si", "di", "bp", "sp", "ip", "flags", "r8", "r15", "cs", "ss",
        "orig_ax",
    ];
    match rng.below(12) {
        0 => format!("%{}", rng.pick(REGS)),
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
        _ => format!("%{}", rng.pick(REGS)),
    }
}

fn gen_fetch(rng: &mut Rng, is_return: bool) -> String {
    let mut f = gen_base(rng, is_return);
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

fn gen_arg(rng: &mut Rng, is_return: bool, used: &mut Vec<String>) -> String {
    let mut a = String::new();
    if rng.chance(50) {
        let n = gen_name(rng);
        if !used.contains(&n) {
            a = format!("{n}=");
            used.push(n);
        }
    }
    a.push_str(&gen_fetch(rng, is_return));
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
        cmd.push_str(&gen_arg(rng, is_return, &mut used));
    }
    cmd
}

fn arg_text(a: &FetchArg<'_>) -> Vec<u8> {
    let mut b = Buf::default();
    a.comm.write_to(&mut b).unwrap();
    b.0
}

fn assert_same_probe(a: &ProbeDef<'_>, b: &ProbeDef<'_>, what: &str) {
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
        assert_eq!(listing(&again), listed, "{cmd:?}");
        // The listing also deletes it, by name and by full definition.
        let del = format!("-:{}", &listed[listed.find(':').unwrap() + 1..]);
        match parse(&del) {
            Ok(Command::Delete(d)) => assert!(d.matches(&def, &MockEnv), "{del:?}"),
            other => panic!("{del:?}: {other:?}"),
        }
    }
    // The generator must exercise the accepting paths, not just errors.
    assert!(accepted > total / 4, "only {accepted} of {total} accepted");
}

fn exercise(input: &[u8]) {
    match parse_command(input, &MockEnv) {
        Err(e) => {
            let mut b = Buf::default();
            write_error_log(&mut b, "trace_kprobe", input, &e, &MockEnv).unwrap();
            if e.log.is_some() {
                assert_eq!(b.0.iter().filter(|&&c| c == b'\n').count(), 3);
            }
        }
        Ok(Command::Probe(def)) => {
            let mut b = Buf::default();
            rkprobes_host::pure::probe_events::write_listing(&mut b, &def, &MockEnv).unwrap();
            write_print_fmt(&mut b, &def).unwrap();
            let data = [0xa5u8; 8];
            let mut n = 0;
            for a in def.args() {
                let a = a.expect("validated argument failed to parse");
                assert!(a.program.insns().len() <= 16);
                let elems = (0..a.ty.count.max(1)).map(|i| {
                    if a.ty.base.is_string() {
                        Element::Str((i % 2 == 0).then_some(&b"s\0"[..]))
                    } else {
                        Element::Scalar(&data)
                    }
                });
                write_arg_value(&mut b, &a, elems, &NoSymbols).unwrap();
                n += 1;
            }
            assert_eq!(n, def.nr_args);
        }
        Ok(Command::Delete(d)) => {
            let cmd = "p:e vfs_read+8 a=%ax";
            let def = probe(cmd);
            let _ = d.matches(&def, &MockEnv);
        }
        Ok(Command::Empty) => {}
    }
}

const ALPHABET: &[u8] = b"pr-:/.+%$@\\\"()[]=_0123456789abcdefxu ,\t\n#*&\xa0\xe9\x00";

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
    let iterations = if cfg!(debug_assertions) {
        20_000
    } else {
        100_000
    };
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
        exercise(&input);
        for line in WriteLines::new(&input) {
            match line {
                Ok(l) => exercise(l),
                Err(_) => break,
            }
        }
    }
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
}
