// SPDX-License-Identifier: GPL-2.0

//! x86-64 instruction decoding and analysis for probing.
//!
//! [`Insn::decode`] is a port of the kernel's instruction decoder
//! (`arch/x86/lib/insn.c`, Linux 6.12) for 64-bit mode that agrees with it
//! field for field; the attribute tables are generated from the kernel's
//! `x86-opcode-map.txt` by `tools/gen-insn-tables`. On top of it:
//!
//! - [`classify`]: control flow with branch targets, the kernel's refusal
//!   list with its errno values, IF/TF modifiers, `can_boost()`, ENDBR;
//! - [`relocate`]: copying an instruction to another address with its
//!   RIP-relative displacement adjusted (`__copy_instruction()`);
//! - [`analyze`]: walking a whole function for `can_probe()`,
//!   `can_optimize()` and `copy_optimized_instructions()`;
//! - [`region`]: an opt-in extension of the latter that also moves relative
//!   branches into the detour, so that more probes can be jump-optimized.
//!
//! Everything runs in int3/NMI context in the module: only `core`, no
//! allocation, no panics, bounded work, never a read beyond the given
//! buffer. `Documentation/insn-decoder.rst` describes the design, the tests
//! against the kernel's C decoder and objdump, and every deliberate
//! difference from the kernel.

pub mod analyze;
pub mod classify;
pub mod decode;
pub mod inat;
pub mod region;
pub mod relocate;
mod tables;

pub use analyze::{
    is_boundary, AnalyzeError, FuncCode, IndirectJumpCheck, InsnIter, OptimizeRefusal,
};
pub use classify::{
    adjust_probe_offset, is_endbr, ControlFlow, IfModifier, IndirectOperand, LoopKind, OpcodeMap,
    Refusal, UdKind,
};
pub use decode::{DecodeError, Insn, InsnField, MAX_INSN_SIZE};
pub use region::{RegionEnd, RegionPlan, MAX_PLAN_OUTPUT, MAX_REGION_LEN};
pub use relocate::{copy_insn, new_rip_displacement, relocate_branch, Copied, RelocError};
