// SPDX-License-Identifier: GPL-2.0

//! debugfs directories and read-only files owned by rkprobes.
//!
//! The 6.12 kernel crate has no debugfs abstraction, so this file wraps the C
//! calls rkprobes needs. A [`Dir`] removes itself, and every file created below
//! it, when dropped. Files are `seq_file`s whose contents a [`Show`]
//! implementation writes; debugfs' proxy operations make removal wait for
//! readers still inside a callback, so once a [`Dir`] is dropped no callback
//! runs and the data behind its files may be freed.

use crate::ffi::{self, runtime::Runtime};
use core::{fmt, marker::PhantomData};
use kernel::{
    error::{from_err_ptr, from_result},
    ffi::{c_int, c_void},
    prelude::*,
    str::CStr,
};

/// A kind of debugfs file: how it shows its data, produced on each `open`.
pub(crate) trait Show {
    /// What the file shows (it is shared with every reader).
    type Data: Sync;

    /// Writes the file's contents. Runs in process context and may sleep.
    fn show(data: &Self::Data, out: &mut SeqFile) -> Result;
}

/// A writable kind of debugfs file.
pub(crate) trait Store: Show {
    /// Longest write accepted, in bytes (at most 256); longer ones fail with
    /// `EINVAL`.
    const MAX_WRITE: usize = 64;

    /// Handles one `write()`. Process context, may sleep.
    fn store(data: &Self::Data, input: &[u8]) -> Result;
}

/// A writable debugfs file that takes writes of any size, as a control file
/// with commands, and may be opened with `O_TRUNC`.
pub(crate) trait StoreLarge: Show {
    /// Largest write accepted, in bytes; longer ones fail with `EINVAL`.
    const MAX_WRITE: usize = 1 << 20;

    /// The file's mode. A file without write bits still opens for writing
    /// for root (`CAP_DAC_OVERRIDE`), and, unlike a writable one, still
    /// opens for reading under lockdown (`debugfs_locked_down()`).
    const MODE: u16 = 0o600;

    /// Handles one `write()`; returns the bytes consumed. Process context,
    /// may sleep.
    fn store(data: &Self::Data, input: &[u8]) -> Result<usize>;

    /// An open for writing with `O_TRUNC`. Process context, may sleep.
    fn truncate(data: &Self::Data) -> Result;
}

/// A `seq_file` being filled by [`Show::show`].
///
/// # Invariants
///
/// `m` points to the live `seq_file` of the `show` callback this wrapper was
/// created in, and is only used during that callback.
pub(crate) struct SeqFile {
    m: *mut ffi::seq_file,
}

impl SeqFile {
    /// Appends `b` as it is, bytes that are not UTF-8 included (the
    /// kernel's names are bytes).
    pub(crate) fn write_raw(&mut self, b: &[u8]) {
        // SAFETY: `self.m` is live by the type invariant and `b` is valid for
        // `b.len()` bytes. On overflow seq_file marks the buffer full and calls
        // `show` again with a larger one, so the result needs no handling.
        unsafe { ffi::seq_write(self.m, b.as_ptr().cast(), b.len()) };
    }

    /// The credentials the file was opened with (`file->f_cred`), for the
    /// checks the kernel's files make on their opener's behalf; live while
    /// the `show` callback runs.
    pub(crate) fn opener_cred(&self) -> *const ffi::cred {
        // SAFETY: `self.m` is live by the type invariant; `seq_open` set its
        // `file`, an open file for the whole callback, whose `f_cred` is set
        // at open and never changes.
        unsafe { (*(*self.m).file).f_cred }
    }
}

impl SeqFile {
    /// Whether the opener may see kernel addresses: the kernel's
    /// `kallsyms_show_value()` on the file's credentials (`kptr_restrict`,
    /// `CAP_SYSLOG`), as the kernel's `kprobes/list` and `kprobes/blacklist`
    /// ask it. Process context, in the `show` callback.
    pub(crate) fn opener_sees_addresses(&self, rt: &Runtime) -> bool {
        // SAFETY: the open file's credentials, live during `show` (the
        // callback this wrapper lives in, by the type invariant).
        unsafe { rt.kallsyms_show_value(self.opener_cred()) }
    }
}

