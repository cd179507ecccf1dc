// SPDX-License-Identifier: GPL-2.0

//! The probe table: from a trapping address to its probe point, lock-free.
//!
//! Readers are the int3 handler (and the ftrace callback): they run
//! with interrupts or preemption disabled, which is an RCU read-side critical
//! section for `synchronize_rcu()`, and may not take locks or allocate. The
//! table is a hash of singly linked chains whose links are published with
//! release stores and read with acquire loads; a reader sees a chain either
//! before or after any one change, never a torn one.
//!
//! Writers are serialised by the probe core's registration mutex. An entry
//! that is unlinked stays readable until [`Table::reclaim`], which the writer
//! calls after a `synchronize_rcu()`. The bucket array grows by rebuilding it
//! as a new generation, published the same way, so lookups stay O(1) with any
//! number of probes (the load factor is kept at or below one).

use core::{
    cell::UnsafeCell,
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::prelude::*;

/// Buckets of the first generation.
const MIN_BUCKETS: usize = 64;

/// A chain link.
struct Entry<P> {
    addr: usize,
    point: *const P,
    next: AtomicPtr<Entry<P>>,
}

/// One bucket array.
struct Generation<P> {
    shift: u32,
    buckets: KVVec<AtomicPtr<Entry<P>>>,
}

impl<P> Generation<P> {
    fn new(nbuckets: usize) -> Result<KBox<Self>> {
        let mut buckets = KVVec::with_capacity(nbuckets, GFP_KERNEL)?;
        for _ in 0..nbuckets {
            buckets.push(AtomicPtr::new(core::ptr::null_mut()), GFP_KERNEL)?;
        }
        Ok(KBox::new(
            Self {
                shift: usize::BITS - nbuckets.trailing_zeros(),
                buckets,
            },
            GFP_KERNEL,
        )?)
    }

    /// The bucket of `addr`; `None` cannot happen (the hash is below the
    /// bucket count by construction) but keeps this path free of panics.
    fn bucket(&self, addr: usize) -> Option<&AtomicPtr<Entry<P>>> {
        // Fibonacci hashing: the top bits of the product spread nearby
        // addresses (probes cluster inside functions) over all buckets.
        let h = (addr as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift;
        self.buckets.get(h as usize)
    }
}

/// What only the writer touches.
struct Writer<P> {
    len: usize,
    retired_entries: KVec<*mut Entry<P>>,
    retired_gens: KVec<*mut Generation<P>>,
}

/// Address → probe point.
///
/// # Invariants
///
/// `current` always points to a live generation. Every entry reachable from
/// it, and every retired entry and generation, points to a live `P` until
/// `reclaim`. `writer` is only accessed by the holder of the probe core's
/// registration mutex (the contract of the `unsafe` methods).
pub(crate) struct Table<P> {
    current: AtomicPtr<Generation<P>>,
    writer: UnsafeCell<Writer<P>>,
}

// SAFETY: the table owns its entries and generations; the `P`s it points to
// are shared with readers on any CPU, which only read them.
unsafe impl<P: Sync> Send for Table<P> {}
// SAFETY: `&self` only allows lookups, which are lock-free reads.
unsafe impl<P: Sync> Sync for Table<P> {}

impl<P> Table<P> {
    /// An empty table. May sleep.
    pub(crate) fn new() -> Result<Self> {
        let gen = KBox::into_raw(Generation::new(MIN_BUCKETS)?);
        // INVARIANT: `gen` is live and empty.
        Ok(Self {
            current: AtomicPtr::new(gen),
            writer: UnsafeCell::new(Writer {
                len: 0,
                retired_entries: KVec::new(),
                retired_gens: KVec::new(),
            }),
        })
    }

    /// The writer's state.
    ///
    /// # Safety
    ///
    /// The caller holds the registration mutex and no other reference
    /// returned by this method is alive.
    #[allow(clippy::mut_from_ref)]
    unsafe fn writer(&self) -> &mut Writer<P> {
        // SAFETY: exclusive by the caller's contract.
        unsafe { &mut *self.writer.get() }
    }

    /// The point at `addr`.
    ///
    /// Runs in int3/ftrace context: no locks, no allocation. The caller is
    /// in an RCU read-side critical section (interrupts or preemption
    /// disabled) for as long as it uses the returned reference.
    pub(crate) fn lookup(&self, addr: usize) -> Option<&P> {
        // SAFETY: `current` is live (type invariant), and a generation replaced
        // after this load is freed only after a grace period that the caller's
        // critical section holds off.
        let gen = unsafe { &*self.current.load(Ordering::Acquire) };
        let mut e = gen.bucket(addr)?.load(Ordering::Acquire);
        while !e.is_null() {
            // SAFETY: entries reachable from a live generation stay live until
            // a grace period after they are unlinked (see above).
            let entry = unsafe { &*e };
            if entry.addr == addr {
                // SAFETY: the point outlives its entry (type invariant).
                return Some(unsafe { &*entry.point });
            }
            e = entry.next.load(Ordering::Acquire);
        }
        None
    }

    /// Publishes `point` at `addr`, which is not in the table yet. May sleep.
    ///
    /// # Safety
    ///
    /// The caller holds the registration mutex; `point` stays valid until it
    /// has been removed and `reclaim` has run.
    pub(crate) unsafe fn insert(&self, addr: usize, point: *const P) -> Result {
        // SAFETY: the caller holds the registration mutex.
        unsafe { self.maybe_grow() };
        // Room to retire every entry, so that `remove` never allocates.
        {
            // SAFETY: the caller holds the registration mutex.
            let w = unsafe { self.writer() };
            let want = w.retired_entries.len() + w.len + 1;
            let have = w.retired_entries.capacity();
            if want > have {
                w.retired_entries
                    .reserve(want - w.retired_entries.len(), GFP_KERNEL)?;
            }
        }
        // SAFETY: `current` is live and only this writer changes it.
        let gen = unsafe { &*self.current.load(Ordering::Relaxed) };
        let bucket = gen.bucket(addr).ok_or(EINVAL)?;
        let entry = KBox::into_raw(KBox::new(
            Entry {
                addr,
                point,
                next: AtomicPtr::new(core::ptr::null_mut()),
            },
            GFP_KERNEL,
        )?);
        // SAFETY: `entry` is ours until published below.
        unsafe {
            (*entry)
                .next
                .store(bucket.load(Ordering::Relaxed), Ordering::Relaxed)
        };
        // Release: a reader that sees the entry sees it initialised.
        bucket.store(entry, Ordering::Release);
        // SAFETY: the caller holds the registration mutex.
        unsafe { self.writer() }.len += 1;
        Ok(())
    }

    /// Unlinks the point at `addr`; readers may still see it until the next
    /// grace period, after which `reclaim` frees the link. Returns whether
    /// there was one. Allocates nothing: `insert` reserved room to retire
    /// every entry.
    ///
    /// # Safety
    ///
    /// The caller holds the registration mutex.
    pub(crate) unsafe fn remove(&self, addr: usize) -> bool {
        // SAFETY: the caller holds the registration mutex.
        let w = unsafe { self.writer() };
        // SAFETY: `current` is live and only this writer changes it.
        let gen = unsafe { &*self.current.load(Ordering::Relaxed) };
        let Some(mut link) = gen.bucket(addr) else {
            return false;
        };
        loop {
            let e = link.load(Ordering::Relaxed);
            if e.is_null() {
                return false;
            }
            // SAFETY: linked entries are live; only this writer unlinks them.
            let entry = unsafe { &*e };
            if entry.addr == addr {
                // A reader standing on `entry` still follows its `next`.
                link.store(entry.next.load(Ordering::Relaxed), Ordering::Release);
                // Cannot fail: `insert` reserved room.
                let _ = w.retired_entries.push(e, GFP_KERNEL);
                w.len -= 1;
                return true;
            }
            link = &entry.next;
        }
    }

    /// Frees what `remove` and growth retired. May sleep.
    ///
    /// # Safety
    ///
    /// The caller holds the registration mutex and has waited for a grace
    /// period (`synchronize_rcu`) since the last `remove` or `insert`.
    pub(crate) unsafe fn reclaim(&self) {
        // SAFETY: the caller holds the registration mutex.
        let w = unsafe { self.writer() };
        for &e in w.retired_entries.iter() {
            // SAFETY: retired entries were allocated by `KBox::into_raw` and no
            // reader can hold them after the caller's grace period.
            drop(unsafe { KBox::from_raw(e) });
        }
        // The capacity stays: `remove` relies on it.
        // SAFETY: the elements are plain pointers, freed above.
        unsafe { w.retired_entries.set_len(0) };
        for g in core::mem::replace(&mut w.retired_gens, KVec::new()) {
            // SAFETY: as above; the generation's entries are freed with it.
            let gen = unsafe { KBox::from_raw(g) };
            free_chains(&gen);
        }
    }

    /// Doubles the bucket array when the load factor would exceed one. On
    /// allocation failure the table keeps working with longer chains.
    ///
    /// # Safety
    ///
    /// The caller holds the registration mutex.
    unsafe fn maybe_grow(&self) {
        // SAFETY: the caller holds the registration mutex.
        let w = unsafe { self.writer() };
        // SAFETY: `current` is live and only this writer changes it.
        let old = unsafe { &*self.current.load(Ordering::Relaxed) };
        let n = old.buckets.len();
        if w.len < n || w.retired_gens.reserve(1, GFP_KERNEL).is_err() {
            return;
        }
        let Ok(new) = Generation::<P>::new(n * 2) else {
            return;
        };
        for bucket in old.buckets.iter() {
            let mut e = bucket.load(Ordering::Relaxed);
            while !e.is_null() {
                // SAFETY: linked entries of the current generation are live.
                let entry = unsafe { &*e };
                let Ok(copy) = KBox::new(
                    Entry {
                        addr: entry.addr,
                        point: entry.point,
                        next: AtomicPtr::new(core::ptr::null_mut()),
                    },
                    GFP_KERNEL,
                ) else {
                    free_chains(&new);
                    return;
                };
                let copy = KBox::into_raw(copy);
                if let Some(b) = new.bucket(entry.addr) {
                    // SAFETY: `copy` is ours; `new` is not published yet.
                    unsafe {
                        (*copy)
                            .next
                            .store(b.load(Ordering::Relaxed), Ordering::Relaxed)
                    };
                    b.store(copy, Ordering::Relaxed);
                }
                e = entry.next.load(Ordering::Relaxed);
            }
        }
        let old = self.current.swap(KBox::into_raw(new), Ordering::Release);
        // Cannot fail: reserved above.
        let _ = w.retired_gens.push(old, GFP_KERNEL);
    }
}

/// Frees every entry of a generation that no reader can see.
fn free_chains<P>(gen: &Generation<P>) {
    for bucket in gen.buckets.iter() {
        let mut e = bucket.swap(core::ptr::null_mut(), Ordering::Relaxed);
        while !e.is_null() {
            // SAFETY: entries of an unreachable generation are owned by it and
            // were allocated by `KBox::into_raw`.
            let entry = unsafe { KBox::from_raw(e) };
            e = entry.next.load(Ordering::Relaxed);
        }
    }
}

impl<P> Drop for Table<P> {
    /// The probe core drops the table after unregistering everything and a
    /// grace period, so no reader is left.
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no writer or reader is left.
        unsafe { self.reclaim() };
        let gen = self.current.swap(core::ptr::null_mut(), Ordering::Relaxed);
        // SAFETY: `current` was allocated by `KBox::into_raw`; no reader is left.
        let gen = unsafe { KBox::from_raw(gen) };
        free_chains(&gen);
    }
}
