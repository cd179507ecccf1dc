// SPDX-License-Identifier: GPL-2.0

//! `FuncCode::plan_region` over every instruction boundary of every
//! function of a vmlinux (`RKPROBES_VMLINUX`, kallsyms-sized: padding up to
//! the next function symbol): it never panics, every plan it accepts
//! decodes back into the instructions it stands for (the same bytes but
//! for RIP-relative displacements, which reach the same address; each
//! branch a Jcc/JMP rel32 to the same target; a call as the push of the
//! original return address and a jump; the jump back), and wherever the
//! kernel's rules (`can_optimize` and `copy_for_detour`) accept, it accepts
//! with the same copy.
//!
//! Functions of more instructions than `RKPROBES_REGION_WALKED` (64 by
//! default, as `make check` runs it) are planned at that many boundaries
//! spread over them, because every plan walks the whole function: the work
//! stays linear in the kernel's size. A large value plans at every one.

mod common;

use common::kernel_tables::Kernel;
use rkprobes_host::pure::insn::{
    ControlFlow, FuncCode, IndirectJumpCheck, Insn, OptimizeRefusal, RegionEnd, RegionPlan,
    MAX_PLAN_OUTPUT, MAX_REGION_LEN,
};
use std::collections::BTreeMap;

/// Boundaries planned per function, unless `RKPROBES_REGION_WALKED` says.
const WALKED: usize = 64;

