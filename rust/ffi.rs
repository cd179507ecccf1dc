// SPDX-License-Identifier: GPL-2.0

//! Raw declarations of kernel symbols that `kernel::bindings` does not carry.
//!
//! This is the one place where rkprobes names C symbols the kernel crate has no
//! binding for. Everything declared here is exported to modules (modpost checks
//! that at build time); symbols that are not exported are found at run time by
//! `kallsyms`, never declared here. Only the small abstractions beside this
//! file (`debugfs`, `kallsyms`, ...) use these declarations.

use core::marker::{PhantomData, PhantomPinned};
use kernel::{bindings, ffi::c_char};

/// `struct dentry`, only ever handled by pointer.
///
/// The generated binding for `struct dentry` contains members that rustc
/// judges not FFI-safe; an opaque type is all rkprobes needs.
#[repr(C)]
pub(crate) struct Dentry {
    _data: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

extern "C" {
    /// This module's `struct module`, defined by modpost in the `.mod.c` file.
    pub(crate) static mut __this_module: bindings::module;

    /// `struct dentry *debugfs_create_dir(const char *name, struct dentry *parent)`.
    ///
    /// Returns an `ERR_PTR` on failure (also when debugfs is disabled).
    pub(crate) fn debugfs_create_dir(name: *const c_char, parent: *mut Dentry) -> *mut Dentry;

    /// `struct dentry *debugfs_create_file(const char *name, umode_t mode,
    /// struct dentry *parent, void *data, const struct file_operations *fops)`.
    ///
    /// The file is reached through debugfs' proxy operations, which make
    /// `debugfs_remove` wait for callers still inside `fops`.
    pub(crate) fn debugfs_create_file(
        name: *const c_char,
        mode: bindings::umode_t,
        parent: *mut Dentry,
        data: *mut kernel::ffi::c_void,
        fops: *const bindings::file_operations,
    ) -> *mut Dentry;

    /// `void debugfs_remove(struct dentry *dentry)`: removes a dentry and
    /// everything below it; accepts NULL and `ERR_PTR` values.
    pub(crate) fn debugfs_remove(dentry: *mut Dentry);
}
