// SPDX-License-Identifier: GPL-2.0

//! Whole-function analysis for probing and jump optimization: the
//! instruction walks of the kernel's `can_probe()` (is an address an
//! instruction boundary), `can_optimize()` (does anything jump into the bytes
//! a detour jump would replace, are there indirect jumps) and
//! `copy_optimized_instructions()`.
//!
//! The caller hands over the function's bytes as they were before any probe
//! was inserted (the kernel's `recover_probed_instruction()` is the caller's
//! business) and its start address. Everything here walks that buffer from
//! its start, decoding each instruction only from the bytes left in the
//! buffer, so an instruction running past the end of the function is a decode
//! error, like any other. Padding needs no special case: the int3 (0xcc) and
//! NOP runs that pad functions decode as ordinary one-byte or multi-byte
//! instructions, exactly as the kernel's walk decodes them. No allocation;
//! the work is bounded by the buffer's length.

use super::classify::ControlFlow;
use super::decode::{DecodeError, Insn};
use super::relocate::{copy_insn, RelocError};

/// Size of the detour jump (`JMP32_INSN_SIZE`).
pub const JMP32_INSN_SIZE: usize = 5;

/// Why a walk over a function stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnalyzeError {
    /// The instruction at `addr` could not be decoded.
    Decode {
        /// Where.
        addr: u64,
        /// Why.
        error: DecodeError,
    },
    /// The address asked about is not inside the function.
    OutsideFunction,
}

/// Whether indirect jumps make a function unoptimizable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndirectJumpCheck {
    /// Do not look for indirect jumps: what Linux 6.12's `can_optimize()`
    /// does when `CONFIG_MITIGATION_RETPOLINE` or `CONFIG_X86_KERNEL_IBT` is
    /// set, because such kernels are built without jump tables.
    Skip,
    /// Refuse functions containing an indirect jump (FF /4, FF /5, 0xea: the
    /// kernel's `insn_is_indirect_jump()`) or a direct JMP/Jcc/LOOP to a
    /// retpoline thunk (what kernels before 6.x also checked), as told by the
    /// caller's thunk predicate.
    Refuse,
}

/// Why jump optimization is refused at an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptimizeRefusal {
    /// The walk failed (`can_optimize()` returns 0 on a decode failure).
    Analyze(AnalyzeError),
    /// Fewer than 5 bytes from the probe to the end of the function.
    TooSmall,
    /// An instruction of the function is in an exception table: fixup code
    /// may jump into the function (`search_exception_tables()`).
    ExceptionTable {
        /// The instruction's address.
        addr: u64,
    },
    /// An indirect jump, or a jump to a thunk, at `addr`.
    IndirectJump {
        /// The jump's address.
        addr: u64,
    },
    /// A direct branch at `addr` targets the bytes the detour jump replaces.
    JumpIntoRange {
        /// The branch's address.
        addr: u64,
    },
    /// An instruction the detour would have to copy cannot run out of line
    /// or cannot be boosted (`copy_optimized_instructions()`: -EINVAL).
    NotBoostable {
        /// The instruction's address.
        addr: u64,
    },
    /// Relocating a copied instruction failed; for a branch of a planned
    /// region ([`FuncCode::plan_region`]), [`RelocError::BranchOutOfRange`]
    /// when its target is out of `rel32` reach from the detour.
    Reloc {
        /// The instruction's address.
        addr: u64,
        /// Why.
        error: RelocError,
    },
    /// A LOOP, LOOPcc or JrCXZ in a planned region: these exist only with
    /// an 8-bit displacement, and rewriting one (DEC + JNZ) would change the
    /// flags.
    LoopInRegion {
        /// The instruction's address.
        addr: u64,
    },
    /// A relative JMP, Jcc or CALL in a planned region with a prefix (0x66
    /// truncates the instruction pointer on some CPUs; REX, segment and
    /// hint prefixes are not worth an encoding of their own).
    PrefixedBranch {
        /// The instruction's address.
        addr: u64,
    },
    /// A relative JMP, Jcc or CALL in a planned region to a retpoline or
    /// return thunk: those sites are rewritten at boot (`apply_retpolines()`,
    /// `apply_returns()`), so the branch is an indirect branch or a return
    /// in disguise.
    ThunkTarget {
        /// The instruction's address.
        addr: u64,
    },
    /// The detour's jump back to the instruction after the region is out
    /// of `rel32` reach.
    JumpBackOutOfReach,
    /// The first instruction of a region planned with a gap after it
    /// ([`FuncCode::plan_region_gap`]) is a relative branch.
    BranchBeforeGap {
        /// The instruction's address.
        addr: u64,
    },
}

