// SPDX-License-Identifier: GPL-2.0

//! Reading and patching kernel text.
//!
//! Kernel and module text is read-only, so rkprobes writes it the way the
//! kernel's kprobes do: `text_poke()` with `text_mutex` held, then
//! `text_poke_sync()` so that no CPU keeps executing a stale copy. Writing a
//! single byte (the int3) is atomic with respect to instruction fetch, which
//! is why arming and disarming a probe needs no stop_machine. A batch of pokes
//! shares one sync: [`TextGuard::poke`] any number of times, then
//! [`TextGuard::sync`] once.
//!
//! Lock order (the table in `rust/kprobe/mod.rs`): `text_mutex` is taken under `Core::reg`
//! and never the other way round; nothing that holds it sleeps on anything of
//! rkprobes.

use crate::{
    ffi::runtime::Runtime,
    kernel_ext::{
        mutex::{KernelMutex, KernelMutexGuard},
        nofault,
        sync::PreemptGuard,
    },
};
use core::cell::Cell;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{ffi::c_ulong, prelude::*};

/// Reads `buf.len()` bytes of kernel memory at `addr`, without faulting.
///
/// Fails with `EFAULT` when the memory cannot be read. Any context.
pub(crate) fn read(addr: usize, buf: &mut [u8]) -> Result {
    nofault::read_kernel(addr, buf)
}

/// Whether `addr` is in vmlinux's text (`core_kernel_text()`: its core
/// text, and its init text while the kernel boots). Any context.
pub(crate) fn is_core_kernel_text(rt: &Runtime, addr: usize) -> bool {
    // SAFETY: `core_kernel_text` only compares the address with section
    // bounds.
    unsafe { rt.core_kernel_text(addr as c_ulong) != 0 }
}

/// Whether `addr` is an ftrace call site (`ftrace_location()`); never
/// without dynamic ftrace. Any context.
pub(crate) fn is_ftrace_site(rt: &Runtime, addr: usize) -> bool {
    // SAFETY: `ftrace_location` only searches ftrace's sorted site tables.
    let site = unsafe { rt.ftrace_location(addr as c_ulong) };
    site == Some(addr as c_ulong)
}

/// Whether the kernel's own kprobes have a probe at `addr` (`get_kprobe()`);
/// never on a kernel without kprobes. Any context.
pub(crate) fn is_native_kprobe(rt: &Runtime, addr: usize) -> bool {
    // Preemption off is an RCU read-side critical section.
    let _rcu = PreemptGuard::new();
    // SAFETY: `get_kprobe` searches the kernel's RCU-protected probe table,
    // in the critical section above. The result is only compared with null.
    unsafe { rt.get_kprobe(addr as *mut core::ffi::c_void) }.is_some_and(|k| !k.is_null())
}

/// How many [`TextGuard::sync`]s have completed, modulo 2^32; changed only
/// under `text_mutex`.
static SYNCS: AtomicU32 = AtomicU32::new(0);

/// The number of text synchronisations completed when it was taken
/// ([`TextGuard::sync_stamp`]). Compared as a serial number: good for 2^31
/// synchronisations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SyncStamp(u32);

/// `text_mutex`, held: text may be patched.
///
/// Process context. Like the kernel crate's lock guards it is `!Send` (a
/// mutex is released by the task that took it) and must be used.
///
/// # Invariants
///
/// `_held` holds `rt`'s `text_mutex` until the guard drops. `queued` is
/// true while the kernel's batch holds pokes of this guard not carried out
/// yet; the guard carries them out before it releases the mutex.
#[must_use = "text_mutex is released when the guard is dropped"]
pub(crate) struct TextGuard<'a> {
    rt: &'a Runtime,
    queued: Cell<bool>,
    _held: KernelMutexGuard,
}

impl<'a> TextGuard<'a> {
    /// Takes `text_mutex`. Process context, may sleep.
    pub(crate) fn lock(rt: &'a Runtime) -> Self {
        // SAFETY: `text_mutex` is the kernel's, a static of vmlinux (the
        // invariant of `Runtime`).
        let text_mutex = unsafe { KernelMutex::from_raw(rt.text_mutex()) };
        // INVARIANT: the guard holds the mutex.
        Self {
            rt,
            queued: Cell::new(false),
            _held: text_mutex.lock(),
        }
    }

