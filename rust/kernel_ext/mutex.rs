// SPDX-License-Identifier: GPL-2.0

//! Kernel mutexes that rkprobes does not own: `text_mutex`, `event_mutex`,
//! `kprobe_mutex`, found at run time.
//!
//! rkprobes' own locks are the kernel crate's `Mutex`; these belong to the
//! kernel, which takes them in its own code paths, so they are handles to a
//! C `struct mutex`, locked through a guard like the kernel crate's.

use crate::ffi;
use core::marker::PhantomData;

/// A kernel `struct mutex` that lives as long as the kernel.
///
/// # Invariants
///
/// `ptr` points to an initialised kernel mutex that is never freed (a
/// static of vmlinux).
#[derive(Clone, Copy)]
pub(crate) struct KernelMutex {
    ptr: *mut ffi::mutex,
}

// SAFETY: a kernel mutex may be locked and unlocked from any task.
unsafe impl Send for KernelMutex {}
// SAFETY: as above; the handle itself is immutable.
unsafe impl Sync for KernelMutex {}

impl KernelMutex {
    /// A handle to the kernel mutex at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is an initialised kernel `struct mutex` that is never freed.
    pub(crate) unsafe fn from_raw(ptr: *mut ffi::mutex) -> Self {
        // INVARIANT: the caller's contract.
        Self { ptr }
    }

    /// The C mutex, for C functions that take or check it.
    pub(crate) fn as_ptr(&self) -> *mut ffi::mutex {
        self.ptr
    }

    /// Takes the mutex (`mutex_lock()`); it is released when the guard
    /// drops. Process context, may sleep; the caller follows the kernel's
    /// lock order for this mutex.
    pub(crate) fn lock(&self) -> KernelMutexGuard {
        // SAFETY: a live kernel mutex (type invariant); process context.
        unsafe { ffi::mutex_lock(self.ptr) };
        // INVARIANT: locked just above by the current task.
        KernelMutexGuard {
            mutex: *self,
            _not_send: PhantomData,
        }
    }
}

/// A [`KernelMutex`], held.
///
/// Like the kernel crate's lock guards it is `!Send` (a mutex is released by
/// the task that took it) and must be used.
///
/// # Invariants
///
/// The current task holds `mutex` until the guard drops.
#[must_use = "the mutex is released when the guard is dropped"]
pub(crate) struct KernelMutexGuard {
    mutex: KernelMutex,
    _not_send: PhantomData<*mut ()>,
}

impl Drop for KernelMutexGuard {
    fn drop(&mut self) {
        // SAFETY: held by this task since `lock` (type invariant).
        unsafe { ffi::mutex_unlock(self.mutex.ptr) };
    }
}