impl From<AnalyzeError> for OptimizeRefusal {
    fn from(e: AnalyzeError) -> Self {
        OptimizeRefusal::Analyze(e)
    }
}

/// A function's bytes and start address.
#[derive(Clone, Copy, Debug)]
pub struct FuncCode<'a> {
    code: &'a [u8],
    start: u64,
}

/// Iterator over the instructions of a [`FuncCode`], from its start; it
/// yields one error and then stops if an instruction cannot be decoded.
#[derive(Clone, Debug)]
pub struct InsnIter<'a> {
    code: &'a [u8],
    start: u64,
    pos: usize,
    done: bool,
}

impl Iterator for InsnIter<'_> {
    type Item = Result<(u64, Insn), AnalyzeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let rest = self.code.get(self.pos..).unwrap_or(&[]);
        if rest.is_empty() {
            self.done = true;
            return None;
        }
        let addr = self.start.wrapping_add(self.pos as u64);
        match Insn::decode(rest) {
            Ok(insn) => {
                self.pos = self.pos.saturating_add(insn.length());
                Some(Ok((addr, insn)))
            }
            Err(error) => {
                self.done = true;
                Some(Err(AnalyzeError::Decode { addr, error }))
            }
        }
    }
}

/// Is `target` in the half-open range `[lo, hi)`.
fn in_range(target: u64, lo: u64, hi: u64) -> bool {
    lo <= target && target < hi
}

/// Direct jump target of a JMP/Jcc/LOOP/JrCXZ (the kinds the kernel's
/// `insn_jump_into_range()` considers), or of a CALL when `with_call`.
fn jump_target(cf: ControlFlow, with_call: bool) -> Option<u64> {
    match cf {
        ControlFlow::JmpRel { target }
        | ControlFlow::Jcc { target, .. }
        | ControlFlow::Loop { target, .. } => Some(target),
        ControlFlow::CallRel { target } if with_call => Some(target),
        _ => None,
    }
}

/// Is `addr` the start of an instruction of the code that starts at `start`
/// (`can_probe()`'s walk)? `length_at(a)` is the length of the instruction
/// at `a`, which callers read however their code is held (a buffer here,
/// kernel text with probed bytes restored in the module): `Ok(false)` when
/// the walk steps over `addr` (or before `start`), the first error of
/// `length_at` otherwise.
pub fn is_boundary<E>(
    start: u64,
    addr: u64,
    mut length_at: impl FnMut(u64) -> Result<usize, E>,
) -> Result<bool, E> {
    let mut a = start;
    while a < addr {
        // An instruction is 1 to 15 bytes long: the walk ends.
        let len = length_at(a)?.max(1) as u64;
        let Some(next) = a.checked_add(len) else {
            return Ok(false);
        };
        a = next;
    }
    Ok(a == addr)
}

impl<'a> FuncCode<'a> {
    /// The function whose bytes are `code`, starting at address `start`.
    pub const fn new(code: &'a [u8], start: u64) -> Self {
        FuncCode { code, start }
    }

    /// Start address.
    pub const fn start(&self) -> u64 {
        self.start
    }

    /// Size in bytes.
    pub const fn size(&self) -> usize {
        self.code.len()
    }

    /// Offset of `addr` from the start, if it is inside the function.
    pub(super) fn offset_of(&self, addr: u64) -> Option<usize> {
        let off = usize::try_from(addr.checked_sub(self.start)?).ok()?;
        (off < self.code.len()).then_some(off)
    }