    /// Writes `bytes` at `addr` in kernel or module text, or in an executable
    /// page of rkprobes. Other CPUs may run stale instructions until
    /// [`TextGuard::sync`].
    ///
    /// # Safety
    ///
    /// `addr..addr + bytes.len()` is mapped text that no CPU can be executing
    /// in a way that a partial write breaks: either one byte at an instruction
    /// boundary (int3 in, or the original byte back), or memory that no CPU
    /// can reach yet (a slot not yet published).
    pub(crate) unsafe fn poke(&self, addr: usize, bytes: &[u8]) {
        // SAFETY: `text_mutex` is held (type invariant); the caller guarantees
        // the target is mapped text that may be written this way.
        unsafe {
            self.rt
                .text_poke(addr as *mut _, bytes.as_ptr().cast(), bytes.len())
        };
    }

    /// Makes every CPU see the pokes done so far (IPIs every CPU). May sleep.
    pub(crate) fn sync(&self) {
        // SAFETY: `text_poke_sync` has no preconditions beyond process context,
        // where `text_mutex` is held.
        unsafe { self.rt.text_poke_sync() };
        SYNCS.fetch_add(1, Ordering::Release);
    }

    /// A stamp of the synchronisations done so far: a later
    /// [`TextGuard::synced_since`] with it says whether every CPU has seen
    /// what was poked before the stamp was taken.
    pub(crate) fn sync_stamp(&self) -> SyncStamp {
        SyncStamp(SYNCS.load(Ordering::Acquire))
    }

    /// Whether a [`TextGuard::sync`] completed after `stamp` was taken.
    pub(crate) fn synced_since(&self, stamp: SyncStamp) -> bool {
        (SYNCS.load(Ordering::Acquire).wrapping_sub(stamp.0) as i32) > 0
    }

    /// Whether the alternatives patcher owns the byte at `addr`
    /// (`alternatives_text_reserved()`, which wants `text_mutex`).
    pub(crate) fn alternatives_reserved(&self, addr: usize) -> bool {
        self.alternatives_reserved_range(addr, addr)
    }

    /// Whether the alternatives patcher owns any byte of `first..=last`.
    pub(crate) fn alternatives_reserved_range(&self, first: usize, last: usize) -> bool {
        let (f, l) = (
            first as *mut core::ffi::c_void,
            last as *mut core::ffi::c_void,
        );
        // SAFETY: `text_mutex` is held (type invariant).
        unsafe { self.rt.alternatives_text_reserved(f, l) != 0 }
    }

    /// Queues replacing the instruction at `addr` with `insn`, a `jmp
    /// rel32`, live, with the kernel's protocol (`text_poke_queue()`): an
    /// int3 goes over its first byte and every CPU synchronises, then the
    /// rest is written and every CPU synchronises, then the first byte, and
    /// every CPU synchronises; meanwhile a CPU that meets the int3 runs the
    /// new instruction through the kernel's `poke_int3_handler()`. The
    /// queue is carried out by [`TextGuard::poke_bp_finish`], or when the
    /// guard drops.
    ///
    /// # Safety
    ///
    /// `addr..addr + insn.len()` is kernel or module text whose first byte
    /// starts an instruction, and no CPU can be executing, or return to, any
    /// of its other bytes.
    pub(crate) unsafe fn poke_bp_queue(&self, addr: usize, insn: &[u8; 5]) {
        // SAFETY: `text_mutex` is held (type invariant) until the guard
        // drops, which carries the queue out first; the caller guarantees
        // the rest.
        unsafe { self.rt.text_poke_queue(addr as *mut _, insn) };
        // INVARIANT: queued, not yet carried out.
        self.queued.set(true);
    }

    /// Carries out what [`TextGuard::poke_bp_queue`] queued (may sleep:
    /// three synchronisations of every CPU).
    pub(crate) fn poke_bp_finish(&self) {
        // SAFETY: `text_mutex` is held (type invariant); process context.
        unsafe { self.rt.text_poke_finish() };
        // INVARIANT: carried out.
        self.queued.set(false);
    }
}

impl Drop for TextGuard<'_> {
    /// Carries out what is still queued, under the mutex (which `_held`
    /// releases after this).
    fn drop(&mut self) {
        if self.queued.get() {
            self.poke_bp_finish();
        }
    }
}
