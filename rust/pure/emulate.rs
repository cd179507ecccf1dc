// SPDX-License-Identifier: GPL-2.0

//! Emulation of the x86 branch instructions that a probe cannot run out of
//! line: the conditions of `Jcc` and of `LOOP`/`JrCXZ`.
//!
//! Relative branches computed from an out-of-line slot would jump relative to
//! the slot, so rkprobes emulates them at the probe address instead, as the
//! kernel does (`int3_emulate_jcc`, `kprobe_emulate_loop`). The decisions are
//! pure functions of the flags and the count register, tested here against
//! the definitions in the Intel SDM.

use super::insn::LoopKind;

/// Carry flag.
pub const FLAG_CF: u64 = 1 << 0;
/// Parity flag.
pub const FLAG_PF: u64 = 1 << 2;
/// Zero flag.
pub const FLAG_ZF: u64 = 1 << 6;
/// Sign flag.
pub const FLAG_SF: u64 = 1 << 7;
/// Trap flag (single-step).
pub const FLAG_TF: u64 = 1 << 8;
/// Interrupt enable flag.
pub const FLAG_IF: u64 = 1 << 9;
/// Overflow flag.
pub const FLAG_OF: u64 = 1 << 11;

/// Whether the condition `cc` (the low nibble of `Jcc`/`SETcc`/`CMOVcc`)
/// holds for `flags`.
pub fn condition_holds(cc: u8, flags: u64) -> bool {
    let f = |bit: u64| flags & bit != 0;
    let holds = match (cc & 0xf) >> 1 {
        0 => f(FLAG_OF),
        1 => f(FLAG_CF),
        2 => f(FLAG_ZF),
        3 => f(FLAG_CF) || f(FLAG_ZF),
        4 => f(FLAG_SF),
        5 => f(FLAG_PF),
        6 => f(FLAG_SF) != f(FLAG_OF),
        _ => f(FLAG_ZF) || f(FLAG_SF) != f(FLAG_OF),
    };
    // Odd condition codes are the negations of the even ones.
    holds != (cc & 1 != 0)
}

/// Executes a `LOOP`-family instruction on the count register `rcx` with an
/// address size of `asize` bytes (2, 4 or 8: CX, ECX or RCX; the bits above
/// are left alone, as the kernel's emulation does). Returns the new `rcx` and
/// whether the branch is taken.
pub fn run_loop(kind: LoopKind, asize: u8, rcx: u64, flags: u64) -> (u64, bool) {
    let mask: u64 = match asize {
        2 => 0xffff,
        4 => 0xffff_ffff,
        _ => u64::MAX,
    };
    let count = rcx & mask;
    if kind == LoopKind::Jrcxz {
        return (rcx, count == 0);
    }
    let count = count.wrapping_sub(1) & mask;
    let rcx = (rcx & !mask) | count;
    let zf = flags & FLAG_ZF != 0;
    let taken = count != 0
        && match kind {
            LoopKind::Loopne => !zf,
            LoopKind::Loope => zf,
            _ => true,
        };
    (rcx, taken)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SDM's table of conditions, written out by mnemonic.
    fn sdm(cc: u8, flags: u64) -> bool {
        let cf = flags & FLAG_CF != 0;
        let pf = flags & FLAG_PF != 0;
        let zf = flags & FLAG_ZF != 0;
        let sf = flags & FLAG_SF != 0;
        let of = flags & FLAG_OF != 0;
        match cc {
            0x0 => of,              // jo
            0x1 => !of,             // jno
            0x2 => cf,              // jb
            0x3 => !cf,             // jae
            0x4 => zf,              // je
            0x5 => !zf,             // jne
            0x6 => cf || zf,        // jbe
            0x7 => !cf && !zf,      // ja
            0x8 => sf,              // js
            0x9 => !sf,             // jns
            0xa => pf,              // jp
            0xb => !pf,             // jnp
            0xc => sf != of,        // jl
            0xd => sf == of,        // jge
            0xe => zf || sf != of,  // jle
            0xf => !zf && sf == of, // jg
            _ => unreachable!(),
        }
    }

    #[test]
    fn every_condition_on_every_flag_combination() {
        let bits = [FLAG_CF, FLAG_PF, FLAG_ZF, FLAG_SF, FLAG_OF];
        for cc in 0..16u8 {
            for combo in 0..32u32 {
                let mut flags = 0;
                for (i, b) in bits.iter().enumerate() {
                    if combo & (1 << i) != 0 {
                        flags |= b;
                    }
                }
                assert_eq!(
                    condition_holds(cc, flags),
                    sdm(cc, flags),
                    "cc {cc:#x} flags {flags:#x}"
                );
                // Unrelated flags do not matter.
                let noisy = flags | FLAG_TF | FLAG_IF | (1 << 1) | (1 << 4);
                assert_eq!(condition_holds(cc, noisy), sdm(cc, flags));
            }
        }
    }

    #[test]
    fn loop_decrements_then_tests() {
        // loop with rcx = 1: decrements to 0, not taken (the kernel's 6.12
        // emulation tests the value before the decrement, which is wrong).
        assert_eq!(run_loop(LoopKind::Loop, 8, 1, 0), (0, false));
        assert_eq!(run_loop(LoopKind::Loop, 8, 2, 0), (1, true));
        assert_eq!(run_loop(LoopKind::Loop, 8, 0, 0), (u64::MAX, true));
        assert_eq!(run_loop(LoopKind::Loope, 8, 5, FLAG_ZF), (4, true));
        assert_eq!(run_loop(LoopKind::Loope, 8, 5, 0), (4, false));
        assert_eq!(run_loop(LoopKind::Loopne, 8, 5, 0), (4, true));
        assert_eq!(run_loop(LoopKind::Loopne, 8, 5, FLAG_ZF), (4, false));
    }

    #[test]
    fn loop_address_size_limits_the_count() {
        let rcx = 0xdead_beef_0000_0001;
        assert_eq!(
            run_loop(LoopKind::Loop, 4, rcx, 0),
            (0xdead_beef_0000_0000, false)
        );
        assert_eq!(run_loop(LoopKind::Loop, 2, 0x1_0000, 0), (0x1_ffff, true));
        assert_eq!(
            run_loop(LoopKind::Jrcxz, 4, 0x1_0000_0000, 0),
            (0x1_0000_0000, true)
        );
        assert_eq!(
            run_loop(LoopKind::Jrcxz, 8, 0x1_0000_0000, 0),
            (0x1_0000_0000, false)
        );
    }
}
