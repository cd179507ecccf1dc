// SPDX-License-Identifier: GPL-2.0

//! The Rust decoder against two oracles over every function of a real
//! vmlinux (`RKPROBES_VMLINUX`, required):
//!
//! 1. the kernel's C decoder, field for field, walking each `STT_FUNC`
//!    symbol of an executable section from its start to its end; where both
//!    decoders agree that the bytes are no instruction (data in asm
//!    functions), both skip one byte, as `insn_decoder_test` and objdump do;
//! 2. GNU objdump (`objdump -d -z --insn-width=16`) for instruction lengths:
//!    every instruction the walk finds is looked up at the same address in
//!    objdump's listing. The rules for the cases objdump cannot judge are in
//!    `Documentation/insn-decoder.rst` and in [`objdump_mismatch_explained`].
//!
//! Both fail on any unexplained disagreement and print the first ones.

mod common;

use common::{compare, elf_functions, read_vmlinux, Func, Verdict};
use rkprobes_host::pure::insn::{is_endbr, FuncCode, IndirectJumpCheck, Insn};
use std::collections::BTreeMap;
use std::process::Command;

/// Walks every function with both decoders, checks them against each other,
/// and returns the number of instructions, the failures and the bytes both
/// found invalid.
fn walk_all(funcs: &[Func<'_>], padded: bool) -> (u64, Vec<String>, u64) {
    let mut insns = 0u64;
    let mut failures = Vec::new();
    let mut invalid = 0u64;
    for f in funcs {
        let code = if padded { f.padded } else { f.code };
        let mut pos = 0usize;
        while pos < code.len() {
            let addr = f.addr + pos as u64;
            match compare(&code[pos..]) {
                Verdict::Same(insn) => {
                    insns += 1;
                    pos += insn.length();
                }
                Verdict::BothInvalid(_) => {
                    invalid += 1;
                    pos += 1;
                }
                Verdict::Differ(msg) => {
                    if failures.len() < 10 {
                        failures.push(format!("{}+{:#x} ({addr:#x}): {msg}", f.name, pos));
                    } else {
                        failures.push(String::new());
                    }
                    pos += 1;
                }
            }
        }
    }
    (insns, failures, invalid)
}

#[test]
fn vmlinux_against_kernel_decoder() {
    let (path, data) = read_vmlinux();
    let funcs = elf_functions(&data).unwrap_or_else(|e| panic!("{path}: {e}"));
    let bytes: usize = funcs.iter().map(|f| f.code.len()).sum();
    let (insns, mut failures, invalid) = walk_all(&funcs, false);
    eprintln!(
        "vmlinux differential: {path}: {} functions, {bytes} bytes, {} instructions \
         decoded identically, {invalid} bytes skipped as invalid by both, {} disagreements",
        funcs.len(),
        insns,
        failures.len()
    );
    // Again with each function extended over the padding up to the next
    // function, as kallsyms sizes it (the range can_probe()/can_optimize()
    // walk).
    let padded_bytes: usize = funcs.iter().map(|f| f.padded.len()).sum();
    let (pinsns, pfailures, pinvalid) = walk_all(&funcs, true);
    eprintln!(
        "vmlinux differential, kallsyms-sized functions: {padded_bytes} bytes, {pinsns} \
         instructions decoded identically, {pinvalid} bytes invalid for both, {} disagreements",
        pfailures.len()
    );
    failures.extend(pfailures);
    assert!(
        funcs.len() > 1000 && insns > 100_000,
        "suspiciously little code in {path}"
    );
    if !failures.is_empty() {
        let shown: Vec<&String> = failures.iter().filter(|s| !s.is_empty()).collect();
        panic!(
            "{} disagreement(s) with the kernel decoder, first ones:\n{}",
            failures.len(),
            shown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }

    // The function-level walker must find exactly the same boundaries, and
    // the probing layers must answer for every instruction without panicking.
    let mut boundaries = 0u64;
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    let mut refusals: BTreeMap<String, u64> = BTreeMap::new();
    let (mut boostable, mut endbr, mut optimizable) = (0u64, 0u64, 0u64);
    for f in &funcs {
        let fc = FuncCode::new(f.padded, f.addr);
        for item in fc.insns() {
            let Ok((addr, insn)) = item else { break };
            let cf = format!("{:?}", insn.control_flow(addr));
            let kind = cf.split([' ', '(', '{']).next().unwrap_or("").to_string();
            *kinds.entry(kind).or_default() += 1;
            if let Some(r) = insn.probe_refusal() {
                *refusals.entry(format!("{r:?}")).or_default() += 1;
            }
            boostable += u64::from(insn.can_boost(false));
            endbr += u64::from(insn.is_endbr64());
            boundaries += 1;
        }
        // Jump optimization at the first instruction after ENDBR, 6.12
        // rules for a retpoline/IBT kernel.
        let entry = if is_endbr(f.code) { f.addr + 4 } else { f.addr };
        if fc
            .can_optimize(entry, IndirectJumpCheck::Skip, |_| false, |_| false)
            .is_ok()
        {
            optimizable += 1;
        }
    }
    eprintln!(
        "classification over {boundaries} instructions: {boostable} boostable, {endbr} ENDBR64, \
         {optimizable} of {} function entries pass can_optimize()\n  control flow: {kinds:?}\n  \
         refusals: {refusals:?}",
        funcs.len()
    );
    assert!(boundaries > 0);
}

/// One line of objdump's listing.
#[derive(Clone, Copy)]
struct ObjInsn {
    addr: u64,
    len: u8,
    bad: bool,
}

fn run_objdump(path: &str) -> Vec<ObjInsn> {
    let objdump = std::env::var("OBJDUMP").unwrap_or_else(|_| "objdump".into());
    let out = Command::new(&objdump)
        .args(["-d", "-z", "--insn-width=16", path])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {objdump}: {e} (GNU binutils is required)"));
    assert!(
        out.status.success(),
        "{objdump} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut v = Vec::with_capacity(4_000_000);
    for line in text.lines() {
        let mut parts = line.split('\t');
        let (Some(a), Some(hex)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Some(a) = a.trim_start().strip_suffix(':') else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(a, 16) else {
            continue;
        };
        let len = hex.split_whitespace().count();
        if len == 0 || len > 15 {
            continue;
        }
        let mnemonic = parts.next().unwrap_or("");
        v.push(ObjInsn {
            addr,
            len: len as u8,
            bad: mnemonic.contains("(bad)"),
        });
    }
    v.sort_by_key(|i| i.addr);
    v
}

/// The only length disagreements accepted, each for a documented reason.
fn objdump_mismatch_explained(
    addr: u64,
    bytes: &[u8],
    ours: usize,
    theirs: usize,
    symbols: &[u64],
) -> Option<&'static str> {
    // objdump never decodes across a symbol: it cuts the instruction where
    // the next symbol starts (srso_untrain_ret's movabs hides srso_safe_ret,
    // retbleed_untrain_ret's test hides retbleed_return_thunk).
    let end = addr + ours as u64;
    let i = symbols.partition_point(|&s| s <= addr);
    if theirs < ours && symbols.get(i).is_some_and(|&s| s < end) {
        return Some("objdump cuts the instruction at a symbol inside it");
    }
    // objdump prints FWAIT followed by an x87 instruction as the single
    // "wait form" mnemonic (fwait; fninit = finit); the kernel decodes 9b
    // as an instruction of its own.
    if bytes.first() == Some(&0x9b) && ours == 1 && theirs > 1 {
        if let Ok(next) = Insn::decode(&bytes[1..]) {
            if 1 + next.length() == theirs && (0xd8..=0xdf).contains(&next.opcode_byte(0)) {
                return Some("objdump merges FWAIT with the x87 instruction after it");
            }
        }
    }
    None
}

#[test]
fn vmlinux_lengths_against_objdump() {
    let (path, data) = read_vmlinux();
    let funcs = elf_functions(&data).unwrap_or_else(|e| panic!("{path}: {e}"));
    let obj = run_objdump(&path);
    let symbols = common::elf_exec_symbol_addrs(&data);
    let mut bad_samples: Vec<String> = Vec::new();
    let (mut same, mut unsynced, mut bad, mut explained) = (0u64, 0u64, 0u64, 0u64);
    let mut failures = Vec::new();
    for f in &funcs {
        let mut pos = 0usize;
        while pos < f.code.len() {
            let addr = f.addr + pos as u64;
            let insn = match Insn::decode(&f.code[pos..]) {
                Ok(i) => i,
                Err(_) => {
                    pos += 1;
                    continue;
                }
            };
            let len = insn.length();
            match obj.binary_search_by_key(&addr, |o| o.addr).map(|i| obj[i]) {
                Err(_) => unsynced += 1,
                Ok(o) if o.bad => {
                    bad += 1;
                    if bad_samples.len() < 12 {
                        bad_samples.push(format!(
                            "  {}+{pos:#x}: {:02x?}",
                            f.name,
                            &f.code[pos..pos + len]
                        ));
                    }
                }
                Ok(o) if usize::from(o.len) == len => same += 1,
                Ok(o) => {
                    let b = &f.code[pos..pos + len.max(usize::from(o.len)).min(f.code.len() - pos)];
                    if objdump_mismatch_explained(addr, b, len, usize::from(o.len), &symbols)
                        .is_some()
                    {
                        explained += 1;
                    } else if failures.len() < 20 {
                        failures.push(format!(
                            "{}+{pos:#x} ({addr:#x}): ours {len}, objdump {}: {:02x?}",
                            f.name, o.len, b
                        ));
                    }
                }
            }
            pos += len;
        }
    }
    eprintln!(
        "instructions objdump calls (bad) (first ones):\n{}",
        bad_samples.join("\n")
    );
    eprintln!(
        "objdump oracle: {same} instructions of the same length, {bad} that objdump calls \
         (bad), {unsynced} where objdump has no instruction at that address (out of sync), \
         {explained} explained length differences, {} unexplained",
        failures.len()
    );
    assert!(same > 100_000, "objdump listing looks empty");
    assert!(
        failures.is_empty(),
        "length disagreements with objdump:\n{}",
        failures.join("\n")
    );
}