fn max_walked() -> usize {
    std::env::var("RKPROBES_REGION_WALKED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(WALKED)
        .max(1)
}
/// Where detours go: rkprobes' slots are in module space.
const REAL: u64 = 0xffff_ffff_a000_0000;

/// Checks that `out` is what `plan` says for the region at `paddr`.
fn check_plan(f: &FuncCode<'_>, paddr: u64, plan: &RegionPlan, out: &[u8]) -> Result<(), String> {
    let mut src = paddr;
    let mut pos = 0usize;
    let end = paddr + plan.region_len as u64;
    let dec = |pos: usize| {
        Insn::decode(&out[pos..plan.emitted]).map_err(|e| format!("emitted +{pos}: {e:?}"))
    };
    while src < end {
        let orig = f.insn_at(src).map_err(|e| format!("{e:?}"))?;
        let at = REAL + pos as u64;
        let got = dec(pos)?;
        match orig.control_flow(src) {
            ControlFlow::Jcc { cond, target } => {
                if got.control_flow(at) != (ControlFlow::Jcc { cond, target }) || got.length() != 6
                {
                    return Err(format!("jcc at {src:#x} became {:02x?}", got.bytes()));
                }
            }
            ControlFlow::JmpRel { target } => {
                if got.control_flow(at) != (ControlFlow::JmpRel { target })
                    || plan.end != (RegionEnd::Jump { target })
                    || src + orig.length() as u64 != end
                {
                    return Err(format!("jmp at {src:#x} became {:02x?}", got.bytes()));
                }
            }
            ControlFlow::CallRel { target } => {
                let lit = got
                    .rip_relative_target(at)
                    .filter(|_| got.bytes()[..2] == [0xff, 0x35])
                    .ok_or("call without its push")?;
                let lo = (lit - REAL) as usize;
                let ret = out
                    .get(lo..lo + 8)
                    .map(|b| u64::from_le_bytes(b.try_into().unwrap()));
                let jmp = dec(pos + got.length())?;
                if ret != Some(end)
                    || jmp.control_flow(at + got.length() as u64)
                        != (ControlFlow::JmpRel { target })
                    || plan.end != (RegionEnd::Call { target })
                    || lo + 8 != plan.emitted
                {
                    return Err(format!("call at {src:#x}: return {ret:x?}"));
                }
                return Ok(());
            }
            cf => {
                let same = got.length() == orig.length()
                    && got.control_flow(at) == cf
                    && got.rip_relative_target(at) == orig.rip_relative_target(src)
                    && got.opcode() == orig.opcode()
                    && got.modrm() == orig.modrm();
                if !same {
                    return Err(format!(
                        "{:02x?} at {src:#x} became {:02x?}",
                        orig.bytes(),
                        got.bytes()
                    ));
                }
            }
        }
        pos += got.length();
        src += orig.length() as u64;
    }
    if plan.end == RegionEnd::JumpBack {
        let back = dec(pos)?;
        if back.control_flow(REAL + pos as u64) != (ControlFlow::JmpRel { target: end })
            || pos + back.length() != plan.emitted
        {
            return Err("no jump back".into());
        }
    } else if pos != plan.emitted {
        return Err("bytes after the final branch".into());
    }
    Ok(())
}

#[test]
fn plan_region_over_vmlinux() {
    let (path, data) = common::read_vmlinux();
    let funcs = common::elf_functions(&data).unwrap_or_else(|e| panic!("{path}: {e}"));
    let kernel = Kernel::parse(&data).unwrap_or_else(|e| panic!("{path}: {e}"));
    let extable = kernel.ex_table();
    let thunks = kernel.thunks();
    let in_ext = |a: u64| common::kernel_tables::holds(&extable, a);
    let is_thunk = |a: u64| common::kernel_tables::holds(&thunks, a);
    let mut boundaries = 0u64;
    let (mut kernel_ok, mut plan_ok) = (0u64, 0u64);
    let mut refused: BTreeMap<String, u64> = BTreeMap::new();
    let mut ends: BTreeMap<&str, u64> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut max_emitted = 0;
    for func in &funcs {
        let f = FuncCode::new(func.padded, func.addr);
        let starts: Vec<u64> = f.insns().map_while(|r| r.ok()).map(|(a, _)| a).collect();
        let step = starts.len().div_ceil(max_walked()).max(1);
        for &paddr in starts.iter().step_by(step) {
            boundaries += 1;
            let mut out = [0u8; MAX_PLAN_OUTPUT];
            let plan = f.plan_region(
                paddr,
                REAL,
                &mut out,
                IndirectJumpCheck::Skip,
                in_ext,
                is_thunk,
            );
            let mut kout = [0u8; 32];
            let kern = f
                .can_optimize(paddr, IndirectJumpCheck::Skip, in_ext, is_thunk)
                .and_then(|()| f.copy_for_detour(paddr, REAL, &mut kout, in_ext));
            if let Ok(n) = kern {
                kernel_ok += 1;
                let same = plan.as_ref().is_ok_and(|p| {
                    p.region_len == n && p.end == RegionEnd::JumpBack && out[..n] == kout[..n]
                });
                if !same {
                    failures.push(format!(
                        "{}+{:#x}: kernel accepts, plan {plan:?}",
                        func.name,
                        paddr - func.addr
                    ));
                }
            }
            match plan {
                Ok(p) => {
                    plan_ok += 1;
                    max_emitted = max_emitted.max(p.emitted);
                    *ends
                        .entry(match p.end {
                            RegionEnd::JumpBack => "jump back",
                            RegionEnd::Jump { .. } => "jmp",
                            RegionEnd::Call { .. } => "call",
                        })
                        .or_default() += 1;
                    let bounded = p.emitted <= MAX_PLAN_OUTPUT
                        && p.region_len <= MAX_REGION_LEN
                        && p.taken == p.region_len.max(5);
                    if let Err(e) = check_plan(&f, paddr, &p, &out).and_then(|()| {
                        bounded
                            .then_some(())
                            .ok_or_else(|| format!("out of bounds: {p:?}"))
                    }) {
                        failures.push(format!("{}+{:#x}: {e}", func.name, paddr - func.addr));
                    }
                }
                Err(e) => {
                    let name = format!("{e:?}");
                    let mut name = name
                        .split([' ', '{', '('])
                        .next()
                        .unwrap_or("?")
                        .to_string();
                    if let OptimizeRefusal::Analyze(a) = e {
                        name = format!(
                            "Analyze::{}",
                            format!("{a:?}").split([' ', '{']).next().unwrap_or("?")
                        );
                    }
                    *refused.entry(name).or_default() += 1;
                }
            }
        }
    }
    eprintln!(
        "{path}: {} functions, {boundaries} boundaries planned; kernel's rules accept {kernel_ok}, \
         plan_region {plan_ok} (max {max_emitted} bytes)\n  ends: {ends:?}\n  refused: {refused:?}",
        funcs.len()
    );
    for f in failures.iter().take(10) {
        eprintln!("  {f}");
    }
    assert!(failures.is_empty(), "{} failures", failures.len());
    assert!(plan_ok > kernel_ok && kernel_ok > 0);
}
