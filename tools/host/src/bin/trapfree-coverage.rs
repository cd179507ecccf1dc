// SPDX-License-Identifier: GPL-2.0

//! How many probe offsets are trap-free under the kernel's rules, how many
//! more `FuncCode::plan_region` makes trap-free, and why the rest trap: a
//! static estimate from a vmlinux.
//!
//! Usage: `trapfree-coverage VMLINUX [SEED]`. The functions are the four of
//! `tools/testing/guest/58-optprobes-sweep.sh` (`kernel_clone`,
//! `do_sys_openat2`, `vfs_read`, `vfs_write`) at offsets 0..255, as the sweep
//! probes them, and 50 functions of `.text` drawn with SEED (default 1) at
//! every offset of their ELF size. Per offset, as the kernel's kprobes
//! decide (`register_kprobe()`, `can_probe()`, `can_optimize()`,
//! `copy_optimized_instructions()`):
//!
//! - *probe-able*: within the kallsyms-sized function (padding up to the
//!   next symbol), moved past an ENDBR at offsets 0 and 4
//!   (`arch_adjust_kprobe_addr()`), not on a jump-label or static-call site,
//!   ftrace's call site itself or an instruction boundary whose instruction
//!   is not refused (`Insn::probe_refusal`);
//! - *kernel*: trap-free by the kernel's rules: the ftrace site, or jump
//!   optimization (`can_optimize` with the IBT/retpoline rules, then
//!   `copy_for_detour`, and no ftrace, jump-label or static-call site in the
//!   region);
//! - *plan*: trap-free only with `plan_region` (same reserved-site checks
//!   over its `taken` bytes);
//! - *trap*: the rest, grouped by `plan_region`'s refusal (or the reserved
//!   site), with, for each, whether a 2-byte `jmp rel8` at the probe could
//!   reach a 5-byte `jmp rel32` to a detour placed in free padding after
//!   the function: the instruction is 2 bytes or more, the padding after
//!   the function's ELF end (int3s and NOPs up to the next symbol; and
//!   again counting the next function's `__pfx_` NOPs, which call-depth
//!   tracking and FineIBT rewrite at boot when they are in use) has
//!   5 bytes within -128..+127 of the 2-byte jump's end, and no branch
//!   targets the jump's second byte.
//!
//! Approximations (what only the running kernel knows): functions are
//! skipped when the vmlinux blacklists them (`_kprobe_blacklist`,
//! `__kprobes`, `noinstr` and entry text); module-less, as booted on SMP
//! (no lock-prefix reservations of `alternatives_text_reserved()`); boot-time
//! patching (alternatives, retpoline and return sites, call thunks) is not
//! applied to the bytes; kallsyms sizes are taken from the next function
//! symbol; `find_bug()` sites are `ud2`, refused anyway; CFI preambles
//! (`__cfi_`) and `__pfx_` padding symbols are never drawn.

#[path = "../../tests/common/mod.rs"]
#[allow(unreachable_pub, missing_docs)]
mod common;

use common::kernel_tables::{conflicts, holds, Kernel};
use common::{Func, Rng};
use rkprobes_host::pure::insn::{
    adjust_probe_offset, FuncCode, IndirectJumpCheck, Insn, OpcodeMap, OptimizeRefusal, RegionEnd,
    MAX_PLAN_OUTPUT,
};
use std::collections::BTreeMap;

/// Where detours go: rkprobes' slots are in module space.
const REAL: u64 = 0xffff_ffff_a000_0000;
const SWEEP: [&str; 4] = ["kernel_clone", "do_sys_openat2", "vfs_read", "vfs_write"];
const RANDOM: usize = 50;

/// The kernel's tables this needs, read once.
struct Tables {
    extable: Vec<u64>,
    mcount: Vec<u64>,
    jump_labels: Vec<(u64, u64)>,
    static_calls: Vec<(u64, u64)>,
    thunks: Vec<u64>,
    blacklist: Vec<(u64, u64)>,
}