    /// The instructions, from the start.
    pub fn insns(&self) -> InsnIter<'a> {
        InsnIter {
            code: self.code,
            start: self.start,
            pos: 0,
            done: false,
        }
    }

    /// Is `addr` the start of an instruction, walking from the function's
    /// start (`can_probe()`): `Ok(false)` when the walk steps over it, an
    /// error when an instruction before it does not decode.
    pub fn is_boundary(&self, addr: u64) -> Result<bool, AnalyzeError> {
        self.offset_of(addr).ok_or(AnalyzeError::OutsideFunction)?;
        is_boundary(self.start, addr, |a| self.insn_at(a).map(|i| i.length()))
    }

    /// Decodes the instruction at `addr` (which should be a boundary).
    pub fn insn_at(&self, addr: u64) -> Result<Insn, AnalyzeError> {
        let off = self.offset_of(addr).ok_or(AnalyzeError::OutsideFunction)?;
        let rest = self.code.get(off..).unwrap_or(&[]);
        Insn::decode(rest).map_err(|error| AnalyzeError::Decode { addr, error })
    }

    /// Address of the first direct JMP/Jcc/LOOP/JrCXZ (and CALL, when
    /// `with_call`) whose target is in `[lo, hi)`. The kernel's
    /// `insn_jump_into_range(insn, paddr + 1, 4)` is `[paddr + 1, paddr + 6)`
    /// without calls.
    pub fn find_branch_into(
        &self,
        lo: u64,
        hi: u64,
        with_call: bool,
    ) -> Result<Option<u64>, AnalyzeError> {
        for item in self.insns() {
            let (addr, insn) = item?;
            if jump_target(insn.control_flow(addr), with_call).is_some_and(|t| in_range(t, lo, hi))
            {
                return Ok(Some(addr));
            }
        }
        Ok(None)
    }

    /// Address of the first indirect jump: FF /4, FF /5 or 0xea (the
    /// kernel's `insn_is_indirect_jump()`), or a direct JMP/Jcc/LOOP whose
    /// target `is_thunk` accepts (a tail call through a retpoline thunk).
    pub fn find_indirect_jump<F: Fn(u64) -> bool>(
        &self,
        is_thunk: F,
    ) -> Result<Option<u64>, AnalyzeError> {
        for item in self.insns() {
            let (addr, insn) = item?;
            let cf = insn.control_flow(addr);
            let indirect = matches!(
                cf,
                ControlFlow::JmpIndirect(_) | ControlFlow::JmpFarIndirect | ControlFlow::JmpFar
            );
            if indirect || jump_target(cf, false).is_some_and(&is_thunk) {
                return Ok(Some(addr));
            }
        }
        Ok(None)
    }

    /// The kernel's `can_optimize()` for a probe at `paddr`, minus what needs
    /// kernel state the caller checks itself (entry text, kgdb):
    /// `in_exception_table` stands for `search_exception_tables()` and
    /// `is_thunk` recognises retpoline thunks (only used with
    /// [`IndirectJumpCheck::Refuse`]).
    pub fn can_optimize<E, T>(
        &self,
        paddr: u64,
        indirect: IndirectJumpCheck,
        in_exception_table: E,
        is_thunk: T,
    ) -> Result<(), OptimizeRefusal>
    where
        E: Fn(u64) -> bool,
        T: Fn(u64) -> bool,
    {
        let off = self.offset_of(paddr).ok_or(AnalyzeError::OutsideFunction)?;
        if self.code.len().saturating_sub(off) < JMP32_INSN_SIZE {
            return Err(OptimizeRefusal::TooSmall);
        }
        let lo = paddr.wrapping_add(1);
        let hi = paddr.wrapping_add(JMP32_INSN_SIZE as u64 + 1);
        self.walk_for_optimize(lo, hi, indirect, in_exception_table, is_thunk)
    }

    /// The whole-function walk of `can_optimize()`: refuses the first
    /// instruction with an exception-table entry, an indirect jump (with
    /// [`IndirectJumpCheck::Refuse`]), or a direct JMP/Jcc/LOOP/JrCXZ
    /// whose target is in `[lo, hi)`.
    pub(super) fn walk_for_optimize<E, T>(
        &self,
        lo: u64,
        hi: u64,
        indirect: IndirectJumpCheck,
        in_exception_table: E,
        is_thunk: T,
    ) -> Result<(), OptimizeRefusal>
    where
        E: Fn(u64) -> bool,
        T: Fn(u64) -> bool,
    {
        for item in self.insns() {
            if let Ok((addr, _)) = item {
                if in_exception_table(addr) {
                    return Err(OptimizeRefusal::ExceptionTable { addr });
                }
            }
            let (addr, insn) = item?;
            let cf = insn.control_flow(addr);
            if indirect == IndirectJumpCheck::Refuse {
                let indirect_jump = matches!(
                    cf,
                    ControlFlow::JmpIndirect(_) | ControlFlow::JmpFarIndirect | ControlFlow::JmpFar
                );
                if indirect_jump || jump_target(cf, false).is_some_and(&is_thunk) {
                    return Err(OptimizeRefusal::IndirectJump { addr });
                }
            }
            if jump_target(cf, false).is_some_and(|t| in_range(t, lo, hi)) {
                return Err(OptimizeRefusal::JumpIntoRange { addr });
            }
        }
        Ok(())
    }

    /// The kernel's `copy_optimized_instructions()`: copies whole
    /// instructions from `paddr` into `out`, relocated for execution at
    /// `real`, until at least [`JMP32_INSN_SIZE`] bytes are copied. Every
    /// copied instruction must be probe-able ([`Insn::probe_refusal`]) and
    /// boostable ([`Insn::can_boost`]). Returns the number of bytes copied.
    pub fn copy_for_detour<E: Fn(u64) -> bool>(
        &self,
        paddr: u64,
        real: u64,
        out: &mut [u8],
        in_exception_table: E,
    ) -> Result<usize, OptimizeRefusal> {
        let mut len: usize = 0;
        while len < JMP32_INSN_SIZE {
            let addr = paddr.wrapping_add(len as u64);
            let insn = self.insn_at(addr)?;
            if insn.probe_refusal().is_some() || !insn.can_boost(in_exception_table(addr)) {
                return Err(OptimizeRefusal::NotBoostable { addr });
            }
            let dst = out.get_mut(len..).unwrap_or(&mut []);
            let copied = copy_insn(&insn, addr, real.wrapping_add(len as u64), dst)
                .map_err(|error| OptimizeRefusal::Reloc { addr, error })?;
            len = len.saturating_add(copied.len);
        }
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: u64 = 0xffff_ffff_8100_0000;

    // endbr64; push %rbp; mov %rsp,%rbp; test %edi,%edi; je +5 (to pop);
    // mov 0x10(%rip),%eax; pop %rbp; ret; int3 x3
    const FUNC: [u8; 25] = [
        0xf3, 0x0f, 0x1e, 0xfa, // 0: endbr64
        0x55, // 4: push %rbp
        0x48, 0x89, 0xe5, // 5: mov %rsp,%rbp
        0x85, 0xff, // 8: test %edi,%edi
        0x74, 0x06, // 10: je 18
        0x8b, 0x05, 0x10, 0x00, 0x00, 0x00, // 12: mov 0x10(%rip),%eax
        0x5d, // 18: pop %rbp
        0xc3, // 19: ret
        0xcc, 0xcc, 0xcc, 0xcc, 0xcc, // 20: padding
    ];

    #[test]
    fn walk_and_boundaries() {
        let f = FuncCode::new(&FUNC, F);
        let starts: Vec<u64> = f.insns().map(|r| r.unwrap().0 - F).collect();
        assert_eq!(starts, [0, 4, 5, 8, 10, 12, 18, 19, 20, 21, 22, 23, 24]);
        assert_eq!(f.is_boundary(F + 4), Ok(true));
        assert_eq!(f.is_boundary(F + 6), Ok(false));
        assert_eq!(f.is_boundary(F + 24), Ok(true));
        assert_eq!(f.is_boundary(F + 25), Err(AnalyzeError::OutsideFunction));
        assert_eq!(f.is_boundary(F - 1), Err(AnalyzeError::OutsideFunction));
        assert!(f.insn_at(F + 4).is_ok_and(|i| i.length() == 1));
    }

    #[test]
    fn truncated_last_insn_is_an_error() {
        let f = FuncCode::new(&FUNC[..15], F);
        let last = f.insns().last();
        assert_eq!(
            last,
            Some(Err(AnalyzeError::Decode {
                addr: F + 12,
                error: DecodeError::NoData
            }))
        );
        assert!(f.is_boundary(F + 14).is_err());
        // Addresses before the broken instruction are still answered.
        assert_eq!(f.is_boundary(F + 10), Ok(true));
    }

    #[test]
    fn branches_into_range() {
        let f = FuncCode::new(&FUNC, F);
        assert_eq!(f.find_branch_into(F + 18, F + 19, false), Ok(Some(F + 10)));
        assert_eq!(f.find_branch_into(F + 19, F + 25, false), Ok(None));
        // The kernel's range for a probe at 12 is [13, 18): je targets 18.
        assert_eq!(f.find_branch_into(F + 13, F + 18, false), Ok(None));
        let none = |_: u64| false;
        // Probing at 12: je lands at 18 = 12 + 6, just past the kernel's
        // inclusive [paddr + 1, paddr + 5].
        assert_eq!(
            f.can_optimize(F + 12, IndirectJumpCheck::Skip, none, none),
            Ok(())
        );
        // At 13 the target is paddr + 5, which the kernel's check includes.
        assert_eq!(
            f.can_optimize(F + 13, IndirectJumpCheck::Skip, none, none),
            Err(OptimizeRefusal::JumpIntoRange { addr: F + 10 })
        );
        // Probing at 4: nothing targets 5..=9.
        assert_eq!(
            f.can_optimize(F + 4, IndirectJumpCheck::Skip, none, none),
            Ok(())
        );
        // Exception-table hit anywhere in the function refuses.
        assert_eq!(
            f.can_optimize(F + 4, IndirectJumpCheck::Skip, |a| a == F + 19, none),
            Err(OptimizeRefusal::ExceptionTable { addr: F + 19 })
        );
        // Too close to the end.
        assert_eq!(
            f.can_optimize(F + 21, IndirectJumpCheck::Skip, none, none),
            Err(OptimizeRefusal::TooSmall)
        );
    }

    #[test]
    fn indirect_jumps() {
        // jmp *%rax; jmp __x86_indirect_thunk_rax (rel32 to F + 0x1000)
        let code = [
            0x90, 0xff, 0xe0, 0xe9, 0xfb, 0x0f, 0x00, 0x00, 0x90, 0x90, 0x90, 0x90,
        ];
        let f = FuncCode::new(&code, F);
        assert_eq!(f.find_indirect_jump(|_| false), Ok(Some(F + 1)));
        let code2 = [0x90, 0xe9, 0xfb, 0x0f, 0x00, 0x00, 0xff, 0xd0, 0x90, 0x90];
        let f2 = FuncCode::new(&code2, F);
        let thunk = |t: u64| t == F + 0x1001;
        // call *%rax is not a jump; the jmp to the thunk is.
        assert_eq!(f2.find_indirect_jump(|_| false), Ok(None));
        assert_eq!(f2.find_indirect_jump(thunk), Ok(Some(F + 1)));
        let none = |_: u64| false;
        assert_eq!(
            f.can_optimize(F + 3, IndirectJumpCheck::Refuse, none, none),
            Err(OptimizeRefusal::IndirectJump { addr: F + 1 })
        );
        assert_eq!(
            f.can_optimize(F + 3, IndirectJumpCheck::Skip, none, none),
            Ok(())
        );
        assert_eq!(
            f2.can_optimize(F + 1, IndirectJumpCheck::Refuse, none, thunk),
            Err(OptimizeRefusal::IndirectJump { addr: F + 1 })
        );
    }

    #[test]
    fn detour_copy() {
        let f = FuncCode::new(&FUNC, F);
        let mut out = [0u8; 32];
        let none = |_: u64| false;
        // push; mov; test: 1 + 3 + 2 = 6 bytes.
        assert_eq!(f.copy_for_detour(F + 4, F + 0x1000, &mut out, none), Ok(6));
        assert_eq!(&out[..6], &FUNC[4..10]);
        // je is not boostable.
        assert_eq!(
            f.copy_for_detour(F + 8, F + 0x1000, &mut out, none),
            Err(OptimizeRefusal::NotBoostable { addr: F + 10 })
        );
        // The RIP-relative mov (6 bytes) is enough, and is relocated.
        assert_eq!(f.copy_for_detour(F + 12, F + 0x1000, &mut out, none), Ok(6));
        let moved = Insn::decode(&out).unwrap();
        assert_eq!(
            moved.rip_relative_target(F + 0x1000),
            Insn::decode(&FUNC[12..])
                .unwrap()
                .rip_relative_target(F + 12)
        );
        // Output too small.
        assert!(matches!(
            f.copy_for_detour(F + 4, F, &mut out[..3], none),
            Err(OptimizeRefusal::Reloc { .. })
        ));
    }
}
