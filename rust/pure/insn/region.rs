// SPDX-License-Identifier: GPL-2.0

//! Planning a jump-optimized probe's region when it holds relative
//! branches: an opt-in extension of the kernel's
//! `copy_optimized_instructions()` ([`FuncCode::copy_for_detour`]).
//!
//! The kernel copies the whole instructions that the probe's 5-byte
//! `jmp rel32` covers into the detour and refuses to optimize when one of
//! them is a relative JMP, Jcc or CALL (`can_boost()` is false for them):
//! such probes keep trapping. A relative branch only needs its target
//! re-encoded to run from elsewhere, so [`FuncCode::plan_region`] moves
//! them:
//!
//! - a Jcc (rel8 or rel32) becomes a Jcc rel32 from the detour to the
//!   original target;
//! - a JMP (rel8 or rel32) becomes a JMP rel32 to the original target and
//!   ends the region: nothing after it runs from the detour, and no jump
//!   back is needed. When it ends before the probe's fifth byte, the bytes
//!   after it up to there are still overwritten by the probe's jump;
//! - a CALL rel32 becomes `push qword [rip + d]` of an 8-byte literal
//!   holding the original return address, then a JMP rel32 to the callee:
//!   the callee returns straight into the original code after the region,
//!   which is where it would have returned, so its unwinding, a kretprobe
//!   on it and the freeing of the detour (no return address ever points
//!   into it) all see what they would without the probe. The push changes
//!   no flag and no register but `rsp`, like the call.
//!
//! A branch target is always the original address, whether it lies inside
//! the function or not. A target inside the bytes that the probe's jump
//! overwrites after its first (`paddr + 1 .. paddr + 5`) is refused by the
//! whole-function walk ([`OptimizeRefusal::JumpIntoRange`]), as any other
//! branch into them; a target at the probe address itself goes to the
//! probe's jump, so the probe is hit again, as an int3 probe would be. A
//! target in the region past the fifth byte lies inside the region's last
//! instruction, whose bytes there are intact, and runs them as the
//! original code would.
//!
//! Everything else is refused as [`FuncCode::copy_for_detour`] refuses it
//! (the kernel's `can_boost()`), and LOOP/LOOPcc/JrCXZ, prefixed branches
//! and branches to thunks with their own [`OptimizeRefusal`] variants.

use super::analyze::{AnalyzeError, FuncCode, IndirectJumpCheck, OptimizeRefusal, JMP32_INSN_SIZE};
use super::classify::ControlFlow;
use super::decode::{Insn, MAX_INSN_SIZE};
use super::relocate::{copy_insn, RelocError};

/// Longest region: every instruction but the last ends within the first 4
/// bytes (the walk stops once 5 are covered), and the last is at most
/// [`MAX_INSN_SIZE`] long.
pub const MAX_REGION_LEN: usize = JMP32_INSN_SIZE - 1 + MAX_INSN_SIZE;

/// `Jcc rel32` (0x0f 0x80+cc).
const JCC32_LEN: usize = 6;
/// `push qword [rip + disp32]` (0xff 0x35).
const PUSH_RIP_LEN: usize = 6;
/// The call form: the push, the jump to the callee and the 8-byte literal.
const CALL_FORM_LEN: usize = PUSH_RIP_LEN + JMP32_INSN_SIZE + 8;

/// Most bytes [`FuncCode::plan_region`] writes: the instructions before the
/// last take at most 4 bytes of the original, and the widest of them, a
/// Jcc rel8, grows three times (2 to 6 bytes), so at most 12 bytes; the
/// last is at most an ordinary 15-byte instruction and the jump back (20
/// bytes), more than a Jcc and the jump back (11), a JMP (5) or the call
/// form (19). A detour slot needs this much room after its header.
pub const MAX_PLAN_OUTPUT: usize = 3 * (JMP32_INSN_SIZE - 1) + MAX_INSN_SIZE + JMP32_INSN_SIZE;

const _: () = assert!(CALL_FORM_LEN <= MAX_INSN_SIZE + JMP32_INSN_SIZE);
const _: () = assert!(JCC32_LEN + JMP32_INSN_SIZE <= MAX_INSN_SIZE + JMP32_INSN_SIZE);
const _: () = assert!(MAX_PLAN_OUTPUT == 32);

