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
//! Writers are serialised by the probe core's registration mutex, whose
//! data holds the table's writer's half ([`TableW`]): every change takes
//! `&mut` of it. A removed member stays readable until the caller frees it
//! after a grace period; a replaced bucket array is freed by
//! [`Table::reclaim`], a grace period after it was replaced. Lookups stay O(1) with any number of
//! probes (the load factor is kept at or below one).

use crate::kernel_ext::sync::RcuState;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
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

/// The source of [`Table`] identities: a table and its writer's half carry
/// the same, so that a writer's half is never used on another table.
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// The writer's half of a [`Table`]: what only its writer touches. It is
/// kept in the data of the lock the writers hold (the probe core keeps it in
/// its `Points`), so that changing the table takes `&mut` of it and the
/// type system, not a comment, serialises the writers.
///
/// # Invariants
///
/// `id` is the id of the one table [`Table::new`] made it with. `len` is the
/// number of members in that table's current generation. `retired`, when
/// some, is the generation that table's current one replaced, with the RCU
/// state read after the replacement was published: nobody changes its
/// chains, and readers may walk it until a grace period has passed since.
pub(crate) struct TableW<P> {
    id: usize,
    len: usize,
    retired: Option<(KBox<Generation<P>>, RcuState)>,
}

impl<P> TableW<P> {
    /// Whether this is `table`'s writer's half.
    pub(crate) fn is_for(&self, table: &Table<P>) -> bool
    where
        P: Chained,
    {
        self.id == table.id
    }

    /// Whether growth left a replaced bucket array for [`Table::reclaim`].
    /// Any context.
    pub(crate) fn has_retired(&self) -> bool {
        self.retired.is_some()
    }

    /// Frees the replaced bucket array, once no reader can walk it any
    /// more: after a grace period since it was replaced, which this waits
    /// for unless one has passed already. Process context, may sleep.
    fn reclaim(&mut self) {
        if let Some((gen, state)) = self.retired.take() {
            state.wait();
            drop(gen);
        }
    }
}

impl<P> Drop for TableW<P> {
    /// Process context, may sleep: waits for the grace period the replaced
    /// bucket array still needs.
    fn drop(&mut self) {
        self.reclaim();
    }
}

/// Address → probe point.
///
/// # Invariants
///
/// `current` always points to a live generation, whose chains hold exactly
/// the members inserted and not removed since, linked through the links of
/// its parity. Only the holder of `&mut` of the [`TableW`] of the same `id`
/// changes the chains or `current`; the generation `current` replaced is
/// that `TableW`'s `retired` until freed.
pub(crate) struct Table<P: Chained> {
    current: AtomicPtr<Generation<P>>,
    id: usize,
}

// SAFETY: the table owns its generations; the `P`s it points to are shared
// with readers on any CPU, which only read them.
unsafe impl<P: Chained + Sync> Send for Table<P> {}
// SAFETY: `&self` only allows lookups, which are lock-free reads; changes
// take `&mut` of the writer's half.
unsafe impl<P: Chained + Sync> Sync for Table<P> {}

impl<P: Chained> Table<P> {
    /// An empty table and its writer's half. May sleep.
    pub(crate) fn new() -> Result<(Self, TableW<P>)> {
        let gen = KBox::into_raw(Generation::new(MIN_BUCKETS, 0)?);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        // INVARIANT: `gen` is live and empty, and `id` is new: the writer's
        // half made here is the only one of this table.
        Ok((
            Self {
                current: AtomicPtr::new(gen),
                id,
            },
            TableW {
                id,
                len: 0,
                retired: None,
            },
        ))
    }