impl fmt::Write for SeqFile {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.write_raw(s.as_bytes());
        Ok(())
    }
}

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

    /// Creates a read-only (0400) file `name` in this directory, whose
    /// contents `data` produces.
    ///
    /// The file lives until this directory is dropped. May sleep.
    ///
    /// # Safety
    ///
    /// `data` must stay valid until this `Dir` has been dropped.
    pub(crate) unsafe fn create_file<T: Show>(&self, name: &CStr, data: &T::Data) -> Result {
        // SAFETY: the caller's contract.
        unsafe { self.create(name, 0o400, data, &ShowFops::<T>::FOPS.0) }
    }

    /// Creates a read-write (0600) file `name`, shown by `data` and written
    /// through [`Store::store`]. May sleep.
    ///
    /// # Safety
    ///
    /// `data` must stay valid until this `Dir` has been dropped.
    pub(crate) unsafe fn create_rw_file<T: Store>(&self, name: &CStr, data: &T::Data) -> Result {
        // SAFETY: the caller's contract.
        unsafe { self.create(name, 0o600, data, &ShowFops::<T>::RW_FOPS.0) }
    }

    /// Creates a control file `name` (mode `T::MODE`) of kind `T`.
    ///
    /// # Safety
    ///
    /// `data` must stay valid until this `Dir` has been dropped.
    pub(crate) unsafe fn create_control_file<T: StoreLarge>(
        &self,
        name: &CStr,
        data: &T::Data,
    ) -> Result {
        // SAFETY: the caller's contract.
        unsafe { self.create(name, T::MODE, data, &ShowFops::<T>::CONTROL_FOPS.0) }
    }

    /// # Safety
    ///
    /// `data` must stay valid until this `Dir` has been dropped, and `fops`
    /// must expect a `T` as the inode's private data (`T` is the file's
    /// `Show::Data`).
    unsafe fn create<T>(
        &self,
        name: &CStr,
        mode: ffi::umode_t,
        data: &T,
        fops: &'static ffi::file_operations,
    ) -> Result {
        // SAFETY: `self.dentry` is live by the type invariant; `name` is
        // NUL-terminated; `fops` is a static table; the caller keeps `data`
        // alive for as long as the file exists, which ends when `self` drops.
        let dentry = unsafe {
            ffi::debugfs_create_file(
                name.as_char_ptr(),
                mode,
                self.dentry,
                (data as *const T).cast_mut().cast(),
                fops,
            )
        };
        from_err_ptr(dentry)?;
        Ok(())
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        // SAFETY: by the type invariant `self.dentry` is a live debugfs dentry
        // that nothing else removes; removing it also removes its children and
        // waits for callbacks still running on them.
        unsafe { ffi::debugfs_remove(self.dentry) };
    }
}

// SAFETY: a `Dir` is only a handle; debugfs serialises creation and removal
// internally, so it may be created and dropped on any thread.
unsafe impl Send for Dir {}
// SAFETY: the only `&self` method creates files, which debugfs serialises.
unsafe impl Sync for Dir {}

/// The `file_operations` of a [`Show`] file: `single_open` on `T::show`.
struct ShowFops<T>(PhantomData<T>);

/// A `file_operations` table in a `static`.
struct SyncFops(ffi::file_operations);

// SAFETY: the table is never written after it is built; its raw pointers are
// the module's own `struct module` and functions.
unsafe impl Sync for SyncFops {}

impl<T: Show> ShowFops<T> {
    const FOPS: SyncFops = SyncFops(ffi::file_operations {
        // With the module as owner, an open file pins the module, so that
        // debugfs' proxy can still call into this table after the file was
        // removed. Only the address of `__this_module` is taken.
        owner: core::ptr::addr_of_mut!(ffi::__this_module),
        open: Some(Self::open),
        read: Some(ffi::seq_read),
        llseek: Some(ffi::seq_lseek),
        release: Some(ffi::single_release),
        // SAFETY: all-zero is a valid `file_operations` (no flags, no callbacks).
        ..unsafe { core::mem::zeroed() }
    });
}

impl<T: Store> ShowFops<T> {
    const RW_FOPS: SyncFops = SyncFops(ffi::file_operations {
        write: Some(Self::write),
        ..ShowFops::<T>::FOPS.0
    });