/// How the detour code of a planned region ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegionEnd {
    /// With a jump back to the instruction after the region (`paddr +
    /// region_len`).
    JumpBack,
    /// With the region's last instruction, a JMP to `target`.
    Jump {
        /// The original jump's target.
        target: u64,
    },
    /// With the region's last instruction, a CALL of `target`, emitted as
    /// a push of the original return address (`paddr + region_len`) and a
    /// jump.
    Call {
        /// The called address.
        target: u64,
    },
}

/// What [`FuncCode::plan_region`] decided and wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionPlan {
    /// Bytes of original instructions from the probe that the detour stands
    /// for (1 to [`MAX_REGION_LEN`]): where the jump back goes, and the
    /// return address of a final call, is `paddr + region_len`. Less than
    /// 5 only when the region ends with a JMP.
    pub region_len: usize,
    /// Bytes from the probe that the optimized probe owns,
    /// `max(region_len, 5)`: the ones its jump overwrites and the ones the
    /// detour copied. No other probe may sit in them after the first, no
    /// other text patcher may own one, and their original contents are what
    /// unoptimizing restores and what `recover_probed_instruction()`-style
    /// readers must be shown.
    pub taken: usize,
    /// Bytes written to the output (at most [`MAX_PLAN_OUTPUT`]), the jump
    /// back included.
    pub emitted: usize,
    /// Bytes of the first instruction's copy: where the gap of
    /// [`FuncCode::plan_region_gap`] starts.
    pub first_emitted: usize,
    /// How the detour code ends.
    pub end: RegionEnd,
}

impl RegionPlan {
    /// Whether the region ends with a branch of its own, so that the
    /// detour has no jump back.
    pub const fn ends_in_branch(&self) -> bool {
        !matches!(self.end, RegionEnd::JumpBack)
    }
}

/// The detour code being assembled, in a buffer of the largest size it can
/// take, so that a refusal leaves the caller's buffer untouched.
struct Emit {
    buf: [u8; MAX_PLAN_OUTPUT],
    len: usize,
    /// Where the code will run.
    real: u64,
}

/// `target - next` as a `rel32`, if it fits.
fn rel32(next: u64, target: u64) -> Option<i32> {
    i32::try_from(target.wrapping_sub(next) as i64).ok()
}

impl Emit {
    /// Address the next byte will run at.
    fn here(&self) -> u64 {
        self.real.wrapping_add(self.len as u64)
    }

    /// Appends `parts` in turn; `Err(())` if they do not fit, which the
    /// bound [`MAX_PLAN_OUTPUT`] rules out.
    fn put(&mut self, parts: &[&[u8]]) -> Result<(), ()> {
        for p in parts {
            let end = self.len.checked_add(p.len()).ok_or(())?;
            self.buf
                .get_mut(self.len..end)
                .ok_or(())?
                .copy_from_slice(p);
            self.len = end;
        }
        Ok(())
    }

    /// The room left, for [`copy_insn`].
    fn rest(&mut self) -> &mut [u8] {
        self.buf.get_mut(self.len..).unwrap_or(&mut [])
    }

    /// A branch of `head` opcode bytes and a `rel32` to `target`; `None`
    /// when out of reach.
    fn branch32(&mut self, head: &[u8], target: u64) -> Option<Result<(), ()>> {
        let next = self.here().wrapping_add(head.len() as u64).wrapping_add(4);
        let rel = rel32(next, target)?;
        Some(self.put(&[head, &rel.to_le_bytes()]))
    }
}

/// The int3 bytes a gap is filled with, as many as the largest gap
/// ([`FuncCode::plan_region_gap`] refuses a larger one).
const INT3_GAP: [u8; MAX_PLAN_OUTPUT] = [0xcc; MAX_PLAN_OUTPUT];

