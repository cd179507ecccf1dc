// SPDX-License-Identifier: GPL-2.0

//! A lock-free pool of a fixed number of objects, in the manner of the
//! kernel's `lib/objpool.c` and `freelist.h`: the pool owns one zeroed block
//! of objects and hands them out as typed handles.
//!
//! Free objects form a lock-free stack of indices (a Treiber stack): the
//! head word holds the top index plus one in its low half and a generation
//! tag in its high half, so that a compare-and-exchange cannot succeed on a
//! recycled head (ABA). Each object keeps its free-list link in a word of
//! its own ([`PoolItem::LINK`]), so that taking an object touches nothing
//! but the head and the object.
//!
//! An object is in one of three states, and its handle says which:
//! - free, on the stack: no handle;
//! - owned ([`Owned`]): off the stack, in the hands of one holder, which
//!   gives it back ([`Owned::give_back`]) or puts it out;
//! - out: put out ([`Owned::put_out`]) with a [`Token`] stored in the
//!   object's token word ([`PoolItem::TOKEN`]), to be claimed back
//!   ([`Slot::claim`]) by whoever presents that token's identity. The
//!   exchange that clears the word is the claim, so at most one claimant
//!   wins, whichever contexts race for it.
//!
//! Any holder of a [`Slot`] (an index checked against the pool's size) may
//! use the object's memory as its type allows; the pool's own two words are
//! reached only through the pool.
//!
//! Context: [`ObjPool::new`] and dropping a pool are process context.
//! Everything else is lock-free and allocation-free, usable in any context,
//! NMI included.

use core::{
    marker::PhantomData,
    mem::ManuallyDrop,
    ptr::NonNull,
    sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering},
};
use kernel::{ffi::c_void, prelude::*};

/// A value an object holds while it is out, kept in the object's token word
/// as a pointer (a counted reference, say).
///
/// # Safety
///
/// [`Token::into_raw`] returns a non-null pointer that [`Token::from_raw`]
/// turns back into the value it came from; two values alive at once never
/// have the same pointer unless they are interchangeable.
pub(crate) unsafe trait Token: Sized + Send {
    /// Gives the value up as a pointer.
    fn into_raw(self) -> NonNull<c_void>;

    /// Takes back the value that [`Token::into_raw`] gave up as `p`.
    ///
    /// # Safety
    ///
    /// `p` came from [`Token::into_raw`] and is taken back once.
    unsafe fn from_raw(p: NonNull<c_void>) -> Self;
}

/// An object an [`ObjPool`] can hold: a C-layout header, followed in the
/// pool by a caller-chosen number of bytes.
///
/// # Safety
///
/// All-zero bytes are a valid `Self`, and `Self` is aligned to 8 bytes or
/// less. [`PoolItem::LINK`] is the offset of an aligned `u32` field and
/// [`PoolItem::TOKEN`] that of an aligned pointer field, distinct, which no
/// code but this module's reads or writes while the object is in a pool.
pub(crate) unsafe trait PoolItem: Sized {
    /// The offset of the free-list link.
    const LINK: usize;
    /// The offset of the token word: a [`PoolItem::Token`] given up as a
    /// pointer while the object is out, else null.
    const TOKEN: usize;
    /// What an object holds while it is out.
    type Token: Token;
}

/// A fixed number of objects of type `T`, each followed by the same number
/// of bytes, in one block that the pool owns, with a lock-free free list.
///
/// # Invariants
///
/// `base` points to `max * stride` zero-initialised bytes owned by `_mem`;
/// object `i < max` is at `base + i * stride`, aligned for `T` (`stride` is
/// a multiple of 8, `base` 8-aligned), and that product does not overflow.
/// `free` holds in its low half the top free object's index plus one (0:
/// none), and each free object's link the next one's index plus one. An
/// object is on the free list, or has exactly one [`Owned`] handle, or is
/// out with a non-null token word; its token word is null unless it is out.
pub(crate) struct ObjPool<T: PoolItem> {
    free: AtomicU64,
    max: u32,
    stride: usize,
    base: NonNull<u8>,
    _mem: KVVec<u64>,
    _items: PhantomData<T>,
}

// SAFETY: the objects are reached through atomics (the pool's words) and
// handles whose owners use them one at a time; the tokens they hold are
// `Send`. Nothing is tied to the thread that built the pool.
unsafe impl<T: PoolItem> Send for ObjPool<T> {}
// SAFETY: as above: every shared access goes through an atomic or through
// the one handle that owns an object.
unsafe impl<T: PoolItem> Sync for ObjPool<T> {}

