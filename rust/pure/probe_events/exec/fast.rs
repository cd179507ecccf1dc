// SPDX-License-Identifier: GPL-2.0

//! The commonest arguments, recognised once when their program is built
//! and run without the interpreter.

use super::{super::program::FetchInsn, super::regs::Register, FetchEnv};

/// Where the string of a [`Fast::String`] argument is: a register, or a
/// function argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    /// `%REG`.
    Reg(Register),
    /// `$argN` (0-based).
    Arg(u32),
}

impl Base {
    /// The string's address: the base's value plus `offset`.
    #[inline(always)]
    pub(super) fn address<E: FetchEnv + ?Sized>(self, offset: i32, env: &E) -> u64 {
        let v = match self {
            Base::Reg(r) => env.register(r),
            Base::Arg(n) => env.argument(n),
        };
        v.wrapping_add(offset as i64 as u64)
    }
}

/// The commonest arguments, which [`store_args`] and [`data_size`] run
/// without the interpreter: what [`process`] would do for their programs,
/// in a few instructions instead of over a hundred (insn-profile
/// --events).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fast {
    /// A register stored as it is (`%di:x64`), `size` bytes.
    Reg(Register, u8),
    /// The return value stored as it is (`$retval`), `size` bytes.
    Retval(u8),
    /// A function argument at entry stored as it is (`$arg1`, a typed
    /// parameter such as `dfd`), `size` bytes.
    Arg(u32, u8),
    /// `size` bytes of memory at a register or an argument plus an offset
    /// (`+8(%di):u32`, `how->flags`), kernel or user memory as the
    /// address says, as [`process`] reads it.
    Mem {
        /// Where the address is.
        base: Base,
        /// Added to it.
        offset: i32,
        /// Bytes stored.
        size: u8,
    },
    /// A string at a register or an argument plus an offset
    /// (`+0(%si):ustring`, `+8($arg2):string`): a user string when `user`,
    /// otherwise a kernel one (read as user memory below `TASK_SIZE`, as
    /// [`process`] reads it).
    String {
        /// Where the address is.
        base: Base,
        /// Added to it.
        offset: i32,
        /// `ustring`.
        user: bool,
    },
}

/// Whether `code` (of an argument that stores a string when `dynamic`) is
/// one of the [`Fast`] programs: exactly a register or the return value and
/// a raw store, or exactly a register or an argument and a string store.
pub fn fast(code: &[FetchInsn<u64>], dynamic: bool) -> Option<Fast> {
    match *code {
        [FetchInsn::Reg(r), FetchInsn::StRaw(size), FetchInsn::End, ..] if !dynamic => {
            Some(Fast::Reg(r, size))
        }
        [FetchInsn::Retval, FetchInsn::StRaw(size), FetchInsn::End, ..] if !dynamic => {
            Some(Fast::Retval(size))
        }
        [FetchInsn::Arg(n), FetchInsn::StRaw(size), FetchInsn::End, ..] if !dynamic => {
            Some(Fast::Arg(n, size))
        }
        [first, FetchInsn::StMem { offset, size }, FetchInsn::End, ..] if !dynamic => {
            let base = match first {
                FetchInsn::Reg(r) => Base::Reg(r),
                FetchInsn::Arg(n) => Base::Arg(n),
                _ => return None,
            };
            Some(Fast::Mem { base, offset, size })
        }
        [first, store, FetchInsn::End, ..] if dynamic => {
            let base = match first {
                FetchInsn::Reg(r) => Base::Reg(r),
                FetchInsn::Arg(n) => Base::Arg(n),
                _ => return None,
            };
            let (offset, user) = match store {
                FetchInsn::StString { offset } => (offset, false),
                FetchInsn::StUString { offset } => (offset, true),
                _ => return None,
            };
            Some(Fast::String { base, offset, user })
        }
        _ => None,
    }
}