/// The plain encodings of the relative branches that [`FuncCode::plan_region`]
/// moves: Jcc rel8/rel32, JMP rel8/rel32, CALL rel32, without prefixes.
fn is_plain_branch(insn: &Insn) -> bool {
    matches!(
        (insn.bytes().first(), insn.bytes().get(1), insn.length()),
        (Some(0x70..=0x7f | 0xeb), _, 2)
            | (Some(0xe8 | 0xe9), _, 5)
            | (Some(0x0f), Some(0x80..=0x8f), JCC32_LEN)
    )
}

impl FuncCode<'_> {
    /// Plans a jump-optimized probe at `paddr` whose region may hold
    /// relative branches (see the [module documentation](self)), and
    /// writes the detour's code for it into `out`, to run at `real`: the
    /// region's instructions relocated, followed by the jump back to
    /// `paddr + region_len` unless the region ends with a JMP or CALL. On a
    /// refusal `out` is left untouched.
    ///
    /// It makes the checks of [`FuncCode::can_optimize`] (at least 5 bytes
    /// left in the function; over the whole function, no exception-table
    /// entry, no indirect jump with [`IndirectJumpCheck::Refuse`], no
    /// direct JMP/Jcc/LOOP into the bytes its jump overwrites after the
    /// first, `[paddr + 1, paddr + 5)`) and then walks the region as
    /// [`FuncCode::copy_for_detour`] does. Where the kernel's rules accept,
    /// it accepts and writes the same copy. The range is the overwritten
    /// bytes themselves: the kernel's `can_optimize()` also refuses a
    /// branch to `paddr + 5`, which is intact (the next instruction, or the
    /// inside of the region's last one).
    ///
    /// A CALL is always the region's last instruction: it is 5 bytes long,
    /// so the region is complete after it. It could not be anywhere else:
    /// its callee returns to the instruction after it, which would be in
    /// bytes the probe's jump overwrites (or, if the return address were
    /// the detour's, in a detour that a task sleeping in the callee keeps
    /// alive, with a return address that unwinders and kretprobes on the
    /// callee do not expect).
    ///
    /// `in_exception_table` stands for `search_exception_tables()`;
    /// `is_thunk` recognises retpoline and return thunks, whose callers
    /// are refused in the region whatever `indirect` says, and which
    /// count as indirect jumps in the function walk with
    /// [`IndirectJumpCheck::Refuse`]. The caller still checks what needs
    /// kernel state: entry text, other probes and text patchers (ftrace,
    /// alternatives, jump labels, static calls) in the
    /// [`RegionPlan::taken`] bytes, and that the detour's slot holds
    /// [`RegionPlan::emitted`] bytes.
    pub fn plan_region<E, T>(
        &self,
        paddr: u64,
        real: u64,
        out: &mut [u8],
        indirect: IndirectJumpCheck,
        in_exception_table: E,
        is_thunk: T,
    ) -> Result<RegionPlan, OptimizeRefusal>
    where
        E: Fn(u64) -> bool,
        T: Fn(u64) -> bool,
    {
        self.plan_region_gap(paddr, real, out, 0, indirect, in_exception_table, is_thunk)
    }

    /// [`FuncCode::plan_region`] with `gap` bytes left after the copy of the
    /// first instruction (filled with int3, at [`RegionPlan::first_emitted`]),
    /// for the caller's own code between that instruction and the rest: the
    /// rest is relocated for where it lands after the gap. With a gap the
    /// first instruction must be no relative branch, which would leave the
    /// region before the gap ([`OptimizeRefusal::BranchBeforeGap`]); a gap
    /// that cannot fit the output is refused as
    /// [`RelocError::BufferTooSmall`].
    #[allow(clippy::too_many_arguments)]
    pub fn plan_region_gap<E, T>(
        &self,
        paddr: u64,
        real: u64,
        out: &mut [u8],
        gap: usize,
        indirect: IndirectJumpCheck,
        in_exception_table: E,
        is_thunk: T,
    ) -> Result<RegionPlan, OptimizeRefusal>
    where
        E: Fn(u64) -> bool,
        T: Fn(u64) -> bool,
    {
        let off = self.offset_of(paddr).ok_or(AnalyzeError::OutsideFunction)?;
        if self.size().saturating_sub(off) < JMP32_INSN_SIZE {
            return Err(OptimizeRefusal::TooSmall);
        }
        let lo = paddr.wrapping_add(1);
        let hi = paddr.wrapping_add(JMP32_INSN_SIZE as u64);
        self.walk_for_optimize(lo, hi, indirect, &in_exception_table, &is_thunk)?;

        let mut emit = Emit {
            buf: [0; MAX_PLAN_OUTPUT],
            len: 0,
            real,
        };
        let mut len: usize = 0;
        let mut end = RegionEnd::JumpBack;
        let mut first_emitted = None;
        while len < JMP32_INSN_SIZE {
            let addr = paddr.wrapping_add(len as u64);
            let insn = self.insn_at(addr)?;
            let too_small = |()| OptimizeRefusal::Reloc {
                addr,
                error: RelocError::BufferTooSmall,
            };
            let out_of_reach = OptimizeRefusal::Reloc {
                addr,
                error: RelocError::BranchOutOfRange,
            };
            if insn.probe_refusal().is_some() || in_exception_table(addr) {
                return Err(OptimizeRefusal::NotBoostable { addr });
            }
            len = len.saturating_add(insn.length());
            let cf = insn.control_flow(addr);
            if let ControlFlow::Jcc { target, .. }
            | ControlFlow::JmpRel { target }
            | ControlFlow::CallRel { target } = cf
            {
                if !is_plain_branch(&insn) {
                    return Err(OptimizeRefusal::PrefixedBranch { addr });
                }
                if gap > 0 && len == insn.length() {
                    return Err(OptimizeRefusal::BranchBeforeGap { addr });
                }
                // The function walk has seen this branch already when
                // `paddr` is one of its instruction boundaries, as callers
                // make sure (`can_probe()`); this keeps the region safe
                // when it is not.
                if lo <= target && target < hi {
                    return Err(OptimizeRefusal::JumpIntoRange { addr });
                }
                if is_thunk(target) {
                    return Err(OptimizeRefusal::ThunkTarget { addr });
                }
            }
            match cf {
                ControlFlow::Jcc { cond, target } => {
                    emit.branch32(&[0x0f, 0x80 | (cond & 0xf)], target)
                        .ok_or(out_of_reach)?
                        .map_err(too_small)?;
                }
                ControlFlow::JmpRel { target } => {
                    emit.branch32(&[0xe9], target)
                        .ok_or(out_of_reach)?
                        .map_err(too_small)?;
                    end = RegionEnd::Jump { target };
                    break;
                }
                ControlFlow::CallRel { target } => {
                    // push qword [rip + 5]: the literal after the jump.
                    let ret = paddr.wrapping_add(len as u64);
                    emit.put(&[&[0xff, 0x35], &5i32.to_le_bytes()])
                        .map_err(too_small)?;
                    emit.branch32(&[0xe9], target)
                        .ok_or(out_of_reach)?
                        .map_err(too_small)?;
                    emit.put(&[&ret.to_le_bytes()]).map_err(too_small)?;
                    end = RegionEnd::Call { target };
                    break;
                }
                ControlFlow::Loop { .. } => return Err(OptimizeRefusal::LoopInRegion { addr }),
                _ => {
                    if !insn.can_boost(false) {
                        return Err(OptimizeRefusal::NotBoostable { addr });
                    }
                    let at = emit.here();
                    let copied = copy_insn(&insn, addr, at, emit.rest())
                        .map_err(|error| OptimizeRefusal::Reloc { addr, error })?;
                    emit.len = emit.len.saturating_add(copied.len);
                }
            }
            // The gap follows the first instruction (never a branch that
            // ended the region when there is one: refused above).
            if first_emitted.is_none() {
                first_emitted = Some(emit.len);
                emit.put(&[INT3_GAP.get(..gap).ok_or_else(|| too_small(()))?])
                    .map_err(too_small)?;
            }
        }
        let first_emitted = first_emitted.unwrap_or(emit.len);
        if end == RegionEnd::JumpBack {
            let back = paddr.wrapping_add(len as u64);
            emit.branch32(&[0xe9], back)
                .ok_or(OptimizeRefusal::JumpBackOutOfReach)?
                .map_err(|()| OptimizeRefusal::Reloc {
                    addr: paddr,
                    error: RelocError::BufferTooSmall,
                })?;
        }
        let code = emit.buf.get(..emit.len).unwrap_or(&[]);
        out.get_mut(..code.len())
            .ok_or(OptimizeRefusal::Reloc {
                addr: paddr,
                error: RelocError::BufferTooSmall,
            })?
            .copy_from_slice(code);
        Ok(RegionPlan {
            region_len: len,
            taken: len.max(JMP32_INSN_SIZE),
            emitted: code.len(),
            first_emitted,
            end,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: u64 = 0xffff_ffff_8100_0000;
    const REAL: u64 = 0xffff_ffff_a000_0000;
    const NONE: fn(u64) -> bool = |_| false;

    fn d(bytes: &[u8]) -> Insn {
        match Insn::decode(bytes) {
            Ok(i) => i,
            Err(e) => panic!("{bytes:02x?}: {e:?}"),
        }
    }

    /// Decodes `code`, run at `at`, into (offset, control flow) pairs.
    fn listing(code: &[u8], at: u64) -> Vec<(usize, ControlFlow)> {
        let mut v = Vec::new();
        let mut pos = 0;
        while pos < code.len() {
            let i = d(&code[pos..]);
            v.push((pos, i.control_flow(at + pos as u64)));
            pos += i.length();
        }
        v
    }

    fn plan(code: &[u8], off: u64) -> (Result<RegionPlan, OptimizeRefusal>, [u8; 48]) {
        let mut out = [0xaa; 48];
        let f = FuncCode::new(code, F);
        let r = f.plan_region(F + off, REAL, &mut out, IndirectJumpCheck::Skip, NONE, NONE);
        (r, out)
    }

    fn jmp_back_to(code: &[u8], pos: usize, at: u64) -> u64 {
        match d(&code[pos..]).control_flow(at + pos as u64) {
            ControlFlow::JmpRel { target } => target,
            cf => panic!("no jump back at {pos}: {cf:?}"),
        }
    }

    #[test]
    fn kernel_region_is_copied_as_copy_for_detour_does() {
        // push %rbp; mov %rsp,%rbp; mov 0x10(%rip),%eax; pop %rbp; ret; int3s
        let code = [
            0x55, 0x48, 0x89, 0xe5, 0x8b, 0x05, 0x10, 0, 0, 0, 0x5d, 0xc3, 0xcc, 0xcc, 0xcc,
        ];
        let f = FuncCode::new(&code, F);
        let mut kernel = [0u8; 32];
        let n = f.copy_for_detour(F, REAL, &mut kernel, NONE).unwrap();
        let (r, out) = plan(&code, 0);
        let p = r.unwrap();
        assert_eq!(n, 10);
        assert_eq!(
            p,
            RegionPlan {
                region_len: 10,
                taken: 10,
                emitted: 15,
                first_emitted: 1,
                end: RegionEnd::JumpBack
            }
        );
        assert!(!p.ends_in_branch());
        assert_eq!(out[..10], kernel[..10]);
        assert_eq!(jmp_back_to(&out, 10, REAL), F + 10);
    }

    #[test]
    fn jcc_rel8_and_rel32_are_widened_to_the_original_target() {
        // test %edi,%edi; je +0x20; push %rbp; jne rel32 +0x100; nop...
        let mut code = vec![0x85, 0xff, 0x74, 0x20, 0x55];
        code.extend([0x0f, 0x85, 0x00, 0x01, 0x00, 0x00]);
        code.extend([0x90; 0x120]);
        let (r, out) = plan(&code, 0);
        let p = r.unwrap();
        assert_eq!((p.region_len, p.taken, p.emitted), (5, 5, 2 + 6 + 1 + 5));
        assert_eq!(
            listing(&out[..p.emitted], REAL),
            [
                (0, ControlFlow::None),
                (
                    2,
                    ControlFlow::Jcc {
                        cond: 4,
                        target: F + 4 + 0x20
                    }
                ),
                (8, ControlFlow::None),
                (9, ControlFlow::JmpRel { target: F + 5 }),
            ]
        );
        // From the push: push; jne rel32 (region 7 bytes).
        let (r, out) = plan(&code, 4);
        let p = r.unwrap();
        assert_eq!((p.region_len, p.taken, p.emitted), (7, 7, 1 + 6 + 5));
        assert_eq!(
            listing(&out[..p.emitted], REAL)[1],
            (
                1,
                ControlFlow::Jcc {
                    cond: 5,
                    target: F + 11 + 0x100
                }
            )
        );
        assert_eq!(jmp_back_to(&out, 7, REAL), F + 11);
        // The kernel's rules refuse both.
        let f = FuncCode::new(&code, F);
        assert_eq!(
            f.copy_for_detour(F, REAL, &mut [0; 32], NONE),
            Err(OptimizeRefusal::NotBoostable { addr: F + 2 })
        );
    }

    #[test]
    fn jmp_ends_the_region_and_takes_five_bytes() {
        // jmp +0x10; mov %rsp,%rbp; pop %rbp; ret; padding
        let mut code = vec![0xeb, 0x10, 0x48, 0x89, 0xe5, 0x5d, 0xc3];
        code.extend([0xcc; 0x20]);
        let (r, out) = plan(&code, 0);
        let p = r.unwrap();
        assert_eq!(
            p,
            RegionPlan {
                region_len: 2,
                taken: 5,
                emitted: 5,
                first_emitted: 5,
                end: RegionEnd::Jump { target: F + 0x12 }
            }
        );
        assert!(p.ends_in_branch());
        assert_eq!(
            listing(&out[..5], REAL),
            [(0, ControlFlow::JmpRel { target: F + 0x12 })]
        );
        assert_eq!(out[5], 0xaa);
        // jmp rel32 after one byte.
        let mut code = vec![0x55, 0xe9, 0x00, 0x10, 0x00, 0x00, 0x90];
        code.extend([0xcc; 8]);
        let (r, out) = plan(&code, 0);
        assert_eq!(r.map(|p| (p.region_len, p.taken, p.emitted)), Ok((6, 6, 6)));
        assert_eq!(
            listing(&out[..6], REAL)[1],
            (
                1,
                ControlFlow::JmpRel {
                    target: F + 6 + 0x1000
                }
            )
        );
    }

    #[test]
    fn bytes_overwritten_after_a_jmp_must_not_be_branch_targets() {
        // 0: jmp 9; 2: mov %rsp,%rbp (jumped to from 10); 5: pop; 6: ret;
        // 7: nop; 8: nop; 9: nop; 10: je 2
        let code = [
            0xeb, 0x07, 0x48, 0x89, 0xe5, 0x5d, 0xc3, 0x90, 0x90, 0x90, 0x74, 0xf6, 0xcc,
        ];
        let (r, out) = plan(&code, 0);
        assert_eq!(r, Err(OptimizeRefusal::JumpIntoRange { addr: F + 10 }));
        assert_eq!(out, [0xaa; 48]);
        // To the pop at 5, just after the jump's bytes: allowed (the
        // kernel's range would refuse it).
        let mut code = code;
        code[11] = 0xf9; // je 5
        assert!(plan(&code, 0).0.is_ok());
        let f = FuncCode::new(&code, F);
        assert_eq!(
            f.can_optimize(F, IndirectJumpCheck::Skip, NONE, NONE),
            Err(OptimizeRefusal::JumpIntoRange { addr: F + 10 })
        );
        // To the probe itself: allowed, the branch goes to the probe's jump.
        code[11] = 0xf4; // je 0
        assert!(plan(&code, 0).0.is_ok());
        // A branch of the region into its own overwritten bytes.
        let code = [0x74, 0x01, 0x55, 0x48, 0x89, 0xe5, 0xc3];
        assert_eq!(
            plan(&code, 0).0,
            Err(OptimizeRefusal::JumpIntoRange { addr: F })
        );
    }

    #[test]
    fn call_pushes_the_original_return_address() {
        // push %rbp; call +0x1000; pop %rbp; ret
        let code = [0x55, 0xe8, 0x00, 0x10, 0x00, 0x00, 0x5d, 0xc3, 0xcc];
        let (r, out) = plan(&code, 0);
        let p = r.unwrap();
        assert_eq!(
            p,
            RegionPlan {
                region_len: 6,
                taken: 6,
                emitted: 1 + CALL_FORM_LEN,
                first_emitted: 1,
                end: RegionEnd::Call {
                    target: F + 6 + 0x1000
                }
            }
        );
        assert!(p.ends_in_branch());
        assert_eq!(out[0], 0x55);
        // push qword [rip + 5]
        let push = d(&out[1..]);
        assert_eq!(push.bytes(), [0xff, 0x35, 5, 0, 0, 0]);
        let lit = push.rip_relative_target(REAL + 1).unwrap();
        assert_eq!(lit, REAL + 12);
        assert_eq!(out[12..20], (F + 6).to_le_bytes());
        assert_eq!(
            d(&out[7..]).control_flow(REAL + 7),
            ControlFlow::JmpRel {
                target: F + 6 + 0x1000
            }
        );
        // A call at the probe is the whole region.
        let (r, _) = plan(&code[1..], 0);
        assert_eq!(r.map(|p| (p.region_len, p.emitted)), Ok((5, CALL_FORM_LEN)));
    }

    #[test]
    fn refusals() {
        let pad = |mut v: Vec<u8>| {
            v.extend([0x90; 16]);
            v
        };
        // LOOP and JrCXZ.
        let code = pad(vec![0x55, 0xe2, 0x10]);
        assert_eq!(
            plan(&code, 0).0,
            Err(OptimizeRefusal::LoopInRegion { addr: F + 1 })
        );
        let code = pad(vec![0xe3, 0x10]);
        assert_eq!(
            plan(&code, 0).0,
            Err(OptimizeRefusal::LoopInRegion { addr: F })
        );
        // Prefixed branches: a branch hint, an operand-size call.
        for pfx in [
            &[0x3e, 0x74, 0x10][..],
            &[0x66, 0xe8, 0x10, 0, 0, 0],
            &[0x48, 0xeb, 0x10],
        ] {
            let code = pad(pfx.to_vec());
            assert_eq!(
                plan(&code, 0).0,
                Err(OptimizeRefusal::PrefixedBranch { addr: F }),
                "{pfx:02x?}"
            );
        }
        // A branch to a thunk.
        let code = pad(vec![0xe9, 0x00, 0x10, 0, 0]);
        let f = FuncCode::new(&code, F);
        let thunk = |t: u64| t == F + 0x1005;
        let mut out = [0u8; 32];
        assert_eq!(
            f.plan_region(F, REAL, &mut out, IndirectJumpCheck::Skip, NONE, thunk),
            Err(OptimizeRefusal::ThunkTarget { addr: F })
        );
        // With Refuse, the function walk finds it first, as the kernel would.
        assert_eq!(
            f.plan_region(F, REAL, &mut out, IndirectJumpCheck::Refuse, NONE, thunk),
            Err(OptimizeRefusal::IndirectJump { addr: F })
        );
        // An indirect call is not boostable; an indirect jump is (the
        // kernel's can_boost()), and is copied.
        let code = pad(vec![0x55, 0xff, 0xd0]);
        assert_eq!(
            plan(&code, 0).0,
            Err(OptimizeRefusal::NotBoostable { addr: F + 1 })
        );
        let code = pad(vec![0x55, 0xff, 0xe0]);
        assert!(plan(&code, 0).0.is_ok());
        // Refused instructions, exception-table entries.
        let code = pad(vec![0x55, 0x0f, 0x0b]);
        assert_eq!(
            plan(&code, 0).0,
            Err(OptimizeRefusal::NotBoostable { addr: F + 1 })
        );
        let code = pad(vec![0x55]);
        let f = FuncCode::new(&code, F);
        assert_eq!(
            f.plan_region(
                F,
                REAL,
                &mut out,
                IndirectJumpCheck::Skip,
                |a| a == F + 9,
                NONE
            ),
            Err(OptimizeRefusal::ExceptionTable { addr: F + 9 })
        );
        // Too close to the end of the function.
        let code = [0x55, 0x90, 0x90, 0xc3];
        assert_eq!(plan(&code, 0).0, Err(OptimizeRefusal::TooSmall));
        // Outside the function.
        assert_eq!(
            plan(&code, 4).0,
            Err(OptimizeRefusal::Analyze(AnalyzeError::OutsideFunction))
        );
        // A truncated last instruction.
        let code = [0x55, 0x90, 0x90, 0x90, 0x48, 0x8b];
        assert!(matches!(
            plan(&code, 0).0,
            Err(OptimizeRefusal::Analyze(AnalyzeError::Decode { .. }))
        ));
    }

    #[test]
    fn reach() {
        let mut out = [0u8; 48];
        // je rel8 from a detour 2 GiB away cannot reach.
        let code = [0x74, 0x10, 0x55, 0x90, 0x90, 0x90, 0xc3, 0xcc];
        let f = FuncCode::new(&code, F);
        let far = F - 0x8000_0000;
        assert_eq!(
            f.plan_region(F, far, &mut out, IndirectJumpCheck::Skip, NONE, NONE),
            Err(OptimizeRefusal::Reloc {
                addr: F,
                error: RelocError::BranchOutOfRange
            })
        );
        // Exactly at the limit in both directions: the jump back of a
        // 5-byte region at `real` ends at real + 10.
        let code = [0x55, 0x90, 0x90, 0x90, 0x90, 0xc3, 0xcc];
        let f = FuncCode::new(&code, F);
        let at =
            |real: u64| f.plan_region(F, real, &mut [0u8; 48], IndirectJumpCheck::Skip, NONE, NONE);
        assert!(at((F - 5).wrapping_add(0x8000_0000)).is_ok());
        assert_eq!(
            at((F - 5).wrapping_add(0x8000_0001)),
            Err(OptimizeRefusal::JumpBackOutOfReach)
        );
        assert!(at(F - 5 - 0x7fff_ffff).is_ok());
        assert_eq!(
            at(F - 5 - 0x8000_0000),
            Err(OptimizeRefusal::JumpBackOutOfReach)
        );
        // A RIP-relative operand out of reach, as copy_for_detour says.
        let code = [0x8b, 0x05, 0, 0, 0, 0, 0xc3];
        let f = FuncCode::new(&code, F);
        assert_eq!(
            f.plan_region(F, far, &mut out, IndirectJumpCheck::Skip, NONE, NONE),
            Err(OptimizeRefusal::Reloc {
                addr: F,
                error: RelocError::DisplacementOutOfRange
            })
        );
    }

    #[test]
    fn output_bound() {
        // je; jne; the longest instruction: 66 66 66 48 c7 84 24 disp32 imm32
        // (movq $imm32, disp32(%rsp) with repeated prefixes).
        let long = [
            0x66, 0x66, 0x66, 0x48, 0xc7, 0x84, 0x24, 1, 2, 3, 4, 5, 6, 7, 8,
        ];
        assert_eq!(d(&long).length(), MAX_INSN_SIZE);
        let mut code = vec![0x74, 0x40, 0x75, 0x40];
        code.extend(long);
        code.extend([0xcc; 0x50]);
        let (r, out) = plan(&code, 0);
        let p = r.unwrap();
        assert_eq!(
            (p.region_len, p.emitted),
            (4 + MAX_INSN_SIZE, MAX_PLAN_OUTPUT)
        );
        assert_eq!(out[12..27], long);
        assert_eq!(jmp_back_to(&out, 27, REAL), F + 19);
        // The longest region.
        let mut code = vec![0x90; 4];
        code.extend(long);
        code.push(0xc3);
        let (r, _) = plan(&code, 0);
        assert_eq!(r.map(|p| p.region_len), Ok(MAX_REGION_LEN));
        // Too small an output buffer: refused, nothing written.
        let f = FuncCode::new(&code, F);
        let mut small = [0xaa; 23];
        assert_eq!(
            f.plan_region(F, REAL, &mut small, IndirectJumpCheck::Skip, NONE, NONE),
            Err(OptimizeRefusal::Reloc {
                addr: F,
                error: RelocError::BufferTooSmall
            })
        );
        assert_eq!(small, [0xaa; 23]);
    }
}