impl<T: PoolItem> ObjPool<T> {
    /// A pool of `max` zeroed objects, each followed by `extra` bytes (also
    /// zeroed), all free, object 0 on top. `E2BIG` when the sizes overflow
    /// or `max` does not fit the free list's index. Process context, may
    /// sleep.
    pub(crate) fn new(max: usize, extra: usize) -> Result<Self> {
        if core::mem::align_of::<T>() > 8 {
            return Err(EINVAL);
        }
        let max32 = u32::try_from(max)
            .ok()
            .filter(|&m| m < u32::MAX)
            .ok_or(E2BIG)?;
        let stride = core::mem::size_of::<T>()
            .checked_add(extra)
            .and_then(|s| s.checked_next_multiple_of(8))
            .ok_or(E2BIG)?;
        let words = max.checked_mul(stride / 8).ok_or(E2BIG)?;
        let mut mem = KVVec::from_elem(0u64, words, GFP_KERNEL)?;
        // The buffer does not move when the vector does.
        let base = NonNull::new(mem.as_mut_ptr().cast::<u8>()).ok_or(ENOMEM)?;
        // INVARIANT: zeroed, 8-aligned `max * stride` bytes (checked above),
        // every token word null; the list is empty, then every object is
        // pushed once.
        let pool = Self {
            free: AtomicU64::new(0),
            max: max32,
            stride,
            base,
            _mem: mem,
            _items: PhantomData,
        };
        for s in pool.slots().rev() {
            pool.push(s);
        }
        Ok(pool)
    }

    /// Object `i`, or `None` if the pool has no such object. Any context.
    #[inline(always)]
    pub(crate) fn get(&self, i: u32) -> Option<Slot<'_, T>> {
        if i >= self.max {
            return None;
        }
        Some(self.slot(i))
    }

    /// Object `i`, which exists.
    #[inline(always)]
    fn slot(&self, i: u32) -> Slot<'_, T> {
        let off = (i as usize).wrapping_mul(self.stride);
        // SAFETY: `i < max` (the caller's), so the offset is within the
        // `max * stride` bytes at `base` (the pool's invariant), whose
        // product does not overflow, so neither does this one.
        let p = unsafe { self.base.as_ptr().add(off) };
        // SAFETY: in bounds of a non-null allocation, so not null.
        let ptr = unsafe { NonNull::new_unchecked(p.cast::<T>()) };
        // INVARIANT: `i < max`, and `ptr` is its address.
        Slot { pool: self, i, ptr }
    }

    /// Every object, free, owned or out.
    pub(crate) fn slots(&self) -> impl DoubleEndedIterator<Item = Slot<'_, T>> {
        (0..self.max).map(move |i| self.slot(i))
    }

    /// Takes a free object. Any context, NMI included (lock-free).
    #[inline(always)]
    pub(crate) fn pop(&self) -> Option<Owned<'_, T>> {
        let mut head = self.free.load(Ordering::Acquire);
        loop {
            let top = (head & 0xffff_ffff) as u32;
            let s = self.get(top.checked_sub(1)?)?;
            // The link may be stale if another CPU took the object
            // meanwhile; the tag then makes the exchange fail.
            let next = s.link().load(Ordering::Relaxed);
            let new = ((head >> 32).wrapping_add(1) << 32) | u64::from(next);
            match self
                .free
                .compare_exchange_weak(head, new, Ordering::AcqRel, Ordering::Acquire)
            {
                // INVARIANT: the exchange took the object off the free list,
                // so no other handle owns it, and its token word is null.
                Ok(_) => return Some(Owned(s)),
                Err(h) => head = h,
            }
        }
    }

    /// Puts `s`, which the caller owns, on the free list. Any context.
    #[inline(always)]
    fn push(&self, s: Slot<'_, T>) {
        let mut head = self.free.load(Ordering::Relaxed);
        loop {
            s.link()
                .store((head & 0xffff_ffff) as u32, Ordering::Relaxed);
            let new = ((head >> 32).wrapping_add(1) << 32) | (u64::from(s.i) + 1);
            match self
                .free
                .compare_exchange_weak(head, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(h) => head = h,
            }
        }
    }
}

impl<T: PoolItem> Drop for ObjPool<T> {
    fn drop(&mut self) {
        // Objects still out give their tokens back: nothing can claim them
        // any more (`&mut self`).
        for s in self.slots() {
            let t = s.token().swap(core::ptr::null_mut(), Ordering::Acquire);
            if let Some(t) = NonNull::new(t) {
                // SAFETY: a non-null token word holds what `put_out` gave up,
                // taken back once (swapped out).
                drop(unsafe { T::Token::from_raw(t) });
            }
        }
    }
}

/// Object `i` of a pool, in whatever state.
///
/// Its holder may claim the object back if it is out ([`Slot::take_out`],
/// [`Slot::claim`]): whoever is meant to hold an object that is out knows
/// it by other means (a return stub names its instance), and the pool's
/// exchanges make sure that only one of them gets it.
///
/// # Invariants
///
/// `i < pool.max`, and `ptr` is the object's address in the pool (computed
/// once: the hit path uses it several times, across atomics the compiler
/// does not move the pool's loads over).
pub(crate) struct Slot<'a, T: PoolItem> {
    pool: &'a ObjPool<T>,
    i: u32,
    ptr: NonNull<T>,
}

impl<T: PoolItem> Clone for Slot<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: PoolItem> Copy for Slot<'_, T> {}

impl<'a, T: PoolItem> Slot<'a, T> {
    /// The object's index in its pool.
    #[inline(always)]
    pub(crate) fn index(self) -> u32 {
        self.i
    }

