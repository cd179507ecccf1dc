// SPDX-License-Identifier: GPL-2.0

//! What a writer owns, checked by the type system: state reached only
//! through the writer's data ([`OwnedBy`]), and memory kept on intrusive
//! lists and freed only through `&mut` of their owner ([`OwnedLists`]).
//!
//! The probe core's writer holds the registration mutex and, with it, two
//! borrows at once: the points' memory, shared, for as long as it works on
//! points, and the rest of its state, exclusive. A point found through the
//! first borrow cannot be freed while the reference lives (freeing takes
//! `&mut` of the owner), and its writer's state is reached through the
//! second (`OwnedBy`, keyed by it): neither is a comment's promise.
//!
//! Context: process context, under the lock that owns the data.

use super::list::{self, Head, Linked, Tail};
use core::{
    cell::{Cell, UnsafeCell},
    marker::PhantomData,
    ptr::NonNull,
    sync::atomic::{AtomicU32, AtomicUsize, Ordering},
};
use kernel::prelude::*;

/// `T`, reached only through a reference to its owner, a `U`: shared with
/// `&U`, exclusive with `&mut U`. The kernel crate's `LockedBy`, for an
/// owner that is a part of a lock's data rather than all of it.
///
/// # Invariants
///
/// `owner` is the address of the `U` given to [`OwnedBy::new`]; `U` is not
/// zero-sized, so no two `U`s that exist at once have that address, and
/// `&mut U` of the one there excludes every other borrow of it.
pub(crate) struct OwnedBy<T, U> {
    owner: *const U,
    data: UnsafeCell<T>,
}

// SAFETY: `OwnedBy` can move to another thread iff its data can; `owner` is
// only compared.
unsafe impl<T: Send, U> Send for OwnedBy<T, U> {}
// SAFETY: shared access to the data is given for `&U` only when `T: Sync`
// (`access`), exclusive access for `&mut U`, which only one thread has.
unsafe impl<T: Send, U> Sync for OwnedBy<T, U> {}

impl<T, U> OwnedBy<T, U> {
    /// `data`, owned by `owner`.
    pub(crate) fn new(owner: &U, data: T) -> Self {
        kernel::build_assert!(
            core::mem::size_of::<U>() > 0,
            "an owner of no size has no address of its own"
        );
        // INVARIANT: `owner`'s address; `U` is not zero-sized (above).
        Self {
            owner,
            data: UnsafeCell::new(data),
        }
    }

    /// The data, for `owner`. Panics if `owner` is not the owner.
    pub(crate) fn access<'a>(&'a self, owner: &'a U) -> &'a T
    where
        T: Sync,
    {
        assert!(core::ptr::eq(owner, self.owner), "not the owner");
        // SAFETY: `owner` is the owner (checked above), borrowed shared for
        // `'a`, so nobody has `&mut` of it, which exclusive access needs.
        unsafe { &*self.data.get() }
    }

    /// The data, to change, for `owner`. Panics if `owner` is not the owner.
    pub(crate) fn access_mut<'a>(&'a self, owner: &'a mut U) -> &'a mut T {
        assert!(core::ptr::eq(owner, self.owner), "not the owner");
        // SAFETY: `owner` is the owner (checked above), borrowed exclusively
        // for `'a`: no other reference to the data can exist meanwhile.
        unsafe { &mut *self.data.get() }
    }
}

/// Which [`OwnedLists`], and which of its lists, holds an element.
pub(crate) struct Tag(AtomicU32);

impl Tag {
    /// Held by none.
    pub(crate) const fn new() -> Self {
        Self(AtomicU32::new(0))
    }
}

impl Default for Tag {
    fn default() -> Self {
        Self::new()
    }
}

/// An element that [`OwnedLists`] can own.
///
/// # Safety
///
/// [`Tagged::tag`] returns the same field for the element's whole life, and
/// only `OwnedLists` writes it.
pub(crate) unsafe trait Tagged<const ID: u64>: Linked<ID> {
    /// The element's tag.
    fn tag(&self) -> &Tag;
}

