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
//! data holds the table's writer's half ([`TableW`]), which is not `Sync`.
//! The writer's half owns the members: it frees a removed one only through
//! `&mut`, a grace period after it was removed ([`TableW::reclaim`]), so
//! that a reader, or the writer's own lookup, never holds a freed one; a
//! replaced bucket array is freed by [`TableW::reclaim_table`], a grace
//! period after it was replaced. Lookups stay O(1) with any number of
//! probes (the load factor is kept at or below one).

use crate::kernel_ext::{
    list::ReadSection,
    owned::{OwnedLists, Tagged},
    sync::RcuState,
};
use core::cell::Cell;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use kernel::prelude::*;

/// Buckets of the first generation.
const MIN_BUCKETS: usize = 64;

/// A member's links on the chains of a [`Table`], one for each generation
/// parity. Only the table reads or writes them (the field is private).
pub(crate) struct ChainLinks<P>([AtomicPtr<P>; 2]);

impl<P> ChainLinks<P> {
    /// The links of a member of no table.
    pub(crate) const fn new() -> Self {
        Self([
            AtomicPtr::new(core::ptr::null_mut()),
            AtomicPtr::new(core::ptr::null_mut()),
        ])
    }
}

impl<P> Default for ChainLinks<P> {
    fn default() -> Self {
        Self::new()
    }
}

/// A member of a [`Table`]: its key, and its chain links. Implemented with
/// [`impl_chained!`](crate::impl_chained).
///
/// # Safety
///
/// `key` never changes while the member is in a table, and `links` returns
/// the same field of the member itself for its whole life.
pub(crate) unsafe trait Chained: Sized {
    /// The address the member is found by.
    fn key(&self) -> usize;
    /// The member's links.
    fn links(&self) -> &ChainLinks<Self>;
}

/// Implements [`Chained`] for a type whose `usize` field `$key` is the key
/// and whose [`ChainLinks`] field `$links` holds the links. [`Chained`]
/// must be in scope.
#[macro_export]
macro_rules! impl_chained {
    ($ty:ty, $key:ident, $links:ident) => {
        // SAFETY: the key is a plain `usize` field, which no shared
        // reference changes, and a member is only shared while it is in a
        // table (`Table::insert`'s contract); the links are the member's
        // own field.
        unsafe impl Chained for $ty {
            #[inline(always)]
            fn key(&self) -> usize {
                let key: usize = self.$key;
                key
            }

            #[inline(always)]
            fn links(&self) -> &$crate::kprobe::table::ChainLinks<Self> {
                &self.$links
            }
        }
    };
}