    /// `write`: copies the user's bytes and hands them to `T::store`.
    /// Process context.
    ///
    /// # Safety
    ///
    /// Called by the VFS on a file opened by `open`, with a user buffer of
    /// `count` bytes.
    unsafe extern "C" fn write(
        file: *mut ffi::file,
        buf: *const kernel::ffi::c_char,
        count: usize,
        _ppos: *mut ffi::loff_t,
    ) -> isize {
        from_result(|| {
            let mut kbuf = [0u8; 256];
            let dst = kbuf
                .get_mut(..count)
                .filter(|_| count <= T::MAX_WRITE)
                .ok_or(EINVAL)?;
            let mut reader = kernel::uaccess::UserSlice::new(buf as usize, count).reader();
            reader.read_slice(dst)?;
            // SAFETY: `single_open` made `private_data` the `seq_file`, whose
            // `private` is the `&T` given to `create_rw_file`.
            let data = unsafe {
                &*(*(*file).private_data.cast::<ffi::seq_file>())
                    .private
                    .cast::<T::Data>()
            };
            T::store(data, dst)?;
            Ok(count as isize)
        })
    }
}

impl<T: StoreLarge> ShowFops<T> {
    const CONTROL_FOPS: SyncFops = SyncFops(ffi::file_operations {
        open: Some(Self::control_open),
        write: Some(Self::control_write),
        ..ShowFops::<T>::FOPS.0
    });

    /// `open`: `O_TRUNC` on a file opened for writing runs `T::truncate`
    /// first. Process context.
    ///
    /// # Safety
    ///
    /// As for `open`.
    unsafe extern "C" fn control_open(inode: *mut ffi::inode, file: *mut ffi::file) -> c_int {
        // SAFETY: the VFS passes a live file.
        let (mode, flags) = unsafe { ((*file).f_mode, (*file).f_flags) };
        // `FMODE_WRITE` of include/linux/fs.h (a macro bindgen cannot see).
        const FMODE_WRITE: u32 = 1 << 1;
        from_result(|| {
            if mode & FMODE_WRITE != 0 && flags & ffi::O_TRUNC != 0 {
                // SAFETY: `i_private` is the `&T::Data` given at creation.
                let data = unsafe { &*(*inode).i_private.cast::<T::Data>() };
                T::truncate(data)?;
            }
            // SAFETY: the caller's contract.
            Ok(unsafe { Self::open(inode, file) })
        })
    }

    /// `write`: copies the user's bytes into a buffer of their size and
    /// hands them to `T::store`. Process context.
    ///
    /// # Safety
    ///
    /// As for `write`.
    unsafe extern "C" fn control_write(
        file: *mut ffi::file,
        buf: *const kernel::ffi::c_char,
        count: usize,
        _ppos: *mut ffi::loff_t,
    ) -> isize {
        from_result(|| {
            if count > <T as StoreLarge>::MAX_WRITE {
                return Err(EINVAL);
            }
            // Large writes need not be physically contiguous.
            let mut kbuf = KVVec::from_elem(0u8, count, GFP_KERNEL).map_err(|_| ENOMEM)?;
            let mut reader = kernel::uaccess::UserSlice::new(buf as usize, count).reader();
            reader.read_slice(&mut kbuf)?;
            // SAFETY: `single_open` made `private_data` the `seq_file`, whose
            // `private` is the `&T::Data` given at creation.
            let data = unsafe {
                &*(*(*file).private_data.cast::<ffi::seq_file>())
                    .private
                    .cast::<T::Data>()
            };
            Ok(<T as StoreLarge>::store(data, &kbuf)? as isize)
        })
    }
}

impl<T: Show> ShowFops<T> {
    /// `open`: hands the file's data pointer to `single_open`. Process context.
    ///
    /// # Safety
    ///
    /// Called by the VFS with a live inode of a file made by `create_file`.
    unsafe extern "C" fn open(inode: *mut ffi::inode, file: *mut ffi::file) -> c_int {
        // SAFETY: the VFS passes a live inode and file; `i_private` is the
        // `data` given to `create_file`, a `&T` that outlives the file.
        unsafe { ffi::single_open(file, Some(Self::show), (*inode).i_private) }
    }

    /// `show` of `single_open`: runs `T::show`. Process context, may sleep.
    ///
    /// # Safety
    ///
    /// Called by seq_file with the live `seq_file` that `open` set up.
    unsafe extern "C" fn show(m: *mut ffi::seq_file, _v: *mut c_void) -> c_int {
        // SAFETY: `single_open` stored the `&T` from `open` in `m->private`; the
        // data outlives the file (`create_file`'s contract).
        let data = unsafe { &*(*m).private.cast::<T::Data>() };
        // INVARIANT: `m` is live for the duration of this callback.
        let mut out = SeqFile { m };
        from_result(|| {
            T::show(data, &mut out)?;
            Ok(0)
        })
    }
}