/// Implements [`Tagged`] for a type whose field `$field` of type [`Tag`] is
/// its tag for the [`OwnedLists`] of kind `$id`.
#[macro_export]
macro_rules! impl_tagged {
    ($ty:ty, $id:expr, $field:ident) => {
        // SAFETY: the element's own field, written by `OwnedLists` alone
        // (the field's type has no other writer).
        unsafe impl $crate::kernel_ext::owned::Tagged<{ $id }> for $ty {
            #[inline(always)]
            fn tag(&self) -> &$crate::kernel_ext::owned::Tag {
                &self.$field
            }
        }
    };
}

/// The source of [`OwnedLists`] identities.
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// `N` intrusive lists (of kind `ID`) that own their elements: each was a
/// `KBox` given to [`OwnedLists::push_back`]. Through `&self` an element may
/// be found, walked to, or moved between the lists, never freed: a
/// reference to one lives as long as the borrow of the owner it came from.
/// Only [`OwnedLists::take`], through `&mut self`, gives an element's box
/// back. The writer's state (the tails) is in `Cell`s, so the type is not
/// `Sync`: it belongs in the data of the lock its writer holds. Elements with
/// a forward link alone (`list::Link`) are not given again once taken: their
/// link keeps them marked as listed.
///
/// # Invariants
///
/// `id` is unique, and `id * N + N` fits in a `u32`. An element whose tag is
/// `id * N + i + 1` is on list `i` of this owner and came from
/// `KBox::into_raw`, and every element on its lists has such a tag;
/// `tails[i]` is list `i`'s tail.
pub(crate) struct OwnedLists<T: Tagged<ID>, const ID: u64, const N: usize> {
    id: usize,
    heads: [Head<T, ID>; N],
    tails: [Cell<Tail<T, ID>>; N],
    _owns: PhantomData<KBox<T>>,
}

impl<T: Tagged<ID>, const ID: u64, const N: usize> OwnedLists<T, ID, N> {
    /// `N` empty lists.
    pub(crate) fn new() -> Self {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        // INVARIANT: ids are handed out once; a machine does not make
        // a few billion owners (tags are 32 bits, to keep a probe point
        // within its slab size).
        assert!(
            id.checked_add(1)
                .and_then(|n| n.checked_mul(N))
                .is_some_and(|n| u32::try_from(n).is_ok()),
            "owner ids exhausted"
        );
        Self {
            id,
            heads: core::array::from_fn(|_| Head::new()),
            tails: core::array::from_fn(|_| Cell::new(Tail::new())),
            _owns: PhantomData,
        }
    }

    /// The tag of list `i < N`: fits (type invariant).
    fn tag_of(&self, i: usize) -> u32 {
        u32::try_from(self.id * N + i + 1).unwrap_or(0)
    }

    /// Which list holds `e`, if it is one of this owner's.
    pub(crate) fn list_of(&self, e: &T) -> Option<usize> {
        let t = e.tag().0.load(Ordering::Relaxed) as usize;
        let first = self.id * N + 1;
        (t >= first && t < first + N).then(|| t - first)
    }