impl Tables {
    /// Whether another patcher owns a byte of `start..=end` (the kernel's
    /// `ftrace_text_reserved()`, `jump_label_text_reserved()`,
    /// `static_call_text_reserved()`), and which.
    fn reserved(&self, start: u64, end: u64) -> Option<&'static str> {
        let lo = self.mcount.partition_point(|&s| s + 5 <= start);
        if self.mcount.get(lo).is_some_and(|&s| s <= end) {
            return Some("Reserved(ftrace)");
        }
        if conflicts(&self.jump_labels, start, end) {
            return Some("Reserved(jump label)");
        }
        if conflicts(&self.static_calls, start, end) {
            return Some("Reserved(static call)");
        }
        None
    }

    fn blacklisted(&self, a: u64) -> bool {
        self.blacklist.iter().any(|&(s, e)| s <= a && a < e)
    }
}

/// Per-offset verdict.
enum Verdict {
    /// No probe possible, and why.
    NoProbe(String),
    /// The kernel's rules are trap-free: ftrace or an optimized jump.
    Ftrace,
    Optimized,
    /// Trap-free with `plan_region`, in what way.
    Plan(&'static str),
    /// Traps: the reason, and the three facts about a 2-byte jump.
    Trap {
        reason: String,
        len2: bool,
        padding: bool,
        padding_pfx: bool,
        free_byte: bool,
    },
}

impl Verdict {
    fn describe(&self) -> String {
        match self {
            Verdict::NoProbe(why) => format!("no probe: {why}"),
            Verdict::Ftrace => "ftrace".into(),
            Verdict::Optimized => "optimized (kernel's rules)".into(),
            Verdict::Plan(kind) => format!("plan_region: {kind}"),
            Verdict::Trap { reason, .. } => format!("trap: {reason}"),
        }
    }
}

#[derive(Default)]
struct Row {
    offsets: u64,
    probe: u64,
    ftrace: u64,
    optimized: u64,
    plan: u64,
    trap: u64,
    jmp8: u64,
    jmp8_pfx: u64,
    no_probe: BTreeMap<String, u64>,
    plan_kinds: BTreeMap<&'static str, u64>,
    reasons: BTreeMap<String, [u64; 7]>,
    kernel_offsets: Vec<u64>,
    plan_offsets: Vec<u64>,
}

impl Row {
    fn add(&mut self, off: u64, v: &Verdict) {
        self.offsets += 1;
        match v {
            Verdict::NoProbe(why) => *self.no_probe.entry(why.clone()).or_default() += 1,
            Verdict::Ftrace => {
                self.probe += 1;
                self.ftrace += 1;
            }
            Verdict::Optimized => {
                self.probe += 1;
                self.optimized += 1;
                self.kernel_offsets.push(off);
            }
            Verdict::Plan(kind) => {
                self.probe += 1;
                self.plan += 1;
                *self.plan_kinds.entry(kind).or_default() += 1;
                self.plan_offsets.push(off);
            }
            Verdict::Trap {
                reason,
                len2,
                padding,
                padding_pfx,
                free_byte,
            } => {
                self.probe += 1;
                self.trap += 1;
                let all = *len2 && *padding && *free_byte;
                let all_pfx = *len2 && *padding_pfx && *free_byte;
                self.jmp8 += u64::from(all);
                self.jmp8_pfx += u64::from(all_pfx);
                let e = self.reasons.entry(reason.clone()).or_default();
                e[0] += 1;
                e[1] += u64::from(*len2);
                e[2] += u64::from(*free_byte);
                e[3] += u64::from(*padding);
                e[4] += u64::from(all);
                e[5] += u64::from(*padding_pfx);
                e[6] += u64::from(all_pfx);
            }
        }
    }

