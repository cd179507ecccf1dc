// SPDX-License-Identifier: GPL-2.0

//! Raw declarations of kernel functions that `kernel::bindings` does not carry.
//!
//! This is the one place where rkprobes names C symbols the kernel crate has no
//! binding for. Everything declared here is exported to modules (modpost checks
//! that at build time); symbols that are not exported are found at run time by
//! a separate layer, never declared here. Only the small abstractions beside
//! this file (`debugfs`, ...) call these functions.

use core::marker::{PhantomData, PhantomPinned};
use kernel::ffi::c_char;

/// `struct dentry`, only ever handled by pointer.
///
/// The generated binding for `struct dentry` is an empty struct in kernels
/// built without the headers that define it, which rustc rejects as not
/// FFI-safe; an opaque type is all rkprobes needs.
#[repr(C)]
pub(crate) struct Dentry {
    _data: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

extern "C" {
    /// `struct dentry *debugfs_create_dir(const char *name, struct dentry *parent)`.
    ///
    /// Returns an `ERR_PTR` on failure (also when debugfs is disabled).
    pub(crate) fn debugfs_create_dir(
        name: *const c_char,
        parent: *mut Dentry,
    ) -> *mut Dentry;

    /// `void debugfs_remove(struct dentry *dentry)`: removes a dentry and
    /// everything below it; accepts NULL and `ERR_PTR` values.
    pub(crate) fn debugfs_remove(dentry: *mut Dentry);
}
