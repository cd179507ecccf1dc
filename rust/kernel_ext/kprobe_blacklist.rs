// SPDX-License-Identifier: GPL-2.0

//! The kernel's own kprobe blacklist, `kprobe_blacklist`, found at run time.
//!
//! The kernel keeps what its kprobes refuse in an RCU list of
//! `struct kprobe_blacklist_entry` (`kernel/kprobes.c`): writers hold
//! `kprobe_mutex`, and the kernel's readers walk it under RCU or under the
//! mutex. [`KprobeBlacklist`] walks it under the mutex, and adds and removes
//! entries of its own ([`Reservation`]s) as the kernel's writers do: under
//! the mutex, and freed only after a grace period.
//!
//! Every method takes `kprobe_mutex`: process context, may sleep, with no
//! lock held that the kernel takes `kprobe_mutex` under (`text_mutex`, the
//! kernel's `jump_label_lock`, ...). Nothing is taken under it here.

use crate::{
    ffi::{
        self,
        kallsyms::{Kallsyms, SymbolBuf},
    },
    kernel_ext::{
        mutex::{KernelMutex, KernelMutexGuard},
        sync::synchronize_rcu,
        vec,
    },
};
use core::{
    cell::{Cell, UnsafeCell},
    ops::Range,
    ptr::NonNull,
};
use kernel::{c_str, prelude::*};

/// `struct kprobe_blacklist_entry` of 6.12's `include/linux/kprobes.h`,
/// and, in the entries rkprobes adds, what follows it.
#[repr(C)]
struct NativeEntry {
    list: ffi::list_head,
    start_addr: usize,
    end_addr: usize,
    /// rkprobes' own: the entry's index in `KprobeBlacklist::ours`, for an
    /// O(1) release. Read and written with `kprobe_mutex` held.
    ours_index: Cell<usize>,
}

/// Bound on the list's length, against walking a corrupted list forever.
const MAX_NATIVE_ENTRIES: usize = 1 << 20;

/// The kernel's kprobe blacklist, on a kernel with kprobes.
///
/// # Invariants
///
/// `head` is the kernel's `kprobe_blacklist` list head and `mutex` its
/// `kprobe_mutex`, both confirmed by `sprint_symbol()`; the list is only
/// changed with `mutex` held and entries are freed only after removal and a
/// grace period (the kernel walks it under RCU). `ours` holds the addresses
/// of the entries this value added ([`KprobeBlacklist::reserve`]) and not
/// yet released, each a live `KBox<NativeEntry>` on the list whose
/// `ours_index` is its index in `ours`; it is only used with `mutex` held.
pub(crate) struct KprobeBlacklist {
    head: *mut ffi::list_head,
    mutex: KernelMutex,
    ours: UnsafeCell<KVec<usize>>,
}

// SAFETY: the raw pointers refer to kernel data that lives as long as the
// kernel and is only read or written with the kernel's `kprobe_mutex` held.
unsafe impl Send for KprobeBlacklist {}
// SAFETY: as for `Send`; `&self` methods serialise on `kprobe_mutex`.
unsafe impl Sync for KprobeBlacklist {}

/// A region that [`KprobeBlacklist::reserve`] added to the kernel's list,
/// so that the kernel's kprobes refuse it. Given back with
/// [`KprobeBlacklist::release`]; one that is dropped instead stays on the
/// list for good.
///
/// # Invariants
///
/// The entry came from `KBox::into_raw` and is on the kernel's list. Not
/// null, so that an `Option<Reservation>` is one word.
pub(crate) struct Reservation(NonNull<NativeEntry>);

// SAFETY: a reservation is only a name for its entry: nothing reads or
// writes the entry through it but `KprobeBlacklist::release`, which consumes
// it and takes `kprobe_mutex` first, on whichever CPU.
unsafe impl Send for Reservation {}
// SAFETY: `&Reservation` gives no access to the entry at all.
unsafe impl Sync for Reservation {}

/// One entry of the kernel's list, seen by [`KprobeBlacklist::walk`] with
/// `kprobe_mutex` held.
pub(crate) struct Entry<'a> {
    entry: &'a NativeEntry,
    ours: &'a KVec<usize>,
}

impl Entry<'_> {
    /// The blacklisted addresses, `start_addr..end_addr`.
    pub(crate) fn range(&self) -> Range<usize> {
        self.entry.start_addr..self.entry.end_addr
    }

    /// Whether the entry is one of this blacklist's [`Reservation`]s (a
    /// linear search of them).
    pub(crate) fn is_reservation(&self) -> bool {
        let addr = self.entry as *const NativeEntry as usize;
        self.ours.contains(&addr)
    }
}

/// `kprobe_mutex`, held, and with it the right to use `ours`.
///
/// # Invariants
///
/// `_held` holds `list.mutex`.
struct Locked<'a> {
    list: &'a KprobeBlacklist,
    _held: KernelMutexGuard,
}

impl Locked<'_> {
    /// The entries this blacklist added.
    fn ours(&mut self) -> &mut KVec<usize> {
        // SAFETY: `kprobe_mutex` is held (type invariant), which serialises
        // every use of `ours` (invariant of `KprobeBlacklist`); the borrow of
        // `self` keeps this one unique for as long as it lives.
        unsafe { &mut *self.list.ours.get() }
    }
}