    /// The object's address: valid for reads and writes of `T` and the
    /// pool's extra bytes after it for `'a`, aligned for `T`. The fields at
    /// [`PoolItem::LINK`] and [`PoolItem::TOKEN`] are the pool's. Other
    /// CPUs may use the object at the same time (the one that owns it, and
    /// other holders of its `Slot`), so only atomic accesses are free of
    /// data races.
    #[inline(always)]
    pub(crate) fn as_ptr(self) -> NonNull<T> {
        self.ptr
    }

    /// The free-list link.
    #[inline(always)]
    fn link(self) -> &'a AtomicU32 {
        // SAFETY: an aligned `u32` of a live object (`PoolItem`'s contract,
        // `as_ptr`), which only this module accesses, atomically.
        unsafe { AtomicU32::from_ptr(self.as_ptr().as_ptr().cast::<u8>().add(T::LINK).cast()) }
    }

    /// The token word.
    #[inline(always)]
    fn token(self) -> &'a AtomicPtr<c_void> {
        // SAFETY: an aligned pointer field of a live object (`PoolItem`'s
        // contract, `as_ptr`), which only this module accesses, atomically.
        unsafe { AtomicPtr::from_ptr(self.as_ptr().as_ptr().cast::<u8>().add(T::TOKEN).cast()) }
    }

    /// The identity of the token the object is out with (only to be
    /// compared: the holder of the token may take it back at any time), or
    /// null if it is not out. Any context.
    #[inline(always)]
    pub(crate) fn out_with(self) -> *mut c_void {
        self.token().load(Ordering::Acquire)
    }

    /// Takes the object back if it is out, with the token it is out with:
    /// the caller then owns both. At most one of any number of racing
    /// takes and claims succeeds. Any context, NMI included.
    #[inline(always)]
    pub(crate) fn take_out(self) -> Option<(Owned<'a, T>, T::Token)> {
        let t = NonNull::new(self.token().swap(core::ptr::null_mut(), Ordering::AcqRel))?;
        // SAFETY: a non-null token word holds what `put_out` gave up, and
        // the swap took it out, once.
        let token = unsafe { T::Token::from_raw(t) };
        // INVARIANT: an object out is owned by no handle; the swap ended
        // its being out, and its token word is null again.
        Some((Owned(self), token))
    }

    /// Claims the object if it is out with the token whose identity is
    /// `id`: the caller then owns the object and the token. At most one of
    /// any number of racing claims succeeds. Any context, NMI included.
    #[inline(always)]
    pub(crate) fn claim(self, id: *mut c_void) -> Option<(Owned<'a, T>, T::Token)> {
        let id = NonNull::new(id)?;
        self.token()
            .compare_exchange(
                id.as_ptr(),
                core::ptr::null_mut(),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .ok()?;
        // SAFETY: a non-null token word holds what `put_out` gave up, and
        // the exchange took it out, once.
        let token = unsafe { T::Token::from_raw(id) };
        // INVARIANT: an object out is owned by no handle; the exchange
        // ended its being out, and its token word is null again.
        Some((Owned(self), token))
    }
}

/// An object in its holder's hands: off the free list and not out.
///
/// # Invariants
///
/// No other `Owned` handle of the object exists, and it is neither free
/// nor out (its token word is null).
///
/// A handle must be given back or put out: dropped, it leaks its object,
/// which no one can take again. Debug builds assert that none is dropped.
#[must_use = "an owned object is leaked unless it is given back or put out"]
pub(crate) struct Owned<'a, T: PoolItem>(Slot<'a, T>);

impl<'a, T: PoolItem> Owned<'a, T> {
    /// The object.
    #[inline(always)]
    pub(crate) fn slot(&self) -> Slot<'a, T> {
        self.0
    }

    /// Gives the object back to its pool. Any context, NMI included.
    #[inline(always)]
    pub(crate) fn give_back(self) {
        let s = ManuallyDrop::new(self).0;
        // INVARIANT: the only handle is consumed here.
        s.pool.push(s);
    }

    /// Puts the object out with `token`, which its next owner claims back
    /// ([`Slot::claim`]); returns the object. The object's fields written
    /// before are seen by whoever claims it. Any context, NMI included.
    #[inline(always)]
    pub(crate) fn put_out(self, token: T::Token) -> Slot<'a, T> {
        let s = ManuallyDrop::new(self).0;
        // INVARIANT: the handle is consumed; the token word is non-null
        // while the object is out.
        s.token()
            .store(token.into_raw().as_ptr(), Ordering::Release);
        s
    }
}

impl<T: PoolItem> Drop for Owned<'_, T> {
    /// Reached only by a handle that was neither given back nor put out (both
    /// consume it without dropping it): its object is lost to the pool. Any
    /// context, NMI included, so release builds only leak it; debug builds
    /// (`CONFIG_RUST_DEBUG_ASSERTIONS`) stop at the bug.
    #[inline(always)]
    fn drop(&mut self) {
        debug_assert!(
            false,
            "objpool: object {} leaked by a dropped handle",
            self.0.i
        );
    }
}