    /// Takes `e` and adds it at the end of list `i`; gives it back if there
    /// is no list `i` or it is on a list of kind `ID` already.
    pub(crate) fn push_back(&self, i: usize, e: KBox<T>) -> Result<&T, KBox<T>> {
        let (Some(head), Some(tail)) = (self.heads.get(i), self.tails.get(i)) else {
            return Err(e);
        };
        if e.tag().0.load(Ordering::Relaxed) != 0 {
            return Err(e);
        }
        let p = NonNull::from(&*e);
        // SAFETY: `p` is valid (a box).
        if !unsafe { list::claim::<T, ID>(p) } {
            return Err(e);
        }
        // The box's element, at `p`: from now on this owner's.
        let raw = KBox::into_raw(e);
        debug_assert!(core::ptr::eq(raw, p.as_ptr()));
        let mut t = tail.get();
        // SAFETY: `t` is list `i`'s tail (type invariant); `p` is on no list
        // (claimed above) and valid until `take` frees it.
        unsafe { t.push_back(head, p) };
        tail.set(t);
        // SAFETY: just listed; valid until `take`, which takes `&mut self`.
        let e = unsafe { p.as_ref() };
        // INVARIANT: a box's element, on list `i`.
        e.tag().0.store(self.tag_of(i), Ordering::Relaxed);
        Ok(e)
    }

    /// Moves `e`, one of this owner's, to the end of list `i`; returns
    /// whether it did (false for an element that is not this owner's, or
    /// without a list `i`). Allocates nothing.
    pub(crate) fn move_to(&self, e: &T, i: usize) -> bool {
        let (Some(j), Some(head), Some(tail)) =
            (self.list_of(e), self.heads.get(i), self.tails.get(i))
        else {
            return false;
        };
        let (Some(from_head), Some(from_tail)) = (self.heads.get(j), self.tails.get(j)) else {
            return false;
        };
        let p = NonNull::from(e);
        let mut t = from_tail.get();
        // SAFETY: `e` is on list `j` (its tag, type invariant), whose tail
        // `t` is; valid, as borrowed. It stays claimed: no other list can
        // take it before it is on list `i`.
        unsafe { t.remove_claimed(from_head, p) };
        from_tail.set(t);
        let mut t = tail.get();
        // SAFETY: list `i`'s tail; `e` is off every list (taken off above,
        // and claimed for this one) and stays valid until `take` frees it.
        unsafe { t.push_back(head, p) };
        tail.set(t);
        // INVARIANT: on list `i` now.
        e.tag().0.store(self.tag_of(i), Ordering::Relaxed);
        true
    }

    /// The elements of list `i`, first to last, borrowed from the owner.
    /// The walk reads an element's successor before yielding it, so the
    /// caller may move the element it was given.
    pub(crate) fn iter(&self, i: usize) -> impl Iterator<Item = &T> + '_ {
        // SAFETY: the owner's lists are written only through `&self`, by
        // this thread (the type is not `Sync`); their elements are valid
        // until `take`, which takes `&mut self`.
        let walk = self.heads.get(i).map(|h| unsafe { h.iter() });
        // SAFETY: as above.
        walk.into_iter().flatten().map(|e| unsafe { e.as_ref() })
    }

    /// Takes every element off list `i`, first to last, giving its box back.
    pub(crate) fn take(&mut self, i: usize) -> impl Iterator<Item = KBox<T>> + '_ {
        core::iter::from_fn(move || {
            let head = self.heads.get(i)?;
            let tail = self.tails.get(i)?;
            // SAFETY: as in `iter`.
            let p = unsafe { head.iter() }.next()?;
            let mut t = tail.get();
            // SAFETY: `p` is list `i`'s first element; `t` its tail.
            unsafe { t.remove(head, p) };
            tail.set(t);
            // SAFETY: valid: it was on the list.
            let e = unsafe { p.as_ref() };
            // Off every list of kind `ID` again, as `Links::new` is.
            e.tag().0.store(0, Ordering::Relaxed);
            // SAFETY: it came from `KBox::into_raw` (type invariant) and is off
            // the lists: this is its one owner.
            Some(unsafe { KBox::from_raw(p.as_ptr()) })
        })
    }
}

impl<T: Tagged<ID>, const ID: u64, const N: usize> Drop for OwnedLists<T, ID, N> {
    /// Frees every element still owned.
    fn drop(&mut self) {
        for i in 0..N {
            for e in self.take(i) {
                drop(e);
            }
        }
    }
}