impl KprobeBlacklist {
    /// Finds the kernel's list and its mutex; `None` on a kernel without
    /// kprobes (without either symbol). Process context, may sleep.
    pub(crate) fn find(ksyms: &Kallsyms) -> Result<Option<Self>> {
        let mut buf = SymbolBuf::new()?;
        let head = ksyms.lookup(&mut buf, c_str!("kprobe_blacklist"));
        let mutex = ksyms.lookup(&mut buf, c_str!("kprobe_mutex"));
        Ok(match (head, mutex) {
            // INVARIANT: both were confirmed by `Kallsyms::lookup`; nothing
            // is ours yet.
            (Some(head), Some(mutex)) => Some(Self {
                head: head as *mut _,
                // SAFETY: `kprobe_mutex` is a static mutex of vmlinux.
                mutex: unsafe { KernelMutex::from_raw(mutex as *mut _) },
                ours: UnsafeCell::new(KVec::new()),
            }),
            _ => None,
        })
    }

    /// Takes `kprobe_mutex`.
    fn lock(&self) -> Locked<'_> {
        // INVARIANT: the guard holds the mutex.
        Locked {
            list: self,
            _held: self.mutex.lock(),
        }
    }

    /// Calls `f` on each entry of the kernel's list, in list order, with
    /// `kprobe_mutex` held, until `f` fails; `EINVAL` for a list longer
    /// than any the kernel builds. Process context, may sleep; `f` runs
    /// under `kprobe_mutex` and takes no lock that the kernel takes it
    /// under.
    pub(crate) fn walk(&self, mut f: impl FnMut(Entry<'_>) -> Result) -> Result {
        let mut locked = self.lock();
        let ours: &KVec<usize> = locked.ours();
        // SAFETY: by the type invariant `head` is the list head and the list
        // is stable while `kprobe_mutex` is held (`locked`).
        let mut pos = unsafe { (*self.head).next };
        for _ in 0..MAX_NATIVE_ENTRIES {
            if pos == self.head {
                return Ok(());
            }
            // SAFETY: `pos` is a live entry of the list (see above); `list`
            // is the first member of `struct kprobe_blacklist_entry`.
            let entry = unsafe { &*pos.cast::<NativeEntry>() };
            f(Entry { entry, ours })?;
            pos = entry.list.next;
        }
        pr_err!("kprobe_blacklist longer than {MAX_NATIVE_ENTRIES}, giving up\n");
        Err(EINVAL)
    }

    /// Adds `[start, end)` to the kernel's list, so that the kernel's
    /// `register_kprobe()` refuses it; `None` without memory. Process
    /// context, may sleep; takes `kprobe_mutex`.
    pub(crate) fn reserve(&self, start: usize, end: usize) -> Option<Reservation> {
        let entry = KBox::new(
            NativeEntry {
                list: ffi::list_head {
                    next: core::ptr::null_mut(),
                    prev: core::ptr::null_mut(),
                },
                start_addr: start,
                end_addr: end,
                ours_index: Cell::new(0),
            },
            GFP_KERNEL,
        )
        .ok()?;
        let mut locked = self.lock();
        let ours = locked.ours();
        if ours.push(0, GFP_KERNEL).is_err() {
            return None;
        }
        let p = KBox::into_raw(entry);
        if let Some(last) = ours.last_mut() {
            *last = p as usize;
        }
        // SAFETY: ours, just allocated.
        unsafe { &*p }.ours_index.set(ours.len() - 1);
        // SAFETY: `kprobe_mutex`, the list's writer lock, is held (`locked`);
        // the entry is ours and lives until `release` took it off and a
        // grace period passed.
        unsafe { ffi::rkp_list_add_tail_rcu(core::ptr::addr_of_mut!((*p).list), self.head) };
        drop(locked);
        // INVARIANT: allocated with `KBox` and on the list.
        NonNull::new(p).map(Reservation)
    }

    /// Takes `rs` off the kernel's list and frees them once no reader can
    /// stand on them (one `synchronize_rcu()` for all). Process context,
    /// may sleep; takes `kprobe_mutex`.
    ///
    /// A reservation that another [`KprobeBlacklist`] made is left on the
    /// list, as a dropped one is.
    pub(crate) fn release(&self, rs: impl Iterator<Item = Reservation>) {
        let mut taken: *mut NativeEntry = core::ptr::null_mut();
        let mut locked = self.lock();
        let ours = locked.ours();
        for Reservation(p) in rs {
            let p = p.as_ptr();
            // SAFETY: allocated and on the list (type invariant of
            // `Reservation`).
            let i = unsafe { &*p }.ours_index.get();
            if ours.get(i) != Some(&(p as usize)) {
                // Another blacklist's: left on the list, as if dropped.
                continue;
            }
            // SAFETY: on the list (type invariant of `Reservation`), whose
            // writer lock is held (`locked`).
            unsafe { ffi::rkp_list_del_rcu(core::ptr::addr_of_mut!((*p).list)) };
            vec::swap_remove(ours, i);
            if let Some(&moved) = ours.get(i) {
                // SAFETY: `ours` lists live entries of our own (type
                // invariant).
                unsafe { &*(moved as *const NativeEntry) }.ours_index.set(i);
            }
            // Chained through `list.prev` for the free below: readers only
            // follow `next`, which `list_del_rcu()` leaves for them.
            // SAFETY: ours, off the list.
            unsafe { (*p).list.prev = taken.cast() };
            taken = p;
        }
        drop(locked);
        if taken.is_null() {
            return;
        }
        synchronize_rcu();
        while !taken.is_null() {
            // SAFETY: off the list and past a grace period: only ours.
            let e = unsafe { KBox::from_raw(taken) };
            taken = e.list.prev.cast();
        }
    }
}
