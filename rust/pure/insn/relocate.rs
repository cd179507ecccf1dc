// SPDX-License-Identifier: GPL-2.0

//! Copying an instruction to another address: the displacement fix-up of the
//! kernel's `__copy_instruction()`, and the retargeting of relative branches.
//!
//! A RIP-relative operand addresses memory relative to the end of the
//! instruction, so a copy that runs at `real` instead of `src` needs its
//! displacement moved by `src - real`, and must be refused when the result
//! does not fit the signed 32-bit field (the copy is too far from the
//! data). Relative branches (CALL/JMP/Jcc/LOOP/JrCXZ) are not fixed up by
//! [`copy_insn`]: the kernel never runs them out of line, it emulates them
//! from the decoded displacement ([`Insn::control_flow`] gives the target).
//! [`relocate_branch`] is there for an engine that wants to run one out of
//! line anyway; it refuses when the new displacement does not fit the
//! branch's 8- or 32-bit field.

use super::classify::ControlFlow;
use super::decode::Insn;

/// Why an instruction could not be copied to its new address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelocError {
    /// The output buffer is shorter than the instruction.
    BufferTooSmall,
    /// The adjusted RIP-relative displacement is outside ±2 GiB (the
    /// kernel's "new displacement does not fit into s32").
    DisplacementOutOfRange,
    /// The adjusted branch displacement does not fit the branch's field.
    BranchOutOfRange,
    /// [`relocate_branch`] was given something that is not a relative
    /// branch.
    NotRelativeBranch,
}

/// What [`copy_insn`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Copied {
    /// Bytes written (the instruction's length).
    pub len: usize,
    /// The new RIP-relative displacement written, if the instruction is
    /// RIP-relative.
    pub new_displacement: Option<i32>,
}

/// `src + disp - real` as the kernel computes it (64-bit wrapping), if it
/// fits a signed 32-bit field.
fn moved(src: u64, disp: i32, real: u64) -> Option<i32> {
    let new = src.wrapping_add(i64::from(disp) as u64).wrapping_sub(real) as i64;
    i32::try_from(new).ok()
}

/// The RIP-relative displacement `insn` needs when it runs at `real`
/// instead of `src`; `Ok(None)` when it is not RIP-relative.
pub fn new_rip_displacement(insn: &Insn, src: u64, real: u64) -> Result<Option<i32>, RelocError> {
    if insn.rip_displacement_offset().is_none() {
        return Ok(None);
    }
    moved(src, insn.displacement().value, real)
        .map(Some)
        .ok_or(RelocError::DisplacementOutOfRange)
}

/// Copies `insn`, decoded at `src`, into `out` for execution at `real`,
/// adjusting a RIP-relative displacement (the kernel's
/// `__copy_instruction()` fix-up). Relative branches are copied verbatim:
/// they must be emulated (or passed to [`relocate_branch`]).
pub fn copy_insn(insn: &Insn, src: u64, real: u64, out: &mut [u8]) -> Result<Copied, RelocError> {
    let bytes = insn.bytes();
    let len = bytes.len();
    let dst = out.get_mut(..len).ok_or(RelocError::BufferTooSmall)?;
    let new_displacement = new_rip_displacement(insn, src, real)?;
    dst.copy_from_slice(bytes);
    if let (Some(disp), Some(off)) = (new_displacement, insn.rip_displacement_offset()) {
        write_le(dst, off, &disp.to_le_bytes())?;
    }
    Ok(Copied {
        len,
        new_displacement,
    })
}

fn write_le(dst: &mut [u8], off: usize, val: &[u8]) -> Result<(), RelocError> {
    let end = off
        .checked_add(val.len())
        .ok_or(RelocError::BufferTooSmall)?;
    dst.get_mut(off..end)
        .ok_or(RelocError::BufferTooSmall)?
        .copy_from_slice(val);
    Ok(())
}

