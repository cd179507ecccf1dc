// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the decoder and everything built on a decoded instruction: no
//! input may panic, an instruction is 1 to 15 bytes and never longer than
//! the input, decoding is a pure function of the instruction's own bytes,
//! and the function walker agrees with decoding one instruction at a time.

#![no_main]

// The same files the module compiles, included directly so that fuzzing
// needs neither the kernel source nor the C oracle.
// Lints on these files are enforced by the host crate and the kernel build;
// here most of the tree is unused.
#[allow(warnings, clippy::all)]
#[path = "../../../rust/pure/mod.rs"]
mod pure;

use libfuzzer_sys::fuzz_target;
use pure::insn::{FuncCode, IndirectJumpCheck, Insn, MAX_INSN_SIZE};

fuzz_target!(|data: &[u8]| {
    if let Ok(insn) = Insn::decode(data) {
        let len = insn.length();
        assert!((1..=MAX_INSN_SIZE).contains(&len) && len <= data.len());
        assert_eq!(insn.bytes(), &data[..len]);
        // Only the instruction's own bytes matter.
        assert_eq!(Insn::decode(&data[..len]), Ok(insn));
        let _ = insn.control_flow(0xffff_ffff_8100_0000);
        let _ = insn.probe_refusal();
        let _ = insn.can_boost(false);
        let _ = insn.if_modifier();
        let _ = insn.rip_relative_target(0);
    }
    let f = FuncCode::new(data, 0xffff_ffff_8100_0000);
    let mut pos = 0;
    for item in f.insns() {
        match item {
            Ok((addr, insn)) => {
                assert_eq!(addr, 0xffff_ffff_8100_0000 + pos as u64);
                assert_eq!(Insn::decode(&data[pos..]), Ok(insn));
                pos += insn.length();
            }
            Err(_) => {
                assert!(Insn::decode(&data[pos..]).is_err());
                break;
            }
        }
    }
    let _ = f.can_optimize(
        0xffff_ffff_8100_0000,
        IndirectJumpCheck::Refuse,
        |_| false,
        |a| a % 3 == 0,
    );
});