/// The link of `m` for the generations of parity `parity` (0 or 1).
#[inline(always)]
fn link<P: Chained>(m: &P, parity: usize) -> &AtomicPtr<P> {
    &m.links().0[parity & 1]
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

/// Its members published in the table.
const PUBLISHED: usize = 0;
/// Its members taken off the table and kept ([`TableW::unpublish`]).
const KEPT: usize = 1;
/// Its members taken out of use, freed by [`TableW::reclaim`].
const DYING: usize = 2;

/// The writer's half of a [`Table`]: the members' memory and what only the
/// writer touches. A member is given to it as a box ([`TableW::publish`]),
/// and given back only by [`TableW::reclaim`], through `&mut self`, a grace
/// period after it was taken off the table: a member found through `&self`
/// lives as long as that borrow, and readers never see a freed one. Its
/// state is in `Cell`s, so the type is not `Sync`: it is kept in the data of
/// the lock the writers hold (the probe core's `Points`), and the type
/// system, not a comment, serialises the writers.
///
/// # Invariants
///
/// `id` is the id of the one table [`Table::new`] made it with. The members
/// of that table are exactly those on `members`' list `PUBLISHED`, and
/// `len` is their number. A member on `DYING` is off the table, and
/// `unpublished`, some while `DYING` is not empty, was read after the last
/// of them was taken off. `retired`, when some, is the generation that
/// table's current one replaced, with the RCU state read after the
/// replacement was published: nobody changes its chains, and readers may
/// walk it until a grace period has passed since.
pub(crate) struct TableW<P: Chained + Tagged<ID>, const ID: u64> {
    id: usize,
    len: Cell<usize>,
    retired: Cell<Option<(KBox<Generation<P>>, RcuState)>>,
    members: OwnedLists<P, ID, 3>,
    unpublished: Cell<Option<RcuState>>,
}

impl<P: Chained + Tagged<ID>, const ID: u64> TableW<P, ID> {
    /// Whether this is `table`'s writer's half.
    pub(crate) fn is_for(&self, table: &Table<P>) -> bool {
        if self.id == table.id {
            return true;
        }
        pr_err!("probe table changed through another table's writer\n");
        false
    }

    /// Takes `member` and publishes it in `table`, whose key it must not be
    /// in yet: from now on readers find it. Gives it back if `table` is not
    /// this writer's, or `member` is listed already. Allocates only to grow
    /// the bucket array, and works on (with longer chains) when that fails.
    /// May sleep.
    pub(crate) fn publish<'a>(
        &'a self,
        table: &Table<P>,
        member: KBox<P>,
    ) -> Result<&'a P, KBox<P>> {
        if !self.is_for(table) {
            return Err(member);
        }
        let m = self.members.push_back(PUBLISHED, member)?;
        // INVARIANT: on `PUBLISHED`, and in the table.
        // SAFETY: `m` is this writer's own until `reclaim`, which frees only
        // members on `DYING` a grace period after they left the table, and
        // is only shared (`OwnedLists` gives out `&`). `self` is the table's
        // writer (checked above).
        unsafe { table.insert(self, m) };
        Ok(m)
    }

    /// The published member at `addr`, in `table`, for as long as `self`
    /// is borrowed.
    pub(crate) fn lookup<'a>(&'a self, table: &Table<P>, addr: usize) -> Option<&'a P> {
        if !self.is_for(table) {
            return None;
        }
        // SAFETY: `current` is live (type invariant of `Table`), and only
        // this writer replaces it or frees members, through `&mut self`:
        // neither happens for `'a`.
        unsafe { table.find(addr) }
    }

    /// Takes a published `member` off `table` and keeps it: readers may
    /// stand on it until the next grace period. Returns whether it did.
    /// Allocates nothing.
    pub(crate) fn unpublish(&self, table: &Table<P>, member: &P) -> bool {
        // INVARIANT: off the table before it leaves `PUBLISHED`.
        self.is_for(table)
            && self.members.list_of(member) == Some(PUBLISHED)
            && table.remove(self, member)
            && self.members.move_to(member, KEPT)
    }

    /// Takes `member`, published or kept, off `table` if it is there, and
    /// out of use: [`TableW::reclaim`] frees it. Returns whether it did.
    /// Allocates nothing.
    pub(crate) fn retire(&self, table: &Table<P>, member: &P) -> bool {
        if !self.is_for(table) {
            return false;
        }
        match self.members.list_of(member) {
            Some(PUBLISHED) if table.remove(self, member) => {}
            Some(KEPT) => {}
            _ => return false,
        }
        // INVARIANT: off the table; `unpublished` read after that.
        self.unpublished.set(Some(RcuState::now()));
        self.members.move_to(member, DYING)
    }

    /// The published members, in the order they were published.
    pub(crate) fn published(&self) -> impl Iterator<Item = &P> + '_ {
        self.members.iter(PUBLISHED)
    }

    /// The members taken off and kept.
    pub(crate) fn kept(&self) -> impl Iterator<Item = &P> + '_ {
        self.members.iter(KEPT)
    }

    /// The members taken out of use and not freed yet.
    pub(crate) fn retired(&self) -> impl Iterator<Item = &P> + '_ {
        self.members.iter(DYING)
    }

    /// Waits until no reader can stand on a member taken out of use: a
    /// grace period since the last was (`cond_synchronize_rcu()`), unless
    /// one has passed. Process context, may sleep.
    pub(crate) fn wait_retired(&self) {
        if let Some(state) = self.unpublished.take() {
            state.wait();
        }
    }

    /// Gives back the members taken out of use, after the grace period
    /// they need ([`TableW::wait_retired`]). Process context, may sleep.
    pub(crate) fn reclaim(&mut self) -> impl Iterator<Item = KBox<P>> + '_ {
        self.wait_retired();
        self.members.take(DYING)
    }

    /// Leaves every member allocated, however it is listed, for a writer
    /// going away while readers may still find some: returns how many.
    pub(crate) fn leak(&mut self) -> usize {
        let mut left = 0;
        for i in [PUBLISHED, KEPT, DYING] {
            for m in self.members.take(i) {
                core::mem::forget(m);
                left += 1;
            }
        }
        left
    }

    /// Whether growth left a replaced bucket array for
    /// [`TableW::reclaim_table`]. Any context.
    pub(crate) fn has_retired_table(&self) -> bool {
        let r = self.retired.take();
        let some = r.is_some();
        self.retired.set(r);
        some
    }

    /// Frees the replaced bucket array, once no reader can walk it any
    /// more: after a grace period since it was replaced, which this waits
    /// for unless one has passed already (as after a `synchronize_rcu()` of
    /// the caller's). Process context, may sleep.
    pub(crate) fn reclaim_table(&self) {
        if let Some((gen, state)) = self.retired.take() {
            state.wait();
            drop(gen);
        }
    }
}

