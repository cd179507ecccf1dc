// SPDX-License-Identifier: GPL-2.0

//! Fuzzes relocation: for any instruction, source, destination and output
//! size, copy_insn() either fails with the documented error or produces an
//! instruction of the same length whose RIP-relative operand points where
//! the original's did; relocate_branch() likewise keeps the branch target.

#![no_main]

// The same files the module compiles, included directly so that fuzzing
// needs neither the kernel source nor the C oracle.
// Lints on these files are enforced by the host crate and the kernel build;
// here most of the tree is unused.
#[allow(warnings, clippy::all)]
#[path = "../../../rust/pure/mod.rs"]
mod pure;

use libfuzzer_sys::fuzz_target;
use pure::insn::{copy_insn, relocate_branch, Insn, RelocError};

fuzz_target!(|data: &[u8]| {
    if data.len() < 17 {
        return;
    }
    let (head, code) = data.split_at(17);
    let src = u64::from_le_bytes(head[0..8].try_into().unwrap());
    let mut real = u64::from_le_bytes(head[8..16].try_into().unwrap());
    if head[16] & 0x80 != 0 {
        // Mostly nearby destinations, so that relocation usually succeeds.
        real = src.wrapping_add((real as i32) as i64 as u64);
    }
    let out_len = usize::from(head[16] & 0x1f).min(32);
    let Ok(insn) = Insn::decode(code) else { return };
    let mut out = [0u8; 32];
    match copy_insn(&insn, src, real, &mut out[..out_len]) {
        Ok(c) => {
            assert_eq!(c.len, insn.length());
            let copy = Insn::decode(&out[..c.len]).expect("the copy decodes");
            assert_eq!(copy.length(), insn.length());
            assert_eq!(
                copy.rip_relative_target(real),
                insn.rip_relative_target(src)
            );
        }
        Err(RelocError::BufferTooSmall) => assert!(out_len < insn.length()),
        Err(RelocError::DisplacementOutOfRange) => assert!(insn.rip_relative()),
        Err(e) => panic!("unexpected {e:?}"),
    }
    if let Ok(n) = relocate_branch(&insn, src, real, &mut out[..out_len]) {
        let copy = Insn::decode(&out[..n]).expect("the branch copy decodes");
        assert_eq!(copy.control_flow(real), insn.control_flow(src));
    }
});