/// Copies the relative branch `insn`, decoded at `src`, into `out` for
/// execution at `real`, with its displacement adjusted so that it reaches
/// the same target. Fails with [`RelocError::BranchOutOfRange`] when the new
/// displacement does not fit the instruction's 8-bit or 32-bit field (this
/// never widens a short branch).
pub fn relocate_branch(
    insn: &Insn,
    src: u64,
    real: u64,
    out: &mut [u8],
) -> Result<usize, RelocError> {
    let is_branch = matches!(
        insn.control_flow(src),
        ControlFlow::CallRel { .. }
            | ControlFlow::JmpRel { .. }
            | ControlFlow::Jcc { .. }
            | ControlFlow::Loop { .. }
    );
    if !is_branch {
        return Err(RelocError::NotRelativeBranch);
    }
    let bytes = insn.bytes();
    let len = bytes.len();
    let dst = out.get_mut(..len).ok_or(RelocError::BufferTooSmall)?;
    let imm = insn.immediate1();
    let new = moved(src, imm.value, real).ok_or(RelocError::BranchOutOfRange)?;
    let off = insn.offset_immediate();
    dst.copy_from_slice(bytes);
    match imm.nbytes {
        1 => {
            let v = i8::try_from(new).map_err(|_| RelocError::BranchOutOfRange)?;
            write_le(dst, off, &v.to_le_bytes())
        }
        2 => {
            let v = i16::try_from(new).map_err(|_| RelocError::BranchOutOfRange)?;
            write_le(dst, off, &v.to_le_bytes())
        }
        _ => write_le(dst, off, &new.to_le_bytes()),
    }?;
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(bytes: &[u8]) -> Insn {
        match Insn::decode(bytes) {
            Ok(i) => i,
            Err(e) => panic!("{bytes:02x?}: {e:?}"),
        }
    }

    const SRC: u64 = 0xffff_fffe_8100_0000;

    #[test]
    fn rip_relative_moves_displacement() {
        // mov 0x100(%rip),%rax at SRC, run at SRC + 0x1000.
        let insn = d(&[0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00]);
        let mut out = [0u8; 16];
        let c = copy_insn(&insn, SRC, SRC + 0x1000, &mut out);
        assert_eq!(
            c,
            Ok(Copied {
                len: 7,
                new_displacement: Some(0x100 - 0x1000)
            })
        );
        let copy = d(&out[..7]);
        // Both refer to the same address.
        assert_eq!(
            copy.rip_relative_target(SRC + 0x1000),
            insn.rip_relative_target(SRC)
        );
        // With a SIB-less prefix/immediate mix: cmpl $1, 0x10(%rip)
        let insn = d(&[0x83, 0x3d, 0x10, 0, 0, 0, 0x01]);
        let c = copy_insn(&insn, SRC, SRC - 0x10, &mut out);
        assert_eq!(c.map(|c| c.new_displacement), Ok(Some(0x20)));
        assert_eq!(&out[..7], &[0x83, 0x3d, 0x20, 0, 0, 0, 0x01]);
    }

    #[test]
    fn rip_relative_out_of_range() {
        let insn = d(&[0x48, 0x8b, 0x05, 0x00, 0x00, 0x00, 0x00]);
        let mut out = [0u8; 16];
        // Exactly +2 GiB - 1 away still fits, 2 GiB does not.
        assert!(copy_insn(&insn, SRC, SRC - 0x7fff_ffff, &mut out).is_ok());
        assert_eq!(
            copy_insn(&insn, SRC, SRC - 0x8000_0000, &mut out),
            Err(RelocError::DisplacementOutOfRange)
        );
        assert!(copy_insn(&insn, SRC, SRC + 0x8000_0000, &mut out).is_ok());
        assert_eq!(
            copy_insn(&insn, SRC, SRC + 0x8000_0001, &mut out),
            Err(RelocError::DisplacementOutOfRange)
        );
        // Nothing is written on failure.
        let mut fresh = [0xaau8; 16];
        let _ = copy_insn(&insn, SRC, 0, &mut fresh);
        assert_eq!(fresh, [0xaa; 16]);
    }

    #[test]
    fn buffer_too_small() {
        let insn = d(&[0x48, 0x8b, 0x05, 0, 0, 0, 0]);
        let mut out = [0u8; 6];
        assert_eq!(
            copy_insn(&insn, SRC, SRC, &mut out),
            Err(RelocError::BufferTooSmall)
        );
        let mut out = [0u8; 7];
        assert!(copy_insn(&insn, SRC, SRC, &mut out).is_ok());
    }

    #[test]
    fn non_rip_relative_copied_verbatim() {
        let bytes = [0x48, 0x8b, 0x45, 0xf8]; // mov -8(%rbp),%rax
        let insn = d(&bytes);
        let mut out = [0u8; 4];
        let c = copy_insn(&insn, SRC, 0x1234, &mut out);
        assert_eq!(
            c,
            Ok(Copied {
                len: 4,
                new_displacement: None
            })
        );
        assert_eq!(out, bytes);
        // A relative call is copied verbatim too: it is emulated.
        let call = d(&[0xe8, 1, 0, 0, 0]);
        let mut out = [0u8; 5];
        assert!(copy_insn(&call, SRC, 0, &mut out).is_ok());
        assert_eq!(out, [0xe8, 1, 0, 0, 0]);
    }

    #[test]
    fn branches() {
        let mut out = [0u8; 16];
        let call = d(&[0xe8, 0x10, 0, 0, 0]);
        assert_eq!(relocate_branch(&call, SRC, SRC + 0x100, &mut out), Ok(5));
        let moved = d(&out[..5]);
        assert_eq!(moved.control_flow(SRC + 0x100), call.control_flow(SRC));
        // jne rel8 moved a little: fits; moved far: does not.
        let jne = d(&[0x75, 0x10]);
        assert_eq!(relocate_branch(&jne, SRC, SRC + 0x10, &mut out), Ok(2));
        assert_eq!(&out[..2], &[0x75, 0x00]);
        assert_eq!(
            relocate_branch(&jne, SRC, SRC + 0x1000, &mut out),
            Err(RelocError::BranchOutOfRange)
        );
        assert_eq!(
            relocate_branch(&call, SRC, SRC + 0x1_0000_0000, &mut out),
            Err(RelocError::BranchOutOfRange)
        );
        assert_eq!(
            relocate_branch(&d(&[0x90]), SRC, SRC, &mut out),
            Err(RelocError::NotRelativeBranch)
        );
        assert_eq!(
            relocate_branch(&call, SRC, SRC, &mut out[..4]),
            Err(RelocError::BufferTooSmall)
        );
    }
}