impl<P: Chained + Tagged<ID>, const ID: u64> Drop for TableW<P, ID> {
    /// Leaves the members allocated (readers may still find them), and
    /// waits for the grace period the replaced bucket array still needs.
    /// Process context, may sleep.
    fn drop(&mut self) {
        self.leak();
        self.reclaim_table();
    }
}

/// Address → probe point.
///
/// # Invariants
///
/// `current` always points to a live generation, whose chains hold exactly
/// the members inserted and not removed since, linked through the links of
/// its parity. Only the [`TableW`] of the same `id` changes the chains or
/// `current`; the generation `current` replaced is that `TableW`'s
/// `retired` until freed.
pub(crate) struct Table<P: Chained> {
    current: AtomicPtr<Generation<P>>,
    id: usize,
}

// SAFETY: the table owns its generations; the `P`s it points to are shared
// with readers on any CPU, which only read them.
unsafe impl<P: Chained + Sync> Send for Table<P> {}
// SAFETY: `&self` only allows lookups, which are lock-free reads; changes
// take the writer's half, which is not `Sync`.
unsafe impl<P: Chained + Sync> Sync for Table<P> {}

impl<P: Chained> Table<P> {
    /// An empty table and its writer's half, which owns the members of
    /// kind `ID`. May sleep.
    pub(crate) fn new<const ID: u64>() -> Result<(Self, TableW<P, ID>)>
    where
        P: Tagged<ID>,
    {
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
                len: Cell::new(0),
                retired: Cell::new(None),
                members: OwnedLists::new(),
                unpublished: Cell::new(None),
            },
        ))
    }

    /// The member at `addr`, for as long as the read section `_rcu` lasts.
    ///
    /// Any context; the hit path's: no locks, no allocation.
    #[inline]
    pub(crate) fn lookup<'a, G: ReadSection>(&'a self, _rcu: &'a G, addr: usize) -> Option<&'a P> {
        // SAFETY: a generation replaced after the load is freed only after a
        // grace period, and members reachable from a generation that a
        // reader can see stay live until a grace period after they are
        // removed (`insert`'s contract): the read section holds both off for
        // `'a`.
        unsafe { self.find(addr) }
    }

    /// The member at `addr`: the walk of both lookups.
    ///
    /// # Safety
    ///
    /// The generation current at the call and the members reachable from
    /// it stay live for `'a`.
    #[inline(always)]
    unsafe fn find<'a>(&self, addr: usize) -> Option<&'a P> {
        // SAFETY: `current` is live (type invariant), and stays so for `'a`
        // (the caller's contract).
        let gen = unsafe { &*self.current.load(Ordering::Acquire) };
        let mut e = gen.bucket(addr)?.load(Ordering::Acquire);
        // SAFETY: members reachable from the generation are live for `'a`
        // (the caller's contract), and the links of its parity are not
        // rewritten before a grace period (type invariant).
        while let Some(m) = unsafe { e.as_ref() } {
            if m.key() == addr {
                return Some(m);
            }
            e = link(m, gen.parity).load(Ordering::Acquire);
        }
        None
    }

    /// Links `member`, whose key is not in the table yet, through its
    /// writer's half `w`. Allocates only to grow the bucket array.
    ///
    /// # Safety
    ///
    /// `w` is this table's writer's half. `member` stays valid, and is only
    /// shared (no `&mut` of it), until it has been removed and a grace
    /// period has passed.
    unsafe fn insert<const ID: u64>(&self, w: &TableW<P, ID>, member: &P)
    where
        P: Tagged<ID>,
    {
        self.maybe_grow(w);
        // SAFETY: `current` is live, and only the holder of `w` changes it.
        let gen = unsafe { &*self.current.load(Ordering::Relaxed) };
        let Some(bucket) = gen.bucket(member.key()) else {
            return;
        };
        link(member, gen.parity).store(bucket.load(Ordering::Relaxed), Ordering::Relaxed);
        // Release: a reader that sees the member sees its link.
        bucket.store(core::ptr::from_ref(member).cast_mut(), Ordering::Release);
        w.len.set(w.len.get() + 1);
    }

    /// Unlinks `member` through the writer's half `w`, this table's;
    /// readers may still see it until the next grace period. Returns whether
    /// it was in the table. Allocates nothing.
    fn remove<const ID: u64>(&self, w: &TableW<P, ID>, member: &P) -> bool
    where
        P: Tagged<ID>,
    {
        // SAFETY: `current` is live, and only the holder of `w` changes it.
        let gen = unsafe { &*self.current.load(Ordering::Relaxed) };
        let Some(mut at) = gen.bucket(member.key()) else {
            return false;
        };
        loop {
            let e = at.load(Ordering::Relaxed);
            // SAFETY: linked members are live (`insert`'s contract); only the
            // holder of `w` unlinks them.
            let Some(m) = (unsafe { e.as_ref() }) else {
                return false;
            };
            if core::ptr::eq(m, member) {
                // A reader standing on `member` still follows its link.
                at.store(
                    link(m, gen.parity).load(Ordering::Relaxed),
                    Ordering::Release,
                );
                w.len.set(w.len.get() - 1);
                return true;
            }
            at = link(m, gen.parity);
        }
    }

    /// Doubles the bucket array when the load factor would exceed one. On
    /// allocation failure the table keeps working with longer chains. `w`
    /// is this table's writer's half.
    fn maybe_grow<const ID: u64>(&self, w: &TableW<P, ID>)
    where
        P: Tagged<ID>,
    {
        // SAFETY: `current` is live, and only the holder of `w` changes it.
        let old = unsafe { &*self.current.load(Ordering::Relaxed) };
        let n = old.buckets.len();
        if w.len.get() < n {
            return;
        }
        // The new chains go through the links that readers of the
        // generation before `old` may still follow: wait for them (at once
        // if a grace period passed since). Growth doubles, so this happens
        // at most a few times in a batch of any size.
        w.reclaim_table();
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
                e = link(m, old.parity).load(Ordering::Relaxed);
                if let Some(b) = new.bucket(m.key()) {
                    link(m, parity).store(b.load(Ordering::Relaxed), Ordering::Relaxed);
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
        w.retired.set(Some((old, RcuState::now())));
    }
}

impl<P: Chained> Drop for Table<P> {
    /// The probe core drops the table after unregistering everything and a
    /// grace period, so no reader is left. The members are its writer's
    /// half's, as is the replaced bucket array.
    fn drop(&mut self) {
        let gen = self.current.swap(core::ptr::null_mut(), Ordering::Relaxed);
        // SAFETY: `current` was allocated by `KBox::into_raw`; no reader is left.
        drop(unsafe { KBox::from_raw(gen) });
    }
}
