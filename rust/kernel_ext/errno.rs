// SPDX-License-Identifier: GPL-2.0

//! errno values that the 6.12 kernel crate does not name, which kprobes'
//! registration returns.

use crate::ffi;
use kernel::error::Error;

/// `EILSEQ`: not an instruction boundary, or an instruction that raises an
/// exception (int3, ud2, ...).
pub(crate) fn eilseq() -> Error {
    Error::from_errno(-(ffi::EILSEQ as i32))
}

/// `EOPNOTSUPP`: an instruction that cannot be run out of line or emulated.
pub(crate) fn eopnotsupp() -> Error {
    Error::from_errno(-(ffi::EOPNOTSUPP as i32))
}