    /// Whether `w` is this table's writer's half.
    fn is_writer(&self, w: &TableW<P>) -> bool {
        if w.id == self.id {
            return true;
        }
        pr_err!("probe table changed through another table's writer\n");
        false
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

    /// Publishes `member`, whose key is not in the table yet, through its
    /// writer's half `w`. Allocates only to grow the bucket array, and works
    /// on (with longer chains) when that fails. Fails, publishing nothing,
    /// only if `w` is another table's (`EINVAL`). May sleep.
    ///
    /// # Safety
    ///
    /// `member` stays valid until it has been removed and a grace period
    /// has passed.
    pub(crate) unsafe fn insert(&self, w: &mut TableW<P>, member: *const P) -> Result {
        if !self.is_writer(w) {
            return Err(EINVAL);
        }
        self.maybe_grow(w);
        // SAFETY: `current` is live, and only the holder of `w` changes it.
        let gen = unsafe { &*self.current.load(Ordering::Relaxed) };
        // SAFETY: the caller's contract.
        let m = unsafe { &*member };
        let bucket = gen.bucket(m.key()).ok_or(EINVAL)?;
        m.link(gen.parity)
            .store(bucket.load(Ordering::Relaxed), Ordering::Relaxed);
        // Release: a reader that sees the member sees its link.
        bucket.store(member.cast_mut(), Ordering::Release);
        w.len += 1;
        Ok(())
    }

    /// Unlinks `member` through the writer's half `w`; readers may still
    /// see it until the next grace period, after which it may be freed.
    /// Returns whether it was in the table. Allocates nothing.
    pub(crate) fn remove(&self, w: &mut TableW<P>, member: &P) -> bool {
        if !self.is_writer(w) {
            return false;
        }
        // SAFETY: `current` is live, and only the holder of `w` changes it.
        let gen = unsafe { &*self.current.load(Ordering::Relaxed) };
        let Some(mut link) = gen.bucket(member.key()) else {
            return false;
        };
        loop {
            let e = link.load(Ordering::Relaxed);
            // SAFETY: linked members are live (`insert`'s contract); only the
            // holder of `w` unlinks them.
            let Some(m) = (unsafe { e.as_ref() }) else {
                return false;
            };
            if core::ptr::eq(m, member) {
                // A reader standing on `member` still follows its link.
                link.store(
                    m.link(gen.parity).load(Ordering::Relaxed),
                    Ordering::Release,
                );
                w.len -= 1;
                return true;
            }
            link = m.link(gen.parity);
        }
    }

    /// Frees the bucket array that growth replaced, through the writer's
    /// half `w`, once no reader can walk it: waits for a grace period
    /// unless one passed since it was replaced (as after a
    /// `synchronize_rcu()` of the caller's). May sleep.
    pub(crate) fn reclaim(&self, w: &mut TableW<P>) {
        if self.is_writer(w) {
            w.reclaim();
        }
    }

    /// Doubles the bucket array when the load factor would exceed one. On
    /// allocation failure the table keeps working with longer chains. `w`
    /// is this table's writer's half.
    fn maybe_grow(&self, w: &mut TableW<P>) {
        // SAFETY: `current` is live, and only the holder of `w` changes it.
        let old = unsafe { &*self.current.load(Ordering::Relaxed) };
        let n = old.buckets.len();
        if w.len < n {
            return;
        }
        // The new chains go through the links that readers of the
        // generation before `old` may still follow: wait for them (at once
        // if a grace period passed since). Growth doubles, so this happens
        // at most a few times in a batch of any size.
        w.reclaim();
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
        // SAFETY: generations come from `KBox::into_raw`, and `old` is no
        // longer `current`: the writer's half owns it now.
        let old = unsafe { KBox::from_raw(old) };
        // INVARIANT: read after `old` was replaced: a reader that may still
        // walk it began before.
        w.retired = Some((old, RcuState::now()));
    }
}

impl<P: Chained> Drop for Table<P> {
    /// The probe core drops the table after unregistering everything and a
    /// grace period, so no reader is left. The members are not the table's,
    /// and the replaced bucket array is its writer's half's.
    fn drop(&mut self) {
        let gen = self.current.swap(core::ptr::null_mut(), Ordering::Relaxed);
        // SAFETY: `current` was allocated by `KBox::into_raw`; no reader is left.
        drop(unsafe { KBox::from_raw(gen) });
    }
}
