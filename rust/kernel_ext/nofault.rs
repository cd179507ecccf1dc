// SPDX-License-Identifier: GPL-2.0

//! Reading memory that may not be mapped, without faulting.

use crate::ffi;
use kernel::prelude::*;

/// Reads `buf.len()` bytes of kernel memory at `addr`
/// (`copy_from_kernel_nofault()`); `EFAULT` when they cannot be read. Any
/// context, the probe hit path included.
pub(crate) fn read_kernel(addr: usize, buf: &mut [u8]) -> Result {
    // SAFETY: `buf` is valid for writes of its length; the copy checks the
    // source and returns an error instead of faulting.
    let ret = unsafe {
        ffi::copy_from_kernel_nofault(buf.as_mut_ptr().cast(), addr as *const _, buf.len())
    };
    if ret == 0 {
        Ok(())
    } else {
        Err(EFAULT)
    }
}

/// Reads the machine word of kernel memory at `addr`, as [`read_kernel`].
/// Any context, the probe hit path included.
pub(crate) fn read_kernel_word(addr: usize) -> Result<usize> {
    let mut word = [0u8; core::mem::size_of::<usize>()];
    read_kernel(addr, &mut word)?;
    Ok(usize::from_ne_bytes(word))
}

/// Reads `buf.len()` bytes of user memory at `addr` of the current task
/// (`copy_from_user_nofault()`); `EFAULT` when they cannot be read. Any
/// context, the probe hit path included.
pub(crate) fn read_user(addr: usize, buf: &mut [u8]) -> Result {
    // SAFETY: as in `read_kernel`, for user memory.
    let ret = unsafe {
        ffi::copy_from_user_nofault(buf.as_mut_ptr().cast(), addr as *const _, buf.len())
    };
    if ret == 0 {
        Ok(())
    } else {
        Err(EFAULT)
    }
}
