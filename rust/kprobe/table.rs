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
//! The chains run through the members themselves (the kernel's `hlist_node`
//! in `struct kprobe`), so that the table costs no memory per member beyond
//! two links. A member has a link for each of the two generations of bucket
//! arrays that readers can be walking at once: growing the table rebuilds the
//! chains through the other link and publishes the new array, while readers
//! of the old one still follow the old links, which nothing changes any more.
//! The next growth reuses those links only after a grace period, when no
//! reader can still be on the old array (the relativistic hash tables of
//! Triplett, McKenney and Walpole, with a copy of the links instead of
//! unzipping).
//!
//! Writers are serialised by the probe core's registration mutex. A removed
//! member stays readable until the caller frees it after a grace period; a
//! replaced bucket array is freed by [`Table::reclaim`], which the writer
//! calls after a `synchronize_rcu()`. Lookups stay O(1) with any number of
//! probes (the load factor is kept at or below one).

use crate::kernel_ext::sync::synchronize_rcu;
use core::{
    cell::UnsafeCell,
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::prelude::*;

/// Buckets of the first generation.
const MIN_BUCKETS: usize = 64;

/// A member of a [`Table`]: its key, and a chain link for each generation
/// parity.
///
/// # Safety
///
/// `key` never changes while the member is in a table, and `link(0)` and
/// `link(1)` are two distinct links that only the table uses.
pub(crate) unsafe trait Chained: Sized {
    /// The address the member is found by.
    fn key(&self) -> usize;
    /// The link of the generations of parity `parity` (0 or 1).
    fn link(&self, parity: usize) -> &AtomicPtr<Self>;
}

/// One bucket array, with the parity of the links its chains go through.
///
/// # Invariants
///
/// `buckets.len()` is a power of two, at least 2, and `shift` is
/// `64 - log2(buckets.len())` (so 1 to 63).
struct Generation<P> {
    shift: u32,
    parity: usize,
    buckets: KVVec<AtomicPtr<P>>,
}

impl<P> Generation<P> {
    fn new(nbuckets: usize, parity: usize) -> Result<KBox<Self>> {
        if !nbuckets.is_power_of_two() || nbuckets < 2 {
            return Err(EINVAL);
        }
        let mut buckets = KVVec::with_capacity(nbuckets, GFP_KERNEL)?;
        for _ in 0..nbuckets {
            buckets.push(AtomicPtr::new(core::ptr::null_mut()), GFP_KERNEL)?;
        }
        // INVARIANT: a power of two of at least 2 buckets (checked above).
        Ok(KBox::new(
            Self {
                shift: usize::BITS - nbuckets.trailing_zeros(),
                parity,
                buckets,
            },
            GFP_KERNEL,
        )?)
    }

    /// The bucket of `addr`. Always `Some`: the hash is below the bucket
    /// count (type invariant); the option keeps the callers' shape.
    #[inline(always)]
    fn bucket(&self, addr: usize) -> Option<&AtomicPtr<P>> {
        // Fibonacci hashing: the top bits of the product spread nearby
        // addresses (probes cluster inside functions) over all buckets.
        // `shift` is 1 to 63 (type invariant): no shift overflow.
        let h = (addr as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .wrapping_shr(self.shift) as usize;
        // The hash's top `64 - shift` bits index `2^(64 - shift)` buckets:
        // the check costs two instructions of every hit and never fails.
        debug_assert!(h < self.buckets.len());
        // SAFETY: `h < 2^(64 - shift) == buckets.len()` (type invariant).
        Some(unsafe { self.buckets.get_unchecked(h) })
    }
}

/// What only the writer touches.
struct Writer<P> {
    len: usize,
    /// The generation replaced last, until a grace period has passed: its
    /// readers may still follow the links of its parity.
    retired: *mut Generation<P>,
}

/// Address → probe point.
///
/// # Invariants
///
/// `current` always points to a live generation, whose chains hold exactly
/// the members inserted and not removed since, linked through the links of
/// its parity. `writer.retired`, when not null, is the previous generation,
/// whose chains (of the other parity) nobody changes. `writer` is only
/// accessed by the holder of the probe core's registration mutex (the
/// contract of the `unsafe` methods).
pub(crate) struct Table<P: Chained> {
    current: AtomicPtr<Generation<P>>,
    writer: UnsafeCell<Writer<P>>,
}

// SAFETY: the table owns its generations; the `P`s it points to are shared
// with readers on any CPU, which only read them.
unsafe impl<P: Chained + Sync> Send for Table<P> {}
// SAFETY: `&self` only allows lookups, which are lock-free reads.
unsafe impl<P: Chained + Sync> Sync for Table<P> {}

impl<P: Chained> Table<P> {
    /// An empty table. May sleep.
    pub(crate) fn new() -> Result<Self> {
        let gen = KBox::into_raw(Generation::new(MIN_BUCKETS, 0)?);
        // INVARIANT: `gen` is live and empty.
        Ok(Self {
            current: AtomicPtr::new(gen),
            writer: UnsafeCell::new(Writer {
                len: 0,
                retired: core::ptr::null_mut(),
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

    /// The member at `addr`.
    ///
    /// Runs in int3/ftrace context: no locks, no allocation. The caller is
    /// in an RCU read-side critical section (interrupts or preemption
    /// disabled) for as long as it uses the returned reference.
    #[inline]
    pub(crate) fn lookup(&self, addr: usize) -> Option<&P> {
        // SAFETY: `current` is live (type invariant), and a generation replaced
        // after this load is freed only after a grace period that the caller's
        // critical section holds off.
        let gen = unsafe { &*self.current.load(Ordering::Acquire) };
        let mut e = gen.bucket(addr)?.load(Ordering::Acquire);
        // SAFETY: members reachable from a generation that a reader can see
        // stay live until a grace period after they are removed, and the
        // links of its parity are not rewritten before one (type invariant).
        while let Some(m) = unsafe { e.as_ref() } {
            if m.key() == addr {
                return Some(m);
            }
            e = m.link(gen.parity).load(Ordering::Acquire);
        }
        None
    }

    /// Publishes `member`, whose key is not in the table yet. Allocates only
    /// to grow the bucket array, and works on (with longer chains) when
    /// that fails. May sleep.
    ///
    /// # Safety
    ///
    /// The caller holds the registration mutex; `member` stays valid until
    /// it has been removed and a grace period has passed.
    pub(crate) unsafe fn insert(&self, member: *const P) {
        // SAFETY: the caller holds the registration mutex.
        unsafe { self.maybe_grow() };
        // SAFETY: `current` is live and only this writer changes it.
        let gen = unsafe { &*self.current.load(Ordering::Relaxed) };
        // SAFETY: the caller's contract.
        let m = unsafe { &*member };
        if let Some(bucket) = gen.bucket(m.key()) {
            m.link(gen.parity)
                .store(bucket.load(Ordering::Relaxed), Ordering::Relaxed);
            // Release: a reader that sees the member sees its link.
            bucket.store(member.cast_mut(), Ordering::Release);
            // SAFETY: the caller holds the registration mutex.
            unsafe { self.writer() }.len += 1;
        }
    }

    /// Unlinks `member`; readers may still see it until the next grace
    /// period, after which the caller may free it. Returns whether it was
    /// in the table. Allocates nothing.
    ///
    /// # Safety
    ///
    /// The caller holds the registration mutex.
    pub(crate) unsafe fn remove(&self, member: &P) -> bool {
        // SAFETY: `current` is live and only this writer changes it.
        let gen = unsafe { &*self.current.load(Ordering::Relaxed) };
        let Some(mut link) = gen.bucket(member.key()) else {
            return false;
        };
        loop {
            let e = link.load(Ordering::Relaxed);
            // SAFETY: linked members are live; only this writer unlinks them.
            let Some(m) = (unsafe { e.as_ref() }) else {
                return false;
            };
            if core::ptr::eq(m, member) {
                // A reader standing on `member` still follows its link.
                link.store(
                    m.link(gen.parity).load(Ordering::Relaxed),
                    Ordering::Release,
                );
                // SAFETY: the caller holds the registration mutex.
                unsafe { self.writer() }.len -= 1;
                return true;
            }
            link = m.link(gen.parity);
        }
    }

    /// Whether growth left a replaced bucket array for [`Table::reclaim`].
    ///
    /// # Safety
    ///
    /// The caller holds the registration mutex.
    pub(crate) unsafe fn has_retired(&self) -> bool {
        // SAFETY: the caller holds the registration mutex.
        !unsafe { self.writer() }.retired.is_null()
    }

    /// Frees the bucket array that growth replaced. May sleep.
    ///
    /// # Safety
    ///
    /// The caller holds the registration mutex and has waited for a grace
    /// period (`synchronize_rcu`) since the last `insert`.
    pub(crate) unsafe fn reclaim(&self) {
        // SAFETY: the caller holds the registration mutex.
        let w = unsafe { self.writer() };
        let g = core::mem::replace(&mut w.retired, core::ptr::null_mut());
        if !g.is_null() {
            // SAFETY: retired generations come from `KBox::into_raw`, and no
            // reader can hold one after the caller's grace period.
            drop(unsafe { KBox::from_raw(g) });
        }
    }

    /// Doubles the bucket array when the load factor would exceed one. On
    /// allocation failure the table keeps working with longer chains.
    ///
    /// # Safety
    ///
    /// The caller holds the registration mutex.
    unsafe fn maybe_grow(&self) {
        // SAFETY: `current` is live and only this writer changes it.
        let old = unsafe { &*self.current.load(Ordering::Relaxed) };
        let n = old.buckets.len();
        // SAFETY: the caller holds the registration mutex.
        if unsafe { self.writer() }.len < n {
            return;
        }
        // SAFETY: the caller holds the registration mutex.
        if !unsafe { self.writer() }.retired.is_null() {
            // The new chains go through the links that readers of the
            // generation before `old` may still follow: wait for them.
            // Growth doubles, so this happens at most a few times in a
            // batch of any size.
            synchronize_rcu();
            // SAFETY: the mutex is held, and a grace period passed.
            unsafe { self.reclaim() };
        }
        let parity = old.parity ^ 1;
        let Ok(new) = Generation::<P>::new(n * 2, parity) else {
            return;
        };
        for bucket in old.buckets.iter() {
            let mut e = bucket.load(Ordering::Relaxed);
            // SAFETY: members of the current generation are live.
            while let Some(m) = unsafe { e.as_ref() } {
                // Read before the other link changes below; `old`'s links
                // are not changed by this rebuild.
                e = m.link(old.parity).load(Ordering::Relaxed);
                if let Some(b) = new.bucket(m.key()) {
                    m.link(parity)
                        .store(b.load(Ordering::Relaxed), Ordering::Relaxed);
                    b.store(core::ptr::from_ref(m).cast_mut(), Ordering::Relaxed);
                }
            }
        }
        // Release: a reader that sees the new array sees its chains.
        let old = self.current.swap(KBox::into_raw(new), Ordering::Release);
        // SAFETY: the caller holds the registration mutex.
        unsafe { self.writer() }.retired = old;
    }
}

impl<P: Chained> Drop for Table<P> {
    /// The probe core drops the table after unregistering everything and a
    /// grace period, so no reader is left. The members are not the table's.
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no writer or reader is left.
        unsafe { self.reclaim() };
        let gen = self.current.swap(core::ptr::null_mut(), Ordering::Relaxed);
        // SAFETY: `current` was allocated by `KBox::into_raw`; no reader is left.
        drop(unsafe { KBox::from_raw(gen) });
    }
}