    fn merge(&mut self, o: &Row) {
        self.offsets += o.offsets;
        self.probe += o.probe;
        self.ftrace += o.ftrace;
        self.optimized += o.optimized;
        self.plan += o.plan;
        self.trap += o.trap;
        self.jmp8 += o.jmp8;
        self.jmp8_pfx += o.jmp8_pfx;
        for (k, v) in &o.no_probe {
            *self.no_probe.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &o.plan_kinds {
            *self.plan_kinds.entry(k).or_default() += v;
        }
        for (k, v) in &o.reasons {
            let e = self.reasons.entry(k.clone()).or_default();
            for (a, b) in e.iter_mut().zip(v) {
                *a += b;
            }
        }
    }
}

/// A refusal's name without its address.
fn refusal_name(e: &OptimizeRefusal, f: &FuncCode<'_>) -> String {
    match e {
        OptimizeRefusal::NotBoostable { addr } => {
            let what = f.insn_at(*addr).map_or("?".to_string(), |i| {
                let op = i.opcode();
                let ops: Vec<String> = (0..usize::from(op.nbytes))
                    .map(|n| format!("{:02x}", op.byte(n)))
                    .collect();
                let modrm = if i.modrm().nbytes > 0 {
                    format!(" /{}", (i.modrm_byte() >> 3) & 7)
                } else {
                    String::new()
                };
                format!("{}{modrm}", ops.join(" "))
            });
            format!("NotBoostable({what})")
        }
        OptimizeRefusal::Analyze(a) => format!(
            "Analyze({})",
            format!("{a:?}").split([' ', '{']).next().unwrap_or("?")
        ),
        OptimizeRefusal::Reloc { error, .. } => format!("Reloc({error:?})"),
        other => format!("{other:?}")
            .split([' ', '{', '('])
            .next()
            .unwrap_or("?")
            .to_string(),
    }
}

fn classify(funcs: &[Func<'_>], func: &Func<'_>, off: u64, t: &Tables) -> Verdict {
    // Offsets past the kallsyms-sized function are left out: the guest
    // sweep's kernel accepts a few of them (in the next function), which
    // this does not model.
    if off >= func.padded.len() as u64 {
        return Verdict::NoProbe("beyond the function".into());
    }
    let (off, _) = adjust_probe_offset(func.code, off);
    let paddr = func.addr + off;
    // The next function, for the padding after this one.
    let i = funcs.partition_point(|f| f.addr < func.addr + func.padded.len() as u64);
    let f = FuncCode::new(func.padded, func.addr);
    if t.blacklisted(paddr) {
        return Verdict::NoProbe("blacklisted".into());
    }
    if conflicts(&t.jump_labels, paddr, paddr) || conflicts(&t.static_calls, paddr, paddr) {
        return Verdict::NoProbe("jump label or static call site".into());
    }
    if holds(&t.mcount, paddr) {
        return Verdict::Ftrace;
    }
    match f.is_boundary(paddr) {
        Ok(true) => {}
        Ok(false) => return Verdict::NoProbe("not a boundary".into()),
        Err(_) => return Verdict::NoProbe("decode error".into()),
    }
    let Ok(insn) = f.insn_at(paddr) else {
        return Verdict::NoProbe("decode error".into());
    };
    if let Some(r) = insn.probe_refusal() {
        return Verdict::NoProbe(format!("{r:?}"));
    }
    let in_ext = |a: u64| holds(&t.extable, a);
    let is_thunk = |a: u64| holds(&t.thunks, a);
    let mut kout = [0u8; 32];
    let kernel = f
        .can_optimize(paddr, IndirectJumpCheck::Skip, in_ext, is_thunk)
        .and_then(|()| f.copy_for_detour(paddr, REAL, &mut kout, in_ext));
    if let Ok(n) = kernel {
        if t.reserved(paddr, paddr + n as u64 - 1).is_none() {
            return Verdict::Optimized;
        }
    }
    let mut out = [0u8; MAX_PLAN_OUTPUT];
    let plan = f.plan_region(
        paddr,
        REAL,
        &mut out,
        IndirectJumpCheck::Skip,
        in_ext,
        is_thunk,
    );
    let reason = match plan {
        Ok(p) => match t.reserved(paddr, paddr + p.taken as u64 - 1) {
            None => {
                return Verdict::Plan(match p.end {
                    RegionEnd::JumpBack => {
                        if f.copy_for_detour(paddr, REAL, &mut kout, in_ext).is_ok() {
                            "kernel's region, a branch to paddr+5 allowed"
                        } else {
                            "Jcc moved"
                        }
                    }
                    RegionEnd::Jump { .. } => "ends with a JMP",
                    RegionEnd::Call { .. } => "ends with a CALL",
                })
            }
            Some(r) => r.to_string(),
        },
        Err(e) => refusal_name(&e, &f),
    };
    // A 2-byte jmp at the probe to 5 free bytes after the function.
    let len2 = insn.length() >= 2;
    let pad_lo = func.addr + func.code.len() as u64;
    let pad_hi = func.addr + func.padded.len() as u64;
    let free = func.padded.get(func.code.len()..).is_some_and(is_padding);
    let next = paddr + 2;
    // The window [t, t + 5) in [pad_lo, pad_hi), t - next in -128..=127.
    let t_lo = pad_lo.max(next.saturating_sub(128));
    let t_hi = pad_hi.saturating_sub(5).min(next + 127);
    let padding = free && pad_hi >= pad_lo + 5 && t_lo <= t_hi;
    // Also counting the NOPs of the next function's __pfx_ symbol, free
    // unless call-depth tracking or FineIBT rewrites them at boot.
    let pfx_hi = pad_hi + 16;
    let pfx_free = i < funcs.len()
        && funcs.get(i).is_some_and(|n| {
            n.addr == pad_hi && n.name.starts_with("__pfx_") && is_padding(n.code)
        });
    let t_hi2 = pfx_hi.saturating_sub(5).min(next + 127);
    let padding_pfx = padding || (free && pfx_free && t_lo <= t_hi2);
    let free_byte = f
        .find_branch_into(paddr + 1, paddr + 2, false)
        .is_ok_and(|b| b.is_none());
    Verdict::Trap {
        reason,
        len2,
        padding,
        padding_pfx,
        free_byte,
    }
}

/// Whether `bytes` are padding: int3s and NOPs (`0x90`, `0f 1f /0` with
/// any prefixes), as the assembler and linker align functions.
fn is_padding(mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        let Ok(i) = Insn::decode(bytes) else {
            return false;
        };
        let nop = matches!(
            i.opcode_map(),
            (OpcodeMap::OneByte, 0x90 | 0xcc) | (OpcodeMap::Map0f, 0x1f)
        );
        if !nop {
            return false;
        }
        bytes = &bytes[i.length()..];
    }
    true
}

fn print_group(title: &str, rows: &[(String, Row)], total: &Row, list_offsets: bool) {
    println!("\n== {title} ==");
    println!(
        "{:<34} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}",
        "function",
        "offsets",
        "probe",
        "ftrace",
        "opt",
        "kernel",
        "+plan",
        "trap",
        "jmp8",
        "jmp8pfx"
    );
    let line = |name: &str, r: &Row| {
        println!(
            "{:<34} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}",
            name,
            r.offsets,
            r.probe,
            r.ftrace,
            r.optimized,
            r.ftrace + r.optimized,
            r.plan,
            r.trap,
            r.jmp8,
            r.jmp8_pfx
        )
    };
    for (name, r) in rows {
        line(name, r);
    }
    line("total", total);
    let pct = |n: u64| {
        if total.probe == 0 {
            0.0
        } else {
            100.0 * n as f64 / total.probe as f64
        }
    };
    println!(
        "trap-free: kernel's rules {:.1}%, with plan_region {:.1}% of probe-able offsets",
        pct(total.ftrace + total.optimized),
        pct(total.ftrace + total.optimized + total.plan)
    );
    println!("made trap-free by plan_region:");
    for (k, v) in &total.plan_kinds {
        println!("  {v:>7}  {k}");
    }
    println!(
        "still trapping, by plan_region's refusal; then: insn >= 2 bytes, no branch to \
         paddr+1, >= 5 padding bytes in rel8 reach, all three (a 2-byte jmp fits); the \
         last two again counting the next function's __pfx_ NOPs"
    );
    let mut reasons: Vec<_> = total.reasons.iter().collect();
    reasons.sort_by(|a, b| b.1[0].cmp(&a.1[0]).then(a.0.cmp(b.0)));
    for (k, v) in reasons {
        println!(
            "  {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6}  {k}",
            v[0], v[1], v[2], v[3], v[4], v[5], v[6]
        );
    }
    println!("not probe-able:");
    for (k, v) in &total.no_probe {
        println!("  {v:>7}  {k}");
    }
    if list_offsets {
        for (name, r) in rows {
            let list = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(" ");
            println!(
                "{name}: optimized by the kernel's rules at: {}",
                list(&r.kernel_offsets)
            );
            println!(
                "{name}: trap-free only with plan_region at: {}",
                list(&r.plan_offsets)
            );
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: trapfree-coverage VMLINUX [SEED]");
        std::process::exit(2);
    };
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let data = std::fs::read(path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1);
    });
    let funcs = common::elf_functions(&data).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1);
    });
    let kernel = Kernel::parse(&data).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1);
    });
    let ranges: Vec<(u64, u64)> = funcs
        .iter()
        .map(|f| (f.addr, f.addr + f.padded.len() as u64))
        .collect();
    let t = Tables {
        extable: kernel.ex_table(),
        mcount: kernel.mcount_locs(),
        jump_labels: kernel.jump_label_sites(),
        static_calls: kernel
            .static_call_sites()
            .into_iter()
            .map(|a| (a, 5))
            .collect(),
        thunks: kernel.thunks(),
        blacklist: kernel.kprobe_blacklist(&ranges),
    };
    println!(
        "{path}: {} functions; tables: {} exception-table entries, {} ftrace sites, \
         {} jump-label sites, {} static-call sites, {} thunks, {} blacklisted ranges; seed {seed}",
        funcs.len(),
        t.extable.len(),
        t.mcount.len(),
        t.jump_labels.len(),
        t.static_calls.len(),
        t.thunks.len(),
        t.blacklist.len()
    );
    println!(
        "columns: probe = probe-able offsets; ftrace, opt = trap-free by the kernel's rules \
         (kernel = their sum, the sweep's [OPTIMIZED] count is opt); +plan = trap-free only \
         with plan_region; trap = still an int3; jmp8 = trapping offsets where a 2-byte jmp \
         to padding after the function would fit, jmp8pfx = the same counting the next \
         function's __pfx_ NOPs"
    );

    let verbose = std::env::var_os("TRAPFREE_VERBOSE").is_some();
    let mut rows = Vec::new();
    let mut total = Row::default();
    for name in SWEEP {
        let Some(func) = funcs.iter().find(|f| f.name == name) else {
            println!("{name}: not in this vmlinux");
            continue;
        };
        let mut r = Row::default();
        for off in 0..256 {
            let v = classify(&funcs, func, off, &t);
            if verbose {
                println!("{name}+{off}: {}", v.describe());
            }
            r.add(off, &v);
        }
        total.merge(&r);
        rows.push((name.to_string(), r));
    }
    print_group(
        "58-optprobes-sweep functions, offsets 0..255",
        &rows,
        &total,
        true,
    );

    let (Some(stext), Some(etext)) = (kernel.symbol("_stext"), kernel.symbol("_etext")) else {
        eprintln!("no _stext/_etext");
        std::process::exit(1);
    };
    let pool: Vec<&Func<'_>> = funcs
        .iter()
        .filter(|f| f.addr >= stext && f.addr < etext)
        .filter(|f| !f.name.starts_with("__pfx_") && !f.name.starts_with("__cfi_"))
        .filter(|f| !SWEEP.contains(&f.name))
        .filter(|f| !t.blacklisted(f.addr) && f.code.len() >= 5)
        .collect();
    let mut rng = Rng(seed);
    let mut picked: Vec<&Func<'_>> = Vec::new();
    while picked.len() < RANDOM.min(pool.len()) {
        let f = pool[rng.below(pool.len())];
        if !picked.iter().any(|p| p.addr == f.addr) {
            picked.push(f);
        }
    }
    picked.sort_by_key(|f| f.addr);
    let mut rows = Vec::new();
    let mut rtotal = Row::default();
    for func in picked {
        let mut r = Row::default();
        for off in 0..func.code.len() as u64 {
            let v = classify(&funcs, func, off, &t);
            r.add(off, &v);
        }
        rtotal.merge(&r);
        rows.push((format!("{} ({}B)", func.name, func.code.len()), r));
    }
    print_group(
        &format!("{RANDOM} random .text functions (seed {seed}), every offset of their ELF size"),
        &rows,
        &rtotal,
        false,
    );
    let mut all = Row::default();
    all.merge(&total);
    all.merge(&rtotal);
    print_group("all", &[], &all, false);
}
