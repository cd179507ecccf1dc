// SPDX-License-Identifier: GPL-2.0

//! debugfs directories owned by rkprobes.
//!
//! The 6.12 kernel crate has no debugfs abstraction, so this file wraps the two
//! C calls rkprobes needs. A [`Dir`] removes itself, and everything created
//! below it, when dropped, so the module's debugfs tree disappears exactly when
//! the module's state does.

use crate::ffi;
use kernel::{error::from_err_ptr, prelude::*, str::CStr};

/// A debugfs directory.
///
/// # Invariants
///
/// `dentry` is a valid dentry returned by `debugfs_create_dir` that has not been
/// removed yet; it is removed exactly once, in `drop`.
pub(crate) struct Dir {
    dentry: *mut ffi::Dentry,
}

impl Dir {
    /// Creates the directory `name` at the root of debugfs.
    ///
    /// Fails with the kernel's error (e.g. `EEXIST` when another module owns the
    /// name, `ENODEV` when debugfs is not available). May sleep.
    pub(crate) fn create_root(name: &CStr) -> Result<Self> {
        // SAFETY: `name` is a NUL-terminated string that outlives the call, and a
        // NULL parent means the debugfs root.
        let dentry = unsafe { ffi::debugfs_create_dir(name.as_char_ptr(), core::ptr::null_mut()) };
        let dentry = from_err_ptr(dentry)?;
        // INVARIANT: `debugfs_create_dir` succeeded, so `dentry` is valid.
        Ok(Self { dentry })
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        // SAFETY: by the type invariant `self.dentry` is a live debugfs dentry
        // that nothing else removes; removing it also removes its children.
        unsafe { ffi::debugfs_remove(self.dentry) };
    }
}

// SAFETY: a `Dir` is only a handle; debugfs serialises creation and removal
// internally, so it may be dropped on any thread.
unsafe impl Send for Dir {}
// SAFETY: `Dir` has no methods that use `&self` to touch the dentry.
unsafe impl Sync for Dir {}
